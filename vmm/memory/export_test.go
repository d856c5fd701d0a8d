package memory

// SetHostAvailable makes New see a host with avail bytes available until
// the returned function restores the real reading.
func SetHostAvailable(avail uint64) (restore func()) {
	hostAvailable = func() (uint64, bool) { return avail, true }
	return func() { hostAvailable = memAvailable }
}

// HostAvailable is the real reading New uses.
func HostAvailable() (uint64, bool) { return memAvailable() }

// TouchOnly has r populate pages by touching them, as on a host kernel
// without MADV_POPULATE_WRITE.
func TouchOnly(r *RAM) { r.populate = touch }
