// Package conductor executes the operations the API records: it claims them
// with leases, renders clusters through the driver, applies the result to the
// management cluster, and turns what Cluster API reports (watched, never
// polled) into Magnum statuses, health and addresses. It also does what
// Cluster API does not: the cloud side effects of a cluster (server groups,
// what its workload left in the cloud at delete), its application
// credentials, its addon charts and its autoscaler. A failure is permanent
// (the cluster goes to *_FAILED with the reason) or transient (retried with
// backoff, the reason shown in status_reason).
package conductor
