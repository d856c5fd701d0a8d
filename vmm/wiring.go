package vmm

import (
	"errors"
	"fmt"
	"net"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/vmm/devices"
	"github.com/reprise-vm/reprise/vmm/door"
	"github.com/reprise-vm/reprise/vmm/netback"
)

// board is the machine's devices and their host sides. Booting fresh and
// restoring saved device state build it with the same code (attachDevices);
// a restore then applies the state (DeviceState).
type board struct {
	bus    devices.Bus
	serial *devices.Serial
	intc   *devices.Intc
	timer  *devices.Timer
	disk   *devices.Disk
	store  *devices.DiskStore // nil without a disk
	nic    *devices.NIC
	net    netback.Backend // nil without a network
}

// device is one entry of the machine's port map.
type device struct {
	name       string
	base, size uint16
	dev        devices.PortDevice
}

// devices lists the machine's port devices; DeviceConfig describes the
// same list for a tape header.
func (m *Machine) devices() []device {
	return []device{
		{"serial", abi.PortSerial, devices.SerialPorts, m.serial},
		{"exit", abi.PortExit, 1, devices.ExitPort{}},
		{"timer", abi.PortTimer, 1, m.timer},
		{"intc", abi.PortIntcMask, devices.IntcPorts, m.intc},
		{"null", abi.PortNull, 1, devices.Null{}},
		{"entropy", abi.PortEntropy, 4, devices.Entropy{}},
		{"disk", abi.PortDisk, devices.DiskPorts, m.disk},
		{"nic", abi.PortNICRXRing, devices.NICPorts, m.nic},
	}
}

// DeviceConfig describes the device model: name → "ports base+size".
func DeviceConfig() map[string]string {
	cfg := map[string]string{
		"hypercall": fmt.Sprintf("port %#x", abi.PortHcall),
		"swbc":      fmt.Sprintf("port %#x, page %#x", abi.PortSWBC, abi.SWBC),
		"clock":     fmt.Sprintf("page %#x", abi.Clock),
	}
	for _, d := range (&Machine{}).devices() {
		cfg[d.name] = fmt.Sprintf("ports %#x+%d", d.base, d.size)
	}
	return cfg
}

func (m *Machine) attachDevices() error {
	m.serial = &devices.Serial{Out: m.console}
	m.intc = devices.NewIntc(abi.IRQBase, m.kick)
	raise := func() {
		m.hostEvent(TimerFired, 0, 0)
		m.raise(abi.IRQTimer)
	}
	if m.cfg.Scripted {
		raise = nil // ticks come from the tape
	}
	m.timer = devices.NewTimer(raise, m.cfg.TimerJitter)
	if c := m.cfg.Disk; c != nil {
		var err error
		if m.store, err = devices.OpenDiskStore(c.Base, c.Overlay); err != nil {
			return err
		}
	}
	var raiseDisk func()
	if !m.cfg.Scripted {
		raiseDisk = func() { m.raise(abi.IRQDisk) } // replay: completions come from the tape
	}
	m.disk = devices.NewDisk(m.ram, m.store, raiseDisk)
	if err := m.attachNet(); err != nil {
		return err
	}
	for _, d := range m.devices() {
		if err := m.bus.Attach(d.name, d.base, d.size, d.dev); err != nil {
			return err
		}
	}
	if m.cfg.Devices != nil {
		return m.restoreDevices(m.cfg.Devices)
	}
	return nil
}

// attachNet opens the network backend (live and record) and builds the NIC.
//
// NIC interrupts are moderated, as on real NICs: a frame wakes an idle
// vCPU but does not kick a running one; it is delivered at the vCPU's next
// stop (its next exit with interrupts on, its idle HLT, a timer tick). A
// kick would cost a recording an extra exit per frame to reach a
// repeatable point; moderation lets frames arrive in batches at points the
// guest reaches anyway.
func (m *Machine) attachNet() error {
	raiseNIC := m.raiseNIC
	if c := m.cfg.Net; c != nil && !m.cfg.Scripted {
		// Assigned only on success: a nil *UDP in the interface would not
		// be a nil Backend.
		switch {
		case c.UDP != "" && c.Pcap != "":
			return errors.New("vmm: a NIC has one backend: a UDP address or a capture, not both")
		case c.UDP != "":
			u, err := netback.ListenUDP(c.UDP, raiseNIC)
			if err != nil {
				return err
			}
			m.net = u
		case c.Pcap != "":
			p, err := netback.OpenPcap(c.Pcap, raiseNIC)
			if err != nil {
				return err
			}
			m.net = p
		case len(c.Publish) > 0 || len(c.Egress) > 0:
			d, err := netback.OpenDoor(c.Publish, c.Egress, raiseNIC)
			if err != nil {
				return err
			}
			m.net = d
		}
	}
	// A replay's NIC has the recording's network behind it, its frames
	// from the tape.
	m.nic = devices.NewNIC(m.ram, m.Networked())
	m.nic.Send = func(frame []byte) error {
		if err := m.eng.NetTX(frame); err != nil {
			return err
		}
		return m.Transmit(frame)
	}
	m.nic.RXPosted = func() {
		if m.net != nil && m.net.Backlog() > 0 {
			raiseNIC()
		}
	}
	return nil
}

// raise asserts an interrupt line and kicks the vCPU to deliver it.
func (m *Machine) raise(line int) {
	m.hostEvent(IRQRaised, uint32(line), 0)
	m.intc.Raise(line)
}

// raiseNIC posts the NIC interrupt and wakes an idle vCPU (see attachNet).
func (m *Machine) raiseNIC() {
	m.hostEvent(IRQRaised, abi.IRQNIC, 0)
	m.intc.Post(abi.IRQNIC)
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// SendDoor sends a message a Kernel's program sent through the door:
// the engine logs it as the tape keeps it (Data by digest), the door
// takes it whole.
func (m *Machine) SendDoor(msg *door.Msg) error {
	if err := m.eng.NetTX(msg.Logged()); err != nil {
		return err
	}
	return m.Transmit(msg.Encode())
}

// Networked reports whether the machine has a network behind it: a
// backend, or in a replay the recording's.
func (m *Machine) Networked() bool { return m.net != nil || m.cfg.Scripted && m.cfg.Net != nil }

// NetAddr is the host address of a UDP network backend, or nil.
func (m *Machine) NetAddr() net.Addr {
	if u, ok := m.net.(*netback.UDP); ok {
		return u.Addr()
	}
	return nil
}
