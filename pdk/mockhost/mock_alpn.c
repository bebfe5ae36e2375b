/* The mock host's tls-alpn-01 answers (host ABI 1.3): kept, not served.  A
 * test reads what the plugin put up with tlsbox_mock_alpn_answer(). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pdk/mockhost/mock.h"

#define MOCK_ALPN_MAX 100 /* as the core (TLS_ALPN_MAX) */

struct mock_answer {
    char *identifier;
    unsigned char digest[32];
};

static struct mock_answer answers[MOCK_ALPN_MAX];
static size_t nanswers;

static long answer_index(const char *identifier)
{
    for (size_t i = 0; i < nanswers; i++)
        if (strcmp(answers[i].identifier, identifier) == 0)
            return (long)i;
    return -1;
}

/* What the core takes: a host name's characters or an address's (the core
 * checks the form more closely; a test of the plugin needs no more). */
static bool identifier_ok(const char *s)
{
    size_t n = strlen(s);
    return n > 0 && n <= 253 && strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789.-:") == n;
}

int tlsbox_mockp_tls_alpn_put(struct tlsbox_plugin *self, const char *identifier,
                              const unsigned char digest[32])
{
    (void)self;
    if (!identifier || !digest || !identifier_ok(identifier)) {
        tlsbox_mockp_log(self, TLSBOX_LOG_WARN, "mock host: no tls-alpn-01 answer for \"%.80s\"",
                         identifier ? identifier : "(null)");
        return -EINVAL;
    }
    pthread_mutex_lock(&tlsbox_mockp.lock);
    long i = answer_index(identifier);
    int rc = 0;
    if (i < 0 && nanswers == MOCK_ALPN_MAX) {
        rc = -ENOSPC;
    } else {
        if (i < 0) {
            i = (long)nanswers++;
            answers[i].identifier = tlsbox_xstrdup(identifier);
        }
        memcpy(answers[i].digest, digest, 32);
    }
    pthread_mutex_unlock(&tlsbox_mockp.lock);
    return rc;
}

int tlsbox_mockp_tls_alpn_del(struct tlsbox_plugin *self, const char *identifier)
{
    (void)self;
    int rc = -ENOENT;
    pthread_mutex_lock(&tlsbox_mockp.lock);
    long i = identifier ? answer_index(identifier) : -1;
    if (i >= 0) {
        free(answers[i].identifier);
        answers[i] = answers[--nanswers];
        memset(&answers[nanswers], 0, sizeof(answers[nanswers]));
        rc = 0;
    }
    pthread_mutex_unlock(&tlsbox_mockp.lock);
    return rc;
}

int tlsbox_mock_alpn_answer(const char *identifier, unsigned char digest[32])
{
    pthread_mutex_lock(&tlsbox_mockp.lock);
    long i = identifier ? answer_index(identifier) : -1;
    if (i >= 0 && digest)
        memcpy(digest, answers[i].digest, 32);
    pthread_mutex_unlock(&tlsbox_mockp.lock);
    return i >= 0;
}

int tlsbox_mock_alpn_answers(void)
{
    pthread_mutex_lock(&tlsbox_mockp.lock);
    int n = (int)nanswers;
    pthread_mutex_unlock(&tlsbox_mockp.lock);
    return n;
}

void tlsbox_mockp_alpn_reset(void)
{
    pthread_mutex_lock(&tlsbox_mockp.lock);
    for (size_t i = 0; i < nanswers; i++)
        free(answers[i].identifier);
    memset(answers, 0, sizeof(answers));
    nanswers = 0;
    pthread_mutex_unlock(&tlsbox_mockp.lock);
}
