// Package conductor executes the operations the API records: it claims them
// with leases, renders clusters through the driver, applies the result to the
// management cluster, and turns what Cluster API reports (watched, never
// polled) into Magnum statuses, health and addresses. It also does what
// Cluster API does not: the cloud side effects of a cluster (server groups,
// what its workload left in the cloud at delete), its application
// credentials, its addon charts and its autoscaler. A failure is permanent
// (the cluster goes to *_FAILED with the reason) or transient (retried with
// backoff, the reason shown in status_reason).
// polled) into Magnum statuses, health and addresses. For the bare-metal
// host inventory it carries out host actions (HostActions, under each
// operation's lease) and steps and mirrors the backend's hosts into the
// store (HostPass, under a periodic lease), which is all the API reads.
package conductor
