package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/reprise-vm/reprise/guest"
)

func newWorkloadsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "workloads",
		Short: "List the workloads bundled in the guest kit",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			for _, w := range guest.Workloads() {
				fmt.Fprintf(tw, "%s\t%s\n", w.Name, w.Description)
			}
			return tw.Flush()
		},
	}
}
