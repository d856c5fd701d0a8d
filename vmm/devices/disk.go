package devices

import (
	"encoding/binary"
	"errors"
	"hash/fnv"
	"sync"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/vmm/memory"
)

// Disk registers, as offsets from its base port.
const (
	diskSubmit   = 0 // write: GPA of a struct reprise_disk_req
	diskCapacity = 4 // read: capacity in sectors (0: no disk)
	// DiskPorts is how many ports the disk occupies.
	DiskPorts = 8
)

// Disk is a block device with DMA. The guest submits a request by writing
// the address of its descriptor; requests complete in submission order.
// A completion — read data written to guest memory, the status, the
// interrupt — happens at one instant that the machine chooses: Complete
// runs when the machine injects the completion interrupt, so recording can
// place it at a repeatable position and replay can apply it at the same one
// (docs/architecture.md, "Devices with DMA", after InSight).
//
// The host I/O runs on a worker goroutine, which raises the interrupt line
// when a result is ready. A disk built without a raise function is
// synchronous: Complete performs the oldest request itself. Replay uses
// that; since recording and replay perform the requests in the same order
// on a store that starts from the same base image, they read the same data.
//
// Every address in a descriptor is guest-controlled and checked: a bad
// request completes with REPRISE_DISK_ERROR; a descriptor that is not in
// RAM at all is dropped (there is nowhere to report to) and counted.
//
// The host keeps a request (up to 128 KiB of data) from its submission to
// its completion, and a guest with interrupts off never lets requests
// complete, so at most abi.DiskMaxQueued may be in flight: a submission
// beyond is refused at once, its status REPRISE_DISK_ERROR written during
// the submitting port write, with no interrupt. In-flight counts are the
// same in record and replay (completions happen at the same positions), so
// the same submissions are refused in both.
type Disk struct {
	ram   *memory.RAM
	store *DiskStore // nil: no disk attached
	raise func()     // nil: synchronous

	mu      sync.Mutex
	queue   []*diskRequest // guarded by mu: submitted, I/O not done
	done    []*diskRequest // guarded by mu: I/O done, awaiting Complete
	work    *sync.Cond     // signalled when queue grows or on Close
	closed  bool           // guarded by mu
	Dropped uint64         // descriptors outside RAM (vCPU thread only)
	Refused uint64         // submissions beyond abi.DiskMaxQueued (vCPU thread only)
}

type diskRequest struct {
	desc   uint64 // GPA of the descriptor
	op     uint32
	count  uint32
	sector uint64
	buf    uint64
	data   []byte // writes: captured at submission; reads: filled by the I/O
	status uint32
}

// ErrNoCompletion means the machine injected a disk interrupt with no
// completion to deliver: a machine bug, or a replay of a tape whose disk
// events do not belong to this guest.
var ErrNoCompletion = errors.New("devices: disk interrupt with no completed request")

// NewDisk attaches store (nil: no disk) to the guest's RAM. raise, if not
// nil, starts the host worker and is called each time a result is ready.
func NewDisk(ram *memory.RAM, store *DiskStore, raise func()) *Disk {
	d := &Disk{ram: ram, store: store, raise: raise}
	d.work = sync.NewCond(&d.mu)
	if raise != nil && store != nil {
		go d.worker()
	}
	return d
}

// Busy reports whether requests are submitted and not yet completed: a
// completion interrupt is still to come.
func (d *Disk) Busy() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.inFlightLocked() > 0
}

// inFlightLocked counts the requests submitted and not yet completed.
func (d *Disk) inFlightLocked() int { return len(d.queue) + len(d.done) }

// Close stops the worker. The store is the caller's.
func (d *Disk) Close() {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	d.work.Broadcast()
}

// PortRead returns the capacity (low 32 bits).
func (d *Disk) PortRead(port uint16, data []byte) {
	var v uint32
	if port == diskCapacity && d.store != nil {
		v = uint32(min(d.store.Sectors(), 1<<32-1))
	}
	putLE(data, v)
}

// PortWrite submits the request whose descriptor is at the written GPA.
func (d *Disk) PortWrite(port uint16, data []byte) error {
	if port != diskSubmit {
		return nil
	}
	r, ok := d.parse(uint64(le32(data)))
	if !ok {
		d.Dropped++
		return nil
	}
	d.mu.Lock()
	full := d.inFlightLocked() >= abi.DiskMaxQueued
	if !full {
		d.queue = append(d.queue, r)
	}
	d.mu.Unlock()
	if full {
		d.Refused++
		return d.putStatus(r.desc, abi.DiskError)
	}
	d.work.Signal()
	return nil
}

// putStatus writes a request's status into its descriptor.
func (d *Disk) putStatus(desc uint64, status uint32) error {
	var st [4]byte
	binary.LittleEndian.PutUint32(st[:], status)
	return d.ram.Write(desc+abi.DiskReqStatus, st[:])
}

// parse reads and validates a descriptor; a valid write captures its data
// now, at the guest's submission, where record and replay agree.
func (d *Disk) parse(gpa uint64) (*diskRequest, bool) {
	raw, err := d.ram.Slice(gpa, abi.DiskReqSize)
	if err != nil {
		return nil, false
	}
	r := &diskRequest{
		desc:   gpa,
		op:     binary.LittleEndian.Uint32(raw[0:]),
		count:  binary.LittleEndian.Uint32(raw[4:]),
		sector: binary.LittleEndian.Uint64(raw[8:]),
		buf:    binary.LittleEndian.Uint64(raw[16:]),
		status: abi.DiskError,
	}
	n := uint64(r.count) * SectorSize
	valid := d.store != nil && (r.op == abi.DiskRead || r.op == abi.DiskWrite) &&
		r.count >= 1 && r.count <= abi.DiskMaxSectors &&
		d.store.checkRange(r.sector, int(n)) == nil
	if !valid {
		return r, true
	}
	buf, err := d.ram.Slice(r.buf, n)
	if err != nil {
		return r, true
	}
	r.status = abi.DiskPending
	if r.op == abi.DiskWrite {
		r.data = append([]byte(nil), buf...)
	}
	return r, true
}

// perform does a request's host I/O.
func (d *Disk) perform(r *diskRequest) {
	if r.status != abi.DiskPending {
		return
	}
	var err error
	switch r.op {
	case abi.DiskRead:
		r.data = make([]byte, uint64(r.count)*SectorSize)
		err = d.store.ReadSectors(r.sector, r.data)
	case abi.DiskWrite:
		err = d.store.WriteSectors(r.sector, r.data)
	}
	r.status = abi.DiskOK
	if err != nil {
		r.status, r.data = abi.DiskError, nil
	}
}

func (d *Disk) worker() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for {
		for len(d.queue) == 0 && !d.closed {
			d.work.Wait()
		}
		if d.closed {
			return
		}
		r := d.queue[0]
		d.mu.Unlock()
		d.perform(r)
		d.mu.Lock()
		d.queue = d.queue[1:]
		d.done = append(d.done, r)
		d.mu.Unlock()
		d.raise()
		d.mu.Lock()
	}
}

// Complete delivers the oldest completion to guest memory — read data into
// the buffer, the status into the descriptor — and returns a digest of it
// (request, status, data) for the recording to keep and a replay to check.
// The machine calls it as it injects the disk interrupt.
func (d *Disk) Complete() ([]byte, error) {
	d.mu.Lock()
	var r *diskRequest
	switch {
	case d.raise == nil && len(d.queue) > 0:
		r, d.queue = d.queue[0], d.queue[1:]
		d.mu.Unlock()
		d.perform(r)
	case d.raise != nil && len(d.done) > 0:
		r, d.done = d.done[0], d.done[1:]
		more := len(d.done) > 0
		d.mu.Unlock()
		if more {
			// Edges coalesce in the controller: ask again for the next
			// one. The machine acknowledges the line before it calls
			// Complete, so this raise is not cleared with the current one.
			d.raise()
		}
	default:
		d.mu.Unlock()
		return nil, ErrNoCompletion
	}
	if r.op == abi.DiskRead && r.status == abi.DiskOK {
		if err := d.ram.Write(r.buf, r.data); err != nil {
			r.status = abi.DiskError
		}
	}
	if err := d.putStatus(r.desc, r.status); err != nil {
		return nil, err
	}
	return r.digest(), nil
}

func (r *diskRequest) digest() []byte {
	h := fnv.New64a()
	var b [32]byte
	binary.LittleEndian.PutUint32(b[0:], r.op)
	binary.LittleEndian.PutUint32(b[4:], r.count)
	binary.LittleEndian.PutUint64(b[8:], r.sector)
	binary.LittleEndian.PutUint64(b[16:], r.buf)
	binary.LittleEndian.PutUint32(b[24:], r.status)
	h.Write(b[:28])
	h.Write(r.data)
	return h.Sum(nil)
}
