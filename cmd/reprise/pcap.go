package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/reprise-vm/reprise/replayer"
	"github.com/reprise-vm/reprise/tape"
	"github.com/reprise-vm/reprise/vmm"
	"github.com/reprise-vm/reprise/vmm/door"
)

func newPcapCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "pcap TAPE -o FILE",
		Short: "Export a recording's network traffic as a pcap file",
		Long: `Write a recording's network traffic to a pcap file (Ethernet) for
Wireshark, tshark or tcpdump, each packet stamped with the host time of the
recording at which it was received or sent.

A guest image's: every frame its NIC received and sent. 'reprise record
--net-input FILE' feeds such a capture back to a guest.

A Linux program's: the connections host clients made to its published
ports, as the TCP conversations they were (the handshake, every byte each
way at its place in the stream, the ends; headers synthesised, the program
at 10.0.2.15). The tape keeps what the program sent only by digest, so
this replays the recording to see it again (checked, as any replay).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return errors.New("pcap needs -o FILE")
			}
			n, err := exportPcap(cmd.Context(), args[0], out)
			if err != nil {
				return &exitError{exitFailure, err}
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "reprise: wrote %d packets to %s\n", n, out)
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "pcap file to write")
	return cmd
}

// exportPcap writes the tape's traffic to the pcap file out.
func exportPcap(ctx context.Context, tapePath, out string) (int, error) {
	r, err := tape.Open(tapePath)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	f, err := os.Create(out)
	if err != nil {
		return 0, err
	}
	var n int
	if r.Header().Linux != nil {
		n, err = writeDoorPcap(ctx, tapePath, r, f)
	} else {
		n, err = tape.WritePcap(r, f)
	}
	return n, errors.Join(err, f.Close())
}

// writeDoorPcap writes a Linux program's published connections, replaying
// the recording: the tape keeps what the program sent only by digest. The
// messages go in the order the program received and sent them, each
// stamped no earlier than the one before (a sent one's time is its
// position's, estimated between logged events).
func writeDoorPcap(ctx context.Context, tapePath string, r *tape.Reader, w io.Writer) (int, error) {
	c, err := door.NewCapture(w)
	if err != nil {
		return 0, err
	}
	start, last := r.Header().Created, time.Duration(0)
	_, err = replayer.Replay(ctx, replayer.Options{Tape: tapePath, Console: io.Discard,
		OnFrame: func(frame []byte, sent bool, _ vmm.Position, at time.Duration) error {
			m, err := door.Parse(frame)
			if err != nil {
				return err
			}
			last = max(last, at)
			return c.Write(m, sent, start.Add(last))
		}})
	if err != nil {
		return c.Packets, fmt.Errorf("replaying %s for what the program sent: %w", tapePath, err)
	}
	return c.Packets, nil
}
