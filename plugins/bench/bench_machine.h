/* The machine a run measured: CPU model, cores, governor, kernel, AES
 * instructions, temperature and (on a Raspberry Pi) the throttling flags. */
#ifndef TLSBOX_BENCH_MACHINE_H
#define TLSBOX_BENCH_MACHINE_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

/* {"cpu_model","cores","governor","kernel","aes","memory_kb"}; new reference. */
json_t *bench_machine_json(void);
/* Hottest thermal zone in millidegrees Celsius; -ENOENT when none is readable. */
int bench_machine_temp(int64_t *millic);
/* The Pi firmware's throttling flags ("0x0"), or NULL where the file does not
 * exist (caller frees). */
char *bench_machine_throttled(void);
/* Prefix for /proc and /sys paths (tests point it at a fake tree); "" by default. */
void bench_machine_set_root(const char *root);

#endif
