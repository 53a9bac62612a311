// Package config reads Magnetite's configuration the OpenStack way: an INI
// file plus a conf.d drop-in directory whose files are read in name order,
// later values overriding earlier ones, then MAGNETITE_<SECTION>_<OPTION>
// environment variables. Every option is declared once, with its default and
// help text, so the effective configuration can be shown with its sources.
package config
