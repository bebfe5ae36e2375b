/* The dhparam part of the JSON API (admin UI and tlsboxctl dh):
 *   GET  dh/status    mode, what is served, DHE on or off, the running generation
 *   POST dh/generate  {"bits": N} -> 202, a generation job (run_id, bits, mode, priority)
 *   POST dh/import    {"pem": "..."} -> checked, stored, mode import
 *   PUT  dh/mode      {"mode": "rfc7919|generated|import"} */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/dhparam/dhparam.h"

static void reply_json(struct tlsbox_api_reply *reply, int status, json_t *j)
{
    reply->status = status;
    reply->body = json_dumps(j, JSON_COMPACT);
    json_decref(j);
}

static json_t *body_object(const struct tlsbox_api_request *req)
{
    if (!req->body || req->body_len == 0)
        return json_object();
    json_t *j = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, NULL);
    if (j && !json_is_object(j)) {
        json_decref(j);
        return NULL;
    }
    return j;
}

/* One sentence on what a person should know, or NULL. */
static const char *status_note(const char *mode, json_t *served, json_t *summary)
{
    const char *src = json_string_value(json_object_get(served, "source"));
    if (!json_is_true(json_object_get(served, "dhe_tls12")) &&
        !json_is_true(json_object_get(served, "ffdhe_tls13")))
        return "DHE cipher suites are disabled by the TLS policy: no Diffie-Hellman parameters "
               "are used (nothing to do)";
    if (src && strcmp(src, "off") == 0)
        return "the TLS policy's dh_mode is off: TLS 1.2 DHE has no parameters";
    if (strcmp(mode, "rfc7919") != 0 && json_is_object(json_object_get(served, "stored")) &&
        json_is_true(json_object_get(served, "policy_groups")))
        return "the TLS policy lists FFDHE groups, which GnuTLS uses for TLS 1.2 DHE as well: "
               "these parameters serve clients once the policy's groups list no FFDHE group "
               "(TLS 1.3 FFDHE goes with them)";
    json_t *mine = json_object_get(json_object_get(summary, "params"), mode);
    if (strcmp(mode, "generated") == 0 && json_is_null(mine))
        return "no generated parameters yet: the current ones are served until the first "
               "generation is done";
    if (strcmp(mode, "import") == 0 && json_is_null(mine))
        return "no imported parameters: import some with tlsboxctl dh import FILE";
    return NULL;
}

static void api_status(void *arg, const struct tlsbox_api_request *req,
                       struct tlsbox_api_reply *reply)
{
    struct dhparam *d = arg;
    (void)req;
    sqlite3 *db = d->host->store_open(d->self);
    if (!db) {
        d->host->api_reply_error(reply, 500, "dh/status: the store is not available");
        return;
    }
    char *mode = dhparam_mode(d), *served_s = d->host->dh_served(d->self);
    json_t *served = served_s ? json_loads(served_s, 0, NULL) : NULL;
    free(served_s);
    if (!served)
        served = json_null();
    json_t *summary = dhparam_store_summary(db);
    json_t *j = json_pack(
        "{s:s, s:I, s:I, s:O, s:b, s:o, s:O, s:O}", "mode", mode, "bits",
        (json_int_t)d->host->setting_get_int(d->self, "bits", 3072), "rotate_days",
        (json_int_t)d->host->setting_get_int(d->self, "rotate_days", 30), "served", served,
        "dhe_enabled",
        json_is_true(json_object_get(served, "dhe_tls12")) ||
            json_is_true(json_object_get(served, "ffdhe_tls13")),
        "generation", dhparam_run_current(d, db), "params", json_object_get(summary, "params"),
        "last_run", json_object_get(summary, "last_run"));
    d->host->store_close(d->self, db);
    const char *note = status_note(mode, served, summary);
    json_object_set_new(j, "note", note ? json_string(note) : json_null());
    json_t *gen = json_object_get(json_object_get(summary, "params"), "generated");
    if (strcmp(mode, "generated") == 0 && json_is_object(gen))
        json_object_set_new(
            j, "next_rotation",
            json_integer(json_integer_value(json_object_get(gen, "created_at")) +
                         json_integer_value(json_object_get(j, "rotate_days")) * 86400));
    json_decref(summary);
    json_decref(served);
    free(mode);
    reply_json(reply, 200, j);
}

static void api_generate(void *arg, const struct tlsbox_api_request *req,
                         struct tlsbox_api_reply *reply)
{
    struct dhparam *d = arg;
    json_t *b = body_object(req);
    json_t *jb = json_object_get(b, "bits");
    if (!b || (jb && !json_is_integer(jb))) {
        json_decref(b);
        d->host->api_reply_error(reply, 400, "dh/generate: give {\"bits\": 2048|3072|4096}");
        return;
    }
    /* Checked at full width; narrowed to int only once it is an allowed size. */
    long long bits =
        jb ? (long long)json_integer_value(jb) : d->host->setting_get_int(d->self, "bits", 3072);
    json_decref(b);
    if (!dhparam_bits_ok(bits)) {
        d->host->api_reply_error(reply, 400,
                                 "dh/generate: bits must be 2048, 3072 or 4096, not %lld", bits);
        return;
    }
    int64_t id = dhparam_run_start(d, (int)bits, "request", 0);
    if (id == -EBUSY) {
        d->host->api_reply_error(reply, 409,
                                 "dh/generate: a generation is running already; "
                                 "see tlsboxctl dh status");
        return;
    }
    if (id < 0) {
        d->host->api_reply_error(reply, 500, "dh/generate: cannot start (%s)", strerror((int)-id));
        return;
    }
    char *mode = dhparam_mode(d), *prio = d->host->setting_get(d->self, "priority");
    /* The priority the job runs at (run_job reads the same setting). */
    json_t *j =
        json_pack("{s:I, s:i, s:s, s:s}", "run_id", (json_int_t)id, "bits", (int)bits, "mode", mode,
                  "priority", prio && strcmp(prio, "normal") == 0 ? "normal" : "idle");
    free(prio);
    if (strcmp(mode, "generated") != 0)
        json_object_set_new(j, "note",
                            json_string("the new parameters are kept, and served once "
                                        "the mode is generated"));
    free(mode);
    reply_json(reply, 202, j);
}

static void api_import(void *arg, const struct tlsbox_api_request *req,
                       struct tlsbox_api_reply *reply)
{
    struct dhparam *d = arg;
    json_t *b = body_object(req);
    const char *pem = json_string_value(json_object_get(b, "pem"));
    char *err = NULL;
    if (!pem) {
        json_decref(b);
        d->host->api_reply_error(reply, 400,
                                 "dh/import: give {\"pem\": \"-----BEGIN DH "
                                 "PARAMETERS-----...\"}");
        return;
    }
    /* Check before anything is written: a refused import changes nothing. */
    int bits = d->host->dh_set(d->self, pem, "import", TLSBOX_DH_CHECK_ONLY, &err);
    if (bits < 0) {
        d->host->api_reply_error(reply, 400, "dh/import refused: %s", err ? err : "invalid");
        goto out;
    }
    sqlite3 *db = d->host->store_open(d->self);
    int64_t id = db ? dhparam_store_import(db, pem, bits) : -EIO;
    if (db)
        d->host->store_close(d->self, db);
    if (id < 0) {
        d->host->api_reply_error(reply, 500, "dh/import: cannot store the parameters");
        goto out;
    }
    if (d->host->setting_set(d->self, "mode", "import", &err) < 0) {
        d->host->api_reply_error(reply, 500, "dh/import: stored, but mode: %s", err);
        goto out;
    }
    dhparam_apply(d);
    reply_json(reply, 200,
               json_pack("{s:I, s:i, s:s}", "id", (json_int_t)id, "bits", bits, "mode", "import"));
out:
    free(err);
    json_decref(b);
}

static void api_mode(void *arg, const struct tlsbox_api_request *req,
                     struct tlsbox_api_reply *reply)
{
    struct dhparam *d = arg;
    json_t *b = body_object(req);
    const char *mode = json_string_value(json_object_get(b, "mode"));
    char *err = NULL;
    if (!mode)
        d->host->api_reply_error(reply, 400,
                                 "dh/mode: give {\"mode\": "
                                 "\"rfc7919|generated|import\"}");
    else if (d->host->setting_set(d->self, "mode", mode, &err) < 0)
        d->host->api_reply_error(reply, 400, "dh/mode: %s", err ? err : "refused");
    else
        reply_json(reply, 200, json_pack("{s:s}", "mode", mode)); /* applied by the event */
    free(err);
    json_decref(b);
}

int dhparam_api_register(struct dhparam *d)
{
    int rc;
    if ((rc = d->host->api_route_add(d->self, "GET", "dh/status", api_status, d)) < 0 ||
        (rc = d->host->api_route_add(d->self, "POST", "dh/generate", api_generate, d)) < 0 ||
        (rc = d->host->api_route_add(d->self, "POST", "dh/import", api_import, d)) < 0 ||
        (rc = d->host->api_route_add(d->self, "PUT", "dh/mode", api_mode, d)) < 0)
        return rc;
    return 0;
}
