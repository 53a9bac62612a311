// Package jsonpatch applies RFC 6902 JSON patches the way Magnum's API does:
// only add, replace and remove; paths are JSON pointers made of word
// characters and dashes; add at the top level only fills an attribute that
// exists and is null (otherwise the caller must use replace).
package jsonpatch
