package api

// DuplicateKeyForTest exposes the duplicate-key scan to the fuzz target.
var DuplicateKeyForTest = duplicateKey
