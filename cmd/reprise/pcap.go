package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/reprise-vm/reprise/linux/vfs"
	"github.com/reprise-vm/reprise/netcap"
	"github.com/reprise-vm/reprise/replayer"
	"github.com/reprise-vm/reprise/tape"
	"github.com/reprise-vm/reprise/vmm"
	"github.com/reprise-vm/reprise/vmm/door"
)

func newPcapCmd() *cobra.Command {
	var (
		out      string
		internal bool
	)
	cmd := &cobra.Command{
		Use:   "pcap TAPE -o FILE [--internal]",
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
this replays the recording to see it again (checked, as any replay).
With --internal, also the traffic between the program's own internet
sockets on its loopback (127.0.0.1, ::1), which the tape does not hold
at all: the replay makes it again as the recording did — TCP connections
(handshake, bytes, FIN or RST) and UDP datagrams, on a loopback device
with no hardware addresses. (AF_UNIX traffic is not IP: not written.)`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return errors.New("pcap needs -o FILE")
			}
			n, err := exportPcap(cmd.Context(), args[0], out, internal)
			if err != nil {
				return &exitError{exitFailure, err}
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "reprise: wrote %d packets to %s\n", n, out)
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "pcap file to write")
	cmd.Flags().BoolVar(&internal, "internal", false, "a Linux program's: also its loopback traffic, between its own sockets")
	return cmd
}

// exportPcap writes the tape's traffic to the pcap file out; internal
// adds a Linux program's loopback traffic.
func exportPcap(ctx context.Context, tapePath, out string, internal bool) (int, error) {
	r, err := tape.Open(tapePath)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	linux := r.Header().Linux != nil
	if internal && !linux {
		return 0, fmt.Errorf("%s records a guest image: --internal is a Linux program's loopback (a guest's own traffic never reaches its NIC)", tapePath)
	}
	f, err := os.Create(out)
	if err != nil {
		return 0, err
	}
	var n int
	if linux {
		n, err = writeLinuxPcap(ctx, tapePath, r, f, internal)
	} else {
		n, err = tape.WritePcap(r, f)
	}
	return n, errors.Join(err, f.Close())
}

// writeLinuxPcap writes a Linux program's published connections (and,
// internal, its loopback traffic), replaying the recording: the tape keeps
// what the program sent only by digest, and its loopback not at all. The
// packets go in the order the program received and sent them, each
// stamped no earlier than the one before (a sent one's time is its
// position's, estimated between logged events).
func writeLinuxPcap(ctx context.Context, tapePath string, r *tape.Reader, w io.Writer, internal bool) (int, error) {
	c, err := netcap.New(w)
	if err != nil {
		return 0, err
	}
	start, last := r.Header().Created, time.Duration(0)
	stamp := func(at time.Duration) time.Time {
		last = max(last, at)
		return start.Add(last)
	}
	o := replayer.Options{Tape: tapePath, Console: io.Discard,
		OnFrame: func(frame []byte, sent bool, _ vmm.Position, at time.Duration) error {
			m, err := door.Parse(frame)
			if err != nil {
				return err
			}
			return c.WriteDoor(m, sent, stamp(at))
		}}
	var werr error // the first the capture met: the replay goes on, checked
	if internal {
		o.OnLoopback = func(p vfs.Packet, _ vmm.Position, at time.Duration) {
			if werr == nil {
				werr = writeLoopback(c, p, stamp(at))
			}
		}
	}
	if _, err = replayer.Replay(ctx, o); err != nil {
		return c.Packets, fmt.Errorf("replaying %s for what the program sent: %w", tapePath, err)
	}
	return c.Packets, werr
}

// writeLoopback adds a packet between the program's own sockets.
func writeLoopback(c *netcap.Capture, p vfs.Packet, at time.Time) error {
	switch p.Op {
	case vfs.PacketConnect:
		return c.Connect(p.From, p.To, at)
	case vfs.PacketData:
		return c.Stream(p.From, p.To, p.Data, at)
	case vfs.PacketFin, vfs.PacketReset:
		return c.End(p.From, p.To, p.Op == vfs.PacketReset, at)
	case vfs.PacketDatagram:
		return c.Datagram(p.From, p.To, p.Data, at)
	}
	return fmt.Errorf("loopback packet of op %d", p.Op)
}
