-- Schema version of each plugin's own tables (plugin kit ABI 1.1): the number
-- of the plugin's migration steps this store has applied.
CREATE TABLE plugin_schema (
    plugin     TEXT PRIMARY KEY,
    version    INTEGER NOT NULL CHECK (version >= 0),
    applied_at INTEGER NOT NULL
);
