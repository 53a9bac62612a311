-- Host actions are operations the conductor carries out, like cluster work:
-- host_ref names the host an operation acts on (id or name as the request
-- gave it, NULL for cluster operations), and result keeps what the action
-- answered (the host as the backend showed it, or why it was refused), so
-- the replica that took the request answers with it.
ALTER TABLE operations ADD COLUMN host_ref VARCHAR(255) NULL;
ALTER TABLE operations ADD COLUMN result MEDIUMTEXT NULL;
CREATE INDEX operations_host ON operations (host_ref, id);

-- The conductor's mirror of the bare-metal backend's hosts, written after
-- each host action and each host pass: the API serves the inventory from
-- here and never asks the backend. A deleted host stays as a tombstone
-- (gone = 1) until a pass lists the backend after the delete, so that a
-- pass that listed before it cannot bring the host back.
CREATE TABLE hosts (
    id          VARCHAR(255) NOT NULL PRIMARY KEY,
    name        VARCHAR(255) NOT NULL,
    project_id  VARCHAR(255),
    backend     VARCHAR(32) NOT NULL,
    gone        INTEGER NOT NULL DEFAULT 0,
    data        MEDIUMTEXT NOT NULL,
    mirrored_at VARCHAR(32) NOT NULL
) {{table_options}};
CREATE INDEX hosts_name ON hosts (name);
