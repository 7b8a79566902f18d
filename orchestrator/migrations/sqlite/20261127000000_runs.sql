-- Results per run (issue 25): a result belongs to the job whose run made it, so a failed or
-- cancelled run never shows an earlier run's text as the session's result.
ALTER TABLE jobs ADD COLUMN result TEXT;
-- A session's jobs in queue order (its current run, its callbacks' parents), as on PostgreSQL.
CREATE INDEX jobs_session_seq ON jobs (session_name, seq);
-- Listings order by (created_at, session_name): without the second column SQLite sorted every
-- row up to the page for each page.
DROP INDEX sessions_created_at;
CREATE INDEX sessions_created_at ON sessions (created_at, session_name);
-- A parent's children (limits on children per parent).
CREATE INDEX sessions_parent ON sessions (parent_session_name);
