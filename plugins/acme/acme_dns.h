/*
 * A minimal DNS client for ACME dns-01 (RFC 8555 section 8.4): publish and
 * withdraw the _acme-challenge TXT record with an RFC 2136 dynamic UPDATE
 * signed with TSIG (RFC 8945), ask the server whether it serves it, and ask
 * a resolver where a CNAME at _acme-challenge points.
 *
 * One server, TCP only (RFC 7766: a 2-byte length before each message), no
 * retries, no EDNS.  TCP because an UPDATE with its TSIG is small but the
 * answer to a TXT query need not be, and truncation handling would buy
 * nothing here.
 *
 * Threading: every function may be called from any thread; each call is
 * blocking (at most a name lookup of conf->server, then connect, send and
 * receive, each bounded by conf->timeout_ms), keeps no state between calls
 * and uses no globals, so calls may run concurrently.
 *
 * Ownership: the configuration and every string argument are borrowed for
 * the duration of the call.  *err, when set, is malloc'd and owned by the
 * caller (free()).  On success *err is left untouched.
 *
 * Secrets: conf->key_secret is decoded into a buffer that is wiped before
 * the call returns; it never appears in an error message.
 *
 * Error messages name the operation, the record and the server as written in
 * the configuration, then what went wrong, e.g.
 *   "DNS update of _acme-challenge.www.example.org at 127.0.0.1:5353: REFUSED"
 *   "DNS update of ... at ...: NOTAUTH (TSIG error BADKEY)"
 *   "DNS update of ... at ...: cannot connect: Connection refused"
 *   "DNS update of ... at ...: no answer in 10 s"
 *   "DNS update of ... at ...: no answer in 2 s (stopping)"
 *   "DNS update of ... at ...: the name is not in zone example.org"
 *   "DNS query for TXT _acme-challenge.www.example.org at ::1: SERVFAIL"
 * Return values: 0 (or a count) on success, else a negative errno:
 *   -EINVAL      a bad argument or configuration (refused before sending)
 *   -ENOENT      the server's host name does not resolve
 *   -ECONNREFUSED, -ENETUNREACH, ...  the connect() error
 *   -ETIMEDOUT   connect, send or receive took longer than timeout_ms (or
 *                than stop_ms after *conf->stop became true)
 *   -ECONNRESET  the server closed the connection before answering in full
 *   -EPROTO      a malformed answer, a wrong ID, an unsigned or badly signed
 *                answer to a signed UPDATE
 *   -EACCES      the server refused: REFUSED, NOTAUTH or a TSIG error
 *   -EREMOTEIO   any other RCODE (SERVFAIL, NOTZONE, ...)
 *
 * The code is in three files that share acme_dns_int.h: acme_dns.c (the
 * server, the transport and these calls), acme_dns_wire.c (names and the
 * message format) and acme_dns_tsig.c (TSIG).
 */
#ifndef TLSBOX_PLUGINS_ACME_DNS_H
#define TLSBOX_PLUGINS_ACME_DNS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

/* Where and how to update.  All strings borrowed. */
struct acme_dns_conf {
    /*
     * "127.0.0.1", "127.0.0.1:5353", "::1", "[::1]:5353", or a host
     * name[:port]; the port defaults to 53.  A host name is resolved on every
     * call (getaddrinfo, blocking) and each address tried in turn.
     */
    const char *server;
    /* The zone to update, e.g. "example.org" (trailing dot optional). */
    const char *zone;
    /* TSIG key name, e.g. "tlsbox-acme", as in bind's key statement. */
    const char *key_name;
    /* "hmac-sha256" (the default when NULL or empty) or "hmac-sha512". */
    const char *key_alg;
    /* The secret, base64, as in bind's key statement / tsig-keygen output. */
    const char *key_secret;
    /* Limit for each of connect, send and receive; 0 = 10000. */
    unsigned timeout_ms;
    /*
     * When set (borrowed, e.g. the plugin's "stopping" flag): once *stop is
     * true, a step still waiting gives up stop_ms after that (0 = 2000),
     * and a step started later waits at most stop_ms: a stop that waits
     * for the call is not held for the full timeout_ms by a server that
     * takes the connection and never answers.  It is looked at every
     * 100 ms while a step waits.
     */
    const atomic_bool *stop;
    unsigned stop_ms;
};

/*
 * Add (@p add true) the TXT record @p value at @p fqdn with @p ttl, or delete
 * (@p add false) exactly that TXT record (class NONE, RFC 2136 2.5.4; other
 * TXT records at the name stay), in one UPDATE for zone c->zone signed with
 * TSIG.  Adding a record that exists, or deleting one that does not, is a
 * success (RFC 2136 3.4.2).
 *
 * @p fqdn must be c->zone or a name under it (case-insensitive; trailing dot
 * optional) and @p value at most 255 bytes (one character-string); @p ttl is
 * ignored for a delete.  The answer's RCODE is checked, and its TSIG MAC
 * verified (an unsigned NOERROR is refused: anyone on the path could forge
 * it).  An answer carrying a TSIG error (BADSIG, BADKEY, BADTIME) is
 * reported by name without verification, as the server cannot sign it.
 *
 * Returns 0, or a negative errno (see the top of this file) with *err set.
 */
int acme_dns_update(const struct acme_dns_conf *c, bool add, const char *fqdn, const char *value,
                    unsigned ttl, char **err);

/*
 * Ask c->server (RD=0, so an authoritative server answers from its own data)
 * for TXT @p fqdn.  Returns 1 when one of the character-strings of one of the
 * TXT records owned by @p fqdn equals @p value, 0 when none does (also on
 * NXDOMAIN or no TXT at all), or a negative errno with *err set.  The query is
 * not signed; c->zone and the key fields are not used.  A CNAME at @p fqdn is
 * not followed: ask for the name it points to (where the update went).
 */
int acme_dns_txt_has(const struct acme_dns_conf *c, const char *fqdn, const char *value,
                     char **err);

/*
 * Ask c->server, a resolver (RD=1), whether @p fqdn is a CNAME, and follow
 * the chain to its end, one question per name, at most 8 names.  Returns 1
 * with *target set to the chain's last name (text, no trailing dot,
 * malloc'd: the caller free()s it), 0 when @p fqdn is no CNAME (NXDOMAIN, or
 * no CNAME record), or a negative errno with *err set (-ELOOP for a longer
 * chain).  c->zone and the key fields are not used.
 *
 * dns-01 uses it to find where _acme-challenge.NAME points (RFC 8555
 * section 8.4: the CA follows the CNAME, so the record goes at its end).
 */
int acme_dns_cname_follow(const struct acme_dns_conf *c, const char *fqdn, char **target,
                          char **err);

/*
 * The first "nameserver" address in the resolv.conf(5) file @p path (the
 * system's is /etc/resolv.conf), malloc'd (the caller free()s it), or NULL
 * when the file cannot be read or names none.
 */
char *acme_dns_system_resolver(const char *path);

/*
 * Pure helper, exposed for the unit test.
 *
 * Encode the domain name @p name ("www.example.org", trailing dot optional;
 * "." is the root) in DNS wire format into @p out, keeping the case (the
 * lowercase canonical form the TSIG MAC needs is made where it is computed).
 * No escapes: a backslash is refused.  Returns the length written (at most
 * 255), -EINVAL for an empty name or label, a label over 63 bytes or a name
 * over 255 bytes in wire form, or -ENOSPC when @p cap is too small.
 */
int acme_dns_name_wire(const char *name, unsigned char *out, size_t cap);

/*
 * Whether the domain name @p name is the domain name @p zone or below it, at
 * a label boundary, ignoring ASCII case: the check acme_dns_update() makes
 * before sending, for callers that refuse a setting earlier.  Both are
 * borrowed text names; false when either is not a domain name.
 */
bool acme_dns_in_zone(const char *name, const char *zone);

#endif
