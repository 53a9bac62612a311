// Package model holds Magnetite's domain objects: cluster templates,
// clusters, node groups, quotas, operations, service records, cluster
// events, certificates and application credentials, with the status and
// health vocabularies Magnum clients understand. It imports nothing of
// Magnetite's; every other layer speaks it.
package model
