/* GET notify/deliveries (the newest 50, newest first; "to": the webhook's
 * origin, "mail": the recipients and the server) and POST notify/test (a
 * "notify.test" delivery per channel, whatever notify.events says). */
#include "plugins/notify/notify.h"

#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <sqlite3.h>

#include <tlsbox/xalloc.h>

static void on_deliveries(void *arg, const struct tlsbox_api_request *req,
                          struct tlsbox_api_reply *reply)
{
    struct notify *n = arg;
    (void)req;
    sqlite3 *db = n->host->store_open(n->self);
    if (!db) {
        n->host->api_reply_error(reply, 500, "the store is not open");
        return;
    }
    sqlite3_stmt *st = NULL;
    json_t *a = json_array();
    if (sqlite3_prepare_v2(db,
                           "SELECT id, at, event, origin, status, tries, http_status, error, "
                           "updated_at FROM notify_deliveries ORDER BY id DESC LIMIT 50",
                           -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            json_t *o = json_pack(
                "{s:I,s:I,s:s,s:s,s:s,s:i,s:I}", "id", (json_int_t)sqlite3_column_int64(st, 0),
                "at", (json_int_t)sqlite3_column_int64(st, 1), "event",
                (const char *)sqlite3_column_text(st, 2), "to",
                (const char *)sqlite3_column_text(st, 3), "status",
                (const char *)sqlite3_column_text(st, 4), "tries", sqlite3_column_int(st, 5),
                "updated_at", (json_int_t)sqlite3_column_int64(st, 8));
            json_object_set_new(o, "http_status",
                                sqlite3_column_type(st, 6) == SQLITE_NULL
                                    ? json_null()
                                    : json_integer(sqlite3_column_int64(st, 6)));
            const char *e = (const char *)sqlite3_column_text(st, 7);
            json_object_set_new(o, "error", e ? json_string(e) : json_null());
            /* http_status holds the SMTP reply code of an e-mail. */
            const char *to = (const char *)sqlite3_column_text(st, 3);
            json_object_set_new(
                o, "channel", json_string(to && strncmp(to, "smtp", 4) == 0 ? "mail" : "webhook"));
            json_array_append_new(a, o);
        }
    }
    sqlite3_finalize(st);
    n->host->store_close(n->self, db);
    /* Where to, without the URL's path: it may be the webhook's secret. */
    char *url = n->host->setting_get(n->self, "url");
    char *origin = url && *url ? notify_url_origin(url) : NULL;
    json_t *j = json_pack("{s:o,s:s?}", "deliveries", a, "to", origin);
    if (notify_mail_configured(n)) {
        char *rcpt = n->host->setting_get(n->self, "mail_to");
        char *via = notify_mail_origin(n);
        json_object_set_new(j, "mail", json_pack("{s:s,s:s}", "to", rcpt, "via", via));
        free(rcpt);
        free(via);
    }
    free(origin);
    if (url)
        tlsbox_wipe_free_str(url);
    reply->body = json_dumps(j, JSON_COMPACT);
    json_decref(j);
}

static void on_test(void *arg, const struct tlsbox_api_request *req, struct tlsbox_api_reply *reply)
{
    struct notify *n = arg;
    char *err = NULL;
    /* {"channel": "webhook" | "mail"}: a test of that one only; none: all. */
    json_t *body = req->body && *req->body ? json_loads(req->body, 0, NULL) : NULL;
    json_t *ch = json_object_get(body, "channel");
    unsigned channels = NOTIFY_WEBHOOK | NOTIFY_MAIL;
    if (ch) {
        const char *c = json_string_value(ch);
        channels = c && strcmp(c, "webhook") == 0 ? NOTIFY_WEBHOOK
                   : c && strcmp(c, "mail") == 0  ? NOTIFY_MAIL
                                                  : 0;
    }
    json_decref(body);
    if (!channels) {
        n->host->api_reply_error(reply, 400, "channel: \"webhook\" or \"mail\" (or none: both)");
        return;
    }
    json_t *d = json_pack("{s:s}", "asked_by", req->user ? req->user : "?");
    char *data = json_dumps(d, JSON_COMPACT);
    json_decref(d);
    int rc = notify_queue_on(n, "notify.test", data, channels, &err);
    free(data);
    if (rc < 0) {
        n->host->api_reply_error(reply, 409, "%s", err ? err : "not queued");
        free(err);
        return;
    }
    reply->status = 202;
    reply->body = tlsbox_xstrdup("{\"queued\":true,\"event\":\"notify.test\"}");
}

int notify_api_register(struct notify *n)
{
    int rc = n->host->api_route_add(n->self, "GET", "notify/deliveries", on_deliveries, n);
    if (rc == 0)
        rc = n->host->api_route_add(n->self, "POST", "notify/test", on_test, n);
    return rc;
}
