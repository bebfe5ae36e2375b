-- Two-factor login for admin users (core/admin_twofactor.c): the TOTP
-- secret (20 bytes; NULL: off), a secret being set up until the user
-- confirms it with a code, and the last time step a code was used in (a
-- code logs in once).
ALTER TABLE admin_users ADD COLUMN totp_secret BLOB;
ALTER TABLE admin_users ADD COLUMN totp_pending BLOB;
ALTER TABLE admin_users ADD COLUMN totp_last_step INTEGER NOT NULL DEFAULT 0;
