package lockops

// PthreadProbes are probe specs for the C library's pthread locks under
// the names Scan reads, for musl or glibc. Where the C library's own
// condition wait releases and retakes the mutex through the functions
// probed here (musl), the lock and unlock probes see it; glibc's uses
// internal ones, so its waits are probed as condwait and condwaited.
// Specs for functions a program's C library lacks are for the caller to
// drop (pthread_mutex_clocklock is glibc's).
func PthreadProbes(glibc bool) []string {
	specs := []string{
		"lock=pthread_mutex_lock m=arg0",
		"locked=pthread_mutex_lock%return",
		"unlock=pthread_mutex_unlock m=arg0",
		"trylock=pthread_mutex_trylock m=arg0",
		"trylocked=pthread_mutex_trylock%return ret=rax",
		"timedlock=pthread_mutex_timedlock m=arg0",
		"timedlocked=pthread_mutex_timedlock%return ret=rax",
		"rdlock=pthread_rwlock_rdlock l=arg0",
		"rdlocked=pthread_rwlock_rdlock%return",
		"wrlock=pthread_rwlock_wrlock l=arg0",
		"wrlocked=pthread_rwlock_wrlock%return",
		"tryrdlock=pthread_rwlock_tryrdlock l=arg0",
		"tryrdlocked=pthread_rwlock_tryrdlock%return ret=rax",
		"trywrlock=pthread_rwlock_trywrlock l=arg0",
		"trywrlocked=pthread_rwlock_trywrlock%return ret=rax",
		"rwunlock=pthread_rwlock_unlock l=arg0",
	}
	if glibc {
		specs = append(specs,
			"timedlock.clock=pthread_mutex_clocklock m=arg0",
			"timedlocked.clock=pthread_mutex_clocklock%return ret=rax",
			"condwait=pthread_cond_wait m=arg1",
			"condwaited=pthread_cond_wait%return",
			"condwait.timed=pthread_cond_timedwait m=arg1",
			"condwaited.timed=pthread_cond_timedwait%return",
			"condwait.clock=pthread_cond_clockwait m=arg1",
			"condwaited.clock=pthread_cond_clockwait%return",
		)
	}
	return specs
}
