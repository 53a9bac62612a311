// Package model holds Magnetite's domain objects: cluster templates, clusters,
// node groups, quotas, operations and service records, with the status and
// health vocabularies Magnum clients understand.
package model
