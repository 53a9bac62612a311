// Package client is a small HTTP client of Magnetite's Magnum v1 API, used
// by the magnetite command's client subcommands. It asks for the newest
// microversion, turns Magnum error documents into errors that carry the
// detail and the request id, and authenticates with a static token (noauth
// or a token the caller already has) or with Keystone, where it finds the
// container-infra endpoint in the service catalog.
package client
