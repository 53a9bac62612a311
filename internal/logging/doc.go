// Package logging builds Magnetite's structured logger (log/slog, text or
// JSON) and carries the request id in the context, so every line logged
// while serving a request — by the API or any package it calls — names the
// request it belongs to.
package logging
