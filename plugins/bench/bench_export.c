/* CSV export and run comparison. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "plugins/bench/bench_export.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/bench/bench_stats.h"
#include "plugins/bench/bench_util.h"

static double num2(json_t *o, const char *a, const char *b)
{
    json_t *v = json_object_get(o, a);
    if (b)
        v = json_object_get(v, b);
    return json_number_value(v);
}

static const char *str2(json_t *o, const char *a, const char *b)
{
    const char *s = json_string_value(json_object_get(json_object_get(o, a), b));
    return s ? s : "";
}

/* A CSV field: quoted when it holds a comma, quote or newline. */
static void csv_field(FILE *f, const char *s, bool last)
{
    if (strpbrk(s, ",\"\n")) {
        fputc('"', f);
        for (; *s; s++) {
            if (*s == '"')
                fputc('"', f);
            fputc(*s, f);
        }
        fputc('"', f);
    } else {
        fputs(s, f);
    }
    fputc(last ? '\n' : ',', f);
}

char *bench_export_csv(json_t *run)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        abort();
    fputs("run,kind,state,started_at,seq,name,scenario,url,concurrency,requests,complete,failed,"
          "retried,rps,transfer_kbps,connect_ms,ttfb_ms",
          f);
    for (int i = 0; i < BENCH_NPCT; i++)
        fprintf(f, ",p%d_ms", bench_percentiles[i]);
    fputs(",handshakes_full,handshakes_resumed,protocol,cipher,group,signature,"
          "server_cpu_us_per_request,ceiling_ratio,not_sent,time_limited,request_limited\n",
          f);
    size_t i;
    json_t *row;
    json_array_foreach(json_object_get(run, "results"), i, row)
    {
        json_t *r = json_object_get(row, "result");
        fprintf(f, "%lld,", (long long)json_integer_value(json_object_get(run, "id")));
        csv_field(f, json_string_value(json_object_get(run, "kind")), false);
        csv_field(f, json_string_value(json_object_get(run, "state")), false);
        fprintf(f, "%lld,%lld,", (long long)json_integer_value(json_object_get(run, "started_at")),
                (long long)json_integer_value(json_object_get(row, "seq")));
        csv_field(f, json_string_value(json_object_get(row, "name")), false);
        csv_field(f, str2(r, "options", "scenario"), false);
        csv_field(f, str2(r, "options", "url"), false);
        fprintf(f, "%.0f,%.0f,%.0f,%.0f,%.0f,%.2f,%.2f,%.3f,%.3f",
                num2(r, "options", "concurrency"), num2(r, "options", "requests"),
                num2(r, "complete", NULL), num2(r, "failed", NULL), num2(r, "retried", NULL),
                num2(r, "rps", NULL), num2(r, "transfer_kbps", NULL), num2(r, "connect_ms", "mean"),
                num2(r, "ttfb_ms", "mean"));
        /* Empty when nothing was answered (latency_ms null), not 0 ms. */
        bool lat = json_is_object(json_object_get(r, "latency_ms"));
        for (int k = 0; k < BENCH_NPCT; k++) {
            char key[8];
            snprintf(key, sizeof(key), "%d", bench_percentiles[k]);
            if (lat)
                fprintf(f, ",%.3f", num2(r, "latency_ms", key));
            else
                fputc(',', f);
        }
        fprintf(f, ",%.0f,%.0f,", num2(r, "handshakes", "full"), num2(r, "handshakes", "resumed"));
        csv_field(f, str2(r, "tls", "protocol"), false);
        csv_field(f, str2(r, "tls", "cipher"), false);
        csv_field(f, str2(r, "tls", "group"), false);
        csv_field(f, str2(r, "tls", "signature"), false);
        /* Last, so that the columns before them keep their places.  A run
         * cut short by bench.max_duration or bench.max_requests says so, as
         * in bench show: its state is "done" all the same. */
        fprintf(f, "%.2f,%.3f,%.0f,%d,%d\n", num2(r, "server", "cpu_us_per_request"),
                num2(r, "ceiling", "ratio"), num2(r, "not_sent", NULL),
                json_is_true(json_object_get(r, "time_limited")),
                json_is_true(json_object_get(r, "request_limited")));
    }
    fclose(f);
    return buf;
}

static json_t *ratio(double b, double a)
{
    return a > 0 && b > 0 ? json_real(b / a) : json_null();
}

json_t *bench_export_compare(json_t *a, json_t *b)
{
    json_t *rows = json_array();
    size_t i, k;
    json_t *ra, *rb;
    json_array_foreach(json_object_get(a, "results"), i, ra)
    {
        const char *name = json_string_value(json_object_get(ra, "name"));
        json_array_foreach(json_object_get(b, "results"), k, rb)
        {
            if (!name || !json_equal(json_object_get(rb, "name"), json_object_get(ra, "name")))
                continue;
            json_t *x = json_object_get(ra, "result"), *y = json_object_get(rb, "result");
            json_t *row = json_pack("{s:s,s:f,s:f}", "name", name, "a_rps", num2(x, "rps", NULL),
                                    "b_rps", num2(y, "rps", NULL));
            json_object_set_new(row, "rps_ratio",
                                ratio(num2(y, "rps", NULL), num2(x, "rps", NULL)));
            json_object_set_new(row, "p50_ratio",
                                ratio(num2(y, "latency_ms", "50"), num2(x, "latency_ms", "50")));
            json_object_set_new(row, "p99_ratio",
                                ratio(num2(y, "latency_ms", "99"), num2(x, "latency_ms", "99")));
            json_object_set_new(row, "cpu_per_request_ratio",
                                ratio(num2(y, "server", "cpu_us_per_request"),
                                      num2(x, "server", "cpu_us_per_request")));
            json_array_append_new(rows, row);
            break;
        }
    }
    bool differ = !json_equal(json_object_get(a, "machine"), json_object_get(b, "machine"));
    return json_pack("{s:O,s:O,s:o,s:b}", "a", json_object_get(a, "id"), "b",
                     json_object_get(b, "id"), "rows", rows, "machines_differ", differ);
}
