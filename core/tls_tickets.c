/* Session ticket master keys in the store (see tls_tickets.h). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>

#include "core/store.h"
#include "core/tls_tickets.h"
#include "core/xalloc.h"

void tls_tickets_wipe(struct tls_ticket_keys *k)
{
    wipe(k, sizeof(*k));
}

int tls_tickets_load(sqlite3 *db, struct tls_ticket_keys *k)
{
    sqlite3_stmt *st = NULL;
    int rc = -EIO, n = 0;
    memset(k, 0, sizeof(*k));
    if (sqlite3_prepare_v2(db, "SELECT key, created_at FROM ticket_keys ORDER BY id DESC LIMIT 2",
                           -1, &st, NULL) != SQLITE_OK)
        goto out;
    int s;
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        if (sqlite3_column_bytes(st, 0) != TLS_TICKET_KEY_SIZE)
            continue; /* not ours: never feed GnuTLS a short key */
        memcpy(n == 0 ? k->current : k->previous, sqlite3_column_blob(st, 0), TLS_TICKET_KEY_SIZE);
        if (n == 0)
            k->current_created = (time_t)sqlite3_column_int64(st, 1);
        else
            k->have_previous = true;
        n++;
    }
    if (s != SQLITE_DONE)
        goto out;
    rc = n ? 0 : -ENOENT;
out:
    sqlite3_finalize(st);
    if (rc < 0)
        tls_tickets_wipe(k);
    return rc;
}

int tls_tickets_rotate(sqlite3 *db, time_t now, unsigned period_s, bool force, bool *rotated,
                       char **err)
{
    struct tls_ticket_keys k;
    sqlite3_stmt *st = NULL;
    gnutls_datum_t nk = {NULL, 0};
    int rc = -EIO;

    *rotated = false;
    *err = NULL;
    if (store_begin(db, err) < 0)
        return -EIO;
    int r = tls_tickets_load(db, &k);
    if (r < 0 && r != -ENOENT)
        goto fail;
    if (r == 0 && !force && now - k.current_created < (time_t)period_s) {
        store_rollback(db);
        rc = 0;
        goto out;
    }
    if (gnutls_session_ticket_key_generate(&nk) < 0 || nk.size != TLS_TICKET_KEY_SIZE)
        goto fail;
    if (sqlite3_prepare_v2(db, "INSERT INTO ticket_keys (key, created_at) VALUES (?, ?)", -1, &st,
                           NULL) != SQLITE_OK)
        goto fail;
    sqlite3_bind_blob(st, 1, nk.data, (int)nk.size, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)now);
    if (sqlite3_step(st) != SQLITE_DONE)
        goto fail;
    /* Old keys decrypt old tickets: overwrite them on disk, not just unlink. */
    sqlite3_exec(db, "PRAGMA secure_delete = ON", NULL, NULL, NULL);
    if (sqlite3_exec(db,
                     "DELETE FROM ticket_keys WHERE id NOT IN "
                     "(SELECT id FROM ticket_keys ORDER BY id DESC LIMIT 2)",
                     NULL, NULL, NULL) != SQLITE_OK)
        goto fail;
    store_audit(db, "system", "tickets.rotate", "ticket_keys", NULL);
    if (store_commit(db, err) < 0)
        goto out;
    *rotated = true;
    rc = 0;
    goto out;
fail:
    free(*err);
    *err = xasprintf("ticket keys: store: %s", sqlite3_errmsg(db));
    store_rollback(db);
out:
    sqlite3_finalize(st);
    if (nk.data) {
        wipe(nk.data, nk.size);
        gnutls_free(nk.data);
    }
    tls_tickets_wipe(&k);
    return rc;
}

/* Big-endian reads with bounds; each returns false past the end. */
static bool rd16(const unsigned char *p, size_t n, size_t *i, size_t *v)
{
    if (*i + 2 > n)
        return false;
    *v = (size_t)p[*i] << 8 | p[*i + 1];
    *i += 2;
    return true;
}

int tls_tickets_in_client_hello(const unsigned char *msg, size_t n, const unsigned char **ticket,
                                size_t *len)
{
    size_t i = 2 + 32, v, end; /* legacy_version, random */

    if (i + 1 > n)
        return -EINVAL;
    i += 1 + msg[i];                               /* session id */
    if (!rd16(msg, n, &i, &v) || (i += v) + 1 > n) /* cipher suites */
        return -EINVAL;
    i += 1 + msg[i];                        /* compression methods */
    if (!rd16(msg, n, &i, &v) || i + v > n) /* extensions */
        return -ENOENT;
    end = i + v;
    while (i + 4 <= end) {
        size_t type = 0, elen = 0, j;
        if (!rd16(msg, end, &i, &type) || !rd16(msg, end, &i, &elen) || i + elen > end)
            return -EINVAL;
        j = i;
        if (type == 35 && elen > 0) { /* session_ticket */
            *ticket = msg + i;
            *len = elen;
            return 0;
        }
        if (type == 41) { /* pre_shared_key: identities<>, then the first identity<> */
            size_t ids, idlen;
            if (rd16(msg, i + elen, &j, &ids) && rd16(msg, i + elen, &j, &idlen) && idlen > 0 &&
                j + idlen <= i + elen) {
                *ticket = msg + j;
                *len = idlen;
                return 0;
            }
            return -EINVAL;
        }
        i += elen;
    }
    return -ENOENT;
}

bool tls_tickets_issued_under(const unsigned char master[TLS_TICKET_KEY_SIZE], unsigned lifetime,
                              time_t now, const unsigned char *ticket, size_t len)
{
    unsigned char in[8 + TLS_TICKET_KEY_SIZE], out[64];
    uint64_t step;
    bool match = false;

    if (len < 16 || lifetime == 0 || now <= 0)
        return false;
    step = (uint64_t)now / ((uint64_t)lifetime * 3);
    memcpy(in + 8, master, TLS_TICKET_KEY_SIZE);
    for (int back = 0; back < 2 && !match && step > (uint64_t)back; back++) {
        uint64_t t = step - (uint64_t)back;
        for (int b = 0; b < 8; b++)
            in[b] = (unsigned char)(t >> (56 - 8 * b));
        /* K(T) = SHA3-512(T || master); its first 16 bytes name the key. */
        if (gnutls_hash_fast(GNUTLS_DIG_SHA3_512, in, sizeof(in), out) == 0 &&
            memcmp(out, ticket, 16) == 0)
            match = true;
    }
    wipe(in, sizeof(in));
    wipe(out, sizeof(out));
    return match;
}
