package tracefs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

var noDeadline time.Time

// stopReader makes the reader drain what is buffered and exit, waits for
// it, and closes the pipe (the instance cannot be removed while open).
func (s *Session) stopReader() error {
	s.stopping.Store(true)
	// Wake a blocked Read; the reader then drains without blocking.
	_ = s.pipe.SetReadDeadline(time.Now())
	<-s.done
	err := s.readErr
	if cerr := s.pipe.Close(); cerr != nil {
		err = errors.Join(err, fmt.Errorf("tracefs: close trace_pipe: %w", cerr))
	}
	s.pipe = nil
	return err
}

// read is the reader goroutine: it follows trace_pipe until stopReader,
// then drains the rest.
func (s *Session) read() {
	defer close(s.done)
	buf := make([]byte, 64<<10)
	var partial []byte
	for {
		n, err := s.pipe.Read(buf)
		partial = s.consume(partial, buf[:n])
		if err == nil {
			continue
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) || !s.stopping.Load() {
			s.readErr = fmt.Errorf("tracefs: read trace_pipe: %w", err)
		}
		break
	}
	// Drain: a Read with an expired deadline fails without reading, so
	// clear it and read the raw non-blocking fd until it reports EAGAIN.
	// Tracing is already off, so this terminates.
	if err := s.pipe.SetReadDeadline(noDeadline); err == nil {
		if rc, err := s.pipe.SyscallConn(); err == nil {
			for {
				var n int
				var rerr error
				if err := rc.Read(func(fd uintptr) bool {
					n, rerr = unix.Read(int(fd), buf)
					return true // never wait for more
				}); err != nil || rerr != nil || n <= 0 {
					break
				}
				partial = s.consume(partial, buf[:n])
			}
		}
	}
	if len(bytes.TrimSpace(partial)) > 0 {
		s.handle(string(partial))
	}
}

// consume splits data into lines, handles the complete ones and returns
// the incomplete tail (a read may end mid-line).
func (s *Session) consume(partial, data []byte) []byte {
	partial = append(partial, data...)
	for {
		i := bytes.IndexByte(partial, '\n')
		if i < 0 {
			break
		}
		s.handle(string(partial[:i]))
		partial = partial[i+1:]
	}
	// Move the tail to the front so the buffer does not grow forever.
	return append(partial[:0:0], partial...)
}

func (s *Session) handle(line string) {
	ev, err := ParseLine(line)
	switch {
	case errors.Is(err, ErrOtherEvent):
	case err != nil:
		s.malformed.Add(1)
	default:
		switch e := ev.(type) {
		case Switch:
			if s.onSwitch != nil {
				s.onSwitch(e)
			}
		case Wakeup:
			if s.onWakeup != nil {
				s.onWakeup(e)
			}
		case Lost:
			s.lost.Add(int64(e.Count))
		}
	}
}
