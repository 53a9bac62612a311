-- A cluster's history: status transitions, Cluster API condition changes and
-- the requests that queued work, in the order they happened.
CREATE TABLE cluster_events (
    id          {{id}},
    cluster_id  VARCHAR(36) NOT NULL,
    project_id  VARCHAR(255) NOT NULL,
    time        VARCHAR(32) NOT NULL,
    kind        VARCHAR(16) NOT NULL,
    status      VARCHAR(32) NOT NULL,
    reason      VARCHAR(255) NOT NULL DEFAULT '',
    message     TEXT NOT NULL
) {{table_options}};
CREATE INDEX cluster_events_cluster ON cluster_events (cluster_id, id);
