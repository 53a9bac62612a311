-- A cluster's certificate authorities and service-account keys, made when the
-- cluster is created, and removed with the cluster row.
CREATE TABLE cluster_certificates (
    id          {{id}},
    cluster_id  VARCHAR(36) NOT NULL,
    purpose     VARCHAR(16) NOT NULL,
    cert_pem    TEXT NOT NULL,
    key_pem     TEXT NOT NULL,
    created_at  VARCHAR(32) NOT NULL,
    UNIQUE (cluster_id, purpose),
    CONSTRAINT cluster_certificates_cluster FOREIGN KEY (cluster_id) REFERENCES clusters (uuid) ON DELETE CASCADE
) {{table_options}};
