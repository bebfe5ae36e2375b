/* POST /api/v1/restart: see restart.h.  The handler runs on an API thread;
 * it only signals the main thread, which stops everything as for SIGTERM. */
#include "core/restart.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/api.h"
#include "core/log.h"
#include "core/plugin_loader.h"

/* The value POST restart's SIGTERM carries (sigqueue), so that the main
 * thread tells it from a SIGTERM sent from outside. */
#define RESTART_SIGVAL 0x7452

static bool under_systemd;

static void on_restart(void *arg, const struct tlsbox_api_request *req,
                       struct tlsbox_api_reply *reply)
{
    (void)arg;
    if (!under_systemd) {
        api_reply_error(reply, 409,
                        "tlsboxd was not started by systemd (tlsbox.service), which would start "
                        "it again: restart it the way it was started (it has given up the "
                        "rights it started with, so it cannot do it itself)");
        return;
    }
    log_info("restart asked for by %s: stopping; systemd starts tlsboxd again",
             req->user ? req->user : "?");
    if (sigqueue(getpid(), SIGTERM, (union sigval){.sival_int = RESTART_SIGVAL}) < 0) {
        api_reply_error(reply, 500, "cannot signal tlsboxd's main thread: %s", strerror(errno));
        return;
    }
    api_reply_json(reply, 202, json_pack("{s:b,s:s}", "restarting", 1, "by", "systemd"));
}

void restart_register(void)
{
    const char *n = getenv("NOTIFY_SOCKET");
    under_systemd = n && (n[0] == '/' || n[0] == '@');
    api_route_add(core_self(), "POST", "restart", on_restart, NULL);
}

bool restart_asked(const struct signalfd_siginfo *si)
{
    return si->ssi_signo == SIGTERM && si->ssi_code == SI_QUEUE &&
           si->ssi_pid == (uint32_t)getpid() && si->ssi_int == RESTART_SIGVAL;
}
