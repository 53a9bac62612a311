package api

import "slices"

// DuplicateKeyForTest exposes the duplicate-key scan to the fuzz target.
var DuplicateKeyForTest = duplicateKey

// SetPageCacheBytesForTest replaces the server's page cache with an empty
// one of n bytes (none when n <= 0).
func (s *Server) SetPageCacheBytesForTest(n int) { s.pages = newPageCache(n) }

// RoutesForTest is every route pattern the server registered.
func (s *Server) RoutesForTest() []string { return slices.Clone(s.patterns) }
