/* Admin routes in the shared API table: setup token and passwords (for
 * tlsboxctl admin), the audit log, the route list, metrics history and the
 * pages plugins add to the web UI. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/admin.h"
#include "core/admin_auth.h"
#include "core/api.h"
#include "core/audit.h"
#include "core/plugin_loader.h"
#include "core/settings.h"
#include "core/store.h"
#include "core/tls.h"
#include "core/xalloc.h"

bool admin_request_from_control(const struct tlsbox_api_request *req)
{
    return req->user && strcmp(req->user, "control") == 0;
}

int admin_recheck_reply(const char *user, const char *current, int (*factor)(void *arg), void *arg,
                        struct tlsbox_api_reply *reply)
{
    int retry = 0;
    int rc = admin_password_recheck(user, current, factor, arg, &retry);
    if (rc == -EACCES)
        api_reply_error(reply, 403, "current_password is wrong");
    else if (rc == -EKEYREJECTED)
        api_reply_error(reply, 403, "wrong one-time code (or one used already)");
    else if (rc == -EBADMSG)
        api_reply_error(reply, 403, "code: the 6 digits the app shows now, or a recovery code");
    else if (rc == -EIO)
        api_reply_error(reply, 500, "cannot check the current password");
    else if (rc < 0)
        api_reply_json(reply, 429,
                       json_pack("{s:s,s:i}", "error",
                                 "too many wrong passwords for this user: wait and retry",
                                 "retry_after", retry));
    return rc;
}

static void on_setup_token(void *arg, const struct tlsbox_api_request *req,
                           struct tlsbox_api_reply *reply)
{
    if (!admin_request_from_control(req)) {
        api_reply_error(reply, 403, "setup URLs come from tlsboxctl on the box only");
        return;
    }
    char *token = admin_setup_token_new();
    if (!token) {
        api_reply_error(reply, 409,
                        "an admin user exists already: use 'tlsboxctl admin passwd' instead");
        return;
    }
    char *host = tls_hostname();
    char *bind_addr = settings_get("admin.bind");
    const char *h = bind_addr && *bind_addr ? bind_addr : host;
    /* An IPv6 address goes in brackets in a URL (RFC 3986), else its colons
     * read as a port. */
    int v6 = strchr(h, ':') != NULL;
    char *url = xasprintf("https://%s%s%s:%lld/#setup=%s", v6 ? "[" : "", h, v6 ? "]" : "",
                          settings_get_int("admin.port", 9443), token);
    api_reply_json(reply, 200,
                   json_pack("{s:s,s:s,s:I}", "url", url, "token", token, "expires_in",
                             (json_int_t)settings_get_int("admin.setup_token_ttl", 1800)));
    wipe_free_str(token);
    wipe_free_str(url);
    free(host);
    free(bind_addr);
}

/* PUT admin/password {"user": U, "password": P}: from the socket for anyone
 * (reset), from the web for the logged-in user only and with the current
 * password in "current_password": a session left open in a browser must
 * not be enough to take the account over for good. */
static void on_password(void *arg, const struct tlsbox_api_request *req,
                        struct tlsbox_api_reply *reply)
{
    json_t *body = api_body_object(req, reply);
    if (!body)
        return;
    const char *user = json_string_value(json_object_get(body, "user"));
    const char *pw = json_string_value(json_object_get(body, "password"));
    const char *current = json_string_value(json_object_get(body, "current_password"));
    int rc = 0;
    if (!user && !admin_request_from_control(req))
        user = req->user;
    if (!user || !pw) {
        api_reply_error(reply, 400, "admin/password needs {\"user\": ..., \"password\": ...}");
    } else if (!admin_request_from_control(req) && strcmp(user, req->user) != 0) {
        api_reply_error(reply, 403, "you can only change your own password here");
    } else if (!admin_request_from_control(req) && !current) {
        api_reply_error(reply, 403,
                        "admin/password from the web needs the current password "
                        "(\"current_password\")");
    } else if (!admin_request_from_control(req) &&
               admin_recheck_reply(user, current, NULL, NULL, reply) < 0) {
        /* replied */
    } else {
        char *err = NULL;
        rc = admin_set_password(user, pw, &err);
        if (rc < 0)
            api_reply_error(reply, rc == -EINVAL ? 400 : 500, "%s",
                            err ? err : "cannot store the password");
        else
            api_reply_json(reply, 200, json_pack("{s:s}", "user", user));
        free(err);
    }
    json_decref(body);
}

static void on_audit(void *arg, const struct tlsbox_api_request *req,
                     struct tlsbox_api_reply *reply)
{
    long long next = 0, limit, before;
    if (api_query_int(req->query, "limit", 100, 1, 1000, API_QUERY_CLAMP, &limit, reply) < 0 ||
        api_query_int(req->query, "before", 0, 0, (long long)1 << 62, API_QUERY_CLAMP, &before,
                      reply) < 0)
        return;
    json_t *a = audit_list((int)limit, before, &next);
    if (!a)
        api_reply_error(reply, 500, "store: cannot read the audit log");
    else
        api_reply_json(reply, 200,
                       json_pack("{s:o,s:o}", "entries", a, "next_before",
                                 next ? json_integer((json_int_t)next) : json_null()));
}

static void on_routes(void *arg, const struct tlsbox_api_request *req,
                      struct tlsbox_api_reply *reply)
{
    api_reply_json(reply, 200, json_pack("{s:o}", "routes", api_routes_json()));
}

/* GET metrics/history?names=a,b&since=SECONDS_AGO: {"a": [[ts, v], ...]},
 * oldest first; at most the newest 5000 points of each name.  since is
 * brought into 60 s..31 days; one that is not a number is refused (it read
 * as 0, so "since=1d" quietly answered the last minute). */
static void on_history(void *arg, const struct tlsbox_api_request *req,
                       struct tlsbox_api_reply *reply)
{
    long long ago;
    if (api_query_int(req->query, "since", 3600, 60, 31 * 86400, API_QUERY_CLAMP, &ago, reply) < 0)
        return;
    char *names = api_query_get(req->query, "names");
    long long since = time(NULL) - ago;
    sqlite3 *db = store_connect();
    sqlite3_stmt *st = NULL;
    json_t *out = json_object();
    if (!names || !*names) {
        api_reply_error(reply, 400, "metrics/history needs ?names=NAME[,NAME...]");
        goto out;
    }
    if (!db || sqlite3_prepare_v2(db,
                                  "SELECT ts, value FROM (SELECT ts, value FROM metrics_history "
                                  "WHERE name = ? AND ts >= ? ORDER BY ts DESC LIMIT 5000) "
                                  "ORDER BY ts",
                                  -1, &st, NULL) != SQLITE_OK) {
        api_reply_error(reply, 500, "store: cannot read metrics history");
        goto out;
    }
    for (char *save = NULL, *n = strtok_r(names, ",", &save); n; n = strtok_r(NULL, ",", &save)) {
        json_t *series = json_array();
        sqlite3_reset(st);
        sqlite3_bind_text(st, 1, n, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, since);
        while (sqlite3_step(st) == SQLITE_ROW)
            json_array_append_new(series,
                                  json_pack("[I,f]", (json_int_t)sqlite3_column_int64(st, 0),
                                            sqlite3_column_double(st, 1)));
        json_object_set_new(out, n, series);
    }
    api_reply_json(reply, 200, out);
    out = NULL;
out:
    json_decref(out);
    sqlite3_finalize(st);
    store_disconnect(db);
    free(names);
}

/* GET ui/pages: the page modules of started plugins ("<plugin>.ui.js"). */
static void on_pages(void *arg, const struct tlsbox_api_request *req,
                     struct tlsbox_api_reply *reply)
{
    json_t *a = json_array();
    for (struct tlsbox_plugin *p = plugins_first(); p; p = p->next) {
        char *path = admin_plugin_page_path(p->name);
        if (path) {
            json_t *page = json_pack("{s:s}", "plugin", p->name);
            json_object_set_new(page, "module", json_sprintf("/ui/plugins/%s.js", p->name));
            json_array_append_new(a, page);
        }
        free(path);
    }
    api_reply_json(reply, 200, json_pack("{s:o}", "pages", a));
}

void admin_api_register(void)
{
    struct tlsbox_plugin *self = core_self();
    api_route_add(self, "POST", "admin/setup-token", on_setup_token, NULL);
    api_route_add(self, "PUT", "admin/password", on_password, NULL);
    api_route_add(self, "GET", "audit", on_audit, NULL);
    api_route_add(self, "GET", "routes", on_routes, NULL);
    api_route_add(self, "GET", "metrics/history", on_history, NULL);
    api_route_add(self, "GET", "ui/pages", on_pages, NULL);
    admin_totp_api_register();
}
