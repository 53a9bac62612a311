package apitypes

import "github.com/magnetite-io/magnetite/internal/model"

// Link is a resource link.
type Link struct {
	Href string `json:"href"`
	Rel  string `json:"rel"`
	Type string `json:"type,omitempty"`
}

// TemplateFields are what a cluster template and a baymodel (Magnum's
// bay-era name for one) show alike.
type TemplateFields struct {
	UUID string `json:"uuid"`
	Name string `json:"name"`
	model.TemplateSpec
	CreatedAt string  `json:"created_at"`
	UpdatedAt *string `json:"updated_at"`
	Links     []Link  `json:"links"`
}

// ClusterTemplate is a cluster template as returned by the API.
type ClusterTemplate struct {
	TemplateFields
	Driver    *string `json:"driver"`
	ProjectID string  `json:"project_id"`
	UserID    string  `json:"user_id"`
}

// BayModel is a cluster template as GET /v1/baymodels shows it: Magnum's
// bay-era form has no driver, project_id or user_id.
type BayModel struct {
	TemplateFields
}

// BayModelList is GET /v1/baymodels.
type BayModelList struct {
	BayModels []BayModel `json:"baymodels"`
	Next      string     `json:"next,omitempty"`
}

// ClusterTemplateList is GET /v1/clustertemplates.
type ClusterTemplateList struct {
	ClusterTemplates []ClusterTemplate `json:"clustertemplates"`
	Next             string            `json:"next,omitempty"`
}

// ClusterID is the body of 202 responses for cluster operations.
type ClusterID struct {
	UUID string `json:"uuid"`
}

// ClusterFields are what the short forms of a cluster and of a bay (Magnum's
// bay-era name for a cluster) show alike.
type ClusterFields struct {
	UUID             string            `json:"uuid"`
	Name             string            `json:"name"`
	DockerVolumeSize *int              `json:"docker_volume_size"`
	Labels           map[string]string `json:"labels"`
	NodeCount        int               `json:"node_count"`
	MasterCount      int               `json:"master_count"`
	Status           string            `json:"status"`
	MasterFlavorID   *string           `json:"master_flavor_id"`
	FlavorID         *string           `json:"flavor_id"`
}

// ClusterSummary is the short form of a cluster in GET /v1/clusters.
type ClusterSummary struct {
	ClusterFields
	ClusterTemplateID string  `json:"cluster_template_id"`
	Keypair           *string `json:"keypair"`
	CreateTimeout     int     `json:"create_timeout"`
	HealthStatus      *string `json:"health_status"`
	// Exactly one of StackID (before 1.13) and ClusterID (1.13 on) is set.
	StackID   *OptionalString `json:"stack_id,omitempty"`
	ClusterID *OptionalString `json:"cluster_id,omitempty"`
	Links     []Link          `json:"links"`
}

// BaySummary is the short form of a bay in GET /v1/bays.
type BaySummary struct {
	ClusterFields
	BayModelID       string  `json:"baymodel_id"`
	BayCreateTimeout int     `json:"bay_create_timeout"`
	StackID          *string `json:"stack_id"`
	Links            []Link  `json:"links"`
}

// OptionalString is a field that is present (possibly null) or absent.
type OptionalString struct {
	Value *string
}

// MarshalJSON writes the value or null.
func (o OptionalString) MarshalJSON() ([]byte, error) {
	if o.Value == nil {
		return []byte("null"), nil
	}
	return marshalString(*o.Value), nil
}

// ClusterDetailFields are what the full forms of a cluster and of a bay add
// to their short forms alike.
type ClusterDetailFields struct {
	StatusReason *string `json:"status_reason"`
	model.ClusterRuntime
	NodeAddresses   []string `json:"node_addresses"`
	MasterAddresses []string `json:"master_addresses"`
	model.ClusterNetwork
	CreatedAt string  `json:"created_at"`
	UpdatedAt *string `json:"updated_at"`
}

// Cluster is the full form of a cluster.
type Cluster struct {
	ClusterSummary
	ClusterDetailFields
	HealthStatusReason map[string]string `json:"health_status_reason"`
	ProjectID          string            `json:"project_id"`
	UserID             string            `json:"user_id"`
	Faults             map[string]string `json:"faults,omitempty"`
	MergeLabels        bool              `json:"merge_labels"`
	LabelsOverridden   map[string]string `json:"labels_overridden"`
	LabelsAdded        map[string]string `json:"labels_added"`
	LabelsSkipped      map[string]string `json:"labels_skipped"`
}

// Bay is the full form of a bay: Magnum's bay-era form of a cluster, with
// baymodel_id, bay_create_timeout and bay_faults for cluster_template_id,
// create_timeout and faults, and without the fields clusters gained later.
type Bay struct {
	BaySummary
	ClusterDetailFields
	BayFaults map[string]string `json:"bay_faults,omitempty"`
}

// ClusterList is GET /v1/clusters (summaries) or /v1/clusters/detail.
type ClusterList[T any] struct {
	Clusters []T    `json:"clusters"`
	Next     string `json:"next,omitempty"`
}

// BayList is GET /v1/bays (summaries) or /v1/bays/detail.
type BayList[T any] struct {
	Bays []T    `json:"bays"`
	Next string `json:"next,omitempty"`
}

// Taint is a node taint (1.14).
type Taint struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
}

// NodeGroupSummary is the short form in node group listings.
type NodeGroupSummary struct {
	UUID      string  `json:"uuid"`
	Name      string  `json:"name"`
	FlavorID  *string `json:"flavor_id"`
	ImageID   *string `json:"image_id"`
	NodeCount int     `json:"node_count"`
	Role      string  `json:"role"`
	IsDefault bool    `json:"is_default"`
	Status    string  `json:"status"`
	StackID   *string `json:"stack_id"`
}

// NodeGroup is the full form of a node group.
type NodeGroup struct {
	NodeGroupSummary
	ID               int64             `json:"id"`
	ClusterID        string            `json:"cluster_id"`
	ProjectID        string            `json:"project_id"`
	DockerVolumeSize *int              `json:"docker_volume_size"`
	Labels           map[string]string `json:"labels"`
	NodeAddresses    []string          `json:"node_addresses"`
	MinNodeCount     int               `json:"min_node_count"`
	MaxNodeCount     *int              `json:"max_node_count"`
	StatusReason     *string           `json:"status_reason"`
	Version          *string           `json:"version"`
	MergeLabels      bool              `json:"merge_labels"`
	LabelsOverridden map[string]string `json:"labels_overridden"`
	LabelsAdded      map[string]string `json:"labels_added"`
	LabelsSkipped    map[string]string `json:"labels_skipped"`
	// Present from microversion 1.14.
	NodeLabels *map[string]string `json:"node_labels,omitempty"`
	NodeTaints *[]Taint           `json:"node_taints,omitempty"`
	CreatedAt  string             `json:"created_at"`
	UpdatedAt  *string            `json:"updated_at"`
	Links      []Link             `json:"links"`
}

// NodeGroupList is GET /v1/clusters/{id}/nodegroups.
type NodeGroupList struct {
	NodeGroups []NodeGroupSummary `json:"nodegroups"`
	Next       string             `json:"next,omitempty"`
}

// Quota is a per-project limit.
type Quota struct {
	ID        int64   `json:"id,omitempty"`
	ProjectID string  `json:"project_id"`
	Resource  string  `json:"resource"`
	HardLimit int     `json:"hard_limit"`
	CreatedAt *string `json:"created_at"`
	UpdatedAt *string `json:"updated_at"`
}

// QuotaList is GET /v1/quotas.
type QuotaList struct {
	Quotas []Quota `json:"quotas"`
	Next   string  `json:"next,omitempty"`
}

// Stats is GET /v1/stats.
type Stats struct {
	Clusters int `json:"clusters"`
	Nodes    int `json:"nodes"`
}

// Service is one entry of GET /v1/mservices.
type Service struct {
	ID             int64   `json:"id"`
	Host           string  `json:"host"`
	Binary         string  `json:"binary"`
	State          string  `json:"state"`
	ReportCount    int64   `json:"report_count"`
	Disabled       bool    `json:"disabled"`
	DisabledReason *string `json:"disabled_reason"`
	CreatedAt      string  `json:"created_at"`
	UpdatedAt      *string `json:"updated_at"`
}

// ServiceList is GET /v1/mservices.
type ServiceList struct {
	MServices []Service `json:"mservices"`
}
