-- Expiry warnings (core/cert_expiry.c): the last threshold (in days)
-- cert.expiring was announced for, and for which not_after, so that each
-- threshold is announced once per certificate and a renewal starts over.
ALTER TABLE certificates ADD COLUMN expiry_warned_days INTEGER;
ALTER TABLE certificates ADD COLUMN expiry_warned_not_after INTEGER;
