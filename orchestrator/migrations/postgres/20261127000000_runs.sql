-- Results per run (issue 25): a result belongs to the job whose run made it, so a failed or
-- cancelled run never shows an earlier run's text as the session's result.
ALTER TABLE jobs ADD COLUMN result TEXT;
-- A parent's children (limits on children per parent).
CREATE INDEX sessions_parent ON sessions (parent_session_name);
