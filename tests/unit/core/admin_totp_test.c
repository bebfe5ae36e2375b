/* TOTP and base32 against their RFCs' test vectors: RFC 4226 appendix D
 * (HOTP), RFC 6238 appendix B (TOTP, SHA-1, last 6 of its 8 digits) and
 * RFC 4648 section 10 (base32, without padding); the window of one step
 * either way and the replay guard. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/admin_totp.h"
#include "tests/tap.h"

static const unsigned char key[] = "12345678901234567890";

static void test_hotp(void)
{
    static const unsigned want[] = {755224, 287082, 359152, 969429, 338314,
                                    254676, 287922, 162583, 399871, 520489};
    int bad = 0;
    for (unsigned i = 0; i < 10; i++)
        if (totp_hotp(key, 20, i) != want[i])
            bad++;
    is_int(bad, 0, "RFC 4226 appendix D: HOTP values for counters 0-9");
}

static void test_totp(void)
{
    static const struct {
        long long t;
        const char *code;
    } v[] = {{59, "287082"},         {1111111109, "081804"}, {1111111111, "050471"},
             {1234567890, "005924"}, {2000000000, "279037"}, {20000000000, "353130"}};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        int64_t step = 0;
        int rc = totp_verify(key, 20, v[i].code, v[i].t, 0, &step);
        ok(rc == 0 && step == v[i].t / 30, "RFC 6238 at %lld: %s", v[i].t, v[i].code);
    }
    int64_t step = 0;
    is_int(totp_verify(key, 20, "287 082", 59, 0, &step), 0, "spaces are ignored (\"287 082\")");
    is_int(totp_verify(key, 20, "287082", 59 + 30, 0, &step), 0, "one step late still counts");
    is_int((int)step, 1, "as the step it was made for");
    is_int(totp_verify(key, 20, "287082", 59 - 30, 0, &step), 0, "one step early too");
    is_int(totp_verify(key, 20, "287082", 59 + 60, 0, &step), -EACCES, "two steps late: refused");
    is_int(totp_verify(key, 20, "287082", 59, 1, &step), -EACCES,
           "a code whose step was used already: refused");
    is_int(totp_verify(key, 20, "28708", 59, 0, &step), -EINVAL, "five digits: not a code");
    is_int(totp_verify(key, 20, "2870822", 59, 0, &step), -EINVAL, "seven digits: not a code");
    is_int(totp_verify(key, 20, "28708a", 59, 0, &step), -EINVAL, "a letter: not a code");
    is_int(totp_verify(key, 20, NULL, 59, 0, &step), -EINVAL, "no code");
}

static void test_base32(void)
{
    static const char *const want[] = {"",        "MY",       "MZXQ",      "MZXW6",
                                       "MZXW6YQ", "MZXW6YTB", "MZXW6YTBOI"};
    const char *in = "foobar";
    char out[64];
    int bad = 0;
    for (size_t n = 0; n <= 6; n++)
        if (totp_base32((const unsigned char *)in, n, out, sizeof out) != strlen(want[n]) ||
            strcmp(out, want[n]) != 0)
            bad++;
    is_int(bad, 0, "RFC 4648 section 10: base32 of \"\", f, fo, ... foobar");
    char b32[TOTP_SECRET_B32];
    is_int((int)totp_base32(key, 20, b32, sizeof b32), 32, "a secret is 32 characters");
    is_str(b32, "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ", "the RFC 6238 secret in base32");
    is_int((int)totp_base32(key, 20, b32, 32), 0, "no room for the NUL: nothing written");
}

int main(void)
{
    test_hotp();
    test_totp();
    test_base32();
    return done_testing();
}
