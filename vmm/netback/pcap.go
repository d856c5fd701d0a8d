package netback

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/reprise-vm/reprise/host/userfile"
)

// Pcap feeds the Ethernet frames of a capture file to the guest, at the
// capture's own pace (each frame at its offset from the first), starting
// when the backend is created. IPv4 frames are readdressed to come from
// the host side to the guest (MACs and IPs; ports are kept), so a capture
// taken anywhere reaches the guest's UDP stack. Frames the guest sends have
// nowhere to go and are counted.
type Pcap struct {
	queue
	stop   chan struct{}
	done   chan struct{}
	Unsent uint64
}

// MaxCaptureBytes bounds a capture fed to the guest: it is read whole,
// before the guest starts, so its errors come first.
const MaxCaptureBytes = 256 << 20

// OpenPcap reads the capture at path and starts feeding it.
func OpenPcap(path string, raise func()) (*Pcap, error) {
	f, st, err := userfile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("netback: capture: %w", err)
	}
	defer f.Close()
	if st.Size() > MaxCaptureBytes {
		return nil, fmt.Errorf("netback: capture %s is %d bytes, more than the %d this reads", path, st.Size(), MaxCaptureBytes)
	}
	r, err := pcapgo.NewReader(io.LimitReader(f, MaxCaptureBytes))
	if err != nil {
		return nil, fmt.Errorf("netback: capture %s: %w", path, err)
	}
	if r.LinkType() != layers.LinkTypeEthernet {
		return nil, fmt.Errorf("netback: capture %s has link type %v; only Ethernet captures can be fed to the NIC", path, r.LinkType())
	}
	type packet struct {
		data []byte
		at   time.Time
	}
	var pkts []packet
	for {
		data, ci, err := r.ReadPacketData()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("netback: capture %s, packet %d: %w", path, len(pkts)+1, err)
		}
		pkts = append(pkts, packet{data: readdress(data), at: ci.Timestamp})
	}
	p := &Pcap{queue: queue{raise: raise}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		start := time.Now()
		for _, pk := range pkts {
			wait := time.Until(start.Add(pk.at.Sub(pkts[0].at)))
			select {
			case <-p.stop:
				return
			case <-time.After(wait):
			}
			p.push(Frame{Data: pk.data, At: time.Now()})
		}
	}()
	return p, nil
}

// readdress rewrites an IPv4 frame to come from the host side to the guest,
// fixing lengths and checksums; other frames pass unchanged.
func readdress(frame []byte) []byte {
	p := gopacket.NewPacket(frame, layers.LayerTypeEthernet, gopacket.Default)
	eth, _ := p.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
	ip, _ := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	if eth == nil || ip == nil {
		return frame
	}
	eth.SrcMAC, eth.DstMAC = HostMAC, GuestMAC
	ip.SrcIP, ip.DstIP = HostIP, GuestIP
	ls := []gopacket.SerializableLayer{eth, ip}
	if udp, ok := p.Layer(layers.LayerTypeUDP).(*layers.UDP); ok {
		_ = udp.SetNetworkLayerForChecksum(ip)
		ls = append(ls, udp, gopacket.Payload(udp.Payload))
	} else {
		ls = append(ls, gopacket.Payload(ip.Payload))
	}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		return frame
	}
	return buf.Bytes()
}

// Send drops the guest's frame: a capture has no one to answer.
func (p *Pcap) Send(frame []byte) error {
	p.Unsent++
	return nil
}

// Close stops feeding.
func (p *Pcap) Close() error {
	close(p.stop)
	<-p.done
	return nil
}
