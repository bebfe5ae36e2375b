/* The core's own API handlers: status, plugins, settings and their history, metrics. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/api.h"
#include "core/jobs.h"
#include "core/metrics.h"
#include "core/mono_clock.h"
#include "core/plugin_loader.h"
#include "core/settings.h"
#include "core/store.h"
#include "core/tls.h"
#include "core/xalloc.h"

/* Wall clock at start, to show and to tell runs apart; the uptime counts on
 * the monotonic clock: NTP steps a Raspberry Pi's wall clock after boot (no
 * RTC), which made uptime_s the stepped hours, or negative. */
static time_t started_at;
static uint64_t started_mono_ns;
static atomic_bool ready;

static json_t *plugin_json(const struct tlsbox_plugin *p)
{
    json_t *j = json_pack("{s:s,s:s,s:s,s:s,s:s*,s:s*}", "name", p->name, "version",
                          p->desc->version ? p->desc->version : "", "description",
                          p->desc->description ? p->desc->description : "", "state",
                          plugin_state_name(p->pstate), "path", p->path, "error", p->error);
    json_object_set_new(j, "abi", json_sprintf("%u.%u", p->desc->abi_major, p->desc->abi_minor));
    return j;
}

static void on_status(void *arg, const struct tlsbox_api_request *req,
                      struct tlsbox_api_reply *reply)
{
    json_t *plugins = json_array();
    for (struct tlsbox_plugin *p = plugins_first(); p; p = p->next)
        json_array_append_new(plugins, json_pack("{s:s,s:s,s:s*}", "name", p->name, "state",
                                                 plugin_state_name(p->pstate), "error", p->error));
    json_t *j = json_pack(
        "{s:s,s:s,s:i,s:I,s:I,s:o,s:s,s:i}", "name", "tlsboxd", "version", PACKAGE_VERSION, "pid",
        (int)getpid(), "started_at", (json_int_t)started_at, "uptime_s",
        (json_int_t)((mono_ns() - started_mono_ns) / 1000000000ULL), "plugins", plugins, "store",
        store_path() ? store_path() : "", "jobs_pending", jobs_pending());
    json_object_set_new(j, "abi", json_sprintf("%d.%d", TLSBOX_ABI_MAJOR, TLSBOX_ABI_MINOR));
    json_object_set_new(j, "ready", json_boolean(atomic_load(&ready)));
    struct tlsbox_bundle *b = tls_bundle_acquire();
    json_object_set_new(j, "tls_bundle_generation",
                        b ? json_integer((json_int_t)tls_bundle_generation(b)) : json_null());
    if (b)
        tls_bundle_release(b);
    api_reply_json(reply, 200, j);
}

static void on_plugins(void *arg, const struct tlsbox_api_request *req,
                       struct tlsbox_api_reply *reply)
{
    json_t *a = json_array();
    json_array_append_new(a, plugin_json(core_self()));
    for (struct tlsbox_plugin *p = plugins_first(); p; p = p->next)
        json_array_append_new(a, plugin_json(p));
    api_reply_json(reply, 200, a);
}

/* "plugins/<name>/settings" -> name (caller frees), or NULL. */
static char *plugin_from_path(const char *path)
{
    const char *rest = path + strlen("plugins/");
    const char *slash = strchr(rest, '/');
    if (!slash || strcmp(slash, "/settings") != 0 || slash == rest)
        return NULL;
    return xstrndup(rest, (size_t)(slash - rest));
}

/* A refused settings write: 400 for a value that is invalid (or, as before,
 * a store failure), 409 for a valid value its plugin cannot apply now (a port
 * in use): the request may succeed later, unchanged. */
static int set_status(int rc)
{
    return rc == -EINVAL || rc == -EIO ? 400 : 409;
}

/* A change stored but in effect only at the next start (settings_set_many
 * returned 1): each changed setting in @p all, the description the reply
 * carries, gets "restart_needed" and the applier's "note". */
static void note_changed(json_t *all, json_t *body, const char *owner, const char *note)
{
    size_t i;
    json_t *d;
    json_array_foreach(all, i, d)
    {
        const char *key = json_string_value(json_object_get(d, "key"));
        char *full = key ? xasprintf("%s.%s", owner, key) : NULL;
        if (key && (json_object_get(body, key) || json_object_get(body, full))) {
            json_object_set_new(d, "restart_needed", json_true());
            json_object_set_new(d, "note", json_string(note ? note : "takes effect at restart"));
        }
        free(full);
    }
}

static void on_plugin_settings(void *arg, const struct tlsbox_api_request *req,
                               struct tlsbox_api_reply *reply)
{
    char *name = plugin_from_path(req->path);
    if (!name) {
        api_reply_error(reply, 404, "no such API path: /api/v1/%s", req->path);
        return;
    }
    /* "admin" owns the web UI's settings without being a plugin. */
    struct tlsbox_plugin *p = plugins_find(name);
    if (!p && strcmp(name, "admin") != 0) {
        api_reply_error(reply, 404, "no plugin named \"%s\"", name);
        goto out;
    }
    if (strcmp(req->method, "GET") == 0) {
        api_reply_json(reply, 200, settings_describe(name));
        goto out;
    }
    json_t *body = api_body_object(req, reply);
    if (!body)
        goto out;
    char *err = NULL;
    int rc = settings_set_many(body, name, req->user, &err);
    if (rc < 0) {
        api_reply_error(reply, set_status(rc), "%s", err ? err : "refused");
        free(err);
    } else {
        json_t *all = settings_describe(name);
        if (rc > 0)
            note_changed(all, body, name, err);
        free(err);
        api_reply_json(reply, 200, all);
    }
    json_decref(body);
out:
    free(name);
}

/* One setting: GET/PUT settings/<plugin>.<key>; PUT body {"value": "..."}. */
static void on_setting(void *arg, const struct tlsbox_api_request *req,
                       struct tlsbox_api_reply *reply)
{
    const char *key = req->path + strlen("settings/");
    const struct tlsbox_setting_def *def = settings_def(key);
    if (!def) {
        api_reply_error(reply, 404,
                        "%s: no such setting (keys are plugin.key; "
                        "see tlsboxctl plugins)",
                        key);
        return;
    }
    char *err = NULL;
    int rc = 0;
    if (strcmp(req->method, "PUT") == 0) {
        json_t *body = api_body_object(req, reply);
        if (!body)
            return;
        json_t *v = json_object_get(body, "value");
        char *text = NULL;
        if (json_is_string(v))
            text = xstrdup(json_string_value(v));
        else if (json_is_integer(v))
            text = xasprintf("%lld", (long long)json_integer_value(v));
        else if (json_is_boolean(v))
            text = xstrdup(json_is_true(v) ? "true" : "false");
        json_decref(body);
        if (!text) {
            api_reply_error(reply, 400, "%s: body must be {\"value\": string, number or boolean}",
                            key);
            return;
        }
        rc = settings_set(key, text, req->user, &err);
        free(text);
        if (rc < 0) {
            api_reply_error(reply, set_status(rc), "%s", err ? err : "refused");
            free(err);
            return;
        }
    }
    char *value = settings_get(key);
    int secret = (def->flags & TLSBOX_SETTING_SECRET) != 0;
    json_t *j = json_pack("{s:s,s:s,s:b}", "key", key, "value",
                          secret ? "********" : (value ? value : ""), "restart_needed",
                          strcmp(req->method, "PUT") == 0 &&
                              ((def->flags & TLSBOX_SETTING_RESTART) != 0 || rc > 0));
    if (rc > 0) /* stored; the plugin says when it takes effect */
        json_object_set_new(j, "note", json_string(err ? err : "takes effect at restart"));
    free(err);
    free(value);
    api_reply_json(reply, 200, j);
}

/* GET settings/history[?plugin=NAME&limit=N&before=ID]: the changes, newest first. */
static void on_settings_history(void *arg, const struct tlsbox_api_request *req,
                                struct tlsbox_api_reply *reply)
{
    long long limit, before;
    if (api_query_int(req->query, "limit", 50, 1, 500, API_QUERY_REFUSE, &limit, reply) < 0 ||
        api_query_int(req->query, "before", 0, 0, LLONG_MAX, API_QUERY_REFUSE, &before, reply) < 0)
        return;
    char *owner = api_query_get(req->query, "plugin");
    if (owner && !*owner) {
        free(owner);
        owner = NULL;
    }
    char *err = NULL;
    json_t *j = settings_history_json(owner, (int)limit, before, &err);
    if (j)
        api_reply_json(reply, 200, j);
    else
        api_reply_error(reply, 500, "%s", err ? err : "settings history: store error");
    free(err);
    free(owner);
}

/* POST settings/history/<id>/undo: put what change <id> changed back. */
static void on_settings_undo(void *arg, const struct tlsbox_api_request *req,
                             struct tlsbox_api_reply *reply)
{
    const char *rest = req->path + strlen("settings/history/");
    char *end = NULL;
    errno = 0;
    long long id = strtoll(rest, &end, 10);
    if (!isdigit((unsigned char)*rest) || errno || id <= 0 || strcmp(end, "/undo") != 0) {
        api_reply_error(reply, 404, "no such API path: /api/v1/%s (settings/history/ID/undo)",
                        req->path);
        return;
    }
    char *err = NULL;
    long long new_id = 0;
    int rc = settings_undo(id, req->user, &new_id, &err);
    if (rc < 0) {
        api_reply_error(reply,
                        rc == -ENOENT                 ? 404
                        : rc == -EINVAL || rc == -EIO ? 400
                                                      : 409,
                        "%s", err ? err : "refused");
    } else {
        json_t *j = json_pack("{s:I,s:I,s:b}", "id", (json_int_t)new_id, "undo_of", (json_int_t)id,
                              "restart_needed", rc > 0);
        if (rc > 0)
            json_object_set_new(j, "note", json_string(err ? err : "takes effect at restart"));
        api_reply_json(reply, 200, j);
    }
    free(err);
}

static void on_metrics(void *arg, const struct tlsbox_api_request *req,
                       struct tlsbox_api_reply *reply)
{
    api_reply_json(reply, 200, metrics_json());
}

void api_core_ready(void)
{
    atomic_store(&ready, true);
}

void api_core_register(void)
{
    struct tlsbox_plugin *self = core_self();
    started_at = time(NULL);
    started_mono_ns = mono_ns();
    api_route_add(self, "GET", "status", on_status, NULL);
    api_route_add(self, "GET", "plugins", on_plugins, NULL);
    api_route_add(self, "GET", "plugins/*", on_plugin_settings, NULL);
    api_route_add(self, "PUT", "plugins/*", on_plugin_settings, NULL);
    api_route_add(self, "GET", "settings/*", on_setting, NULL);
    api_route_add(self, "PUT", "settings/*", on_setting, NULL);
    /* A literal route, and a longer prefix, win over the settings prefix (keys have a dot). */
    api_route_add(self, "GET", "settings/history", on_settings_history, NULL);
    api_route_add(self, "POST", "settings/history/*", on_settings_undo, NULL);
    api_route_add(self, "GET", "metrics", on_metrics, NULL);
}
