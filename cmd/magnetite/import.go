package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/magnetite-io/magnetite/internal/config"
	"github.com/magnetite-io/magnetite/internal/driver/builtin"
	"github.com/magnetite-io/magnetite/internal/driver/capi/inmemory"
	"github.com/magnetite-io/magnetite/internal/magnumimport"
	"github.com/magnetite-io/magnetite/internal/mgmt"
	"github.com/magnetite-io/magnetite/internal/model"
)

func importCommand(g *globalFlags) *cobra.Command {
	return group("import", "Take over what another service holds", importMagnumCommand(g))
}

func importMagnumCommand(g *globalFlags) *cobra.Command {
	var connection, magnumConf, helmPrefix, certDir string
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "magnum (--connection URL | --magnum-config /etc/magnum/magnum.conf) [--dry-run]",
		Short: "Import a Magnum's cluster templates, clusters, node groups, quotas and cluster CAs; running it again imports nothing twice",
		Long: `Reads Magnum's database (read-only) and writes into Magnetite's database, with
the same UUIDs, names, projects and fields: cluster templates, clusters with
their node groups, quotas, and each cluster's CAs where Magnum kept them in
its database (cert_manager_type = x509keypair).

Clusters come in read-only: Magnetite shows them, signs client certificates
with their CAs (openstack coe cluster config) and refuses to change or
delete them, saying why in status_reason. Templates of Magnum's Heat drivers
are imported and make no new clusters.

--dry-run prints every row of Magnum's and what would happen to it, without
writing. Stop magnum-conductor first (docs/deploy.md, "Moving from Magnum").`,
		Args: cobra.NoArgs,
		RunE: g.configured(func(cmd *cobra.Command, cfg *config.Config, _ []string) error {
			if connection == "" && magnumConf == "" {
				return errors.New("give Magnum's database as --connection URL or --magnum-config /etc/magnum/magnum.conf")
			}
			if connection == "" {
				var err error
				if connection, err = magnumimport.ConnectionFromConfig(magnumConf); err != nil {
					return err
				}
			}
			return importMagnum(cmd.Context(), cfg, connection, magnumimport.Options{DryRun: dryRun,
				CAPIHelmNamespacePrefix: helmPrefix, CertDir: certDir}, cmd.OutOrStdout())
		}),
	}
	cmd.Flags().StringVar(&connection, "connection", "", "Magnum's database, as magnum.conf's [database] connection (mysql+pymysql://user:password@host/magnum)")
	cmd.Flags().StringVar(&magnumConf, "magnum-config", "", "read Magnum's database connection from this magnum.conf")
	cmd.Flags().StringVar(&helmPrefix, "capi-helm-namespace-prefix", magnumimport.DefaultCAPIHelmNamespacePrefix, "magnum-capi-helm's [capi_helm] namespace_prefix, where it made its clusters' namespaces")
	cmd.Flags().StringVar(&certDir, "cert-dir", "", "CAs Magnum kept outside its database: a copy of its [certificates] storage_path (cert_manager_type = local), or Barbican containers exported as <container UUID>.crt, .key and .pass")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print what would be imported and what cannot be, and write nothing")
	return cmd
}

func importMagnum(ctx context.Context, cfg *config.Config, connection string, opts magnumimport.Options, out io.Writer) error {
	log, err := newLogger(cfg)
	if err != nil {
		return err
	}
	src, err := magnumimport.Connect(ctx, connection)
	if err != nil {
		return err
	}
	defer src.Close()
	st, _, err := openStore(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer st.Close()
	drivers, err := builtin.Registry(driverOptions(cfg), cfg.String("conductor", "infrastructure"), inmemory.Options{})
	if err != nil {
		return err
	}
	checkLabels := driverLabels(drivers)
	// The Cluster API objects of clusters magnum-cluster-api or
	// magnum-capi-helm built are looked for on the management cluster
	// Magnetite is configured with (they share it after a cut-over).
	var management magnumimport.ClusterAPIReader
	if cfg.String("management", "kubeconfig") != "" {
		opts := mgmt.OptionsFromConfig(cfg)
		opts.Kinds, opts.Log = drivers.Kinds(), log
		mc, err := mgmt.New(opts)
		if err != nil {
			return fmt.Errorf("management cluster: %w", err)
		}
		if err := mc.Discover(ctx); err != nil {
			return fmt.Errorf("management cluster: %w", err)
		}
		management = mc
	}
	opts.Management = management
	// The checks a template create gets from the API, where they need no
	// cloud: a driver for its (server_type, os_distro, coe), and labels
	// the schema accepts.
	opts.Unbuildable = func(ct *model.ClusterTemplate) string {
		if _, err := drivers.ForTemplate(ct, ""); err != nil {
			return err.Error()
		}
		if err := checkLabels(ct, ct.Labels); err != nil {
			return err.Error()
		}
		return ""
	}
	report, err := magnumimport.Run(ctx, src, st, opts)
	if report != nil {
		printImport(out, report)
	}
	if err != nil {
		return fmt.Errorf("%w; running the import again retries every row", err)
	}
	return nil
}

func printImport(out io.Writer, r *magnumimport.Report) {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tID\tNAME\tPROJECT\tOUTCOME\tREASON")
	for _, row := range r.Rows {
		outcome := string(row.Outcome)
		if r.DryRun && row.Outcome == magnumimport.Import {
			outcome = "would import"
		}
		reason := row.Reason
		if reason == "" {
			reason = row.Note
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", row.Kind, row.ID, orDash(row.Name), orDash(row.Project), outcome, reason)
	}
	tw.Flush()
	verb := "imported"
	if r.DryRun {
		verb = "would import"
	}
	fmt.Fprintf(out, "\n%s %d rows; %d already imported; %d refused; %d failed.\n", verb,
		r.Count(magnumimport.Import), r.Count(magnumimport.AlreadyImported), r.Count(magnumimport.Refused), r.Count(magnumimport.Failed))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
