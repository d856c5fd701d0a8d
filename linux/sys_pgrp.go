package linux

import "golang.org/x/sys/unix"

// Process groups and sessions, as Linux keeps them: a fork's child is in
// its parent's; kill(0, …) signals the caller's group and kill(-g, …)
// group g (timeout(1) puts itself and its command in a group of their
// own and signals it: the whole run ended when that reached the first
// process). There is no terminal, so no group is in the foreground.

// processOf is the live process pid names (0: the caller's), or nil.
func (t *thread) processOf(pid uint64) *process {
	if pid == 0 {
		return t.proc
	}
	for _, p := range t.k.liveProcesses() {
		if uint64(p.pid) == pid {
			return p
		}
	}
	return nil
}

func sysGetpgrp(t *thread, _ args) (uint64, error) { return uint64(t.proc.pgid), nil }

func sysGetpgid(t *thread, a args) (uint64, error) {
	p := t.processOf(uint64(int32(a[0])))
	if p == nil {
		return 0, unix.ESRCH
	}
	return uint64(p.pgid), nil
}

func sysGetsid(t *thread, a args) (uint64, error) {
	p := t.processOf(uint64(int32(a[0])))
	if p == nil {
		return 0, unix.ESRCH
	}
	return uint64(p.sid), nil
}

// sysSetsid makes the caller the leader of a new session and group: EPERM
// for a group leader, which would then share its group with another
// session.
func sysSetsid(t *thread, _ args) (uint64, error) {
	p := t.proc
	for _, o := range t.k.liveProcesses() {
		if o.pgid == p.pid {
			return 0, unix.EPERM
		}
	}
	p.pgid, p.sid = p.pid, p.pid
	return uint64(p.pid), nil
}

// sysSetpgid moves the caller or one of its children (pid; 0: the
// caller) into group pgid (0: the one its pid names), which must be that
// or a group of the same session, with Linux's errors in its order.
func sysSetpgid(t *thread, a args) (uint64, error) {
	pid, pgid := int64(int32(a[0])), int64(int32(a[1]))
	if pgid < 0 {
		return 0, unix.EINVAL
	}
	p := t.processOf(uint64(pid))
	switch {
	case p == nil:
		return 0, unix.ESRCH
	case p != t.proc && p.parent != t.proc:
		return 0, unix.ESRCH
	case p.sid != t.proc.sid, p.pid == p.sid:
		return 0, unix.EPERM // another session's, or a session leader
	}
	if pgid == 0 {
		pgid = int64(p.pid)
	}
	if pgid != int64(p.pid) {
		found := false
		for _, o := range t.k.liveProcesses() {
			found = found || int64(o.pgid) == pgid && o.sid == t.proc.sid
		}
		if !found {
			return 0, unix.EPERM
		}
	}
	p.pgid = int(pgid)
	return 0, nil
}
