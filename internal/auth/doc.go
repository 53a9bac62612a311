// Package auth identifies the caller of a request (Keystone tokens, cached
// until they expire or [keystone_authtoken] token_cache_time passes, or
// noauth headers) and decides, in one place, what the caller may do
// (oslo.policy-style rules, overridable from a policy file). It also makes
// and deletes the Keystone application credentials a cluster acts in the
// cloud with.
package auth
