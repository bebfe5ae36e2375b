-- Recovery codes for two-factor login (core/admin_recovery.c): ten per
-- user, made when two-factor login is turned on, each logging in once in
-- place of an authenticator code (a lost phone).  Only a SHA-256 of each
-- is kept; a used one is deleted.
CREATE TABLE admin_recovery_codes (
    user_id INTEGER NOT NULL REFERENCES admin_users(id) ON DELETE CASCADE,
    hash    BLOB NOT NULL,
    made    INTEGER NOT NULL, -- unix time the set was made (shown, audited)
    PRIMARY KEY (user_id, hash)
) WITHOUT ROWID;
