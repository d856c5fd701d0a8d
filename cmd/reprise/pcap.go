package main

import (
	"errors"
	"fmt"
	"os"

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

// exportPcap writes the tape's frames to the pcap file out.
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
	n, err := tape.WritePcap(r, f)
	return n, errors.Join(err, f.Close())
}
