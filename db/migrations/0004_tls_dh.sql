-- The Diffie-Hellman parameters the TLS bundle serves for TLS 1.2 DHE (kit
-- ABI 1.1, host call dh_set).  At most one row; no row means the RFC 7919
-- group chosen by the policy.  Only the core writes it: the dhparam plugin
-- keeps its generated and imported parameters in its own dhparam_* tables
-- and hands the ones to serve to the core, which checks them first.
CREATE TABLE tls_dh (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    pem         TEXT NOT NULL,              -- PKCS#3 "DH PARAMETERS"
    bits        INTEGER NOT NULL CHECK (bits >= 2048),
    fingerprint TEXT NOT NULL,              -- SHA-256 of the DER, first 16 hex digits
    safe_prime  INTEGER NOT NULL CHECK (safe_prime IN (0, 1)),
    source      TEXT NOT NULL,              -- e.g. generated, import
    set_by      TEXT NOT NULL,              -- plugin name
    set_at      INTEGER NOT NULL
);

-- The 0001 placeholder, never written by any release: its place is taken by
-- tls_dh (what is served) and the dhparam plugin's tables (what was made).
DROP INDEX dh_one_active;
DROP TABLE dh_params;
