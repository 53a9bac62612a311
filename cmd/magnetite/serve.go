package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/magnetite-io/magnetite/internal/api"
	"github.com/magnetite-io/magnetite/internal/auth"
	"github.com/magnetite-io/magnetite/internal/baremetal/backend"
	"github.com/magnetite-io/magnetite/internal/capacity"
	"github.com/magnetite-io/magnetite/internal/certs"
	"github.com/magnetite-io/magnetite/internal/cloud"
	"github.com/magnetite-io/magnetite/internal/conductor"
	"github.com/magnetite-io/magnetite/internal/config"
	"github.com/magnetite-io/magnetite/internal/driver/builtin"
	"github.com/magnetite-io/magnetite/internal/driver/capi"
	"github.com/magnetite-io/magnetite/internal/driver/capi/inmemory"
	"github.com/magnetite-io/magnetite/internal/logging"
	"github.com/magnetite-io/magnetite/internal/metrics"
	"github.com/magnetite-io/magnetite/internal/store"
)

func serveCommand(g *globalFlags) *cobra.Command {
	var listen string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the Magnum v1 API (SQLite and noauth unless configured otherwise)",
		RunE: g.configured(func(cmd *cobra.Command, cfg *config.Config, _ []string) error {
			if listen != "" {
				cfg.Override("api", "listen", listen, "flag --listen")
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return serve(ctx, cfg, nil)
		}),
	}
	cmd.Flags().StringVar(&listen, "listen", "", "address:port to listen on (overrides [api] listen)")
	return cmd
}

// newLogger builds the [log] logger; lines logged while serving a request
// carry its request_id.
func newLogger(cfg *config.Config) (*slog.Logger, error) {
	return logging.New(os.Stderr, cfg.String("log", "format"), cfg.String("log", "level"))
}

// openStore opens the configured database, creating and migrating it, in
// a state directory only its owner can read.
func openStore(ctx context.Context, cfg *config.Config, log *slog.Logger) (*store.DB, string, error) {
	if err := privateDir(cfg.StateDir()); err != nil {
		return nil, "", err
	}
	st, where, err := connectStore(ctx, cfg, store.OpenSQLite, store.OpenMySQL)
	if err != nil {
		return nil, "", err
	}
	if err := sealSecrets(ctx, cfg, st, log); err != nil {
		st.Close()
		return nil, "", err
	}
	return st, where, nil
}

// privateDir makes the state directory, or takes every permission but its
// owner's from the one that exists: it holds the database and the key that
// seals its secrets.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create the state directory %s: %w", dir, err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(dir, fi.Mode().Perm()&0o700); err != nil {
			return fmt.Errorf("the state directory %s is open to other users (mode %v) and its mode cannot be changed: %w; make it 0700 or set [DEFAULT] state_dir to a private directory", dir, fi.Mode().Perm(), err)
		}
	}
	return nil
}

// generatedKeyFile is where a key is kept that Magnetite generated because
// [database] secret_key is not set.
const generatedKeyFile = "secret_key"

// sealSecrets turns on sealing of the database's secrets, and seals those
// written before. The key is [database] secret_key; when it is not set, a
// SQLite database (one process owns it) gets a key generated on first
// start and kept in the state directory, so secrets are sealed by default.
// Replicas sharing MariaDB must share one key, which only the operator can
// give them: without [database] secret_key their secrets stay unsealed, as
// the log and doctor say.
func sealSecrets(ctx context.Context, cfg *config.Config, st *store.DB, log *slog.Logger) error {
	k := cfg.String("database", "secret_key")
	if k == "" && st.Dialect() == store.SQLite {
		path := filepath.Join(cfg.StateDir(), generatedKeyFile)
		var generated bool
		var err error
		if k, generated, err = generatedKey(path); err != nil {
			return err
		}
		if generated {
			log.Info("generated the key that seals the database's secrets; back it up with the database, or set [database] secret_key", "path", path)
		}
	}
	if k == "" {
		log.Warn("the database's secrets (clusters' CA keys, application credential secrets) are stored unsealed: set [database] secret_key, the same on every replica")
		return nil
	}
	key, err := base64.StdEncoding.DecodeString(k)
	if err != nil {
		return fmt.Errorf("config: [database] secret_key: %w", err)
	}
	if err := st.SealSecrets(key); err != nil {
		return err
	}
	if _, err := st.SealExisting(ctx); err != nil {
		return fmt.Errorf("seal the secrets written before [database] secret_key was set: %w", err)
	}
	return nil
}

// generatedKey reads the key kept at path, or generates one there (0600)
// when there is none.
func generatedKey(path string) (key string, generated bool, err error) {
	b, err := os.ReadFile(path)
	if err == nil {
		key = strings.TrimSpace(string(b))
		if raw, err := base64.StdEncoding.DecodeString(key); err != nil || len(raw) != 32 {
			return "", false, fmt.Errorf("%s does not hold a secret key (32 random bytes, base64-encoded); restore it from the backup of this database, or set [database] secret_key", path)
		}
		return key, false, os.Chmod(path, 0o600)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", false, err
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", false, err
	}
	key = base64.StdEncoding.EncodeToString(raw)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", false, fmt.Errorf("keep the generated secret key: %w", err)
	}
	if _, err := f.WriteString(key + "\n"); err != nil {
		f.Close()
		return "", false, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return "", false, err
	}
	return key, true, f.Close()
}

// connectStore opens the configured database with the opener of its
// backend: openStore's create-and-migrate, or doctor's inspect-only.
func connectStore(ctx context.Context, cfg *config.Config, sqlite, mysql func(context.Context, string) (*store.DB, error)) (*store.DB, string, error) {
	conn := cfg.String("database", "connection")
	if conn == "" {
		path := filepath.Join(cfg.StateDir(), "magnetite.db")
		st, err := sqlite(ctx, path)
		return st, "sqlite " + path, err
	}
	switch {
	case strings.HasPrefix(conn, "sqlite://"):
		// sqlite:///abs/path and oslo.db's sqlite:////abs/path name the
		// same file.
		path := filepath.Clean(strings.TrimPrefix(conn, "sqlite://"))
		if !filepath.IsAbs(path) {
			return nil, "", fmt.Errorf("config: [database] connection %q names no absolute path; write sqlite:////absolute/path/magnetite.db", conn)
		}
		st, err := sqlite(ctx, path)
		return st, "sqlite " + path, err
	case strings.HasPrefix(conn, "mysql://"), strings.HasPrefix(conn, "mysql+pymysql://"), strings.HasPrefix(conn, "mariadb://"):
		st, err := mysql(ctx, conn)
		return st, "mysql", err
	}
	return nil, "", fmt.Errorf("config: [database] connection has an unsupported scheme; use sqlite:///path/to/magnetite.db or mysql://user:password@host:port/db")
}

// serve runs the API until ctx ends. ready, when not nil, receives the bound
// address once the listener is open.
func serve(ctx context.Context, cfg *config.Config, ready chan<- string) error {
	log, err := newLogger(cfg)
	if err != nil {
		return err
	}
	return serveLogging(ctx, cfg, log, ready)
}

// serveLogging is serve with the logger given.
func serveLogging(ctx context.Context, cfg *config.Config, log *slog.Logger, ready chan<- string) error {
	st, where, err := openStore(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer st.Close()
	log.Info("database ready", "backend", where)

	var authn api.Authenticator
	// keystone issues clusters' application credentials; nil issues none.
	var keystone *auth.Keystone
	switch cfg.String("auth", "strategy") {
	case "noauth":
		var roles []string
		for _, r := range strings.Split(cfg.String("auth", "noauth_roles"), ",") {
			if r = strings.TrimSpace(r); r != "" {
				roles = append(roles, r)
			}
		}
		authn = auth.NoAuth{DefaultProject: cfg.String("auth", "noauth_project"), DefaultUser: cfg.String("auth", "noauth_user"), DefaultRoles: roles}
	case "keystone":
		ks, err := auth.NewKeystone(keystoneConfig(cfg, log))
		if err != nil {
			return err
		}
		authn = ks
		if cfg.String("cluster_credentials", "enabled") != "false" {
			keystone = ks
		}
	default:
		return fmt.Errorf("config: [auth] strategy %q is not available in this build; use noauth or keystone", cfg.String("auth", "strategy"))
	}
	var policy auth.Policy
	if f := cfg.String("auth", "policy_file"); f != "" {
		if policy, err = auth.LoadPolicyFile(f); err != nil {
			return err
		}
		log.Info("policy file loaded", "path", f)
	}
	hosts, bmSettings, err := backend.FromConfig(cfg, log)
	if err != nil {
		return err
	}
	// Keystone's catalog finds Nova for the capacity check's flavors.
	catalog, _ := authn.(capacity.Catalog)
	// The capacity check counts the hosts the conductor mirrors into the
	// database: the API asks the backend nothing.
	var counter capacity.HostCounter
	if hosts != nil {
		counter = backend.Mirrored(st, hosts)
	}
	capCheck, err := capacity.FromConfig(cfg, counter, catalog, log)
	if err != nil {
		return err
	}
	// With Keystone, templates and clusters are checked against the Glance,
	// Nova and Neutron the catalog lists, as Magnum checks them.
	var resources api.ResourceChecker
	if catalog != nil {
		resources = &cloud.Resources{Catalog: catalog, Log: log}
	}
	drivers, err := builtin.Registry(driverOptions(cfg), cfg.String("conductor", "infrastructure"),
		inmemory.Options{Addons: cfg.Bool("conductor", "inmemory_addons")})
	if err != nil {
		return err
	}
	host := cfg.String("DEFAULT", "host")
	if host == "" {
		host, _ = os.Hostname()
	}
	// One registry: the API's requests and the conductor's operations are
	// scraped together.
	reg := metrics.New(st, st.SQL(), log)
	creds, err := cloudCredentials(cfg, keystone)
	if err != nil {
		return err
	}
	// Clusters with an application credential are read from the cloud as
	// themselves; without Keystone there is no cloud to read.
	var facts conductor.FactsSource
	if keystone != nil {
		facts = &conductor.CloudFacts{Store: st, Login: keystone, Reader: &cloud.Resources{Catalog: keystone, Log: log}}
	}
	cond, err := startConductor(ctx, cfg, st, drivers, reg, host, creds, facts, log)
	if err != nil {
		return err
	}
	// Every replica with an inventory carries out host actions (each
	// under its operation's lease) and offers to run the host pass (the
	// store's lease lets one at a time run it).
	owner := fmt.Sprintf("%s/%d", host, os.Getpid())
	var hostActions *conductor.HostActions
	hostBackend := ""
	if hosts != nil {
		hostBackend = hosts.Name()
		hostActions = &conductor.HostActions{Store: st, Backend: hosts, Owner: owner,
			Lease: cfg.Duration("conductor", "lease"), Log: log.With("component", "conductor")}
		go hostActions.Run(ctx)
		pass := &conductor.HostPass{Store: st, Backend: hosts, Owner: owner,
			Every: bmSettings.ReconcileInterval, Log: log.With("component", "conductor")}
		go pass.Run(ctx)
		log.Info("bare-metal host inventory enabled", "backend", hostBackend)
	}
	onQueued := func() {
		if cond != nil {
			cond.Notify()
		}
		if hostActions != nil {
			hostActions.Notify()
		}
	}
	var management func() api.ManagementHealth
	if cond != nil {
		management = func() api.ManagementHealth {
			m := cond.Management()
			return api.ManagementHealth{Known: m.Known, Reachable: m.Reachable, Since: m.Since, Error: m.Error}
		}
	}
	var planner api.CapacityPlanner
	if capCheck != nil {
		planner = capCheck
	}
	var keys *certs.KeyPool
	if n := cfg.Int("api", "key_pool_size"); n > 0 {
		keys = certs.NewKeyPool(n)
		go func() {
			if err := keys.Run(ctx); err != nil {
				log.Error("key pool stopped; new clusters make their keys when they are created", "error", err)
			}
		}()
	}
	handler := api.New(api.Options{
		Store: st, Auth: authn, Policy: policy, Log: log,
		MaxLimit:                      cfg.Int("api", "max_limit"),
		MaxBodyBytes:                  int64(cfg.Int("api", "max_body_bytes")),
		PageCacheBytes:                pageCacheBytes(cfg.Int("api", "page_cache_bytes")),
		KeyPool:                       keys,
		DefaultClusterQuota:           cfg.Int("quotas", "max_clusters_per_project"),
		ServiceDownAfter:              cfg.Duration("services", "down_after"),
		MergeLabelsByDefault:          cfg.Bool("api", "merge_labels_by_default"),
		DefaultCreateTimeout:          cfg.Int("cluster", "create_timeout"),
		DefaultBareMetalCreateTimeout: cfg.Int("cluster", "bm_create_timeout"),
		IronicComputeHosts:            cfg.Int("driver", "ironic_compute_hosts"),
		Drivers:                       drivers,
		ValidateLabels:                driverLabels(drivers),
		HostBackend:                   hostBackend,
		HostActionWait:                bmSettings.ActionWait,
		Capacity:                      planner,
		Management:                    management,
		Resources:                     resources,
		OnQueued:                      onQueued,
		Credentials:                   credentialIssuer(keystone),
		Metrics:                       reg,
	})

	ln, err := net.Listen("tcp", cfg.String("api", "listen"))
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.String("api", "listen"), err)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second}

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(api.MagnumErrors(ln)) }()
	log.Info("Magnum v1 API listening", "address", "http://"+ln.Addr().String(), "auth", cfg.String("auth", "strategy"))
	if ready != nil {
		ready <- ln.Addr().String()
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Info("stopped")
	return nil
}

func keystoneConfig(cfg *config.Config, log *slog.Logger) auth.KeystoneConfig {
	ks := func(name string) string { return cfg.String("keystone_authtoken", name) }
	return auth.KeystoneConfig{
		AuthURL: ks("auth_url"), WWWAuthenticateURI: ks("www_authenticate_uri"),
		Username: ks("username"), Password: ks("password"), ProjectName: ks("project_name"),
		UserDomainName: ks("user_domain_name"), ProjectDomainName: ks("project_domain_name"),
		RegionName: ks("region_name"), CAFile: ks("cafile"),
		CacheSize: cfg.Int("keystone_authtoken", "token_cache_size"),
		CacheTime: cfg.Duration("keystone_authtoken", "token_cache_time"),
		Timeout:   cfg.Duration("keystone_authtoken", "http_timeout"),
		Log:       log,
	}
}

// reportAlive records this process in the services table until ctx ends.
// Only the conductor reports, as "magnum-conductor": Magnum's API registers
// no service of its own, and its clients, Horizon and monitoring look for
// magnum-conductor.
func reportAlive(ctx context.Context, st *store.DB, log *slog.Logger, host, binary string, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if err := st.ReportService(ctx, host, binary); err != nil && ctx.Err() == nil {
			log.Warn("could not record service heartbeat", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// driverOptions are the renderer's defaults from [driver].
func driverOptions(cfg *config.Config) capi.Options {
	return capi.Options{
		DefaultBootVolumeSize:  cfg.Int("driver", "boot_volume_size"),
		IronicComputeHosts:     cfg.Int("driver", "ironic_compute_hosts"),
		VMNodeStartupTimeout:   cfg.Duration("driver", "vm_node_startup_timeout"),
		BMNodeStartupTimeout:   cfg.Duration("driver", "bm_node_startup_timeout"),
		VMNodeUnhealthyTimeout: cfg.Duration("driver", "vm_node_unhealthy_timeout"),
		BMNodeUnhealthyTimeout: cfg.Duration("driver", "bm_node_unhealthy_timeout"),
		InMemoryBootTime:       cfg.Duration("driver", "inmemory_boot_time"),
	}
}

// pageCacheBytes is [api] page_cache_bytes for api.Options, where 0 means
// the default: the option's 0 keeps no pages.
func pageCacheBytes(n int) int {
	if n == 0 {
		return -1
	}
	return n
}
