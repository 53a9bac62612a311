// Package api serves the OpenStack Magnum v1 API: routing, microversions,
// request ids, authentication, one file per resource, and Magnum-format
// errors for every 4xx and 5xx.
//
// Every handler has the same shape. Its opening is requestValues (a create
// or an action: bounded read, one JSON object, validation against the
// resource's schema at the request's microversion, mandatory members) or
// requestPatch (a PATCH); a route or behaviour newer than the requested
// microversion is refused by requireVersion with a `since` from version.go.
// A handler returns errors as they come: errorTable (errors.go) maps each
// layer's sentinels, raised with fault.New and the text a user should read,
// to Magnum's status and detail; an *apiError is for what only the handler
// knows. Anything else answers 500 and is logged with its request id.
package api
