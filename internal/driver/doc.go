// Package driver holds the Driver interface, the registry that finds a
// template's driver by (server_type, os_distro, coe) or by name, and the
// cloud facts drivers render from. Drivers are pure: the same request always
// renders the same objects, and none of them does I/O.
package driver
