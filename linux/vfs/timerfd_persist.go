package vfs

import "time"

// SavedTimerFD is a timerfd's setting and unread expirations.
type SavedTimerFD struct {
	Clock        int
	At, Interval time.Duration
	Expirations  uint64
}

func (tf *TimerFD) save(_ *Saver, s *SavedFile) {
	s.TimerFD = &SavedTimerFD{Clock: tf.Clock, At: tf.at, Interval: tf.interval, Expirations: tf.expirations}
}

func (s *SavedTimerFD) valid() bool { return s.At >= 0 && s.Interval >= 0 }

func (s *SavedTimerFD) restore() *TimerFD {
	return &TimerFD{Clock: s.Clock, at: s.At, interval: s.Interval, expirations: s.Expirations}
}
