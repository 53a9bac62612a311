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
	{"auth", "policy_file", "", "YAML file of oslo.policy-style rules that replace the built-in defaults rule by rule (docs/policy.md lists every action and default). Empty means the defaults.", false},
	{"keystone_authtoken", "auth_url", "", "Keystone identity endpoint, e.g. http://keystone.example.com:5000/v3; with [auth] strategy = keystone, callers' tokens are validated there.", false},
	{"keystone_authtoken", "www_authenticate_uri", "", "Where clients are told to authenticate, in the WWW-Authenticate header of 401 answers. Empty means auth_url.", false},
	{"keystone_authtoken", "username", "", "Magnetite's service user. It validates callers' tokens, so it needs Keystone's service role (or admin).", false},
	{"keystone_authtoken", "password", "", "Password of the service user.", true},
	{"keystone_authtoken", "project_name", "service", "Project the service user's token is scoped to.", false},
	{"keystone_authtoken", "user_domain_name", "Default", "Domain of the service user.", false},
	{"keystone_authtoken", "project_domain_name", "Default", "Domain of project_name.", false},
	{"keystone_authtoken", "region_name", "", "Region whose catalog endpoints Magnetite uses. Empty means the first endpoint of any region.", false},
	{"keystone_authtoken", "cafile", "", "PEM bundle that verifies Keystone's TLS certificate. Empty means the system's trusted roots.", false},
	{"keystone_authtoken", "token_cache_size", "10000", "Most validated tokens remembered; the least recently used are forgotten first.", false},
	{"keystone_authtoken", "token_cache_time", "60s", "How long a validated token is trusted before Keystone is asked again; a revoked token keeps working at most this long. A token is never trusted past its own expiry.", false},
	{"keystone_authtoken", "http_timeout", "10s", "Timeout of each request to Keystone; when Keystone does not answer in time the API answers 503.", false},
	{"database", "connection", "", "Database URL: sqlite:///path/to/magnetite.db (or oslo.db's sqlite:////path/to/magnetite.db; the path is absolute either way) or mysql://user:password@host:port/db. Empty means SQLite in state_dir.", true},
	{"database", "secret_key", "", "Key that seals the secrets Magnetite keeps in its database (the private keys of clusters' certificate authorities and the secrets of their application credentials) with AES-256-GCM: 32 random bytes, base64-encoded (openssl rand -base64 32). Secrets written before a key was set are sealed at start. Keep the key: sealed secrets cannot be read without it. Empty means, with SQLite, a key generated on first start into secret_key in state_dir (mode 0600); with MariaDB, secrets stored as they are (set the same key on every replica).", true},
	{"quotas", "max_clusters_per_project", "20", "Cluster limit of a project that has no quota of its own.", false},
	{"cluster", "create_timeout", "60", "Default create_timeout (minutes) for virtual-machine clusters.", false},
	{"cluster", "bm_create_timeout", "180", "Default create_timeout (minutes) for clusters whose template has server_type bm; bare metal boots slowly.", false},
	{"baremetal", "backend", "none", "Where the bare-metal host inventory (/v1/hosts) keeps hosts: none (the inventory is off and answers 501), ironic (nodes in Ironic's API, see ironic_endpoint) or metal3 (BareMetalHost objects and BMC credentials Secrets in metal3_namespace of the management cluster, driven by baremetal-operator).", false},
	{"baremetal", "ironic_endpoint", "", "Ironic API root for the ironic backend, e.g. http://ironic.example.com:6385 (/v1 is added when missing).", false},
	{"baremetal", "ironic_auth_type", "noauth", "How Magnetite authenticates to Ironic: noauth (Ironic's auth_strategy = noauth) or http_basic (ironic_username and ironic_password, as Metal3's Ironic uses).", false},
	{"baremetal", "ironic_username", "", "User for ironic_auth_type = http_basic.", false},
	{"baremetal", "ironic_password", "", "Password for ironic_auth_type = http_basic.", true},
	{"baremetal", "ironic_api_version", "1.81", "Ironic API microversion sent as X-OpenStack-Ironic-API-Version on every request (without it Ironic assumes 1.1). 1.81 is served by Ironic 2023.1 (21.4) and later.", false},
	{"baremetal", "ironic_timeout", "30s", "Timeout of each request to Ironic; when Ironic does not answer in time the API answers 503.", false},
	{"baremetal", "ironic_deploy_interface", "direct", "Deploy interface set on hosts Magnetite enrolls. Empty leaves it to Ironic's default_deploy_interface.", false},
	{"baremetal", "ironic_inspect_interface", "agent", "Inspect interface set on hosts Magnetite enrolls: agent (in-band inspection built into Ironic 2023.2 and later, as Metal3 uses). Set inspector for older Ironic with ironic-inspector, or empty to leave it to Ironic's default_inspect_interface.", false},
	{"baremetal", "ironic_fake_hardware", "false", "Testing and demonstrations only: enroll every host with Ironic's fake-hardware type and fake interfaces (the BMC address is still validated and kept). Never on a cloud with real hosts.", false},
	{"baremetal", "deploy_kernel", "", "URL or Glance image of the deploy ramdisk's kernel, set as driver_info deploy_kernel on enrolled hosts. Empty means Ironic's [conductor] deploy_kernel.", false},
	{"baremetal", "deploy_ramdisk", "", "URL or Glance image of the deploy ramdisk, set as driver_info deploy_ramdisk on enrolled hosts. Empty means Ironic's [conductor] deploy_ramdisk.", false},
	{"baremetal", "default_resource_class", "baremetal", "Ironic resource class of hosts enrolled without one; bare-metal flavors ask for it as resources:CUSTOM_<CLASS>=1.", false},
	{"baremetal", "metal3_namespace", "metal3", "Namespace of the management cluster holding the metal3 backend's BareMetalHosts (and their BMC credentials Secrets) that are assigned to no project; hosts enrolled with a project_id live in that project's namespace. baremetal-operator must watch them all.", false},
	{"baremetal", "capacity_check", "refuse", "What a cluster create or resize (or node group create or resize) gets when its bare-metal node groups need more hosts than are free: refuse (409 saying how many are needed and free per resource class), warn (accepted; the warning is logged and kept in the cluster's events) or off. Only with a backend.", false},
	{"baremetal", "compute_endpoint", "", "Nova endpoint the capacity check reads flavors from (resources:CUSTOM_<CLASS>=1 says a flavor's resource class), with the caller's token. Empty means the compute endpoint of Keystone's catalog with [auth] strategy = keystone; without either, node groups are bare metal by server_type and count default_resource_class.", false},
	{"baremetal", "reconcile_interval", "15s", "How often hosts are moved on towards their target state (verify, inspect, clean, provide) and pending deletes are finished.", false},
	{"management", "kubeconfig", "", "Kubeconfig of the management cluster where Cluster API runs. Keep it mode 0600: Magnetite warns when group or others can read it. Empty means the in-cluster service account when Magnetite runs in a pod.", false},
	{"management", "api_resources", "", "Served API version per kind, overriding discovery: comma-separated Kind=group/version, e.g. Cluster=cluster.x-k8s.io/v1beta2. Empty means each kind's preferred served version, discovered from the management cluster.", false},
	{"management", "namespace_prefix", "magnetite-", "Start of the name of each project's namespace in the management cluster; the project id follows.", false},
	{"management", "delete_empty_namespaces", "true", "Delete a project's namespace when its last cluster is gone. Set false on a management cluster that runs no namespace controller (kube-controller-manager), such as the local plane of hack/run-local.sh: there a deleted namespace stays Terminating and the project's next cluster waits for it.", false},
	{"cluster_credentials", "enabled", "auto", "Give every new cluster a Keystone application credential of its own, made with the creating user's token and deleted with the cluster (rotate it with PATCH /v1/credentials/{cluster}): true, false, or auto (true with [auth] strategy = keystone). Deleting credentials of other users needs the admin role on Magnetite's service user.", false},
	{"cluster_credentials", "auth_url", "", "Keystone endpoint written into clusters' clouds.yaml and cloud.conf, as the clusters' machines reach it. Empty means [keystone_authtoken] www_authenticate_uri, then auth_url.", false},
	{"cluster_credentials", "region_name", "", "Region written into clusters' clouds.yaml and cloud.conf. Empty means [keystone_authtoken] region_name.", false},
	{"cluster_credentials", "interface", "public", "Endpoint interface clusters use (public or internal).", false},
	{"cluster_credentials", "cafile", "", "PEM bundle given to clusters (clouds.yaml cacert, cloud.conf ca-file) to verify the cloud's endpoints. Empty means none: the endpoints use publicly trusted certificates.", false},
	{"conductor", "enabled", "auto", "Run the conductor in this process: true, false, or auto (run it when a management cluster is configured or Magnetite runs in a pod). Without a conductor, requests are recorded and clusters stay in their *_IN_PROGRESS state.", false},
	{"conductor", "infrastructure", "openstack", "Infrastructure of clusters whose template names no driver: openstack (Nova VMs and Ironic bare metal through CAPO) or inmemory (Cluster API's in-memory backend, for trying Magnetite and for tests without a cloud).", false},
	{"conductor", "workers", "4", "Operations one process runs at once.", false},
	{"conductor", "lease", "2m", "How long a claimed operation stays with a process that stops heartbeating, before another process takes it over.", false},
	{"services", "report_interval", "10s", "How often each process records that it is alive.", false},
	{"services", "down_after", "60s", "A process that has not reported for this long is shown as down.", false},
	{"log", "level", "info", "Log level: debug, info, warn or error.", false},
	{"log", "format", "text", "Log format: text or json.", false},
}
