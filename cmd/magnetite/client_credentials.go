package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/magnetite-io/magnetite/internal/apitypes"
)

func credentialCommand(o *clientOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "credential", Short: "Manage clusters' cloud credentials (openstack coe credential)"}
	cmd.AddCommand(&cobra.Command{
		Use:   "rotate CLUSTER",
		Short: "Give a cluster a new application credential, made with your token; the old one is deleted once the cluster uses the new one",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.connect(cmd)
			if err != nil {
				return err
			}
			uuid, err := c.RotateCredential(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if o.output != "table" {
				return o.printObject(cmd.OutOrStdout(), apitypes.ClusterID{UUID: uuid})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Request to rotate the credentials of cluster %s has been accepted.\n", uuid)
			return nil
		},
	})
	return cmd
}
