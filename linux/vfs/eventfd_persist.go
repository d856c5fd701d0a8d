package vfs

// SavedEventFD is an eventfd's counter.
type SavedEventFD struct {
	Count     uint64
	Semaphore bool
}

func (e *EventFD) save(_ *Saver, s *SavedFile) {
	s.EventFD = &SavedEventFD{Count: e.count, Semaphore: e.semaphore}
}

func (s *SavedEventFD) valid() bool { return s.Count <= eventMax }

func (s *SavedEventFD) restore() *EventFD { return &EventFD{count: s.Count, semaphore: s.Semaphore} }
