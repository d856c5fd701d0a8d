package tracefs

import "errors"

// UnavailableError reports that host scheduling cannot be traced on this
// host, and why. Callers are expected to treat it as non-fatal: recording
// works without it, only preemption analysis loses its input.
type UnavailableError struct {
	// Reason is a human-readable statement of what is missing and, where
	// possible, how to fix it.
	Reason string
	// Err is the underlying system error, if any.
	Err error
}

func (e *UnavailableError) Error() string {
	if e.Err != nil {
		return e.Reason + ": " + e.Err.Error()
	}
	return e.Reason
}

func (e *UnavailableError) Unwrap() error { return e.Err }

// IsUnavailable reports whether err (or an error it wraps) is an
// *UnavailableError.
func IsUnavailable(err error) bool {
	var u *UnavailableError
	return errors.As(err, &u)
}
