// Command magnetite serves the OpenStack Magnum v1 API for Cluster API
// clouds and carries the operator's and user's tools.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/magnetite-io/magnetite/internal/config"
	"github.com/magnetite-io/magnetite/internal/version"
)

func main() {
	if err := rootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "magnetite:", err)
		os.Exit(1)
	}
}

// globalFlags are shared by every subcommand that reads configuration.
type globalFlags struct {
	configFile string
	configDir  string
}

// group is a command that only holds subcommands.
func group(use, short string, subs ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{Use: use, Short: short}
	cmd.AddCommand(subs...)
	return cmd
}

// configured is a command's RunE that loads the configuration first and
// hands do the result.
func (g *globalFlags) configured(do func(cmd *cobra.Command, cfg *config.Config, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		cfg, err := loadConfig(g)
		if err != nil {
			return err
		}
		return do(cmd, cfg, args)
	}
}

func rootCommand() *cobra.Command {
	g := &globalFlags{}
	root := &cobra.Command{
		Use:           "magnetite",
		Short:         "Kubernetes clusters on OpenStack, VMs and bare metal, through the Magnum v1 API",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.String(),
	}
	root.PersistentFlags().StringVar(&g.configFile, "config-file", "", "INI configuration file (default: /etc/magnetite/magnetite.conf when it exists)")
	root.PersistentFlags().StringVar(&g.configDir, "config-dir", "", "drop-in directory of *.conf files read after the config file (default: /etc/magnetite/magnetite.conf.d when it exists)")
	root.AddCommand(serveCommand(g), configCommand(g))
	root.AddCommand(doctorCommand(g), addonsCommand(g))
	root.AddCommand(clientCommands()...)
	root.AddCommand(renderCommand(), versionCommand(), keystoneCommand(g), importCommand(g))
	return root
}
