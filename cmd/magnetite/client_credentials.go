package main

import (
	"github.com/spf13/cobra"

	"github.com/magnetite-io/magnetite/internal/client"
)

func credentialCommand(o *clientOptions) *cobra.Command {
	return group("credential", "Manage clusters' cloud credentials (openstack coe credential)", &cobra.Command{
		Use:   "rotate CLUSTER",
		Short: "Give a cluster a new application credential, made with your token; the old one is deleted once the cluster uses the new one",
		Args:  cobra.ExactArgs(1),
		RunE: o.connected(func(cmd *cobra.Command, c *client.Client, args []string) error {
			uuid, err := c.RotateCredential(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return o.accepted(cmd, c, waitFlags{}, uuid, "rotate the credentials of")
		}),
	})
}
