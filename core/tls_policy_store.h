/* The versioned TLS policy in the store (table policy_versions).
 *
 * History is linear: every change, including a rollback, appends a new row
 * that becomes the one active row.  A rollback to version N appends a copy of
 * N's policy (comment "rollback to version N"), so the history always reads
 * as what was applied when, and a rollback can itself be rolled back. */
#ifndef TLSBOX_CORE_TLS_POLICY_STORE_H
#define TLSBOX_CORE_TLS_POLICY_STORE_H

#include <stdint.h>

#include <gnutls/gnutls.h>
#include <jansson.h>
#include <sqlite3.h>

/* The active policy (new reference), its version id and compiled priority
 * string (caller frees; may be NULL).  0, -ENOENT when none is stored, -EIO. */
int tls_policy_store_active(sqlite3 *db, json_t **policy, int64_t *id, char **prio);

/* Version @p id's policy (new reference).  0, -ENOENT, -EIO. */
int tls_policy_store_get(sqlite3 *db, int64_t id, json_t **policy);

/*
 * Normalise, compile and validate @p policy, then in one transaction append
 * it as the new active version.  0 with *id set, or -EINVAL (invalid policy)
 * / -EIO (store) with *err (caller frees); nothing is written on error.
 */
int tls_policy_store_save(sqlite3 *db, json_t *policy, const char *author, const char *comment,
                          int64_t *id, char **err);

/* Store the default policy when no version exists.  0 or -EIO. */
int tls_policy_store_ensure_default(sqlite3 *db, char **err);

/* Append a copy of version @p version as the new active one.  0, -ENOENT, -EINVAL, -EIO. */
int tls_policy_store_rollback(sqlite3 *db, int64_t version, const char *author, int64_t *id,
                              char **err);

/* The newest @p limit versions, newest first: [{id, created_at, author,
 * comment, active, preset, priority}].  New reference. */
json_t *tls_policy_store_history(sqlite3 *db, int limit);

/*
 * Credentials to try handshakes with under @p policy (compiled to @p prio):
 * the active certificates its key_types allow, with the DH parameters the
 * bundle would serve (*dh: the caller deinits it after the credentials).
 * Returns how many certificates loaded, their key types in *have (caller
 * frees); 0 and *cred NULL when none.
 */
int tls_policy_store_credentials(sqlite3 *db, json_t *policy, const char *prio,
                                 gnutls_certificate_credentials_t *cred, gnutls_dh_params_t *dh,
                                 char **have);

#endif
