package model

import "time"

// ClusterTemplate is a reusable cluster definition. JSON tags match Magnum's
// field names; the store keeps the object as JSON beside indexed columns.
type ClusterTemplate struct {
	ID        int64  `json:"-"`
	UUID      string `json:"uuid"`
	Name      string `json:"name"`
	ProjectID string `json:"project_id"`
	UserID    string `json:"user_id"`
	TemplateSpec
	Driver    *string    `json:"driver"`
	CreatedAt time.Time  `json:"created_at"`
	UpdatedAt *time.Time `json:"updated_at"`
	// Imported is set on templates taken from a Magnum database. Internal.
	Imported *Imported `json:"imported,omitempty"`
}

// TemplateSpec is what a template's creator chooses beside its name and
// driver: what a cluster template and a baymodel (its bay-era name) show
// alike. The API's wire types embed it, so each field is declared once.
type TemplateSpec struct {
	COE                 string            `json:"coe"`
	ImageID             string            `json:"image_id"`
	FlavorID            *string           `json:"flavor_id"`
	MasterFlavorID      *string           `json:"master_flavor_id"`
	DNSNameserver       *string           `json:"dns_nameserver"`
	KeypairID           *string           `json:"keypair_id"`
	ExternalNetworkID   *string           `json:"external_network_id"`
	FixedNetwork        *string           `json:"fixed_network"`
	FixedSubnet         *string           `json:"fixed_subnet"`
	NetworkDriver       *string           `json:"network_driver"`
	VolumeDriver        *string           `json:"volume_driver"`
	APIServerPort       *int              `json:"apiserver_port"`
	DockerVolumeSize    *int              `json:"docker_volume_size"`
	DockerStorageDriver *string           `json:"docker_storage_driver"`
	ClusterDistro       *string           `json:"cluster_distro"`
	Labels              map[string]string `json:"labels"`
	HTTPProxy           *string           `json:"http_proxy"`
	HTTPSProxy          *string           `json:"https_proxy"`
	NoProxy             *string           `json:"no_proxy"`
	RegistryEnabled     bool              `json:"registry_enabled"`
	TLSDisabled         bool              `json:"tls_disabled"`
	Public              bool              `json:"public"`
	Hidden              bool              `json:"hidden"`
	ServerType          ServerType        `json:"server_type"`
	InsecureRegistry    *string           `json:"insecure_registry"`
	MasterLBEnabled     bool              `json:"master_lb_enabled"`
	FloatingIPEnabled   bool              `json:"floating_ip_enabled"`
	Tags                *string           `json:"tags"`
}

// Cluster is a Kubernetes cluster a project asked for. Node and master counts
// live on its node groups; the cluster carries the desired shape and the
// status the conductor reports.
type Cluster struct {
	ID                 int64             `json:"-"`
	UUID               string            `json:"uuid"`
	Name               string            `json:"name"`
	ProjectID          string            `json:"project_id"`
	UserID             string            `json:"user_id"`
	ClusterTemplateID  string            `json:"cluster_template_id"`
	Keypair            *string           `json:"keypair"`
	DockerVolumeSize   *int              `json:"docker_volume_size"`
	Labels             map[string]string `json:"labels"`
	MasterFlavorID     *string           `json:"master_flavor_id"`
	FlavorID           *string           `json:"flavor_id"`
	CreateTimeout      int               `json:"create_timeout"`
	StackID            *string           `json:"stack_id"`
	Status             Status            `json:"status"`
	StatusReason       *string           `json:"status_reason"`
	HealthStatus       *Health           `json:"health_status"`
	HealthStatusReason map[string]string `json:"health_status_reason"`
	ClusterRuntime
	ClusterNetwork
	// MergeLabels records whether the cluster's labels were merged over the
	// template's at create time.
	MergeLabels bool       `json:"merge_labels"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   *time.Time `json:"updated_at"`
	Bookkeeping
	// AppliedGeneration is the generation of the Cluster object the
	// conductor last applied; status is only COMPLETE once Cluster API has
	// observed it. Bookkeeping: kept beside the row, never in a document
	// the API serves.
	AppliedGeneration int64 `json:"-"`
	// Generation is the cluster's desired generation: the store raises it
	// with every write that changes the spec of the cluster or of one of
	// its node groups. ObservedGeneration is the one the conductor last
	// brought the management cluster to (written with the status).
	// Bookkeeping, as AppliedGeneration.
	Generation         int64 `json:"-"`
	ObservedGeneration int64 `json:"-"`
	// Imported is set on clusters taken from a Magnum database. Spec the
	// API never shows.
	Imported *Imported `json:"imported,omitempty"`
}

// Bookkeeping is what the store keeps of a row beside its documents.
type Bookkeeping struct {
	// ResourceVersion is the version of the row this object was read at;
	// every write raises it. A write made from a read succeeds only while
	// the row is still at that version (optimistic concurrency): a writer
	// that lost a race reads again and redoes its change, nothing is
	// merged.
	ResourceVersion int64 `json:"-"`
}

// ClusterRuntime is what a cluster shows of its running control plane: the
// discovery URL given at create, if any, and the API address and versions
// the conductor reports.
type ClusterRuntime struct {
	DiscoveryURL     *string `json:"discovery_url"`
	APIAddress       *string `json:"api_address"`
	COEVersion       *string `json:"coe_version"`
	ContainerVersion *string `json:"container_version"`
}

// ClusterNetwork is how a cluster's nodes are networked, fixed when it is
// created from the request or its template.
type ClusterNetwork struct {
	FixedNetwork      *string `json:"fixed_network"`
	FixedSubnet       *string `json:"fixed_subnet"`
	FloatingIPEnabled bool    `json:"floating_ip_enabled"`
	MasterLBEnabled   bool    `json:"master_lb_enabled"`
}

// Taint is a Kubernetes node taint requested for a node group (API 1.14).
type Taint struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
}

// NodeGroup is a set of identical nodes in a cluster.
type NodeGroup struct {
	ID               int64             `json:"id"`
	UUID             string            `json:"uuid"`
	Name             string            `json:"name"`
	ClusterID        string            `json:"cluster_id"`
	ProjectID        string            `json:"project_id"`
	DockerVolumeSize *int              `json:"docker_volume_size"`
	Labels           map[string]string `json:"labels"`
	FlavorID         *string           `json:"flavor_id"`
	ImageID          *string           `json:"image_id"`
	NodeAddresses    []string          `json:"node_addresses"`
	NodeCount        int               `json:"node_count"`
	Role             string            `json:"role"`
	MinNodeCount     int               `json:"min_node_count"`
	MaxNodeCount     *int              `json:"max_node_count"`
	IsDefault        bool              `json:"is_default"`
	StackID          *string           `json:"stack_id"`
	Status           Status            `json:"status"`
	StatusReason     *string           `json:"status_reason"`
	Version          *string           `json:"version"`
	MergeLabels      bool              `json:"merge_labels"`
	NodeLabels       map[string]string `json:"node_labels"`
	NodeTaints       []Taint           `json:"node_taints"`
	CreatedAt        time.Time         `json:"created_at"`
	UpdatedAt        *time.Time        `json:"updated_at"`
	Bookkeeping
	// ServerGroupID is the Nova server group the conductor made for the
	// group's machines, deleted once they are gone. Bookkeeping: kept
	// beside the row, never in a document the API serves.
	ServerGroupID string `json:"-"`
}

// Quota is a per-project hard limit on a resource (only "Cluster" today).
type Quota struct {
	ID        int64      `json:"id"`
	ProjectID string     `json:"project_id"`
	Resource  string     `json:"resource"`
	HardLimit int        `json:"hard_limit"`
	CreatedAt time.Time  `json:"created_at"`
	UpdatedAt *time.Time `json:"updated_at"`
}

// QuotaResourceCluster is the only resource Magnum quotas cover.
const QuotaResourceCluster = "Cluster"

// Service is one running Magnetite process, reported by /v1/mservices.
type Service struct {
	ID             int64      `json:"id"`
	Host           string     `json:"host"`
	Binary         string     `json:"binary"`
	Disabled       bool       `json:"disabled"`
	DisabledReason *string    `json:"disabled_reason"`
	ReportCount    int64      `json:"report_count"`
	LastSeen       time.Time  `json:"-"`
	CreatedAt      time.Time  `json:"created_at"`
	UpdatedAt      *time.Time `json:"updated_at"`
}

// OperationType names the provisioning work an API call asked for.
type OperationType string

const (
	OpClusterCreate   OperationType = "cluster_create"
	OpClusterUpdate   OperationType = "cluster_update"
	OpClusterResize   OperationType = "cluster_resize"
	OpClusterUpgrade  OperationType = "cluster_upgrade"
	OpClusterDelete   OperationType = "cluster_delete"
	OpNodeGroupCreate OperationType = "nodegroup_create"
	OpNodeGroupUpdate OperationType = "nodegroup_update"
	OpNodeGroupDelete OperationType = "nodegroup_delete"
	// OpClusterAdopt takes over the Cluster API objects another driver
	// made for an imported cluster.
	OpClusterAdopt OperationType = "cluster_adopt"
	// OpClusterRebase moves an adopted cluster onto Magnetite's own
	// ClusterClass (internal/conductor/rebase.go).
	OpClusterRebase OperationType = "cluster_rebase"
)

// OperationState is where an operation is in its life.
type OperationState string

const (
	OpPending   OperationState = "pending"
	OpRunning   OperationState = "running"
	OpSucceeded OperationState = "succeeded"
	OpFailed    OperationState = "failed"
)

// Operation is a unit of provisioning work written in the same transaction
// as the desired-state change that needs it; the conductor executes it.
type Operation struct {
	ID          int64         `json:"id"`
	UUID        string        `json:"uuid"`
	Type        OperationType `json:"type"`
	ClusterID   string        `json:"cluster_id"`
	NodeGroupID string        `json:"nodegroup_id,omitempty"`
	ProjectID   string        `json:"project_id"`
	RequestID   string        `json:"request_id,omitempty"`
	// Payload is the kind's typed payload (payload.go); nil for none.
	Payload      Payload        `json:"payload,omitempty"`
	State        OperationState `json:"state"`
	Attempts     int            `json:"attempts"`
	LeaseOwner   string         `json:"lease_owner,omitempty"`
	LeaseExpires *time.Time     `json:"lease_expires,omitempty"`
	// NextAttemptAt holds a transiently failed operation back until then.
	NextAttemptAt *time.Time `json:"next_attempt_at,omitempty"`
	LastError     string     `json:"last_error,omitempty"`
	CreatedAt     time.Time  `json:"created_at"`
	UpdatedAt     time.Time  `json:"updated_at"`
}
