-- tlsbox store, schema 1.  Times are Unix seconds (UTC).  Applied in one
-- BEGIN IMMEDIATE transaction by store_migrate() (core/store.c), which sets
-- PRAGMA user_version = 1.

-- Settings as text, validated against the owning plugin's declared table
-- before they get here.  Absent key = declared default.
CREATE TABLE settings (
    key        TEXT PRIMARY KEY,           -- "<plugin>.<key>"
    value      TEXT NOT NULL,
    updated_at INTEGER NOT NULL,
    updated_by TEXT NOT NULL DEFAULT 'system'
);

-- TLS policy, versioned: every change is a new row; exactly one is active.
CREATE TABLE policy_versions (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at  INTEGER NOT NULL,
    author      TEXT NOT NULL,
    comment     TEXT,
    policy_json TEXT NOT NULL,             -- the structured policy
    priority    TEXT NOT NULL,             -- compiled GnuTLS priority string
    active      INTEGER NOT NULL DEFAULT 0 CHECK (active IN (0, 1))
);
CREATE UNIQUE INDEX policy_one_active ON policy_versions(active) WHERE active = 1;

-- Certificates served by the site (and the admin UI).  One row per name;
-- an installed replacement overwrites the row in one transaction.
CREATE TABLE certificates (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    name        TEXT NOT NULL UNIQUE,
    sans        TEXT NOT NULL,             -- JSON array of DNS names / IPs
    key_type    TEXT NOT NULL,             -- ecdsa-p256, ecdsa-p384, rsa-2048, ...
    chain_pem   TEXT NOT NULL,             -- leaf first
    key_pem     BLOB NOT NULL,             -- private key; never leaves the store but into a bundle
    issuer      TEXT NOT NULL,
    serial      TEXT NOT NULL,             -- hex
    not_before  INTEGER NOT NULL,
    not_after   INTEGER NOT NULL,
    source      TEXT NOT NULL CHECK (source IN ('internal', 'import', 'acme')),
    ari_id      TEXT,
    status      TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled', 'revoked')),
    meta_json   TEXT,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);

-- The internal CA (one row): its root signs the LAN leaf certificate.
CREATE TABLE internal_ca (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    cert_pem   TEXT NOT NULL,
    key_pem    BLOB NOT NULL,
    created_at INTEGER NOT NULL
);

-- Session ticket master keys: the newest is used, the one before still accepted.
CREATE TABLE ticket_keys (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    key        BLOB NOT NULL,
    created_at INTEGER NOT NULL
);

-- OCSP staples per certificate name.
CREATE TABLE ocsp (
    cert_name     TEXT PRIMARY KEY,
    responder_url TEXT,
    response      BLOB,                    -- DER, last good response
    cert_status   TEXT,                    -- good, revoked, unknown
    this_update   INTEGER,
    next_update   INTEGER,
    fetched_at    INTEGER,
    next_fetch    INTEGER,
    failures      INTEGER NOT NULL DEFAULT 0,
    last_error    TEXT
);

-- Diffie-Hellman parameters (PKCS#3 PEM); the active row overrides RFC 7919 defaults.
CREATE TABLE dh_params (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    bits       INTEGER NOT NULL,
    pem        TEXT NOT NULL,
    source     TEXT NOT NULL,              -- generated, import
    created_at INTEGER NOT NULL,
    active     INTEGER NOT NULL DEFAULT 0 CHECK (active IN (0, 1))
);
CREATE UNIQUE INDEX dh_one_active ON dh_params(active) WHERE active = 1;

-- ACME: one account per directory URL, reused.
CREATE TABLE acme_accounts (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    directory   TEXT NOT NULL UNIQUE,
    email       TEXT,
    key_pem     BLOB NOT NULL,
    account_url TEXT,                      -- the kid; NULL until registered
    created_at  INTEGER NOT NULL
);

-- ACME orders, kept so that a crash at any step resumes or restarts cleanly.
CREATE TABLE acme_orders (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id   INTEGER NOT NULL REFERENCES acme_accounts(id),
    cert_name    TEXT NOT NULL,
    domains      TEXT NOT NULL,            -- JSON array
    key_type     TEXT NOT NULL,
    order_url    TEXT,
    status       TEXT NOT NULL,            -- pending, ready, processing, valid, invalid, done, abandoned
    finalize_url TEXT,
    cert_url     TEXT,
    key_pem      BLOB,                     -- the new certificate's key, until installed
    replaces     TEXT,                     -- ARI id of the certificate it replaces
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
);

-- Every ACME attempt: what step, what problem, when the next try is.
CREATE TABLE acme_events (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    at           INTEGER NOT NULL,
    cert_name    TEXT NOT NULL,
    step         TEXT NOT NULL,
    ok           INTEGER NOT NULL,
    problem_type TEXT,
    detail       TEXT,
    next_attempt INTEGER
);
CREATE INDEX acme_events_by_cert ON acme_events(cert_name, at);

-- Built-in benchmark runs.
CREATE TABLE bench_runs (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    started_at   INTEGER NOT NULL,
    finished_at  INTEGER,
    target       TEXT NOT NULL,
    params_json  TEXT NOT NULL,
    results_json TEXT,
    status       TEXT NOT NULL,            -- running, done, failed, cancelled
    policy_id    INTEGER REFERENCES policy_versions(id)
);

-- Metrics history, written in batches (SD cards: at most once a minute).
CREATE TABLE metrics_history (
    ts    INTEGER NOT NULL,
    name  TEXT NOT NULL,
    value REAL NOT NULL,
    PRIMARY KEY (ts, name)
) WITHOUT ROWID;

-- Admin users and sessions.
CREATE TABLE admin_users (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    name          TEXT NOT NULL UNIQUE,
    pw_salt       BLOB NOT NULL,
    pw_hash       BLOB NOT NULL,           -- PBKDF2-HMAC-SHA256
    pw_iterations INTEGER NOT NULL,
    failed_logins INTEGER NOT NULL DEFAULT 0,
    locked_until  INTEGER NOT NULL DEFAULT 0,
    created_at    INTEGER NOT NULL
);

CREATE TABLE admin_sessions (
    token_hash BLOB PRIMARY KEY,           -- SHA-256 of the cookie value
    user_id    INTEGER NOT NULL REFERENCES admin_users(id) ON DELETE CASCADE,
    csrf_token TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
);

-- Who changed what.
CREATE TABLE audit (
    id     INTEGER PRIMARY KEY AUTOINCREMENT,
    at     INTEGER NOT NULL,
    actor  TEXT NOT NULL,
    action TEXT NOT NULL,
    target TEXT,
    detail TEXT
);

-- Free key/value space for plugins without a schema of their own.
CREATE TABLE plugin_kv (
    plugin TEXT NOT NULL,
    key    TEXT NOT NULL,
    value  BLOB,
    PRIMARY KEY (plugin, key)
) WITHOUT ROWID;
