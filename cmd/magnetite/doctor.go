package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/magnetite-io/magnetite/internal/config"
	"github.com/magnetite-io/magnetite/internal/doctor"
	"github.com/magnetite-io/magnetite/internal/driver/builtin"
	"github.com/magnetite-io/magnetite/internal/mgmt"
	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/store"
)

func doctorCommand(g *globalFlags) *cobra.Command {
	var output string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check configuration, database, management cluster and cloud: PASS, WARN or FAIL, each with a one-line fix",
		Long: `doctor runs the checks an operator would otherwise walk through by hand before
Magnetite can build clusters, and prints PASS, WARN, FAIL or SKIP for each with
what it found and, when something is wrong, the fix. It changes nothing: the
database is opened read-only and never migrated. The exit status is non-zero
when any check fails.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "table" && output != "json" {
				return fmt.Errorf("--output must be table or json, got %q", output)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			rs := runDoctor(ctx, g)
			if err := printDoctor(cmd.OutOrStdout(), output, rs); err != nil {
				return err
			}
			if doctor.Failed(rs) {
				return fmt.Errorf("doctor: some checks failed; apply the fixes above and run it again")
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "table or json")
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Minute, "give up on checks still running after this long")
	return cmd
}

func printDoctor(w io.Writer, output string, rs []doctor.Result) error {
	if output == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rs)
	}
	return doctor.Print(w, rs)
}

// runDoctor runs every check that applies to the configuration, in the
// order an operator sets things up.
func runDoctor(ctx context.Context, g *globalFlags) []doctor.Result {
	cfg, err := loadConfig(g)
	rs := doctor.ConfigLoaded(cfg, err, configDirInUse(g))
	if err != nil {
		return rs
	}
	rs = append(rs, databaseChecks(ctx, cfg)...)
	rs = append(rs, managementChecks(ctx, cfg)...)
	rs = append(rs, adoptedChecks(ctx, cfg)...)
	rs = append(rs, addonChecks(ctx, cfg)...)
	rs = append(rs, cloudChecks(ctx, cfg)...)
	return append(rs, hostInventoryChecks(ctx, cfg)...)
}

// addonChecks check the chart source of the conductor's addons.
func addonChecks(ctx context.Context, cfg *config.Config) []doctor.Result {
	if !conductorWanted(cfg) {
		return []doctor.Result{{Check: "addon charts", Status: doctor.Skip, Detail: "no conductor runs here: nothing renders addons"}}
	}
	if cfg.String("conductor", "infrastructure") == "inmemory" && !cfg.Bool("conductor", "inmemory_addons") {
		return []doctor.Result{{Check: "addon charts", Status: doctor.Skip, Detail: "[conductor] infrastructure = inmemory without inmemory_addons: its clusters get no addons"}}
	}
	src, err := addonSource(cfg)
	if err != nil {
		return []doctor.Result{{Check: "addon charts", Status: doctor.Fail, Detail: err.Error(),
			Fix: "set [addons] source to upstream, an http(s):// or oci:// URL, or an absolute directory"}}
	}
	return []doctor.Result{doctor.AddonCharts(ctx, src)}
}

// hostInventoryChecks check the standalone Ironic behind /v1/hosts when
// [baremetal] backend = ironic.
func hostInventoryChecks(ctx context.Context, cfg *config.Config) []doctor.Result {
	if cfg.String("baremetal", "backend") != "ironic" {
		return nil
	}
	endpoint := cfg.String("baremetal", "ironic_endpoint")
	if endpoint == "" {
		return []doctor.Result{{Check: "ironic endpoint", Status: doctor.Fail, Detail: "[baremetal] backend is ironic but ironic_endpoint is empty",
			Fix: "set [baremetal] ironic_endpoint, e.g. http://ironic.example.com:6385"}}
	}
	hc := &http.Client{Timeout: cfg.Duration("baremetal", "ironic_timeout")}
	return []doctor.Result{doctor.IronicEndpoint(ctx, hc, endpoint)}
}

// configDirInUse is the drop-in directory loadConfig reads: the flag's, or
// the default one when it exists.
func configDirInUse(g *globalFlags) string {
	if g.configDir != "" {
		return g.configDir
	}
	if st, err := os.Stat(defaultConfigDir); err == nil && st.IsDir() {
		return defaultConfigDir
	}
	return ""
}

func databaseChecks(ctx context.Context, cfg *config.Config) []doctor.Result {
	db, where, err := connectStore(ctx, cfg, store.InspectSQLite, store.InspectMySQL)
	if err != nil {
		if where == "" {
			where = "[database] connection"
		}
		return []doctor.Result{doctor.DatabaseReachable(ctx, where, nil, err)}
	}
	defer db.Close()
	reach := doctor.DatabaseReachable(ctx, where, db, nil)
	if reach.Status == doctor.Fail {
		return []doctor.Result{reach}
	}
	migrated := doctor.DatabaseMigrated(ctx, db)
	if migrated.Status == doctor.Fail {
		return []doctor.Result{reach, migrated}
	}
	key := doctor.SecretKey{Configured: cfg.String("database", "secret_key") != ""}
	if !key.Configured && db.Dialect() == store.SQLite {
		key.Generated = filepath.Join(cfg.StateDir(), generatedKeyFile)
		if _, err := os.Stat(key.Generated); err != nil {
			key.Generated = ""
		}
	}
	return []doctor.Result{reach, migrated, doctor.DatabaseSecretsSealed(ctx, db, key)}
}

// managementChecks check the management cluster: kubeconfig, reachability,
// credentials, the served versions of the Cluster API kinds, and the
// provider controllers. Each step needs the one before it.
func managementChecks(ctx context.Context, cfg *config.Config) []doctor.Result {
	opts := managementOptions(cfg)
	_, inPod := os.LookupEnv("KUBERNETES_SERVICE_HOST")
	rs := []doctor.Result{doctor.Kubeconfig(opts.Kubeconfig, inPod)}
	if opts.Kubeconfig == "" && !inPod {
		return rs
	}
	client, err := mgmt.New(opts)
	if err != nil {
		if rs[0].Status == doctor.Fail {
			return rs // the kubeconfig check named the cause
		}
		return append(rs, doctor.Result{Check: "management client", Status: doctor.Fail, Detail: err.Error(),
			Fix: "correct the [management] option the message names"})
	}
	restCfg := client.RESTConfig()
	for _, check := range []func(context.Context, *rest.Config) doctor.Result{doctor.ManagementReachable, doctor.ManagementAuthenticated} {
		r := check(ctx, restCfg)
		if rs = append(rs, r); r.Status == doctor.Fail {
			return rs
		}
	}
	cs, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return append(rs, doctor.Result{Check: "controllers", Status: doctor.Fail, Detail: err.Error(), Fix: "see management kubeconfig"})
	}
	dyn, err := dynamic.NewForConfig(restCfg)
	if err != nil {
		return append(rs, doctor.Result{Check: "controllers", Status: doctor.Fail, Detail: err.Error(), Fix: "see management kubeconfig"})
	}
	rs = append(rs, doctor.ServedKinds(ctx, client, builtin.KindsByDriver(), doctor.FindProviders(ctx, cs, dyn))...)
	return append(rs, doctor.ProviderControllers(ctx, cs)...)
}

// adoptedChecks check the clusters adopted from Magnum's Cluster API
// drivers against the management cluster, when both the database and the
// management cluster can be read (their own checks report otherwise).
func adoptedChecks(ctx context.Context, cfg *config.Config) []doctor.Result {
	opts := managementOptions(cfg)
	if opts.Kubeconfig == "" {
		return nil
	}
	db, _, err := connectStore(ctx, cfg, store.InspectSQLite, store.InspectMySQL)
	if err != nil {
		return nil
	}
	defer db.Close()
	uuids, err := db.ClusterUUIDs(ctx)
	if err != nil {
		return nil
	}
	var clusters []*model.Cluster
	for _, id := range uuids {
		if c, err := db.GetClusterByUUID(ctx, id); err == nil {
			clusters = append(clusters, c)
		}
	}
	client, err := mgmt.New(opts)
	if err != nil {
		return nil
	}
	return []doctor.Result{doctor.AdoptedClusters(ctx, clusters, client)}
}

// cloudChecks check Keystone, the service endpoints in its catalog and the
// bare-metal flavors, when Magnetite authenticates against a cloud.
func cloudChecks(ctx context.Context, cfg *config.Config) []doctor.Result {
	if cfg.String("auth", "strategy") != "keystone" {
		return []doctor.Result{{Check: "keystone", Status: doctor.Skip,
			Detail: "[auth] strategy is noauth: no cloud configured, so no Keystone, endpoint or flavor checks"}}
	}
	ks := func(name string) string { return cfg.String("keystone_authtoken", name) }
	cloud := doctor.Cloud{
		AuthURL: ks("auth_url"), Username: ks("username"), Password: ks("password"), ProjectName: ks("project_name"),
		UserDomainName: ks("user_domain_name"), ProjectDomainName: ks("project_domain_name"),
		Region: ks("region_name"), CAFile: ks("cafile"), Timeout: cfg.Duration("keystone_authtoken", "http_timeout"),
	}
	hc, err := cloud.HTTPClient()
	if err != nil {
		return []doctor.Result{{Check: "keystone reachable", Status: doctor.Fail, Detail: err.Error(),
			Fix: "point [keystone_authtoken] cafile at a readable PEM bundle, or empty it to use the system's roots"}}
	}
	rs := []doctor.Result{doctor.KeystoneReachable(ctx, hc, cloud.AuthURL)}
	if rs[0].Status == doctor.Fail {
		return rs
	}
	login, provider := doctor.ServiceCredentials(ctx, hc, cloud)
	rs = append(rs, login)
	if provider == nil {
		return rs
	}
	if cfg.String("cluster_credentials", "enabled") != "false" {
		rs = append(rs, doctor.CredentialCleanup(provider, cloud.Username))
	}
	rs = append(rs, doctor.ServiceEndpoints(ctx, hc, provider, cloud.Region)...)
	return append(rs, doctor.BareMetalFlavors(ctx, provider, cloud.Region))
}
