// Package auth identifies the caller of a request (Keystone tokens or noauth
// headers) and decides, in one place, what the caller may do.
package auth
