// Package api serves the OpenStack Magnum v1 API: routing, microversions,
// request ids, authentication, one file per resource, and Magnum-format
// errors for every 4xx and 5xx.
package api
