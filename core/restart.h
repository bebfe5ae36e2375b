/* A restart asked for through the API (the web UI's Restart button,
 * tlsboxctl restart): tlsboxd stops cleanly and exits with
 * TLSBOX_EXIT_RESTART, which its systemd unit starts again
 * (RestartForceExitStatus=).  Only under systemd: once its privileges are
 * dropped, tlsboxd cannot start itself again with the rights to bind ports
 * below 1024, and nothing else would start it. */
#ifndef TLSBOX_CORE_RESTART_H
#define TLSBOX_CORE_RESTART_H

#include <stdbool.h>
#include <sys/signalfd.h>

/* EX_TEMPFAIL: the unit's RestartForceExitStatus= and SuccessExitStatus=. */
#define TLSBOX_EXIT_RESTART 75

/* Register POST /api/v1/restart.  Main thread, before the API serves;
 * reads NOTIFY_SOCKET (set by systemd for a Type=notify unit). */
void restart_register(void);
/* @p si (read from the main thread's signalfd) is the SIGTERM that
 * POST restart sent. */
bool restart_asked(const struct signalfd_siginfo *si);

#endif
