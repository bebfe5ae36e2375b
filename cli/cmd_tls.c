/* tlsboxctl cert ... and policy ... (filled by the TLS bundle work). */
#include "cli/ctl.h"

const struct ctl_command ctl_tls_commands[] = {{.name = NULL}};
