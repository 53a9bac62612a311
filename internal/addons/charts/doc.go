// Package charts pulls the pinned addon charts and renders them in-process
// with the Helm v3 SDK: from each project's upstream chart repository, from
// one mirror (an HTTP chart repository or an OCI registry), or from a local
// directory that `magnetite addons mirror` filled for an air-gapped cloud.
// Every chart is checked against the digest its repository's index lists.
package charts
