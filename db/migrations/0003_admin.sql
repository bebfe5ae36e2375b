-- Admin web UI (issue 14): where a change came from and what it changed,
-- and the idle expiry of admin sessions.
ALTER TABLE audit ADD COLUMN source TEXT;        -- "127.0.0.1", "control socket"
ALTER TABLE audit ADD COLUMN before_state TEXT;  -- JSON of the resource before (secrets masked)
ALTER TABLE audit ADD COLUMN after_state TEXT;   -- JSON of the resource after

ALTER TABLE admin_sessions ADD COLUMN last_seen INTEGER NOT NULL DEFAULT 0;
ALTER TABLE admin_sessions ADD COLUMN source TEXT;
CREATE INDEX admin_sessions_expiry ON admin_sessions (expires_at);
