-- One counter per kind of listed object, raised in the same transaction as
-- every write that changes what a listing of that kind shows. The API keys
-- the pages it keeps encoded by these values, so a replica never serves a
-- page older than a write another replica committed.
CREATE TABLE list_generations (
    name  VARCHAR(64) NOT NULL PRIMARY KEY,
    value BIGINT NOT NULL
);
INSERT INTO list_generations (name, value) VALUES ('cluster_templates', 0), ('clusters', 0);
