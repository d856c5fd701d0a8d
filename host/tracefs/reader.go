package tracefs

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// readInterval is how long the reader waits when trace_pipe is empty.
// It does not wait in the kernel instead, neither in a blocking read nor
// in the runtime's epoll: trace_pipe wakes its waiters at the first new
// event, and with Options.AllSwitches the reader's own wakeup is a switch
// event, so it would wake itself endlessly (an idle host then logged
// ~190k switches/s instead of ~60). Polling breaks that loop for a few
// wakeups per second; the buffer holds far more than an interval's worth
// of events (see bufferKB).
const readInterval = 50 * time.Millisecond

// readBufSize is the reader's line buffer. trace_pipe lines are a few
// hundred bytes; a longer one is counted as malformed.
const readBufSize = 64 << 10

// openPipe opens trace_pipe for a pipeReader. It is a raw non-blocking
// descriptor, not an *os.File: that would register it with the runtime's
// epoll, whose wakeups on new events are the loop readInterval avoids.
func (s *Session) openPipe() (*pipeReader, error) {
	path := filepath.Join(s.dir, "trace_pipe")
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, classify(path, &fs.PathError{Op: "open", Path: path, Err: err})
	}
	return &pipeReader{fd: fd, stop: s.stop}, nil
}

// stopReader makes the reader drain what is buffered and exit, waits for
// it, and closes the pipe (the instance cannot be removed while open).
func (s *Session) stopReader() error {
	close(s.stop)
	<-s.done
	err := s.readErr
	if cerr := unix.Close(s.pipe.fd); cerr != nil {
		err = errors.Join(err, fmt.Errorf("tracefs: close trace_pipe: %w", cerr))
	}
	s.pipe = nil
	return err
}

// read is the reader goroutine: it follows trace_pipe until stopReader,
// then drains the rest.
func (s *Session) read(pipe *pipeReader) {
	defer close(s.done)
	defer pipe.stopTimer()
	br := bufio.NewReaderSize(pipe, readBufSize)
	var d dispatcher
	d.h = s.handlers
	tooLong := false
	for {
		line, err := br.ReadSlice('\n')
		switch {
		case err == nil:
			if tooLong {
				tooLong = false
				s.malformed.Add(1)
				continue
			}
			s.handle(&d, line[:len(line)-1])
		case errors.Is(err, bufio.ErrBufferFull):
			tooLong = true // skip up to the next newline
		default:
			// An unterminated last line: tracing is off, so it is complete.
			if len(line) > 0 && !tooLong {
				s.handle(&d, line)
			}
			d.flush()
			if !errors.Is(err, io.EOF) {
				s.readErr = fmt.Errorf("tracefs: read trace_pipe: %w", err)
			}
			return
		}
	}
}

// handle parses a line and dispatches it, counting losses and lines that
// do not parse.
func (s *Session) handle(d *dispatcher, line []byte) {
	// The one allocation per line: event strings share it, and handlers
	// may keep them.
	switch err := parse(string(line), &d.p); {
	case errors.Is(err, ErrOtherEvent):
	case err != nil:
		s.malformed.Add(1)
	default:
		if d.p.kind == kindLost {
			s.lost.Add(int64(d.p.lost.Count))
			if d.p.lost.Count == 0 {
				s.uncounted.Add(1)
			}
		}
		d.dispatch()
	}
}

// pipeReader reads trace_pipe for a bufio.Reader without blocking in the
// kernel (see readInterval). After stop is closed it returns io.EOF as
// soon as the pipe is empty: tracing is off by then, so that is the end.
type pipeReader struct {
	fd      int
	stop    <-chan struct{}
	timer   *time.Timer // nil until the pipe is first found empty
	stopped bool
}

func (r *pipeReader) Read(p []byte) (int, error) {
	for {
		n, err := unix.Read(r.fd, p)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil && !errors.Is(err, unix.EAGAIN):
			return 0, err
		case err == nil && n > 0:
			return n, nil
		case r.stopped:
			return 0, io.EOF
		}
		if r.timer == nil {
			r.timer = time.NewTimer(readInterval)
		} else {
			r.timer.Reset(readInterval)
		}
		select {
		case <-r.stop:
			r.stopped = true // read once more: the rest, then io.EOF
		case <-r.timer.C:
		}
	}
}

func (r *pipeReader) stopTimer() {
	if r.timer != nil {
		r.timer.Stop()
	}
}
