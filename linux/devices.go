package linux

// systemFiles are generated files, in the kernel's own directories: one
// CPU online, and the placeholders of /proc's files (procfs.go).
// Everything else is the host's (/etc/passwd included, as under rr).
var systemFiles = map[string]string{
	"/sys/devices/system/cpu/online":   "0\n",
	"/sys/devices/system/cpu/possible": "0\n",
	"/proc/self/maps":                  "",
	"/proc/self/cmdline":               "",
	"/proc/self/status":                "",
	"/proc/self/stat":                  "",
	"/proc/self/statm":                 "",
	"/proc/self/environ":               "",
	"/proc/self/comm":                  "",
	"/proc/self/mounts":                "",
	"/proc/cpuinfo":                    "",
	"/proc/meminfo":                    "",
	"/proc/uptime":                     "",
	"/proc/loadavg":                    "",
}

// systemLinks are the kernel's symbolic links: /dev's names of the
// descriptors (bash's process substitution opens /dev/fd/63), and
// /proc/mounts.
var systemLinks = map[string]string{
	"/proc/mounts": "self/mounts",
	"/dev/fd":      "/proc/self/fd",
	"/dev/stdin":   "/proc/self/fd/0",
	"/dev/stdout":  "/proc/self/fd/1",
	"/dev/stderr":  "/proc/self/fd/2",
}

// entropy is the engine's entropy, for /dev/urandom (vfs.Entropy): the
// machine is there when the program first reads it, not when the tree is made.
type entropy struct{ k *Kernel }

func (e entropy) Entropy(b []byte) error { return e.k.m.Entropy(b) }

// console writes the standard streams to the machine's console.
type console struct{ k *Kernel }

func (c console) Write(b []byte) (int, error) { return c.k.m.Console().Write(b) }
