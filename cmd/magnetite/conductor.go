package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/magnetite-io/magnetite/internal/addons/charts"
	"github.com/magnetite-io/magnetite/internal/api"
	"github.com/magnetite-io/magnetite/internal/auth"
	"github.com/magnetite-io/magnetite/internal/conductor"
	"github.com/magnetite-io/magnetite/internal/config"
	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/driver/builtin"
	"github.com/magnetite-io/magnetite/internal/metrics"
	"github.com/magnetite-io/magnetite/internal/mgmt"
	"github.com/magnetite-io/magnetite/internal/store"
)

// conductorWanted decides whether this process runs the conductor.
func conductorWanted(cfg *config.Config) bool {
	switch cfg.String("conductor", "enabled") {
	case "true":
		return true
	case "false":
		return false
	}
	if cfg.String("management", "kubeconfig") != "" {
		return true
	}
	_, inPod := os.LookupEnv("KUBERNETES_SERVICE_HOST")
	return inPod
}

// startConductor connects to the management cluster and runs the conductor
// until ctx ends. It returns the conductor (to wake it when the API queues
// work) or nil when this process runs none.
func startConductor(ctx context.Context, cfg *config.Config, st *store.DB, drivers *driver.Registry, reg *metrics.Registry, host string, creds conductor.CloudCredentials, facts conductor.FactsSource, log *slog.Logger) (*conductor.Conductor, error) {
	if !conductorWanted(cfg) {
		log.Warn("no management cluster configured: requests are recorded and clusters stay in their *_IN_PROGRESS state until a conductor runs; set [management] kubeconfig")
		return nil, nil
	}
	opts := mgmt.OptionsFromConfig(cfg)
	opts.Kinds = drivers.Kinds()
	opts.Log = log
	mc, err := mgmt.New(opts)
	if err != nil {
		return nil, fmt.Errorf("management cluster: %w", err)
	}
	src, err := addonSource(cfg)
	if err != nil {
		return nil, err
	}
	c := conductor.New(conductor.Options{
		Addons: src,
		Store:  st, Mgmt: mc, Drivers: drivers, Log: log.With("component", "conductor"),
		Owner:          fmt.Sprintf("%s/%d", host, os.Getpid()),
		Lease:          cfg.Duration("conductor", "lease"),
		Workers:        cfg.Int("conductor", "workers"),
		Metrics:        reg,
		Credentials:    creds,
		Facts:          facts,
		KeepNamespaces: !cfg.Bool("management", "delete_empty_namespaces"),
	})
	go c.ProbeManagement(ctx)
	go func() {
		// The management cluster may come up after Magnetite: keep trying.
		wait := 2 * time.Second
		for ctx.Err() == nil {
			err := c.Run(ctx)
			if err == nil || ctx.Err() != nil {
				return
			}
			log.Error("conductor cannot start; retrying", "error", err, "retry_in", wait)
			if conductor.Sleep(ctx, wait) != nil {
				return
			}
			wait = min(2*wait, time.Minute)
		}
	}()
	go reportAlive(ctx, st, log, host, "magnum-conductor", cfg.Duration("services", "report_interval"))
	return c, nil
}

// managementOptions are the management client's options from [management]
// with the kinds of every driver's infrastructure (see package kinds), for
// the commands that build a client without a conductor.
func managementOptions(cfg *config.Config) mgmt.Options {
	opts := mgmt.OptionsFromConfig(cfg)
	opts.Kinds = builtin.Kinds()
	return opts
}

// addonSource is where the conductor pulls addon charts from.
func addonSource(cfg *config.Config) (*charts.Source, error) {
	src, err := charts.ParseSource(cfg.String("addons", "source"), cfg.Duration("addons", "timeout"))
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	src.PlainHTTP = cfg.Bool("addons", "oci_plain_http")
	return src, nil
}

// cloudCredentials is how the conductor writes clusters' application
// credentials into their Secrets, and deletes them with Magnetite's service
// token.
func cloudCredentials(cfg *config.Config, ks *auth.Keystone) (conductor.CloudCredentials, error) {
	if ks == nil {
		return conductor.CloudCredentials{}, nil
	}
	cc := conductor.CloudCredentials{
		Keystone:   ks,
		AuthURL:    cfg.String("cluster_credentials", "auth_url"),
		RegionName: cfg.String("cluster_credentials", "region_name"),
		Interface:  cfg.String("cluster_credentials", "interface"),
	}
	if cc.AuthURL == "" {
		cc.AuthURL = ks.PublicAuthURL()
	}
	if cc.RegionName == "" {
		cc.RegionName = ks.RegionName()
	}
	if f := cfg.String("cluster_credentials", "cafile"); f != "" {
		pem, err := os.ReadFile(f)
		if err != nil {
			return cc, fmt.Errorf("config: [cluster_credentials] cafile: %w", err)
		}
		cc.CACert = pem
	}
	return cc, nil
}

// credentialIssuer is the API's maker of application credentials; nil when
// clusters get none.
func credentialIssuer(ks *auth.Keystone) api.CredentialIssuer {
	if ks == nil {
		return nil
	}
	return ks
}
