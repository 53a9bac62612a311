-- Leases on periodic passes that one replica at a time must run, such as the
-- bare-metal host pass ('baremetal_hosts'): a replica takes a pass's row when
-- it is free or its lease has expired, renews it while it runs the pass, and
-- gives it up when it stops. A conditional UPDATE decides the race, as for
-- operations.
CREATE TABLE periodic_leases (
    name          VARCHAR(64) NOT NULL PRIMARY KEY,
    owner         VARCHAR(255),
    lease_expires VARCHAR(32),
    renewals      BIGINT NOT NULL DEFAULT 0
);
INSERT INTO periodic_leases (name) VALUES ('baremetal_hosts');
