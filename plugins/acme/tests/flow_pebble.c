/*
 * Development driver: runs the ACME flow (account, order, http-01, finalize,
 * download, revoke) against a real pebble without the daemon, answering
 * http-01 from a tiny built-in HTTP server.  Used by tests/flow_pebble.sh.
 *
 *   flow_pebble DB DIRECTORY_URL CA_FILE HTTP_PORT OUT_CHAIN NAME...
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "plugins/acme/acme.h"

static pthread_mutex_t fp_lock = PTHREAD_MUTEX_INITIALIZER;
static char fp_token[8][128], fp_ka[8][256];

static void fp_put(void *arg, const char *token, const char *ka)
{
    (void)arg;
    pthread_mutex_lock(&fp_lock);
    for (int i = 0; i < 8; i++)
        if (!fp_token[i][0]) {
            snprintf(fp_token[i], sizeof(fp_token[i]), "%s", token);
            snprintf(fp_ka[i], sizeof(fp_ka[i]), "%s", ka);
            break;
        }
    pthread_mutex_unlock(&fp_lock);
}

static void fp_del(void *arg, const char *token)
{
    (void)arg;
    pthread_mutex_lock(&fp_lock);
    for (int i = 0; i < 8; i++)
        if (strcmp(fp_token[i], token) == 0)
            fp_token[i][0] = 0;
    pthread_mutex_unlock(&fp_lock);
}

static void *fp_serve(void *arg)
{
    int ls = *(int *)arg;
    for (;;) {
        int s = accept(ls, NULL, NULL);
        if (s < 0)
            continue;
        char buf[2048] = "";
        ssize_t n = read(s, buf, sizeof(buf) - 1);
        char path[512] = "", body[300] = "";
        static_assert(sizeof(fp_ka[0]) < sizeof(body), "key authorizations fit");
        int status = 404;
        if (n > 0 && sscanf(buf, "GET %511s", path) == 1) {
            const char *pre = "/.well-known/acme-challenge/";
            pthread_mutex_lock(&fp_lock);
            for (int i = 0; i < 8; i++)
                if (fp_token[i][0] && strncmp(path, pre, strlen(pre)) == 0 &&
                    strcmp(path + strlen(pre), fp_token[i]) == 0) {
                    memcpy(body, fp_ka[i], sizeof(fp_ka[i]));
                    status = 200;
                }
            pthread_mutex_unlock(&fp_lock);
        }
        char resp[1024];
        int len = snprintf(resp, sizeof(resp),
                           "HTTP/1.1 %d X\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
                           "Connection: close\r\n\r\n%s",
                           status, strlen(body), body);
        if (write(s, resp, (size_t)len) < 0)
            perror("write");
        close(s);
    }
    return NULL;
}

static int fp_exec_file(sqlite3 *db, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char *sql = NULL;
    size_t cap = 0;
    ssize_t n = getdelim(&sql, &cap, '\0', f);
    fclose(f);
    if (n < 0)
        return -1;
    int rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
    free(sql);
    return rc == SQLITE_OK ? 0 : -1;
}

static void fp_step(void *arg, const char *step)
{
    const char *die = arg;
    if (die && strcmp(die, step) == 0) {
        fprintf(stderr, "flow_pebble: exiting at step %s as asked\n", step);
        _exit(9);
    }
}

int main(int argc, char **argv)
{
    if (argc < 7) {
        fprintf(stderr, "usage: flow_pebble DB DIRECTORY CA_FILE HTTP_PORT OUT_CHAIN NAME...\n");
        return 2;
    }
    const char *dbpath = argv[1], *dir = argv[2], *ca = argv[3], *out = argv[5];
    int port = atoi(argv[4]);
    const char *key_type = getenv("FP_KEY_TYPE") ? getenv("FP_KEY_TYPE") : "ecdsa-p256";

    int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(ls, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(ls, 16) < 0) {
        perror("bind");
        return 1;
    }
    pthread_t th;
    pthread_create(&th, NULL, fp_serve, &ls);

    sqlite3 *db;
    bool fresh = access(dbpath, F_OK) != 0;
    if (sqlite3_open(dbpath, &db) != SQLITE_OK)
        return 1;
    sqlite3_busy_timeout(db, 5000);
    if (fresh && fp_exec_file(db, getenv("FP_SCHEMA")) < 0) {
        fprintf(stderr, "schema: %s\n", sqlite3_errmsg(db));
        return 1;
    }

    curl_global_init(CURL_GLOBAL_DEFAULT);
    struct acme_client c;
    struct acme_err e = {0};
    struct acme_issued is = {0};
    acme_client_init(&c, dir, ca);
    struct acme_account_req a = {.email = "test@example.org", .agree_tos = true};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int ret = acme_flow_account(&c, db, &a, &e);
    if (ret == 0) {
        struct acme_order_req req = {.cert_name = argv[6],
                                     .domains = (const char *const *)argv + 6,
                                     .ndomains = (size_t)(argc - 6),
                                     .key_type = key_type,
                                     .challenge_put = fp_put,
                                     .challenge_del = fp_del,
                                     .on_step = fp_step,
                                     .step_arg = getenv("FP_DIE_AT")};
        ret = acme_flow_issue(&c, db, &req, &is, &e);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (ret < 0) {
        printf("error step=%s type=%s detail=%s\n", e.step, e.type ? e.type : "",
               e.detail ? e.detail : "");
        return 1;
    }
    FILE *f = fopen(out, "w");
    fputs(is.chain_pem, f);
    fclose(f);
    acme_store_order_set_status(db, is.order_id, "done");
    printf("issued in %.3f s, %u requests, %u badNonce retries\n",
           (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9, c.requests,
           c.bad_nonce_retries);
    if (getenv("FP_REVOKE")) {
        ret = acme_flow_revoke(&c, is.chain_pem, 0, &e);
        printf("revoke: %d %s %s\n", ret, e.type ? e.type : "", e.detail ? e.detail : "");
    }
    acme_issued_free(&is);
    acme_err_clear(&e);
    acme_client_free(&c);
    sqlite3_close(db);
    return ret < 0;
}
