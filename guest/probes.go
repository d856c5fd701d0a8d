package guest

// LockProbes are probe specs for the kit's mutex API (lib/thread.c) under
// the names the lock tools read (package tools/lockops): entry probes give
// the lock's address, return probes the return value.
var LockProbes = []string{
	"lock=mutex_lock m=arg0",
	"locked=mutex_lock%return",
	"unlock=mutex_unlock m=arg0",
	"trylock=mutex_trylock m=arg0",
	"trylocked=mutex_trylock%return ret=rax",
	"timedlock=mutex_timedlock m=arg0",
	"timedlocked=mutex_timedlock%return ret=rax",
}
