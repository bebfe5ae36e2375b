/* The host table handed to plugins. */
#ifndef TLSBOX_CORE_HOST_H
#define TLSBOX_CORE_HOST_H

#include <tlsbox/host.h>

const struct tlsbox_host *host_table(void);

#endif
