package tape

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// WritePcap copies a tape's frames — everything the guest received and
// sent — into a pcap stream, each stamped with the host time it was
// received or sent during the recording. A damaged tape is exported up to
// the damage, which is then returned.
func WritePcap(r *Reader, out io.Writer) (frames int, err error) {
	w := pcapgo.NewWriter(out)
	if err := w.WriteFileHeader(MaxFrame, layers.LinkTypeEthernet); err != nil {
		return 0, err
	}
	start := r.Header().Created
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			return frames, nil
		}
		if err != nil {
			return frames, fmt.Errorf("%w (the %d frames before it were written)", err, frames)
		}
		if ev.Kind != KindNetRX && ev.Kind != KindNetTX {
			continue
		}
		ci := gopacket.CaptureInfo{Timestamp: start.Add(time.Duration(ev.Value)), CaptureLength: len(ev.Data), Length: len(ev.Data)}
		if err := w.WritePacket(ci, ev.Data); err != nil {
			return frames, err
		}
		frames++
	}
}
