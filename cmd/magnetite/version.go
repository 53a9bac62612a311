package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/magnetite-io/magnetite/internal/store"
	"github.com/magnetite-io/magnetite/internal/version"
)

// versionCommand prints what an operator compares across replicas during an
// upgrade: the build and the database schema it migrates to.
func versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print Magnetite's version and the database schema version it runs",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "magnetite %s\nschema %d (sqlite), %d (mysql)\ngo %s %s/%s\n",
				version.String(), store.LatestVersion(store.SQLite), store.LatestVersion(store.MySQL),
				runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		},
	}
}
