/* The audit log of changes: who, when, from where, what, the state before
 * and after (secrets masked), and its listing for the admin UI. */
#ifndef TLSBOX_CORE_AUDIT_H
#define TLSBOX_CORE_AUDIT_H

#include <stddef.h>

#include <jansson.h>

/* The resource a change on API @p path alters: the longest leading part of
 * the path ("policy" for "policy/preset") that answers GET; NULL when none.
 * Caller frees. */
char *audit_resource(const char *path);

/*
 * Record one successful API change: @p user from @p source did @p method
 * @p path with @p body (secret members masked: passwords, keys, tokens and
 * settings declared SECRET), turning @p before into @p after (JSON texts of
 * the resource, may be NULL).  Its own store connection; best effort (logged).
 */
void audit_change(const char *user, const char *source, const char *method, const char *path,
                  const char *body, size_t body_len, const char *before, const char *after);

/* The request body of a change on API @p path as compact JSON with secret
 * members masked (see audit_change); NULL for no body.  Caller frees. */
char *audit_masked_body(const char *path, const char *body, size_t len);

/* An event that is not an API change (login failed, lockout, session ended).
 * Of "login.failed" and "login.lockout", which anyone can cause, only the
 * newest 1000 rows are kept. */
void audit_event(const char *actor, const char *source, const char *action, const char *target,
                 const char *detail);

/* Newest first: at most @p limit rows with id < @p before_id (0: from the
 * newest).  *next_before: the id to pass as @p before_id for the next older
 * page, 0 when there is none.  New reference, NULL on a store error. */
json_t *audit_list(int limit, long long before_id, long long *next_before);

#endif
