/* The dhparam plugin's own tables: parameters made or imported, and the
 * generation runs (so a stop or crash mid-way is resumed at the next start). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plugins/dhparam/dhparam.h"

void dhparam_row_clear(struct dhparam_row *r)
{
    free(r->pem);
    memset(r, 0, sizeof(*r));
}

static char *dup_text(sqlite3_stmt *st, int col)
{
    const char *t = (const char *)sqlite3_column_text(st, col);
    return t ? strdup(t) : NULL;
}

int dhparam_store_newest(sqlite3 *db, const char *source, struct dhparam_row *out)
{
    sqlite3_stmt *st = NULL;
    int rc = -EIO;
    memset(out, 0, sizeof(*out));
    if (sqlite3_prepare_v2(db,
                           "SELECT id, bits, pem, created_at, gen_seconds FROM dhparam_params "
                           "WHERE source = ? ORDER BY created_at DESC, id DESC LIMIT 1",
                           -1, &st, NULL) != SQLITE_OK)
        goto out;
    sqlite3_bind_text(st, 1, source, -1, SQLITE_STATIC);
    int s = sqlite3_step(st);
    if (s == SQLITE_DONE) {
        rc = -ENOENT;
        goto out;
    }
    if (s != SQLITE_ROW)
        goto out;
    out->id = sqlite3_column_int64(st, 0);
    out->bits = sqlite3_column_int(st, 1);
    out->pem = dup_text(st, 2);
    snprintf(out->source, sizeof(out->source), "%s", source);
    out->created_at = sqlite3_column_int64(st, 3);
    out->gen_seconds =
        sqlite3_column_type(st, 4) == SQLITE_NULL ? -1 : sqlite3_column_double(st, 4);
    rc = out->pem ? 0 : -EIO;
out:
    sqlite3_finalize(st);
    return rc;
}

/* Run @p st to completion; 0 or -EIO. */
static int step_done(sqlite3_stmt *st)
{
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
    sqlite3_finalize(st);
    return rc;
}

static int64_t insert_params(sqlite3 *db, const char *pem, int bits, const char *source,
                             double seconds)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db,
                           "INSERT INTO dhparam_params (bits, pem, source, created_at, "
                           "gen_seconds) VALUES (?, ?, ?, ?, ?)",
                           -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int(st, 1, bits);
    sqlite3_bind_text(st, 2, pem, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, source, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, (sqlite3_int64)time(NULL));
    if (seconds >= 0)
        sqlite3_bind_double(st, 5, seconds);
    if (step_done(st) < 0)
        return -EIO;
    return sqlite3_last_insert_rowid(db);
}

int64_t dhparam_store_import(sqlite3 *db, const char *pem, int bits)
{
    return insert_params(db, pem, bits, "import", -1);
}

/* Finished runs and generated parameters kept, newest first.  A run is
 * started at every rotation (every dhparam.rotate_days, 1 at least) and,
 * while runs fail, at every hourly check: without a bound both tables grow
 * for as long as the box runs.  Only the newest are ever read (the served
 * parameters, the last run, the last generation time); the parameters a
 * kept run made stay with it, and imported ones (a person's) are left. */
#define DHPARAM_KEEP "20"

static void prune(sqlite3 *db)
{
    sqlite3_exec(db,
                 "DELETE FROM dhparam_runs WHERE state IN ('done', 'failed', 'cancelled') AND "
                 "id <= (SELECT id FROM dhparam_runs WHERE state IN ('done', 'failed', "
                 "'cancelled') ORDER BY id DESC LIMIT 1 OFFSET " DHPARAM_KEEP ") AND "
                 "(params_id IS NULL OR params_id < (SELECT max(id) FROM dhparam_params WHERE "
                 "source = 'generated'));"
                 "DELETE FROM dhparam_params WHERE source = 'generated' AND id <= (SELECT id "
                 "FROM dhparam_params WHERE source = 'generated' ORDER BY id DESC LIMIT 1 "
                 "OFFSET " DHPARAM_KEEP ") AND id NOT IN (SELECT params_id FROM dhparam_runs "
                 "WHERE params_id IS NOT NULL)",
                 NULL, NULL, NULL);
}

int64_t dhparam_store_run_begin(sqlite3 *db, int bits, const char *reason, int64_t resume_id,
                                int *attempts)
{
    sqlite3_stmt *st = NULL;
    int64_t now = (int64_t)time(NULL), id = resume_id;
    *attempts = 1;
    if (resume_id > 0) {
        if (sqlite3_prepare_v2(db,
                               "UPDATE dhparam_runs SET state = 'running', stage = 'queued', "
                               "attempts = attempts + 1, started_at = ?, error = NULL "
                               "WHERE id = ? RETURNING attempts",
                               -1, &st, NULL) != SQLITE_OK)
            return -EIO;
        sqlite3_bind_int64(st, 1, now);
        sqlite3_bind_int64(st, 2, resume_id);
        if (sqlite3_step(st) != SQLITE_ROW) {
            sqlite3_finalize(st);
            return -EIO;
        }
        *attempts = sqlite3_column_int(st, 0);
        return step_done(st) < 0 ? -EIO : id;
    }
    if (sqlite3_prepare_v2(db,
                           "INSERT INTO dhparam_runs (bits, reason, state, stage, attempts, "
                           "requested_at, started_at) VALUES (?, ?, 'running', 'queued', 1, ?, ?)",
                           -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int(st, 1, bits);
    sqlite3_bind_text(st, 2, reason, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, now);
    sqlite3_bind_int64(st, 4, now);
    if (step_done(st) < 0)
        return -EIO;
    int64_t run = sqlite3_last_insert_rowid(db);
    prune(db);
    return run;
}

void dhparam_store_run_stage(sqlite3 *db, int64_t run_id, const char *stage)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "UPDATE dhparam_runs SET stage = ? WHERE id = ?", -1, &st, NULL) !=
        SQLITE_OK)
        return;
    sqlite3_bind_text(st, 1, stage, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, run_id);
    step_done(st);
}

int dhparam_store_run_end(sqlite3 *db, int64_t run_id, const char *state, const char *error)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db,
                           "UPDATE dhparam_runs SET state = ?, stage = ?, finished_at = ?, "
                           "error = ? WHERE id = ?",
                           -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_text(st, 1, state, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, state, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)time(NULL));
    if (error)
        sqlite3_bind_text(st, 4, error, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 5, run_id);
    return step_done(st);
}

int dhparam_store_run_orphans(sqlite3 *db)
{
    if (sqlite3_exec(db,
                     "UPDATE dhparam_runs SET state = 'interrupted', stage = 'interrupted' "
                     "WHERE state = 'running'",
                     NULL, NULL, NULL) != SQLITE_OK)
        return -EIO;
    return sqlite3_changes(db);
}

int dhparam_store_run_done(sqlite3 *db, int64_t run_id, const char *pem, int bits, double seconds)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return -EIO;
    int64_t id = insert_params(db, pem, bits, "generated", seconds);
    if (id < 0 || sqlite3_prepare_v2(db,
                                     "UPDATE dhparam_runs SET state = 'done', stage = 'done', "
                                     "finished_at = ?, params_id = ? WHERE id = ?",
                                     -1, &st, NULL) != SQLITE_OK)
        goto fail;
    sqlite3_bind_int64(st, 1, (sqlite3_int64)time(NULL));
    sqlite3_bind_int64(st, 2, id);
    sqlite3_bind_int64(st, 3, run_id);
    if (step_done(st) < 0 || sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        goto fail;
    return 0;
fail:
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    return -EIO;
}

int dhparam_store_run_unfinished(sqlite3 *db, int64_t *id, int *bits, char *reason)
{
    sqlite3_stmt *st = NULL;
    int rc = -EIO;
    if (sqlite3_prepare_v2(db,
                           "SELECT id, bits, reason FROM dhparam_runs WHERE state IN "
                           "('running', 'interrupted') ORDER BY id DESC LIMIT 1",
                           -1, &st, NULL) != SQLITE_OK)
        goto out;
    int s = sqlite3_step(st);
    rc = s == SQLITE_DONE ? -ENOENT : s == SQLITE_ROW ? 0 : -EIO;
    if (rc == 0) {
        *id = sqlite3_column_int64(st, 0);
        *bits = sqlite3_column_int(st, 1);
        snprintf(reason, 16, "%s", (const char *)sqlite3_column_text(st, 2));
    }
out:
    sqlite3_finalize(st);
    return rc;
}

double dhparam_store_last_seconds(sqlite3 *db, int bits)
{
    sqlite3_stmt *st = NULL;
    double s = -1;
    if (sqlite3_prepare_v2(db,
                           "SELECT gen_seconds FROM dhparam_params WHERE source = 'generated' "
                           "AND bits = ? AND gen_seconds IS NOT NULL ORDER BY id DESC LIMIT 1",
                           -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int(st, 1, bits);
        if (sqlite3_step(st) == SQLITE_ROW)
            s = sqlite3_column_double(st, 0);
    }
    sqlite3_finalize(st);
    return s;
}

bool dhparam_store_requested(sqlite3 *db, int64_t params_id)
{
    sqlite3_stmt *st = NULL;
    bool r = false;
    if (sqlite3_prepare_v2(db,
                           "SELECT 1 FROM dhparam_runs WHERE params_id = ? AND reason = 'request'",
                           -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, params_id);
        r = sqlite3_step(st) == SQLITE_ROW;
    }
    sqlite3_finalize(st);
    return r;
}

static json_t *params_json(sqlite3 *db, const char *source)
{
    struct dhparam_row r;
    if (dhparam_store_newest(db, source, &r) < 0)
        return json_null();
    json_t *j = json_pack("{s:I, s:i, s:I, s:f}", "id", (json_int_t)r.id, "bits", r.bits,
                          "created_at", (json_int_t)r.created_at, "age_days",
                          (double)(time(NULL) - r.created_at) / 86400.0);
    if (r.gen_seconds >= 0)
        json_object_set_new(j, "generation_seconds", json_real(r.gen_seconds));
    dhparam_row_clear(&r);
    return j;
}

static json_t *last_run_json(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    json_t *j = json_null();
    if (sqlite3_prepare_v2(db,
                           "SELECT id, bits, reason, state, attempts, started_at, finished_at, "
                           "error FROM dhparam_runs WHERE state IN ('done', 'failed', 'cancelled') "
                           "ORDER BY id DESC LIMIT 1",
                           -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
        j = json_pack("{s:I, s:i, s:s, s:s, s:i, s:I, s:I, s:s?}", "id",
                      (json_int_t)sqlite3_column_int64(st, 0), "bits", sqlite3_column_int(st, 1),
                      "reason", (const char *)sqlite3_column_text(st, 2), "state",
                      (const char *)sqlite3_column_text(st, 3), "attempts",
                      sqlite3_column_int(st, 4), "started_at",
                      (json_int_t)sqlite3_column_int64(st, 5), "finished_at",
                      (json_int_t)sqlite3_column_int64(st, 6), "error",
                      (const char *)sqlite3_column_text(st, 7));
        /* "outcome" was once how a cancelled run, then stored as failed, was
         * told apart; clients still read it, with "cancelled_because". */
        const char *state = (const char *)sqlite3_column_text(st, 3);
        const char *because = (const char *)sqlite3_column_text(st, 7);
        size_t n = strlen(DHPARAM_CANCELLED_PREFIX);
        if (!because)
            because = "";
        else if (strncmp(because, DHPARAM_CANCELLED_PREFIX, n) == 0)
            because += n;
        if (j)
            json_object_set_new(j, "outcome", json_string(state));
        if (j && state && strcmp(state, "cancelled") == 0)
            json_object_set_new(j, "cancelled_because", json_string(because));
    }
    sqlite3_finalize(st);
    return j ? j : json_null();
}

json_t *dhparam_store_summary(sqlite3 *db)
{
    return json_pack("{s:{s:o, s:o}, s:o}", "params", "generated", params_json(db, "generated"),
                     "import", params_json(db, "import"), "last_run", last_run_json(db));
}
