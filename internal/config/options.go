package config

// Option declares one configuration option.
type Option struct {
	Section string
	Name    string
	Default string
	Help    string
	// Secret options are masked wherever configuration is shown.
	Secret bool
}

// Options is every option Magnetite reads, in the order they are documented.
var Options = []Option{
	{"DEFAULT", "state_dir", "", "Directory for Magnetite's own state (the SQLite database). Empty means $XDG_STATE_HOME/magnetite or ~/.local/state/magnetite.", false},
	{"DEFAULT", "host", "", "Name this process reports in /v1/mservices. Empty means the machine's hostname.", false},
	{"api", "listen", "127.0.0.1:9511", "Address and port the Magnum v1 API listens on.", false},
	{"api", "max_limit", "1000", "Largest page size a list request can ask for.", false},
	{"api", "merge_labels_by_default", "true", "When a cluster or node group create sends labels without merge_labels, merge them over the parent's labels (true) or replace them as Magnum does (false).", false},
	{"api", "max_body_bytes", "1048576", "Largest request body accepted, in bytes.", false},
	{"auth", "strategy", "noauth", "How callers are identified: noauth (X-Project-Id, X-User-Id and X-Roles headers) or keystone.", false},
	{"auth", "noauth_project", "default", "Project of noauth callers that send no X-Project-Id.", false},
	{"auth", "noauth_user", "admin", "User of noauth callers that send no X-User-Id.", false},
	{"auth", "noauth_roles", "member", "Comma-separated roles of noauth callers that send no X-Roles. Add admin to let such callers manage quotas and public templates.", false},
	{"database", "connection", "", "Database URL: sqlite:///path/to/magnetite.db or mysql://user:password@host:port/db. Empty means SQLite in state_dir.", true},
	{"quotas", "max_clusters_per_project", "20", "Cluster limit of a project that has no quota of its own.", false},
	{"cluster", "create_timeout", "60", "Default create_timeout (minutes) for virtual-machine clusters.", false},
	{"cluster", "bm_create_timeout", "180", "Default create_timeout (minutes) for clusters whose template has server_type bm; bare metal boots slowly.", false},
	{"services", "report_interval", "10s", "How often each process records that it is alive.", false},
	{"services", "down_after", "60s", "A process that has not reported for this long is shown as down.", false},
	{"log", "level", "info", "Log level: debug, info, warn or error.", false},
	{"log", "format", "text", "Log format: text or json.", false},
}
