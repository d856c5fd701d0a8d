package linux

// systemFiles are generated files, in the kernel's own directories: one
// CPU online. Everything else is the host's (/etc/passwd included, as
// under rr).
var systemFiles = map[string]string{
	"/sys/devices/system/cpu/online":   "0\n",
	"/sys/devices/system/cpu/possible": "0\n",
}

// entropy is the engine's entropy, for /dev/urandom (vfs.Entropy): the
// machine is there when the program first reads it, not when the tree is made.
type entropy struct{ k *Kernel }

func (e entropy) Entropy(b []byte) error { return e.k.m.Entropy(b) }

// console writes the standard streams to the machine's console.
type console struct{ k *Kernel }

func (c console) Write(b []byte) (int, error) { return c.k.m.Console().Write(b) }
