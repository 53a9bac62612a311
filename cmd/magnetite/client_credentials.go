package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/magnetite-io/magnetite/internal/apitypes"
	"github.com/magnetite-io/magnetite/internal/client"
)

func credentialCommand(o *clientOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "credential", Short: "Manage clusters' cloud credentials (openstack coe credential)"}
	cmd.AddCommand(&cobra.Command{
		Use:   "rotate CLUSTER",
		Short: "Give a cluster a new application credential, made with your token; the old one is deleted once the cluster uses the new one",
		Args:  cobra.ExactArgs(1),
		RunE: o.connected(func(cmd *cobra.Command, c *client.Client, args []string) error {
			uuid, err := c.RotateCredential(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if o.output != "table" {
				return o.printObject(cmd.OutOrStdout(), apitypes.ClusterID{UUID: uuid})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Request to rotate the credentials of cluster %s has been accepted.\n", uuid)
			return nil
		}),
	})
	return cmd
}
