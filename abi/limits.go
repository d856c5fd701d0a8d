package abi

import "fmt"

// Guest RAM is mapped in 2 MiB pages from address 0. It needs at least
// 8 MiB: the system area and the kernel window below UserBase, and 4 MiB
// for a user image and its stacks. It can have at most 4 GiB: the VMM's
// identity page tables (the four PD pages at PD) map no more.
const (
	MinGuestBytes = 8 << 20
	MaxGuestBytes = 4 << 30
	GuestRAMAlign = 2 << 20
)

// MaxTimerHz is the fastest tick a guest can be given: the timer device
// never fires more often than every 100 µs (devices.MinTimerPeriod), and a
// tick costs the guest tens of microseconds of kernel and injection time.
const MaxTimerHz = 10_000

// CheckRAMSize says why size cannot be a guest's RAM, or returns nil.
// Every place a size arrives from outside — a flag, a tape header, a
// caller of the allocator — asks it before anything is mapped.
func CheckRAMSize(size uint64) error {
	switch {
	case size < MinGuestBytes:
		return fmt.Errorf("guest RAM of %s is too small: at least %s is needed (system area, kernel and a minimal user space)", FormatBytes(size), FormatBytes(MinGuestBytes))
	case size > MaxGuestBytes:
		return fmt.Errorf("guest RAM of %s is too large: the limit is %s, all the VMM's page tables can map", FormatBytes(size), FormatBytes(MaxGuestBytes))
	case size%GuestRAMAlign != 0:
		return fmt.Errorf("guest RAM of %s is not a multiple of 2 MiB (it is mapped in 2 MiB pages)", FormatBytes(size))
	}
	return nil
}

// CheckTimerHz says why hz cannot be a guest's tick rate, or returns nil.
// Zero or a negative value means no timer.
func CheckTimerHz(hz int) error {
	if hz > MaxTimerHz {
		return fmt.Errorf("timer rate of %d Hz is too fast: the limit is %d Hz (one tick every 100 µs)", hz, MaxTimerHz)
	}
	return nil
}

// FormatBytes writes a size the way users type it: 64 MiB, 4 GiB, 4098 MiB,
// or a byte count when it is not a whole number of KiB.
func FormatBytes(n uint64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// Bounds on how a Linux program is started (package linux), checked by it
// and by the tape reader and writer.
const (
	LinuxMaxArgs     = 4096      // argv and envp entries, each
	LinuxMaxArgBytes = 128 << 10 // argv and envp strings together, NULs included
	LinuxMaxPath     = 4096      // PATH_MAX
)

// CheckLinuxArgs checks argv and envp against those bounds.
func CheckLinuxArgs(argv, envp []string) error {
	if len(argv) == 0 {
		return fmt.Errorf("no argv[0]")
	}
	n := 0
	for _, list := range [][]string{argv, envp} {
		if len(list) > LinuxMaxArgs {
			return fmt.Errorf("%d arguments or variables, more than %d", len(list), LinuxMaxArgs)
		}
		for _, s := range list {
			n += len(s) + 1
		}
	}
	if n > LinuxMaxArgBytes {
		return fmt.Errorf("arguments and environment take %d bytes, more than %d", n, LinuxMaxArgBytes)
	}
	return nil
}
