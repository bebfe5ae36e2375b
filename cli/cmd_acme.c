/* tlsboxctl acme ... (filled by the ACME plugin work). */
#include "cli/ctl.h"

const struct ctl_command ctl_acme_commands[] = {{.name = NULL}};
