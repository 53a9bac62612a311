-- Spec and status apart. A cluster's and a node group's JSON was one
-- document written by the API and the conductor alike, their races settled
-- by a per-field merge. Now:
--   spec_json    what the API writes (the request's desired state),
--   status_json  what the conductor writes (status, health, addresses),
--                which the API also sets when it queues work,
--   resource_version  raised by every write: an API write names the
--                version it read and fails if the row moved on (the API
--                then reads again and redoes the request),
--   generation   a cluster's desired generation, raised when the spec of
--                the cluster or of one of its node groups changes,
--   applied_generation, observed_generation, server_group_id: the
--                conductor's bookkeeping, in columns, never in a document
--                the API serves.
-- The columns are added, nothing is dropped (a rolling upgrade's previous
-- release still reads and writes data, which this release keeps writing in
-- that release's shape). The rows are carried over in Go right after these
-- statements (splitStoredDocuments), and a row the previous release inserts
-- meanwhile (spec_json NULL) is read from data until it is next written.
ALTER TABLE clusters ADD COLUMN spec_json LONGTEXT NULL;
ALTER TABLE clusters ADD COLUMN status_json LONGTEXT NULL;
ALTER TABLE clusters ADD COLUMN resource_version BIGINT NOT NULL DEFAULT 1;
ALTER TABLE clusters ADD COLUMN generation BIGINT NOT NULL DEFAULT 1;
ALTER TABLE clusters ADD COLUMN applied_generation BIGINT NOT NULL DEFAULT 0;
ALTER TABLE clusters ADD COLUMN observed_generation BIGINT NOT NULL DEFAULT 0;
ALTER TABLE nodegroups ADD COLUMN spec_json LONGTEXT NULL;
ALTER TABLE nodegroups ADD COLUMN status_json LONGTEXT NULL;
ALTER TABLE nodegroups ADD COLUMN resource_version BIGINT NOT NULL DEFAULT 1;
ALTER TABLE nodegroups ADD COLUMN server_group_id VARCHAR(255) NOT NULL DEFAULT ''
