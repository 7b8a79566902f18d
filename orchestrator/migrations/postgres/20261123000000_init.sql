-- Sessions, jobs and events on PostgreSQL: the SQLite schema (migrations/sqlite) with an
-- identity column for the queue order. Times are unix milliseconds (BIGINT), JSON is TEXT.

CREATE TABLE sessions (
    session_id          TEXT    NOT NULL PRIMARY KEY,
    session_name        TEXT    NOT NULL,
    agent_name          TEXT    NOT NULL,
    project_dir         TEXT    NOT NULL,
    parent_session_name TEXT,
    status              TEXT    NOT NULL,
    created_at          BIGINT  NOT NULL,
    updated_at          BIGINT  NOT NULL,
    finished_at         BIGINT,
    last_result         TEXT,
    provider_session_id TEXT,
    conversation        TEXT    NOT NULL DEFAULT '[]',
    -- The last event sequence number handed out for this session.
    event_seq           BIGINT  NOT NULL DEFAULT 0
);

CREATE UNIQUE INDEX sessions_session_name ON sessions (session_name);
CREATE INDEX sessions_created_at ON sessions (created_at, session_name);

CREATE TABLE jobs (
    -- Insertion order: the queue's FIFO order (wall clocks can go backwards).
    seq                 BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id              TEXT    NOT NULL UNIQUE,
    kind                TEXT    NOT NULL,
    session_name        TEXT    NOT NULL,
    agent_name          TEXT    NOT NULL,
    prompt              TEXT    NOT NULL,
    project_dir         TEXT    NOT NULL,
    parent_session_name TEXT,
    callback            BOOLEAN NOT NULL,
    status              TEXT    NOT NULL,
    error               TEXT,
    claimed_by          TEXT,
    created_at          BIGINT  NOT NULL,
    claimed_at          BIGINT,
    started_at          BIGINT,
    finished_at         BIGINT,
    -- Until when the claiming worker holds the job (the database's clock, unix milliseconds).
    lease_until         BIGINT,
    -- Another process asked the worker running the job to stop it.
    cancel_requested    BOOLEAN NOT NULL DEFAULT FALSE
);

CREATE INDEX jobs_status_seq ON jobs (status, seq);
CREATE INDEX jobs_session_status ON jobs (session_name, status);
CREATE INDEX jobs_session_seq ON jobs (session_name, seq);
-- A session never has two claimed or running jobs, whatever two workers race to claim.
CREATE UNIQUE INDEX jobs_one_active_per_session ON jobs (session_name) WHERE status IN ('claimed', 'running');

CREATE TABLE events (
    session_id  TEXT    NOT NULL REFERENCES sessions (session_id) ON DELETE CASCADE,
    seq         BIGINT  NOT NULL,
    job_id      TEXT,
    event       TEXT    NOT NULL,
    created_at  BIGINT  NOT NULL,
    PRIMARY KEY (session_id, seq)
);
