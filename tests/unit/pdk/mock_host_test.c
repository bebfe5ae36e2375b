/* The kit's mock host answers the host calls as the daemon does (each
 * checked against tlsboxd too: tests/integration/78_pdk_host_rules.sh), so
 * that a plugin whose unit tests pass meets no other answer in the daemon.
 * Prints TAP. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <tlsbox/mock_host.h>

#include "tests/tap.h"

static const struct tlsbox_plugin_desc t_desc = {
    .abi_major = TLSBOX_ABI_MAJOR, .abi_minor = TLSBOX_ABI_MINOR, .name = "me", .version = "1"};

/* A "char **err" may be NULL (host.h): the message is dropped. */
static void test_err_null(const struct tlsbox_host *h, struct tlsbox_plugin *me)
{
    is_int(h->dh_set(me, "no pem", "test", TLSBOX_DH_CHECK_ONLY, NULL), -EINVAL,
           "dh_set of junk with err NULL: -EINVAL, no crash");
    struct tlsbox_cert_install in = {.name = "x", .chain_pem = "no pem", .key_pem = "no pem"};
    is_int(h->cert_install(me, &in, NULL), -EINVAL, "cert_install of junk with err NULL: -EINVAL");
}

int main(void)
{
    const struct tlsbox_host *h = &tlsbox_mock_host;
    if (tlsbox_mock_setup(&t_desc) < 0)
        return 1;
    struct tlsbox_plugin *me = tlsbox_mock_self();
    test_err_null(h, me);
    tlsbox_mock_teardown();
    return done_testing();
}
