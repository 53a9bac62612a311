package main

import (
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/magnetite-io/magnetite/internal/config"
)

const (
	defaultConfigFile = "/etc/magnetite/magnetite.conf"
	defaultConfigDir  = "/etc/magnetite/magnetite.conf.d"
)

// loadConfig reads the configuration the flags point at; the default
// locations are optional, explicit ones must exist.
func loadConfig(g *globalFlags) (*config.Config, error) {
	file, dir := g.configFile, g.configDir
	if file == "" {
		if _, err := os.Stat(defaultConfigFile); err == nil {
			file = defaultConfigFile
		}
	}
	if dir == "" {
		if _, err := os.Stat(defaultConfigDir); err == nil {
			dir = defaultConfigDir
		}
	} else if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("config: drop-in directory %s does not exist", dir)
	}
	return config.Load(file, dir, os.Environ())
}

func configCommand(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "config", Short: "Inspect Magnetite's configuration"}
	cmd.AddCommand(&cobra.Command{
		Use:   "show",
		Short: "Print the effective configuration, each value with its source (secrets masked)",
		RunE: g.configured(func(cmd *cobra.Command, cfg *config.Config, _ []string) error {
			out := cmd.OutOrStdout()
			if len(cfg.Files) > 0 {
				fmt.Fprintf(out, "# files read, in order: %s\n", strings.Join(cfg.Files, ", "))
			} else {
				fmt.Fprintln(out, "# no configuration files read; built-in defaults apply")
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SECTION\tOPTION\tVALUE\tSOURCE")
			for _, v := range cfg.Effective() {
				val := v.Value
				if v.Secret && val != "" {
					val = maskSecret(val)
				}
				if val == "" {
					val = `""`
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", v.Section, v.Name, val, v.Source)
			}
			return tw.Flush()
		}),
	})
	return cmd
}

// maskSecret hides passwords inside URLs and anything else entirely.
func maskSecret(v string) string {
	if i := strings.Index(v, "://"); i >= 0 {
		rest := v[i+3:]
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			cred := rest[:at]
			if user, _, ok := strings.Cut(cred, ":"); ok {
				return v[:i+3] + user + ":***@" + rest[at+1:]
			}
		}
		return v
	}
	return "***"
}
