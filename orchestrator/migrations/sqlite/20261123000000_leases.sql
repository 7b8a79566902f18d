-- Leases (issue 13): a claimed job carries its worker's lease, renewed while it runs; a run of
-- another process can be asked to stop; a session never has two claimed or running jobs, which
-- the database itself now guarantees.
ALTER TABLE jobs ADD COLUMN lease_until BIGINT;
ALTER TABLE jobs ADD COLUMN cancel_requested BOOLEAN NOT NULL DEFAULT FALSE;
CREATE UNIQUE INDEX jobs_one_active_per_session ON jobs (session_name) WHERE status IN ('claimed', 'running');
