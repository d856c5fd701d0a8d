package vfs

import "golang.org/x/sys/unix"

// A socket's options: those setsockopt keeps, each an int, at the levels
// a socket here has (SOL_SOCKET; IPPROTO_IP, IPPROTO_IPV6 and IPPROTO_TCP
// for an internet socket), and those getsockopt derives.

// optKey is an option's key: its level and name in one int.
func optKey(level, name int) int { return level<<16 | name }

// settable are the options setsockopt keeps, with their defaults, by
// optKey; inetOnly are the ones only an internet socket has.
var settable = map[int]int32{
	optKey(unix.SOL_SOCKET, unix.SO_REUSEADDR): 0, optKey(unix.SOL_SOCKET, unix.SO_DONTROUTE): 0,
	optKey(unix.SOL_SOCKET, unix.SO_BROADCAST): 0, optKey(unix.SOL_SOCKET, unix.SO_SNDBUF): SocketCapacity,
	optKey(unix.SOL_SOCKET, unix.SO_RCVBUF): SocketCapacity, optKey(unix.SOL_SOCKET, unix.SO_KEEPALIVE): 0,
	optKey(unix.SOL_SOCKET, unix.SO_OOBINLINE): 0, optKey(unix.SOL_SOCKET, unix.SO_PRIORITY): 0,
	optKey(unix.SOL_SOCKET, unix.SO_REUSEPORT): 0, optKey(unix.SOL_SOCKET, unix.SO_PASSCRED): 0,
	optKey(unix.SOL_SOCKET, unix.SO_RCVLOWAT): 1, optKey(unix.SOL_SOCKET, unix.SO_SNDLOWAT): 1,
	optKey(unix.SOL_SOCKET, unix.SO_PASSSEC):   0,
	optKey(unix.IPPROTO_TCP, unix.TCP_NODELAY): 0, optKey(unix.IPPROTO_TCP, unix.TCP_CORK): 0,
	optKey(unix.IPPROTO_TCP, unix.TCP_KEEPIDLE): 7200, optKey(unix.IPPROTO_TCP, unix.TCP_KEEPINTVL): 75,
	optKey(unix.IPPROTO_TCP, unix.TCP_KEEPCNT): 9, optKey(unix.IPPROTO_TCP, unix.TCP_DEFER_ACCEPT): 0,
	optKey(unix.IPPROTO_TCP, unix.TCP_QUICKACK): 1, optKey(unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT): 0,
	optKey(unix.IPPROTO_TCP, unix.TCP_FASTOPEN): 0, optKey(unix.IPPROTO_TCP, unix.TCP_MAXSEG): 65483,
	optKey(unix.IPPROTO_IP, unix.IP_TOS): 0, optKey(unix.IPPROTO_IP, unix.IP_TTL): 64,
	optKey(unix.IPPROTO_IPV6, unix.IPV6_V6ONLY): 0, optKey(unix.IPPROTO_IPV6, unix.IPV6_TCLASS): 0,
}

// levelOf says which family has options at level (0: every one).
var levelOf = map[int]int{
	unix.SOL_SOCKET: 0, unix.IPPROTO_TCP: unix.AF_INET, unix.IPPROTO_IP: unix.AF_INET, unix.IPPROTO_IPV6: unix.AF_INET6,
}

// hasLevel reports whether the socket has options at level: SOL_SOCKET
// every socket, IPPROTO_TCP a TCP socket, IPPROTO_IP an internet one,
// IPPROTO_IPV6 an AF_INET6 one.
func (s *Socket) hasLevel(level int) bool {
	fam, ok := levelOf[level]
	switch {
	case !ok:
		return false
	case level == unix.IPPROTO_TCP:
		return s.inet() && s.Stream()
	case fam == unix.AF_INET:
		return s.inet()
	case fam == unix.AF_INET6:
		return s.Family == unix.AF_INET6
	}
	return true
}

// Option is the value of an option getsockopt asks for: the socket's
// type, family, protocol, error (taken: a connected UDP socket's
// ECONNREFUSED) and whether it listens, and the
// settable ones; ok is false for one it has not (ENOPROTOOPT).
func (s *Socket) Option(level, name int) (v int32, ok bool) {
	if !s.hasLevel(level) {
		return 0, false
	}
	if level == unix.SOL_SOCKET {
		switch name {
		case unix.SO_TYPE:
			return int32(s.Type), true
		case unix.SO_DOMAIN:
			return int32(s.Family), true
		case unix.SO_PROTOCOL:
			return int32(s.protocol()), true
		case unix.SO_ERROR:
			return int32(s.TakeError()), true
		case unix.SO_ACCEPTCONN:
			return int32(btoi(s.listening)), true
		}
	}
	k := optKey(level, name)
	if v, ok := s.options[k]; ok {
		return v, true
	}
	v, ok = settable[k]
	return v, ok
}

// SetOption sets an option: a buffer's size as Linux keeps it (doubled,
// at least its minimum, at most twice the maximum), a flag as 0 or 1;
// ENOPROTOOPT for one not kept, EOPNOTSUPP for a level AF_UNIX has not.
func (s *Socket) SetOption(level, name int, v int32) error {
	if level != unix.SOL_SOCKET && !s.inet() {
		return unix.EOPNOTSUPP // AF_UNIX has no options of its own
	}
	k := optKey(level, name)
	if _, ok := settable[k]; !ok || !s.hasLevel(level) {
		return unix.ENOPROTOOPT
	}
	switch k {
	case optKey(unix.SOL_SOCKET, unix.SO_SNDBUF), optKey(unix.SOL_SOCKET, unix.SO_RCVBUF):
		const minBuf, maxBuf = 4608, SocketCapacity
		v = int32(min(max(int64(v)*2, minBuf), 2*maxBuf))
	case optKey(unix.SOL_SOCKET, unix.SO_RCVLOWAT):
		v = max(v, 1)
	case optKey(unix.IPPROTO_IPV6, unix.IPV6_V6ONLY):
		if s.bound() {
			return unix.EINVAL // as Linux: the address is chosen
		}
		v = int32(btoi(v != 0))
	case optKey(unix.SOL_SOCKET, unix.SO_REUSEADDR), optKey(unix.SOL_SOCKET, unix.SO_REUSEPORT),
		optKey(unix.SOL_SOCKET, unix.SO_KEEPALIVE), optKey(unix.IPPROTO_TCP, unix.TCP_NODELAY):
		v = int32(btoi(v != 0))
	}
	if s.options == nil {
		s.options = map[int]int32{}
	}
	s.options[k] = v
	return nil
}

// lingerKey keeps SO_LINGER's struct linger as one value: 0 off, else 1
// plus twice the seconds.
var lingerKey = optKey(unix.SOL_SOCKET, unix.SO_LINGER)

// Linger is SO_LINGER: whether close lingers, and for how many seconds.
func (s *Socket) Linger() (on bool, secs int32) {
	v := s.options[lingerKey]
	return v&1 != 0, v >> 1
}

// SetLinger sets SO_LINGER (a negative time is none, and at most what a
// value holds): a close that lingers no time resets its connection.
func (s *Socket) SetLinger(on bool, secs int32) {
	if s.options == nil {
		s.options = map[int]int32{}
	}
	if !on {
		s.options[lingerKey] = 0
		return
	}
	s.options[lingerKey] = 1 | min(max(secs, 0), 1<<29)<<1
}

// flag reports whether a flag option is set.
func (s *Socket) flag(level, name int) bool {
	v, _ := s.Option(level, name)
	return v != 0
}
