package vfs

// SavedSignalFD is a signalfd's mask; its source is the kernel restoring
// it (Restore's signals).
type SavedSignalFD struct{ Mask uint64 }

func (sf *SignalFD) save(_ *Saver, s *SavedFile) { s.SignalFD = &SavedSignalFD{Mask: sf.Mask} }
