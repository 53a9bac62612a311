// Package apitypes holds the wire types of Magnum's v1 API as Magnetite
// serves them; the server and the magnetite CLI share them. No behaviour.
//
// Where a wire type shows a field set of the stored object unchanged (a
// template's spec, a cluster's endpoints), it embeds that set from
// internal/model, so each such field and its JSON name is declared once;
// what the API shows differently (times as strings, counts summed from node
// groups, links) is declared here.
package apitypes
