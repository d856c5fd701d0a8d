package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// stopSignals end a guest cleanly: Ctrl-C from a terminal, SIGTERM from a
// service manager or kill(1). Both reach the same clean stop, so a
// recording ends with its end event whichever arrives.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM}

// stopCause is why a guest's context was cancelled: a signal or --timeout.
type stopCause struct {
	sig     syscall.Signal // 0 for a timeout
	timeout time.Duration
}

func (c *stopCause) Error() string {
	if c.sig == 0 {
		return fmt.Sprintf("--timeout %v expired", c.timeout)
	}
	return fmt.Sprintf("interrupted by %s", unix.SignalName(c.sig))
}

// status is the exit status that reports the stop, as a shell would:
// 124 for a timeout (as timeout(1)), 128+n for signal n (130 for Ctrl-C,
// 143 for SIGTERM).
func (c *stopCause) status() int {
	if c.sig == 0 {
		return exitTimeout
	}
	return 128 + int(c.sig)
}

// guestContext is the context a guest runs under: cancelled by a stop
// signal, and after timeout (if positive), with a *stopCause as its cause.
func guestContext(parent context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, stopSignals...)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			cancel(&stopCause{sig: s.(syscall.Signal)})
		case <-done:
		}
	}()
	var timer *time.Timer
	if timeout > 0 {
		timer = time.AfterFunc(timeout, func() { cancel(&stopCause{timeout: timeout}) })
	}
	return ctx, func() {
		if timer != nil {
			timer.Stop()
		}
		signal.Stop(sigs)
		close(done)
		cancel(context.Canceled)
	}
}

// stoppedBy returns why ctx was stopped, or nil if it was not stopped by
// a signal or a timeout.
func stoppedBy(ctx context.Context) *stopCause {
	var c *stopCause
	if errors.As(context.Cause(ctx), &c) {
		return c
	}
	return nil
}
