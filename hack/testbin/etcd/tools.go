//go:build tools

// Package tools pins the etcd server hack/build-testbin.sh builds; the module
// root of go.etcd.io/etcd/server/v3 is its main package.
package tools

import _ "go.etcd.io/etcd/server/v3"
