-- The OCSP staple the TLS bundle loads, one per certificate name, written
-- only through the host call staple_set (the ocsp plugin keeps its own
-- bookkeeping in its ocsp_* tables).  Replaces the placeholder table "ocsp"
-- of 0001, which nothing ever wrote.
DROP TABLE ocsp;

CREATE TABLE tls_staples (
    cert_name   TEXT PRIMARY KEY,
    serial      TEXT NOT NULL,             -- hex serial of the leaf it answers for
    response    BLOB NOT NULL,             -- DER OCSPResponse, status good, verified
    this_update INTEGER NOT NULL,
    next_update INTEGER NOT NULL,
    serve_until INTEGER NOT NULL CHECK (serve_until <= next_update),
    stored_at   INTEGER NOT NULL
);
