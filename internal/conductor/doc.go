// Package conductor executes the operations the API records: it claims them
// with leases, renders each cluster's whole desired state through the
// driver, applies it to the management cluster and prunes what the desired
// state no longer has, and turns what Cluster API reports (watched, never
// polled) into Magnum statuses, health and addresses. It also does what
// Cluster API does not: the cloud side effects of a cluster (server groups,
// what its workload left in the cloud at delete), its application
// credentials, its addon charts and its autoscaler. An attempt at an
// operation ends done, waiting (requeued, the worker freed, what it waits
// for shown in status_reason) or failed; Classify sorts failures into
// permanent (the cluster goes to *_FAILED with the reason) and transient
// (retried with backoff, the reason shown in status_reason). For the
// bare-metal host inventory it carries out host actions (HostActions, under
// each operation's lease, failures sorted by the same Classify) and steps
// and mirrors the backend's hosts into the store (HostPass, under a
// periodic lease), which is all the API reads.
package conductor
