/* The notify plugin's pure parts: the signature against RFC 4231's HMAC-
 * SHA256 vectors, and the origin that logs and the API show instead of the
 * webhook URL (its path, query and user:password may be its key). */
#include <stdlib.h>

#include "plugins/notify/notify.h"
#include "tests/tap.h"

static void origin(const char *url, const char *want)
{
    char *o = notify_url_origin(url);
    is_str(o, want, "origin of %s", url);
    free(o);
}

int main(void)
{
    char *s = notify_signature("Jefe", "what do ya want for nothing?", 28);
    is_str(s, "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
           "RFC 4231 test case 2");
    free(s);
    s = notify_signature("key", "", 0);
    is_str(s, "sha256=5d5d139563c95b5967b9bd9a8c9b233a9dedb45072794cd232dc1b74832607d0",
           "an empty body is signed too");
    free(s);

    origin("https://hooks.example.com/services/T0/B0/XXXX", "https://hooks.example.com");
    origin("http://127.0.0.1:8080/hook?token=abc", "http://127.0.0.1:8080");
    origin("https://user:pass@example.com:8443/x#frag", "https://example.com:8443");
    origin("https://[::1]:9000/p", "https://[::1]:9000");
    origin("http://example.com", "http://example.com");
    origin("not a url", "?");
    return done_testing();
}
