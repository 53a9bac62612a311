-- When a transiently failed operation may run again (NULL: at once).
ALTER TABLE operations ADD COLUMN next_attempt_at VARCHAR(32) NULL;
CREATE INDEX operations_lease ON operations (state, lease_expires);
