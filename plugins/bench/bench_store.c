/* The bench plugin's tables: runs, results, machines. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "plugins/bench/bench_store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plugins/bench/bench_machine.h"
#include "plugins/bench/bench_util.h"

/* Never edit a shipped step: add a new one. */
const struct tlsbox_migration bench_migrations[] = {
    {.name = "0001_init",
     .sql = "CREATE TABLE bench_machines (\n"
            "    id         INTEGER PRIMARY KEY AUTOINCREMENT,\n"
            "    cpu_model  TEXT NOT NULL,\n"
            "    cores      INTEGER NOT NULL,\n"
            "    governor   TEXT NOT NULL,\n"
            "    kernel     TEXT NOT NULL,\n"
            "    info_json  TEXT NOT NULL,\n"
            "    first_seen INTEGER NOT NULL,\n"
            "    UNIQUE (cpu_model, cores, governor, kernel)\n"
            ");\n"
            "CREATE TABLE bench_runs (\n"
            "    id          INTEGER PRIMARY KEY AUTOINCREMENT,\n"
            "    kind        TEXT NOT NULL CHECK (kind IN ('run','report','ceiling','ab')),\n"
            "    state       TEXT NOT NULL\n"
            "                CHECK (state IN ('running','done','cancelled','failed')),\n"
            "    started_at  INTEGER NOT NULL,\n"
            "    finished_at INTEGER,\n"
            "    params_json TEXT NOT NULL,\n"
            "    machine_id  INTEGER REFERENCES bench_machines(id),\n"
            "    info_json   TEXT,\n"
            "    error       TEXT\n"
            ");\n"
            "CREATE TABLE bench_results (\n"
            "    run_id      INTEGER NOT NULL REFERENCES bench_runs(id) ON DELETE CASCADE,\n"
            "    seq         INTEGER NOT NULL,\n"
            "    name        TEXT NOT NULL,\n"
            "    complete    INTEGER NOT NULL,\n"
            "    failed      INTEGER NOT NULL,\n"
            "    rps         REAL NOT NULL,\n"
            "    result_json TEXT NOT NULL,\n"
            "    PRIMARY KEY (run_id, seq)\n"
            ");\n"},
    TLSBOX_MIGRATIONS_END};

static sqlite3 *db_open(struct bench *b)
{
    return b->host->store_open(b->self);
}

static void db_close(struct bench *b, sqlite3 *db)
{
    b->host->store_close(b->self, db);
}

static char *dump(json_t *j)
{
    return j ? json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(10)) : NULL;
}

/* The machine's row, inserted when new; 0 or -EIO. */
static int machine_id(struct bench *b, sqlite3 *db, int64_t *id)
{
    json_t *m = bench_machine_json();
    char *info = dump(m);
    sqlite3_stmt *st = NULL;
    int ret = -EIO;
    const char *ins = "INSERT INTO bench_machines (cpu_model, cores, governor, kernel, info_json, "
                      "first_seen) VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT DO UPDATE SET "
                      "info_json = excluded.info_json RETURNING id";
    if (sqlite3_prepare_v2(db, ins, -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, json_string_value(json_object_get(m, "cpu_model")), -1,
                          SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 2, json_integer_value(json_object_get(m, "cores")));
        sqlite3_bind_text(st, 3, json_string_value(json_object_get(m, "governor")), -1,
                          SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 4, json_string_value(json_object_get(m, "kernel")), -1,
                          SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 5, info, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 6, (sqlite3_int64)time(NULL));
        if (sqlite3_step(st) == SQLITE_ROW) {
            *id = sqlite3_column_int64(st, 0);
            ret = 0;
        }
    }
    if (ret < 0)
        b->host->log(b->self, TLSBOX_LOG_ERR, "bench_machines: %s", sqlite3_errmsg(db));
    sqlite3_finalize(st);
    free(info);
    json_decref(m);
    return ret;
}

int bench_store_run_create(struct bench *b, enum bench_kind kind, json_t *params, int64_t *id)
{
    sqlite3 *db = db_open(b);
    if (!db)
        return -EIO;
    int64_t mid = 0;
    int ret = -EIO;
    char *p = dump(params);
    sqlite3_stmt *st = NULL;
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK &&
        machine_id(b, db, &mid) == 0 &&
        sqlite3_prepare_v2(db,
                           "INSERT INTO bench_runs (kind, state, started_at, params_json, "
                           "machine_id) VALUES (?1, 'running', ?2, ?3, ?4)",
                           -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, bench_kind_name(kind), -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, (sqlite3_int64)time(NULL));
        sqlite3_bind_text(st, 3, p ? p : "{}", -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 4, mid);
        if (sqlite3_step(st) == SQLITE_DONE &&
            sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK) {
            *id = sqlite3_last_insert_rowid(db);
            ret = 0;
        }
    }
    if (ret < 0) {
        b->host->log(b->self, TLSBOX_LOG_ERR, "bench_runs: %s", sqlite3_errmsg(db));
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    }
    sqlite3_finalize(st);
    free(p);
    db_close(b, db);
    return ret;
}

/* Run one statement; bind i is texts[i] when types[i] is 't' (NULL binds
 * NULL), else ints[i]. */
static int exec_bound(struct bench *b, const char *sql, const char *types, const char *const *texts,
                      const int64_t *ints)
{
    sqlite3 *db = db_open(b);
    if (!db)
        return -EIO;
    sqlite3_stmt *st = NULL;
    int ret = -EIO;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        for (int i = 0; types[i]; i++) {
            if (types[i] == 't' && texts[i])
                sqlite3_bind_text(st, i + 1, texts[i], -1, SQLITE_TRANSIENT);
            else if (types[i] == 'i')
                sqlite3_bind_int64(st, i + 1, ints[i]);
        }
        if (sqlite3_step(st) == SQLITE_DONE)
            ret = 0;
    }
    if (ret < 0)
        b->host->log(b->self, TLSBOX_LOG_ERR, "bench store: %s", sqlite3_errmsg(db));
    sqlite3_finalize(st);
    db_close(b, db);
    return ret;
}

int bench_store_run_finish(struct bench *b, int64_t id, const char *state, json_t *info,
                           const char *error)
{
    char *i = dump(info);
    const char *texts[5] = {state, i ? i : "{}", error, NULL, NULL};
    int64_t ints[5] = {0, 0, 0, (int64_t)time(NULL), id};
    int r = exec_bound(b,
                       "UPDATE bench_runs SET state = ?1, info_json = ?2, error = ?3, "
                       "finished_at = ?4 WHERE id = ?5",
                       "tttii", texts, ints);
    free(i);
    return r;
}

int bench_store_result_add(struct bench *b, int64_t run_id, int seq, const char *name,
                           json_t *result)
{
    char *r = dump(result), rps[64];
    snprintf(rps, sizeof(rps), "%.6f", json_number_value(json_object_get(result, "rps")));
    const char *texts[7] = {NULL, NULL, name, NULL, NULL, rps, r ? r : "{}"};
    int64_t ints[7] = {run_id,
                       seq,
                       0,
                       json_integer_value(json_object_get(result, "complete")),
                       json_integer_value(json_object_get(result, "failed")),
                       0,
                       0};
    int ret = exec_bound(b,
                         "INSERT INTO bench_results (run_id, seq, name, complete, failed, rps, "
                         "result_json) VALUES (?1, ?2, ?3, ?4, ?5, CAST(?6 AS REAL), ?7)",
                         "iitiitt", texts, ints);
    free(r);
    return ret;
}

void bench_store_close_stale(struct bench *b)
{
    const char *texts[1] = {NULL};
    int64_t ints[1] = {(int64_t)time(NULL)};
    exec_bound(b,
               "UPDATE bench_runs SET state = 'failed', finished_at = ?1, error = 'the daemon "
               "stopped during the run' WHERE state = 'running'",
               "i", texts, ints);
}

static json_t *col_json(sqlite3_stmt *st, int col)
{
    const char *t = (const char *)sqlite3_column_text(st, col);
    json_t *j = t ? json_loads(t, 0, NULL) : NULL;
    return j ? j : json_null();
}

static json_t *col_text(sqlite3_stmt *st, int col)
{
    const char *t = (const char *)sqlite3_column_text(st, col);
    return t ? json_string(t) : json_null();
}

#define RUN_COLS                                                                                   \
    "r.id, r.kind, r.state, r.started_at, r.finished_at, r.params_json, r.info_json, r.error, "    \
    "m.info_json"

static json_t *run_row(sqlite3_stmt *st)
{
    json_t *j = json_object();
    json_object_set_new(j, "id", json_integer(sqlite3_column_int64(st, 0)));
    json_object_set_new(j, "kind", col_text(st, 1));
    json_object_set_new(j, "state", col_text(st, 2));
    json_object_set_new(j, "started_at", json_integer(sqlite3_column_int64(st, 3)));
    json_object_set_new(j, "finished_at",
                        sqlite3_column_type(st, 4) == SQLITE_NULL
                            ? json_null()
                            : json_integer(sqlite3_column_int64(st, 4)));
    json_object_set_new(j, "params", col_json(st, 5));
    json_object_set_new(j, "info", col_json(st, 6));
    json_object_set_new(j, "error", col_text(st, 7));
    json_object_set_new(j, "machine", col_json(st, 8));
    return j;
}

/* Results of run @p id: [{"seq","name","complete","failed","rps","result"}]. */
static json_t *results_of(sqlite3 *db, int64_t id, bool full)
{
    json_t *arr = json_array();
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT seq, name, complete, failed, rps, result_json FROM "
                           "bench_results WHERE run_id = ?1 ORDER BY seq",
                           -1, &st, NULL) != SQLITE_OK)
        return arr;
    sqlite3_bind_int64(st, 1, id);
    while (sqlite3_step(st) == SQLITE_ROW) {
        json_t *r = json_pack(
            "{s:I,s:o,s:I,s:I,s:f}", "seq", (json_int_t)sqlite3_column_int64(st, 0), "name",
            col_text(st, 1), "complete", (json_int_t)sqlite3_column_int64(st, 2), "failed",
            (json_int_t)sqlite3_column_int64(st, 3), "rps", sqlite3_column_double(st, 4));
        if (full)
            json_object_set_new(r, "result", col_json(st, 5));
        json_array_append_new(arr, r);
    }
    sqlite3_finalize(st);
    return arr;
}

json_t *bench_store_list(struct bench *b, int limit)
{
    sqlite3 *db = db_open(b);
    json_t *arr = json_array();
    sqlite3_stmt *st = NULL;
    if (db && sqlite3_prepare_v2(db,
                                 "SELECT " RUN_COLS " FROM bench_runs r LEFT JOIN bench_machines "
                                 "m ON m.id = r.machine_id ORDER BY r.id DESC LIMIT ?1",
                                 -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int(st, 1, limit);
        while (sqlite3_step(st) == SQLITE_ROW) {
            json_t *r = run_row(st);
            json_object_set_new(r, "results", results_of(db, sqlite3_column_int64(st, 0), false));
            json_object_del(r, "machine");
            json_array_append_new(arr, r);
        }
    }
    sqlite3_finalize(st);
    if (db)
        db_close(b, db);
    return arr;
}

json_t *bench_store_show(struct bench *b, int64_t id)
{
    sqlite3 *db = db_open(b);
    json_t *r = NULL;
    sqlite3_stmt *st = NULL;
    if (db && sqlite3_prepare_v2(db,
                                 "SELECT " RUN_COLS " FROM bench_runs r LEFT JOIN bench_machines "
                                 "m ON m.id = r.machine_id WHERE r.id = ?1",
                                 -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, id);
        if (sqlite3_step(st) == SQLITE_ROW) {
            r = run_row(st);
            json_object_set_new(r, "results", results_of(db, id, true));
        }
    }
    sqlite3_finalize(st);
    if (db)
        db_close(b, db);
    return r;
}

json_t *bench_store_latest_ceiling(struct bench *b)
{
    sqlite3 *db = db_open(b);
    json_t *r = NULL;
    sqlite3_stmt *st = NULL;
    if (db &&
        sqlite3_prepare_v2(db,
                           "SELECT x.result_json FROM bench_results x JOIN bench_runs r ON "
                           "r.id = x.run_id WHERE r.kind = 'ceiling' AND r.state = 'done' "
                           "ORDER BY r.id DESC LIMIT 1",
                           -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
        r = col_json(st, 0);
        if (json_is_null(r)) {
            json_decref(r);
            r = NULL;
        }
    }
    sqlite3_finalize(st);
    if (db)
        db_close(b, db);
    return r;
}
