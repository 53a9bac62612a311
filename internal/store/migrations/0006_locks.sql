-- Rows that transactions lock to take one kind of decision one at a time
-- across every replica sharing the database. 'baremetal_capacity' is locked
-- by a change that reserves bare-metal hosts, from counting the hosts other
-- node groups are promised to writing the nodes it takes.
CREATE TABLE locks (
    name VARCHAR(64) NOT NULL PRIMARY KEY
);
INSERT INTO locks (name) VALUES ('baremetal_capacity');
