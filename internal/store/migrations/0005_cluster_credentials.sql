-- The Keystone application credentials Magnetite made for each cluster with
-- the requesting user's token: the active one, and retired ones until the
-- conductor has deleted them from Keystone. Rows outlive the cluster row
-- only until then.
CREATE TABLE cluster_credentials (
    credential_id VARCHAR(64) NOT NULL PRIMARY KEY,
    cluster_id    VARCHAR(36) NOT NULL,
    user_id       VARCHAR(255) NOT NULL,
    project_id    VARCHAR(255) NOT NULL,
    secret        TEXT NOT NULL,
    retired       INTEGER NOT NULL DEFAULT 0,
    created_at    VARCHAR(32) NOT NULL
);
CREATE INDEX cluster_credentials_cluster ON cluster_credentials (cluster_id);
