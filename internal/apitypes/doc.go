// Package apitypes holds the wire types of Magnum's v1 API as Magnetite
// serves them; the server and the magnetite CLI share them. No behaviour.
package apitypes
