-- Settings history (core/settings_history.c): every write of settings, the
-- values before and after, so that one click (or tlsboxctl settings undo)
-- puts a change back.  A write of several settings at once is one change.
-- The newest 1000 changes are kept.  Secret settings keep no values here:
-- their rows say only that they changed (secret = 1).
CREATE TABLE settings_changes (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    at      INTEGER NOT NULL,
    actor   TEXT NOT NULL,
    undo_of INTEGER                        -- the change this one undid, or NULL
);
CREATE TABLE settings_change_items (
    change_id INTEGER NOT NULL,            -- settings_changes.id
    key       TEXT NOT NULL,               -- "<plugin>.<key>"
    old_value TEXT,                        -- NULL: the default served (or secret)
    new_value TEXT,                        -- NULL: back to the default (or secret)
    secret    INTEGER NOT NULL DEFAULT 0 CHECK (secret IN (0, 1)),
    PRIMARY KEY (change_id, key)
);
CREATE INDEX settings_change_items_key ON settings_change_items(key, change_id);
CREATE INDEX settings_changes_undo ON settings_changes(undo_of) WHERE undo_of IS NOT NULL;
