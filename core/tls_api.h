/* The control/admin API routes of the TLS part: cert and policy under /api/v1. */
#ifndef TLSBOX_CORE_TLS_API_H
#define TLSBOX_CORE_TLS_API_H

/* Register the routes (owner core_self()).  Main thread, from tls_start. */
void tls_api_register(void);

#endif
