CREATE TABLE cluster_templates (
    id          {{id}},
    uuid        VARCHAR(36) NOT NULL UNIQUE,
    name        VARCHAR(255) NOT NULL,
    project_id  VARCHAR(255) NOT NULL,
    user_id     VARCHAR(255) NOT NULL,
    coe         VARCHAR(64) NOT NULL,
    server_type VARCHAR(16) NOT NULL,
    public      INTEGER NOT NULL DEFAULT 0,
    hidden      INTEGER NOT NULL DEFAULT 0,
    created_at  VARCHAR(32) NOT NULL,
    updated_at  VARCHAR(32),
    data        LONGTEXT NOT NULL
) {{table_options}};
CREATE INDEX cluster_templates_project ON cluster_templates (project_id);
CREATE INDEX cluster_templates_name ON cluster_templates (name);

CREATE TABLE clusters (
    id                  {{id}},
    uuid                VARCHAR(36) NOT NULL UNIQUE,
    name                VARCHAR(255) NOT NULL,
    project_id          VARCHAR(255) NOT NULL,
    user_id             VARCHAR(255) NOT NULL,
    cluster_template_id VARCHAR(36) NOT NULL,
    status              VARCHAR(32) NOT NULL,
    health_status       VARCHAR(32),
    stack_id            VARCHAR(255),
    created_at          VARCHAR(32) NOT NULL,
    updated_at          VARCHAR(32),
    data                LONGTEXT NOT NULL,
    UNIQUE (project_id, name)
) {{table_options}};
CREATE INDEX clusters_template ON clusters (cluster_template_id);

CREATE TABLE nodegroups (
    id          {{id}},
    uuid        VARCHAR(36) NOT NULL UNIQUE,
    name        VARCHAR(255) NOT NULL,
    cluster_id  VARCHAR(36) NOT NULL,
    project_id  VARCHAR(255) NOT NULL,
    role        VARCHAR(255) NOT NULL,
    is_default  INTEGER NOT NULL DEFAULT 0,
    status      VARCHAR(32) NOT NULL,
    node_count  INTEGER NOT NULL DEFAULT 0,
    created_at  VARCHAR(32) NOT NULL,
    updated_at  VARCHAR(32),
    data        LONGTEXT NOT NULL,
    UNIQUE (cluster_id, name)
) {{table_options}};

CREATE TABLE quotas (
    id          {{id}},
    project_id  VARCHAR(255) NOT NULL,
    resource    VARCHAR(255) NOT NULL,
    hard_limit  INTEGER NOT NULL,
    created_at  VARCHAR(32) NOT NULL,
    updated_at  VARCHAR(32),
    UNIQUE (project_id, resource)
) {{table_options}};

CREATE TABLE operations (
    id            {{id}},
    uuid          VARCHAR(36) NOT NULL UNIQUE,
    type          VARCHAR(32) NOT NULL,
    cluster_id    VARCHAR(36) NOT NULL,
    nodegroup_id  VARCHAR(36),
    project_id    VARCHAR(255) NOT NULL,
    request_id    VARCHAR(64),
    payload       TEXT,
    state         VARCHAR(16) NOT NULL,
    attempts      INTEGER NOT NULL DEFAULT 0,
    lease_owner   VARCHAR(255),
    lease_expires VARCHAR(32),
    last_error    TEXT,
    created_at    VARCHAR(32) NOT NULL,
    updated_at    VARCHAR(32) NOT NULL
) {{table_options}};
CREATE INDEX operations_state ON operations (state, id);
CREATE INDEX operations_cluster ON operations (cluster_id, id);

CREATE TABLE services (
    id              {{id}},
    host            VARCHAR(255) NOT NULL,
    binary_name     VARCHAR(255) NOT NULL,
    disabled        INTEGER NOT NULL DEFAULT 0,
    disabled_reason VARCHAR(255),
    report_count    INTEGER NOT NULL DEFAULT 0,
    last_seen       VARCHAR(32) NOT NULL,
    created_at      VARCHAR(32) NOT NULL,
    updated_at      VARCHAR(32),
    UNIQUE (host, binary_name)
) {{table_options}};
