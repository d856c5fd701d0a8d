package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/spf13/cobra"

	"github.com/reprise-vm/reprise/tape"
)

func newPcapCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "pcap TAPE -o FILE",
		Short: "Export a recording's network traffic (guest RX and TX) as a pcap file",
		Long: `Write every frame the guest received and sent during the recording to a
pcap file (Ethernet), each stamped with the host time at which it was
received or sent, for Wireshark, tshark or tcpdump. 'reprise record
--net-input FILE' feeds such a capture back to a guest.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return errors.New("pcap needs -o FILE")
			}
			n, err := exportPcap(args[0], out)
			if err != nil {
				return &exitError{exitFailure, err}
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "reprise: wrote %d frames to %s\n", n, out)
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "pcap file to write")
	return cmd
}

// exportPcap copies the tape's frames into a pcap file. A damaged tape is
// exported up to the damage, which is then reported.
func exportPcap(tapePath, out string) (int, error) {
	r, err := tape.Open(tapePath)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	f, err := os.Create(out)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	w := pcapgo.NewWriter(f)
	if err := w.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
		return 0, err
	}
	start := r.Header().Created
	n := 0
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			return n, f.Close()
		}
		if err != nil {
			return n, fmt.Errorf("%w (the %d frames before it were written)", err, n)
		}
		if ev.Kind != tape.KindNetRX && ev.Kind != tape.KindNetTX {
			continue
		}
		ci := gopacket.CaptureInfo{Timestamp: start.Add(time.Duration(ev.Value)), CaptureLength: len(ev.Data), Length: len(ev.Data)}
		if err := w.WritePacket(ci, ev.Data); err != nil {
			return n, err
		}
		n++
	}
}
