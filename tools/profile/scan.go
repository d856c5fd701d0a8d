package profile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/reprise-vm/reprise/eventdb"
)

// sampledStack is one distinct (thread, leaf, stack) and how many samples
// had it. A run of millions of samples has far fewer distinct stacks, so
// everything after the scan (symbol lookups, tallies, pprof) works per
// stack, weighted by count.
type sampledStack struct {
	// key is the thread (4 bytes) then the leaf address and the return
	// addresses, innermost first, each (8 bytes) followed by the object it
	// was in (4 bytes, an eventdb.ObjectRef; 0: not known),
	// little-endian: the map key is also the only copy of the stack.
	key   string
	count uint64
	// cost is the sum of the costs of its samples that carry one (a
	// deterministic sample's estimated cycles, in eventdb.SampleCost
	// units), costed how many do.
	cost, costed uint64
}

const (
	threadBytes = 4
	addrBytes   = 8
	frameBytes  = addrBytes + 4
)

func (s *sampledStack) thread() uint32 {
	return binary.LittleEndian.Uint32([]byte(s.key[:threadBytes]))
}

// depth is the number of addresses: the leaf and the return addresses.
func (s *sampledStack) depth() int { return (len(s.key) - threadBytes) / frameBytes }

// frame returns address i as a frame: 0 is the leaf, i > 0 the return
// address i-1.
func (s *sampledStack) frame(i int) frameAddr {
	b := []byte(s.key[threadBytes+i*frameBytes:][:frameBytes])
	return frameAddr{addr: binary.LittleEndian.Uint64(b), obj: binary.LittleEndian.Uint32(b[addrBytes:]), ret: i > 0}
}

// stackSet counts samples per distinct stack.
type stackSet struct {
	index   map[string]int // key → position in stacks
	stacks  []sampledStack
	samples uint64
	system  uint64        // samples taken in the VMM
	user    bool          // ...which are left out
	cost    uint64        // of all stacks
	costed  uint64        // samples with a cost
	span    time.Duration // the latest sample's record time
	key     []byte        // scratch
}

func newStackSet() *stackSet { return &stackSet{index: make(map[string]int)} }

func (s *stackSet) add(e *eventdb.Event) {
	if len(e.Args) > 1 && e.Args[1] == eventdb.SampleSystem {
		s.system++
		if s.user {
			return
		}
	}
	s.key = binary.LittleEndian.AppendUint32(s.key[:0], e.Thread)
	objs := e.SampleObjects()
	for i := range 1 + len(e.Stack) {
		addr := e.Addr
		if i > 0 {
			addr = e.Stack[i-1]
		}
		var obj uint32
		if i < len(objs) && objs[i] <= math.MaxUint32 {
			obj = uint32(objs[i])
		}
		s.key = binary.LittleEndian.AppendUint64(s.key, addr)
		s.key = binary.LittleEndian.AppendUint32(s.key, obj)
	}
	s.samples++
	s.span = max(s.span, e.Time)
	var cost, costed uint64
	if len(e.Args) > 0 && e.Args[0] > 0 {
		cost, costed = e.Args[0], 1
		s.cost += cost
		s.costed++
	}
	// The conversion in the index expression does not allocate; only a
	// new stack's key is copied.
	i, ok := s.index[string(s.key)]
	if !ok {
		k := string(s.key)
		i = len(s.stacks)
		s.index[k] = i
		s.stacks = append(s.stacks, sampledStack{key: k})
	}
	st := &s.stacks[i]
	st.count++
	st.cost += cost
	st.costed += costed
}

// scan reads the samples of run (of one thread if thread is set) into a
// stackSet. Threads' samples lie in separate key ranges and their stacks
// are distinct (the thread is part of the key), so the threads are read
// in parallel into sets of their own, which are then concatenated in
// thread order: reading and decoding the events is most of a profile's
// cost.
func scan(db *eventdb.DB, run uint32, thread *uint32, user bool) (*stackSet, error) {
	var threads []uint32
	if thread != nil {
		threads = []uint32{*thread}
	} else {
		var err error
		if threads, err = db.Threads(run, eventdb.KindSample); err != nil {
			return nil, fmt.Errorf("profile: list the sampled threads of run %d: %w", run, err)
		}
	}
	sets := make([]*stackSet, len(threads))
	errs := make([]error, len(threads))
	var next atomic.Int64 // the next thread to read
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(threads)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(threads); i = int(next.Add(1) - 1) {
				sets[i], errs[i] = scanThread(db, run, threads[i], user)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	all := newStackSet()
	for _, s := range sets {
		all.stacks = append(all.stacks, s.stacks...)
		all.samples += s.samples
		all.system += s.system
		all.cost += s.cost
		all.costed += s.costed
		all.span = max(all.span, s.span)
	}
	return all, nil
}

// scanThread reads the samples of one thread of run.
func scanThread(db *eventdb.DB, run, thread uint32, user bool) (*stackSet, error) {
	set := newStackSet()
	set.user = user
	it := db.Query(eventdb.Query{Run: run, Kinds: []eventdb.Kind{eventdb.KindSample}, Thread: &thread})
	for it.Next() {
		set.add(it.Event())
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("profile: read the samples of run %d thread %d: %w", run, thread, err)
	}
	return set, nil
}
