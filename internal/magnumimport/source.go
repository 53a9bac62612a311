package magnumimport

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/magnetite-io/magnetite/internal/store"
)

// Magnum's rows as its database holds them (magnum/db/sqlalchemy/models.py
// of Magnum 15). Nullable columns are pointers; JSON columns are raw.

type magnumTemplate struct {
	ID                                                     int64
	UUID, ProjectID, UserID, Name, ImageID, COE            string
	FlavorID, MasterFlavorID, KeypairID, ExternalNetworkID *string
	FixedNetwork, FixedSubnet, NetworkDriver, VolumeDriver *string
	DNSNameserver, DockerStorageDriver, ClusterDistro      *string
	HTTPProxy, HTTPSProxy, NoProxy, ServerType             *string
	InsecureRegistry, Tags, Driver                         *string
	APIServerPort, DockerVolumeSize                        *int
	Labels                                                 map[string]string
	RegistryEnabled, TLSDisabled, Public, Hidden           bool
	MasterLBEnabled, FloatingIPEnabled                     bool
	CreatedAt                                              time.Time
	UpdatedAt                                              *time.Time
}

type magnumCluster struct {
	ID                                               int64
	UUID, ProjectID, UserID, ClusterTemplateID       string
	Name, Keypair, MasterFlavorID, FlavorID, StackID *string
	APIAddress, Status, StatusReason, HealthStatus   *string
	DiscoveryURL, COEVersion, ContainerVersion       *string
	CACertRef, EtcdCACertRef, FrontProxyCACertRef    *string
	FixedNetwork, FixedSubnet                        *string
	DockerVolumeSize, CreateTimeout                  *int
	Labels, HealthStatusReason                       map[string]string
	FloatingIPEnabled, MasterLBEnabled               bool
	CreatedAt                                        time.Time
	UpdatedAt                                        *time.Time
}

type magnumNodeGroup struct {
	ID                                     int64
	UUID, Name, ClusterID, ProjectID, Role string
	FlavorID, ImageID, StackID, Status     *string
	StatusReason, Version                  *string
	DockerVolumeSize, NodeCount            *int
	MinNodeCount, MaxNodeCount             *int
	Labels                                 map[string]string
	NodeAddresses                          []string
	IsDefault                              bool
	CreatedAt                              time.Time
	UpdatedAt                              *time.Time
}

type magnumQuota struct {
	ID                  int64
	ProjectID, Resource string
	HardLimit           int
	CreatedAt           time.Time
	UpdatedAt           *time.Time
}

type magnumKeyPair struct {
	UUID, Certificate, PrivateKey string
	Passphrase                    *string
}

// magnumDB is everything the import reads from Magnum, read in one
// read-only transaction so it is one consistent picture.
type magnumDB struct {
	Templates  []*magnumTemplate
	Clusters   []*magnumCluster
	NodeGroups map[string][]*magnumNodeGroup // by cluster UUID
	Quotas     []*magnumQuota
	KeyPairs   map[string]*magnumKeyPair // by UUID
}

// Connect opens Magnum's database, given as oslo.db writes it in
// magnum.conf's [database] connection (mysql+pymysql://user:pw@host/magnum).
// The session is read-only: the import never writes to Magnum.
func Connect(ctx context.Context, connection string) (*sql.DB, error) {
	u, err := url.Parse(connection)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL holds the password
		}
		return nil, fmt.Errorf("magnum's connection is not a URL: %w", err)
	}
	switch u.Scheme {
	case "mysql", "mysql+pymysql", "mysql+mysqldb", "mariadb", "mariadb+pymysql":
	default:
		return nil, fmt.Errorf("magnum's connection scheme %q is not MySQL or MariaDB; Magnum supports only those (mysql+pymysql://user:password@host/magnum)", u.Scheme)
	}
	cfg := store.MySQLAddress(u)
	if cfg.DBName == "" {
		return nil, errors.New("magnum's connection names no database; write mysql+pymysql://user:password@host/magnum")
	}
	// Magnum writes DATETIME in UTC (oslo.db's TimestampMixin, utcnow).
	cfg.ParseTime, cfg.Loc = true, time.UTC
	cfg.Timeout = 10 * time.Second
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(1)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connect to Magnum's database at %s: %w", cfg.Addr, err)
	}
	return db, nil
}

// ConnectionFromConfig reads [database] connection from a magnum.conf.
func ConnectionFromConfig(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "", strings.HasPrefix(line, "#"), strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = strings.TrimSpace(line[1 : len(line)-1])
		case section == "database":
			k, v, ok := strings.Cut(line, "=")
			if ok && strings.TrimSpace(k) == "connection" {
				return strings.TrimSpace(v), nil
			}
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("%s sets no [database] connection", path)
}

// read takes every row the import needs in one read-only transaction.
func read(ctx context.Context, db *sql.DB) (*magnumDB, error) {
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true, Isolation: sql.LevelRepeatableRead})
	if err != nil {
		return nil, fmt.Errorf("read Magnum's database: %w", err)
	}
	defer tx.Rollback()
	for _, table := range []string{"cluster_template", "cluster", "nodegroup", "quotas", "x509keypair"} {
		if _, err := columns(ctx, tx, table); err != nil {
			return nil, err
		}
	}
	m := &magnumDB{NodeGroups: map[string][]*magnumNodeGroup{}, KeyPairs: map[string]*magnumKeyPair{}}
	if m.Templates, err = readTemplates(ctx, tx); err != nil {
		return nil, err
	}
	if m.Clusters, err = readClusters(ctx, tx); err != nil {
		return nil, err
	}
	ngs, err := readNodeGroups(ctx, tx)
	if err != nil {
		return nil, err
	}
	for _, ng := range ngs {
		m.NodeGroups[ng.ClusterID] = append(m.NodeGroups[ng.ClusterID], ng)
	}
	if m.Quotas, err = readQuotas(ctx, tx); err != nil {
		return nil, err
	}
	kps, err := readKeyPairs(ctx, tx)
	if err != nil {
		return nil, err
	}
	for _, kp := range kps {
		m.KeyPairs[kp.UUID] = kp
	}
	return m, nil
}

// columns lists a table's columns, refusing a database that is not Magnum's.
func columns(ctx context.Context, tx *sql.Tx, table string) (map[string]bool, error) {
	rows, err := tx.QueryContext(ctx, `SELECT column_name FROM information_schema.columns
		WHERE table_schema = DATABASE() AND table_name = ?`, table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, err
		}
		out[strings.ToLower(c)] = true
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the database has no table %s: is it Magnum's, and upgraded (magnum-db-manage upgrade)?", table)
	}
	return out, nil
}

// jsonColumn decodes one of Magnum's JSONEncodedDict/List columns; NULL
// and "" are empty.
type jsonColumn[T any] struct{ v *T }

func (j jsonColumn[T]) Scan(src any) error {
	var b []byte
	switch s := src.(type) {
	case nil:
		return nil
	case []byte:
		b = s
	case string:
		b = []byte(s)
	default:
		return fmt.Errorf("JSON column holds %T", src)
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		return nil
	}
	return json.Unmarshal(b, j.v)
}

// stringMap reads a JSON object whose values Magnum keeps as strings, but
// which a hand-made row may hold as numbers or booleans.
type stringMap struct{ m *map[string]string }

func (s stringMap) Scan(src any) error {
	var raw map[string]any
	if err := (jsonColumn[map[string]any]{&raw}).Scan(src); err != nil {
		return err
	}
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		if str, ok := v.(string); ok {
			out[k] = str
			continue
		}
		b, _ := json.Marshal(v)
		out[k] = string(b)
	}
	*s.m = out
	return nil
}

func readTemplates(ctx context.Context, tx *sql.Tx) ([]*magnumTemplate, error) {
	cols, err := columns(ctx, tx, "cluster_template")
	if err != nil {
		return nil, err
	}
	driver := "NULL"
	if cols["driver"] {
		driver = "driver" // Magnum 2024.1 and later
	}
	rows, err := tx.QueryContext(ctx, `SELECT id, uuid, COALESCE(project_id, ''), COALESCE(user_id, ''), COALESCE(name, ''),
		COALESCE(image_id, ''), COALESCE(coe, ''), flavor_id, master_flavor_id, keypair_id, external_network_id,
		fixed_network, fixed_subnet, network_driver, volume_driver, dns_nameserver, docker_storage_driver,
		cluster_distro, http_proxy, https_proxy, no_proxy, server_type, insecure_registry, tags, `+driver+`,
		apiserver_port, docker_volume_size, labels, COALESCE(registry_enabled, 0), COALESCE(tls_disabled, 0),
		COALESCE(public, 0), COALESCE(hidden, 0), COALESCE(master_lb_enabled, 0), COALESCE(floating_ip_enabled, 1),
		created_at, updated_at FROM cluster_template ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("read Magnum's cluster templates: %w", err)
	}
	defer rows.Close()
	var out []*magnumTemplate
	for rows.Next() {
		t := &magnumTemplate{}
		var created sql.NullTime
		if err := rows.Scan(&t.ID, &t.UUID, &t.ProjectID, &t.UserID, &t.Name, &t.ImageID, &t.COE, &t.FlavorID,
			&t.MasterFlavorID, &t.KeypairID, &t.ExternalNetworkID, &t.FixedNetwork, &t.FixedSubnet, &t.NetworkDriver,
			&t.VolumeDriver, &t.DNSNameserver, &t.DockerStorageDriver, &t.ClusterDistro, &t.HTTPProxy, &t.HTTPSProxy,
			&t.NoProxy, &t.ServerType, &t.InsecureRegistry, &t.Tags, &t.Driver, &t.APIServerPort, &t.DockerVolumeSize,
			stringMap{&t.Labels}, &t.RegistryEnabled, &t.TLSDisabled, &t.Public, &t.Hidden, &t.MasterLBEnabled,
			&t.FloatingIPEnabled, &created, &t.UpdatedAt); err != nil {
			return nil, fmt.Errorf("read Magnum's cluster templates: %w", err)
		}
		t.CreatedAt = created.Time
		out = append(out, t)
	}
	return out, rows.Err()
}

func readClusters(ctx context.Context, tx *sql.Tx) ([]*magnumCluster, error) {
	rows, err := tx.QueryContext(ctx, `SELECT id, uuid, COALESCE(project_id, ''), COALESCE(user_id, ''),
		COALESCE(cluster_template_id, ''), name, keypair, master_flavor_id, flavor_id, stack_id, api_address, status,
		status_reason, health_status, discovery_url, coe_version, container_version, ca_cert_ref, etcd_ca_cert_ref,
		front_proxy_ca_cert_ref, fixed_network, fixed_subnet, docker_volume_size, create_timeout, labels,
		health_status_reason, COALESCE(floating_ip_enabled, 1), COALESCE(master_lb_enabled, 0), created_at, updated_at
		FROM cluster ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("read Magnum's clusters: %w", err)
	}
	defer rows.Close()
	var out []*magnumCluster
	for rows.Next() {
		c := &magnumCluster{}
		var created sql.NullTime
		if err := rows.Scan(&c.ID, &c.UUID, &c.ProjectID, &c.UserID, &c.ClusterTemplateID, &c.Name, &c.Keypair,
			&c.MasterFlavorID, &c.FlavorID, &c.StackID, &c.APIAddress, &c.Status, &c.StatusReason, &c.HealthStatus,
			&c.DiscoveryURL, &c.COEVersion, &c.ContainerVersion, &c.CACertRef, &c.EtcdCACertRef, &c.FrontProxyCACertRef,
			&c.FixedNetwork, &c.FixedSubnet, &c.DockerVolumeSize, &c.CreateTimeout, stringMap{&c.Labels},
			stringMap{&c.HealthStatusReason}, &c.FloatingIPEnabled, &c.MasterLBEnabled, &created, &c.UpdatedAt); err != nil {
			return nil, fmt.Errorf("read Magnum's clusters: %w", err)
		}
		c.CreatedAt = created.Time
		out = append(out, c)
	}
	return out, rows.Err()
}

func readNodeGroups(ctx context.Context, tx *sql.Tx) ([]*magnumNodeGroup, error) {
	rows, err := tx.QueryContext(ctx, `SELECT id, uuid, COALESCE(name, ''), COALESCE(cluster_id, ''),
		COALESCE(project_id, ''), COALESCE(role, ''), flavor_id, image_id, stack_id, status, status_reason, version,
		docker_volume_size, node_count, min_node_count, max_node_count, labels, node_addresses, COALESCE(is_default, 0),
		created_at, updated_at FROM nodegroup ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("read Magnum's node groups: %w", err)
	}
	defer rows.Close()
	var out []*magnumNodeGroup
	for rows.Next() {
		g := &magnumNodeGroup{}
		var created sql.NullTime
		if err := rows.Scan(&g.ID, &g.UUID, &g.Name, &g.ClusterID, &g.ProjectID, &g.Role, &g.FlavorID, &g.ImageID,
			&g.StackID, &g.Status, &g.StatusReason, &g.Version, &g.DockerVolumeSize, &g.NodeCount, &g.MinNodeCount,
			&g.MaxNodeCount, stringMap{&g.Labels}, jsonColumn[[]string]{&g.NodeAddresses}, &g.IsDefault, &created,
			&g.UpdatedAt); err != nil {
			return nil, fmt.Errorf("read Magnum's node groups: %w", err)
		}
		g.CreatedAt = created.Time
		out = append(out, g)
	}
	return out, rows.Err()
}

func readQuotas(ctx context.Context, tx *sql.Tx) ([]*magnumQuota, error) {
	rows, err := tx.QueryContext(ctx, `SELECT id, COALESCE(project_id, ''), COALESCE(resource, ''),
		COALESCE(hard_limit, 0), created_at, updated_at FROM quotas ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("read Magnum's quotas: %w", err)
	}
	defer rows.Close()
	var out []*magnumQuota
	for rows.Next() {
		q := &magnumQuota{}
		var created sql.NullTime
		if err := rows.Scan(&q.ID, &q.ProjectID, &q.Resource, &q.HardLimit, &created, &q.UpdatedAt); err != nil {
			return nil, fmt.Errorf("read Magnum's quotas: %w", err)
		}
		q.CreatedAt = created.Time
		out = append(out, q)
	}
	return out, rows.Err()
}

func readKeyPairs(ctx context.Context, tx *sql.Tx) ([]*magnumKeyPair, error) {
	rows, err := tx.QueryContext(ctx, `SELECT COALESCE(uuid, ''), COALESCE(certificate, ''), COALESCE(private_key, ''),
		private_key_passphrase FROM x509keypair`)
	if err != nil {
		return nil, fmt.Errorf("read Magnum's x509keypair table: %w", err)
	}
	defer rows.Close()
	var out []*magnumKeyPair
	for rows.Next() {
		k := &magnumKeyPair{}
		if err := rows.Scan(&k.UUID, &k.Certificate, &k.PrivateKey, &k.Passphrase); err != nil {
			return nil, fmt.Errorf("read Magnum's x509keypair table: %w", err)
		}
		out = append(out, k)
	}
	return out, rows.Err()
}
