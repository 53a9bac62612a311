// Package model holds Magnetite's domain objects: cluster templates,
// clusters, node groups, quotas, operations, service records, cluster
// events, certificates, application credentials and a bare-metal host's
// root device hints and hardware, with the status and health vocabularies
// Magnum clients understand. It imports nothing of Magnetite's; every other
// layer speaks it. The API's wire types embed the field sets it shows as
// stored (TemplateSpec, ClusterRuntime, ClusterNetwork).
//
// Operations carry a typed payload per kind (payload.go): the API builds
// the kind's struct (a *ClusterResizePayload for cluster_resize), the store
// keeps it as a JSON object through EncodePayload and DecodePayload, and the
// conductor type-asserts op.Payload to the same pointer type. A new
// operation kind brings its OperationType constant, its payload struct with
// a pointer-receiver OperationType method, and its line in payloadKinds;
// JSON names, once released, keep their meaning, since queued rows outlive
// an upgrade.
package model
