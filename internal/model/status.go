package model

import "strings"

// Status is a cluster or node group lifecycle state, spelled as Magnum spells it.
type Status string

const (
	CreateInProgress   Status = "CREATE_IN_PROGRESS"
	CreateFailed       Status = "CREATE_FAILED"
	CreateComplete     Status = "CREATE_COMPLETE"
	UpdateInProgress   Status = "UPDATE_IN_PROGRESS"
	UpdateFailed       Status = "UPDATE_FAILED"
	UpdateComplete     Status = "UPDATE_COMPLETE"
	DeleteInProgress   Status = "DELETE_IN_PROGRESS"
	DeleteFailed       Status = "DELETE_FAILED"
	DeleteComplete     Status = "DELETE_COMPLETE"
	ResumeComplete     Status = "RESUME_COMPLETE"
	ResumeFailed       Status = "RESUME_FAILED"
	RestoreComplete    Status = "RESTORE_COMPLETE"
	RollbackInProgress Status = "ROLLBACK_IN_PROGRESS"
	RollbackFailed     Status = "ROLLBACK_FAILED"
	RollbackComplete   Status = "ROLLBACK_COMPLETE"
	SnapshotComplete   Status = "SNAPSHOT_COMPLETE"
	CheckComplete      Status = "CHECK_COMPLETE"
	AdoptComplete      Status = "ADOPT_COMPLETE"
)

// AllStatuses lists every status value the API accepts and reports.
var AllStatuses = []Status{
	CreateInProgress, CreateFailed, CreateComplete,
	UpdateInProgress, UpdateFailed, UpdateComplete,
	DeleteInProgress, DeleteFailed, DeleteComplete,
	ResumeComplete, ResumeFailed, RestoreComplete,
	RollbackInProgress, RollbackFailed, RollbackComplete,
	SnapshotComplete, CheckComplete, AdoptComplete,
}

// InProgress reports whether an operation is still running for the object.
func (s Status) InProgress() bool { return strings.HasSuffix(string(s), "_IN_PROGRESS") }

// Failed reports whether the last operation on the object failed.
func (s Status) Failed() bool { return strings.HasSuffix(string(s), "_FAILED") }

// Health is the cluster health as reported by the management cluster.
type Health string

const (
	Healthy   Health = "HEALTHY"
	Unhealthy Health = "UNHEALTHY"
	Unknown   Health = "UNKNOWN"
)

// AllHealth lists every health value.
var AllHealth = []Health{Healthy, Unhealthy, Unknown}

// ServerType says whether nodes are virtual machines or bare-metal machines.
type ServerType string

const (
	ServerTypeVM ServerType = "vm"
	ServerTypeBM ServerType = "bm"
)

// Node group roles that Magnum clients use.
const (
	RoleMaster = "master"
	RoleWorker = "worker"
)

// Names of the node groups every cluster is created with.
const (
	DefaultMasterNodeGroup = "default-master"
	DefaultWorkerNodeGroup = "default-worker"
)
