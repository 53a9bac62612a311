// Package conductor executes the operations the API records: it claims them
// with leases, renders clusters through the driver, applies the result to the
// management cluster, and turns what Cluster API reports (watched, never
// polled) into Magnum statuses, health and addresses.
package conductor
