package linux

import (
	"encoding/binary"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/tape"
)

// A process's identity, as Linux's struct cred: real, effective and
// saved user and group ids, and supplementary groups. The first process
// has the recording user's (Program.User); a fork copies its parent's; a
// process whose effective user is root may take any (a server that
// starts as root and drops to nobody), another may only move among the
// ids it has — Linux's rules for a process without capabilities and one
// with all of them. Files are checked against the calling process's
// effective ids and groups (its fsuid and fsgid follow its effective
// ids, as they do unless set apart).
type creds struct {
	uid, euid, suid uint32
	gid, egid, sgid uint32
	groups          []uint32
}

// credsOf is a user's identity, every id its own.
func credsOf(u User) creds {
	return creds{u.UID, u.UID, u.UID, u.GID, u.GID, u.GID, slices.Clone(u.Groups)}
}

// clone is c with its own groups.
func (c creds) clone() creds { c.groups = slices.Clone(c.groups); return c }

// root reports whether c holds root's privileges (every capability).
func (c creds) root() bool { return c.euid == 0 }

// maySignal reports whether a process of c may signal one of target, as
// Linux's kill_ok_by_cred: root may; another when its real or effective
// user is the target's real or saved one.
func (c creds) maySignal(target creds) bool {
	return c.root() || c.uid == target.uid || c.uid == target.suid || c.euid == target.uid || c.euid == target.suid
}

// user is c's effective identity, as file access sees it.
func (c creds) user() User { return User{c.euid, c.egid, c.groups} }

// useCreds makes the file system check what the calling thread does
// against its process's identity. A process's groups are replaced, never
// changed in place (setgroups makes a new slice, fork a copy), so the
// tree may hold them.
func (t *thread) useCreds() {
	c := &t.proc.cred
	t.k.fs.SetOwner(c.euid, c.egid)
	t.k.fs.SetGroups(c.groups)
}

// An idSet picks the user or the group ids of a creds.
type idSet func(*creds) (real, eff, saved *uint32)

func userIDs(c *creds) (*uint32, *uint32, *uint32)  { return &c.uid, &c.euid, &c.suid }
func groupIDs(c *creds) (*uint32, *uint32, *uint32) { return &c.gid, &c.egid, &c.sgid }

// getID is getuid and getgid (real) or geteuid and getegid.
func getID(ids idSet, effective bool) handler {
	return func(t *thread, _ args) (uint64, error) {
		r, e, _ := ids(&t.proc.cred)
		if effective {
			return uint64(*e), nil
		}
		return uint64(*r), nil
	}
}

// getIDs is getresuid or getresgid.
func getIDs(ids idSet) handler {
	return func(t *thread, a args) (uint64, error) {
		r, e, s := ids(&t.proc.cred)
		for i, id := range []*uint32{r, e, s} {
			var b [4]byte
			binary.LittleEndian.PutUint32(b[:], *id)
			if err := t.proc.as.Write(a[i], b[:]); err != nil {
				return 0, memErr(err)
			}
		}
		return 0, nil
	}
}

const unchanged = ^uint32(0) // -1: leave this id

// setresIDs is setresuid or setresgid: each id given (not -1) must be one
// the process has — real, effective or saved — unless it is root
// (EPERM); then all are set at once.
func setresIDs(ids idSet) handler {
	return func(t *thread, a args) (uint64, error) {
		return 0, t.setIDs(ids, uint32(a[0]), uint32(a[1]), uint32(a[2]))
	}
}

func (t *thread) setIDs(ids idSet, real, eff, saved uint32) error {
	c := &t.proc.cred
	r, e, s := ids(c)
	root := c.root()
	for _, id := range []uint32{real, eff, saved} {
		if id != unchanged && !root && id != *r && id != *e && id != *s {
			return unix.EPERM
		}
	}
	for _, p := range []struct {
		to *uint32
		id uint32
	}{{r, real}, {e, eff}, {s, saved}} {
		if p.id != unchanged {
			*p.to = p.id
		}
	}
	return nil
}

// setreIDs is setreuid or setregid: the real id may become the effective
// one, the effective any of the three (root: anything); the saved id
// follows the effective one when the real one is set or the effective
// one leaves the old real one, as Linux's.
func setreIDs(ids idSet) handler {
	return func(t *thread, a args) (uint64, error) {
		real, eff := uint32(a[0]), uint32(a[1])
		c := &t.proc.cred
		r, e, s := ids(c)
		if !c.root() && (real != unchanged && real != *r && real != *e ||
			eff != unchanged && eff != *r && eff != *e && eff != *s) {
			return 0, unix.EPERM
		}
		oldReal := *r
		if real != unchanged {
			*r = real
		}
		if eff != unchanged {
			*e = eff
		}
		if real != unchanged || eff != unchanged && eff != oldReal {
			*s = *e
		}
		return 0, nil
	}
}

// setID is setuid or setgid: root sets all three ids; another process
// only its effective id, to its real or saved one (EPERM otherwise).
func setID(ids idSet) handler {
	return func(t *thread, a args) (uint64, error) {
		id := uint32(a[0])
		c := &t.proc.cred
		r, e, s := ids(c)
		switch {
		case id == unchanged:
			return 0, unix.EINVAL
		case c.root():
			*r, *e, *s = id, id, id
		case id == *r || id == *s:
			*e = id
		default:
			return 0, unix.EPERM
		}
		return 0, nil
	}
}

// sysGetgroups writes the process's supplementary groups: their count for
// a size of 0, EINVAL for a list too short.
func sysGetgroups(t *thread, a args) (uint64, error) {
	groups := t.proc.cred.groups
	switch size := int32(a[0]); {
	case size < 0:
		return 0, unix.EINVAL
	case size == 0:
		return uint64(len(groups)), nil
	case int(size) < len(groups):
		return 0, unix.EINVAL
	}
	b := make([]byte, 4*len(groups))
	for i, g := range groups {
		binary.LittleEndian.PutUint32(b[4*i:], g)
	}
	return uint64(len(groups)), memErr(t.proc.as.Write(a[1], b))
}

// sysSetgroups sets the supplementary groups: root's to do (EPERM
// otherwise, as CAP_SETGID is), at most tape.MaxGroups (EINVAL).
func sysSetgroups(t *thread, a args) (uint64, error) {
	size := int32(a[0])
	switch {
	case size < 0 || size > tape.MaxGroups:
		return 0, unix.EINVAL
	case !t.proc.cred.root():
		return 0, unix.EPERM
	}
	b := make([]byte, 4*int(size))
	if err := t.proc.as.Read(a[1], b); err != nil {
		return 0, memErr(err)
	}
	groups := make([]uint32, size)
	for i := range groups {
		groups[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	t.proc.cred.groups = groups
	return 0, nil
}
