/* tlsboxctl bench: the command table (cmd_bench.c), option parsing and the
 * printing of runs (cmd_bench_show.c). */
#ifndef TLSBOX_CLI_CMD_BENCH_H
#define TLSBOX_CLI_CMD_BENCH_H

#include <stdbool.h>

#include <jansson.h>

#include "cli/ctl.h"

/* Parse run options into the JSON body; @p what is "run", "report" or "ab"
 * (usage text).  Returns 0, or -1 after printing the usage. */
int bench_parse_run_args(int argc, char **argv, json_t *body, bool *detach, const char *what);
/* A stored run, like ab/h2load print theirs (report: the ratio table). */
void bench_show_run(json_t *run);
void bench_show_list(struct ctl *c, json_t *runs);
void bench_show_compare(struct ctl *c, json_t *cmp);

#endif
