package linux

import (
	"bytes"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/linux/vfs"
)

// What execve runs: an ELF executable, or a "#!" script whose interpreter
// runs it, as Linux's binfmt_script does.

// maxInterpreters is how many scripts deep an interpreter may be another
// script's (Linux's binprm depth: ELOOP past it).
const maxInterpreters = 4

// scriptHead is how much of a script Linux reads for its "#!" line
// (BINPRM_BUF_SIZE).
const scriptHead = 256

// executableAt is the node at path if the program may execute it: EACCES
// for a directory, a device or a file the user may not execute.
func (t *thread) executableAt(path string) (*node, error) {
	n, err := t.k.fs.Lookup(path)
	switch {
	case err != nil:
		return nil, err
	case !n.IsRegular():
		return nil, unix.EACCES
	}
	if err := t.k.fs.Access(n, vfs.MayExec); err != nil {
		return nil, err
	}
	return n, t.k.fs.Load(n)
}

// interpret follows "#!" lines from the file n at path, which the program
// named as name (FollowScripts). It returns the ELF file that runs, its
// path and its argv.
func (t *thread) interpret(path, name string, n *node, argv []string) (string, *node, []string, error) {
	path, argv, err := FollowScripts(path, name, n.Contents(), argv, func(interp string) (string, []byte, error) {
		full, err := t.resolve(atFDCWD, interp)
		if err != nil {
			return "", nil, err
		}
		full = t.selfExe(full)
		if n, err = t.executableAt(full); err != nil {
			return "", nil, err
		}
		return full, n.Contents(), nil
	})
	return path, n, argv, err
}

// FollowScripts follows "#!" lines from the file at path holding data,
// which was named as name, as exec does: each script is run by its
// interpreter (open finds it: its path and contents), given the
// interpreter, its optional argument, the script's name and the rest of
// argv. It returns the ELF file's path and the argv it runs with;
// ENOEXEC for a file that is neither, ELOOP past maxInterpreters.
func FollowScripts(path, name string, data []byte, argv []string, open func(interp string) (string, []byte, error)) (string, []string, error) {
	for depth := 0; !bytes.HasPrefix(data, []byte("\x7fELF")); depth++ {
		interp, arg, ok := scriptLine(data)
		switch {
		case !ok:
			return "", nil, unix.ENOEXEC
		case depth == maxInterpreters:
			return "", nil, unix.ELOOP
		}
		head := []string{interp}
		if arg != "" {
			head = append(head, arg)
		}
		argv = append(append(head, name), argv[1:]...)
		full, contents, err := open(interp)
		if err != nil {
			return "", nil, err
		}
		path, name, data = full, interp, contents
	}
	return path, argv, nil
}

// scriptLine parses a "#!" line as Linux does: the interpreter up to the
// first blank, then one argument, the rest of the line with its blanks
// trimmed; only the first scriptHead bytes count, and an interpreter cut
// by that bound is no interpreter.
func scriptLine(b []byte) (interp, arg string, ok bool) {
	if !bytes.HasPrefix(b, []byte("#!")) {
		return "", "", false
	}
	b = b[2:min(len(b), scriptHead)]
	complete := false
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b, complete = b[:i], true
	}
	b = bytes.TrimLeft(b, " \t")
	end := bytes.IndexAny(b, " \t")
	if end < 0 {
		if !complete && len(b) > 0 {
			return "", "", false // the path may go on past what Linux reads
		}
		end = len(b)
	}
	if end == 0 {
		return "", "", false
	}
	interp = string(b[:end])
	arg = string(bytes.Trim(b[end:], " \t"))
	return interp, arg, true
}
