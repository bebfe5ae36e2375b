#!/bin/bash
# Revocation without OCSP: leaves that name no OCSP responder, only a CRL
# distribution point (as Let's Encrypt's do since it ended OCSP), are
# checked against their CA's CRL, made by the real `openssl ca -gencrl` and
# served on loopback by python3's http.server.  What a user checks: the
# status says good, by CRL, until when, and that nothing is stapled; every
# bad CRL (older than the one held, another CA, another shard, garbage, too
# big, gone) is refused, saying what and where, and leaves the status as it
# was; a CRL that runs out reads STALE; a revocation listed in the CRL
# reads REVOKED in tlsboxctl, the log, the metric, the webhook and the web
# UI, and an older CRL that does not list it yet does not undo it.  A stale
# CRL (past its nextUpdate) that lists a certificate proves it revoked all
# the same, unless on hold; one that does not list it does not make it good.  An
# unchanged CRL is asked for conditionally and not downloaded again:
# If-Modified-Since to http.server, If-None-Match and If-Modified-Since to
# nginx.
. "$(dirname "$0")/lib.sh"
tb_setup
. "$(dirname "$0")/ocsp_lib.sh"

SITE_HTTPS=$(tb_free_port)
SITE_HTTP=$(tb_free_port)
CP=$(tb_free_port)
WWW="$OC/www"
URL="http://127.0.0.1:$CP/inter.crl"
mkdir -p "$WWW"
oc_make_ca || bail "test CA: $(tail -3 "$OC/setup.log")"
for n in crl.test crl2.test; do
    OC_AIA=0 oc_make_leaf "$n" 30 "crlDistributionPoints=URI:$URL" || bail "leaf $n"
done
NGX=$(tb_free_port)
URL3="http://127.0.0.1:$NGX/inter.crl" # served by nginx
OC_AIA=0 oc_make_leaf crl3.test 30 "crlDistributionPoints=URI:$URL3" || bail "leaf crl3.test"
is "$(openssl x509 -in "$OC/crl.test.pem" -noout -ext authorityInfoAccess 2>&1 | grep -c OCSP)" 0 \
    "the leaf names no OCSP responder"

oc_crl_ca "$URL"
# crl_publish EXTS [CA] [ARGS...]: a CRL signed by CA (inter) with the
# extensions of section EXTS, published as DER in one rename.
crl_publish() {
    local exts=$1 ca=${2:-inter}
    shift 2 2>/dev/null || shift
    openssl ca -config "$OC/crl.cnf" -gencrl -keyfile "$OC/$ca.key" -cert "$OC/$ca.pem" \
        -crlexts "$exts" -out "$OC/last.crl.pem" "$@" >>"$OC/setup.log" 2>&1 &&
        openssl crl -in "$OC/last.crl.pem" -outform DER -out "$WWW/.next" &&
        mv "$WWW/.next" "$WWW/inter.crl"
}
crl_next_update() {
    date -u -d "$(openssl crl -in "$OC/last.crl.pem" -noout -nextupdate | cut -d= -f2)" +%s
}
crl_publish idp || bail "first CRL"
want_next=$(crl_next_update)

timeout 600 python3 -m http.server --bind 127.0.0.1 --directory "$WWW" "$CP" \
    2>"$OC/crlserver.log" >/dev/null &
crl_server=$!
tb_wait_port "$CP" || bail "the CRL server did not listen on $CP"
n_gets() { grep -c '"GET /inter.crl' "$OC/crlserver.log"; }

PW=$(tb_free_port)
hooks="$TB_TMP/hooks.jsonl"
: >"$hooks"
timeout 600 python3 "$top_srcdir/tests/integration/webhook_receiver.py" "$PW" "$hooks" &
receiver=$!
tb_wait_port "$PW" || bail "the webhook receiver did not listen on $PW"

oc_start_tlsbox --set "notify.url=http://127.0.0.1:$PW/hook" || bail "tlsboxd did not start"
tb_wait_port "$SITE_HTTPS" || bail "site not listening"
for n in crl.test crl2.test; do
    tb_ctl cert import --cert "$OC/$n.pem" --chain "$OC/inter.pem" --key "$OC/$n.key" \
        --name "$n" >/dev/null || bail "import $n"
done

# 1. Good, by CRL, nothing stapled.
oc_wait_status crl.test status good 20
ok $? "a leaf with only a CRL distribution point: status good"
is "$(oc_status crl.test method)" crl "checked by CRL"
is "$(oc_status crl.test responder)" "$URL" "the CRL's URL, read from the leaf"
is "$(oc_status crl.test stapled)" false "nothing stapled"
is "$(oc_status crl.test next_update)" "$want_next" "next update is the CRL's nextUpdate"
is "$(oc_status crl.test last_error)" null "no error"
now=$(date +%s)
nr=$(oc_status crl.test next_refresh)
ok $((nr <= now || nr > now + 6 * 3600 + 60)) \
    "checked again within crl_check_hours (6 h): in $((nr - now)) s"
like "$(oc_staple crl.test)" "OCSP response: no response sent" "no staple is sent"
out=$(tb_ctl ocsp status crl.test)
like "$out" "checked by +CRL" "tlsboxctl ocsp status says: checked by CRL"
like "$out" "status +GOOD" "and GOOD"
like "$out" "CRL +$URL" "and the CRL's URL"
this_first=$(oc_status crl.test this_update)
oc_wait_status crl2.test status good 20
ok $? "the second leaf: good"
is "$(tb_wait_says 10 "$want_next" oc_next_update_gauge crl.test)" "$want_next" \
    "metrics: tlsbox_ocsp_next_update_timestamp_seconds is the CRL's nextUpdate"
is "$(n_gets)" 2 "one GET of the CRL per certificate"

# 1b. An unchanged CRL is not downloaded again.  Its validators are kept
# only when Last-Modified is a minute older than the answer (a CRL published
# again within that second would look unchanged): the CRL above is too new.
db="$TB_STATE/tlsbox.db"
is "$(sqlite3 "$db" "SELECT count(*) FROM ocsp_certs WHERE crl_last_modified IS NOT NULL OR crl_etag IS NOT NULL")" \
    0 "a CRL published seconds before it was fetched: no validators kept"
touch -d '-2 minutes' "$WWW/inter.crl"
lm=$(LC_ALL=C date -u -r "$WWW/inter.crl" '+%a, %d %b %Y %H:%M:%S GMT')
tb_ctl ocsp refresh crl.test >/dev/null
is "$(sqlite3 "$db" "SELECT crl_last_modified || '|' || ifnull(crl_etag, 'none') FROM ocsp_certs WHERE cert_name = 'crl.test'")" \
    "$lm|none" "a CRL two minutes old: its Last-Modified kept (http.server sends no ETag)"
n304() { grep -c '"GET /inter.crl HTTP/1.1" 304' "$OC/crlserver.log"; }
is "$(n304)" 0 "no 304 yet"
fetched=$(oc_status crl.test fetched_at)
sleep 1.1 # fetched_at has whole seconds
out=$(tb_ctl ocsp refresh crl.test)
is "$(n304)" 1 "the next refresh asks If-Modified-Since and gets 304 Not Modified"
like "$out" "status +GOOD" "still good"
is "$(oc_status crl.test this_update)" "$this_first" "the CRL's facts as before"
now_fetched=$(oc_status crl.test fetched_at)
ok $((now_fetched <= fetched)) "checked now: fetched_at moves on ($fetched, then $now_fetched)"
like "$(grep 'crl.test: the CRL is unchanged' "$TB_TMP/daemon.log")" \
    "ocsp: crl.test: the CRL is unchanged \($URL answered 304\): still not in it" "the log says so"
is "$(tb_ctl metrics | awk '$1 == "tlsbox_ocsp_crl_not_modified_total" {print $2}')" 1 \
    "tlsbox_ocsp_crl_not_modified_total 1"

# nginx answers If-None-Match too (and wants both to match).
W3="$OC/www3"
mkdir -p "$W3" "$OC/nginx"
WWW="$W3" crl_publish plain || bail "a CRL without an Issuing Distribution Point, for nginx"
touch -d '-2 minutes' "$W3/inter.crl"
cat >"$OC/nginx/nginx.conf" <<EOF_NGINX
user root;
worker_processes 1;
pid $OC/nginx/nginx.pid;
error_log $OC/nginx/error.log warn;
events { worker_connections 64; }
http {
    access_log $OC/nginx/access.log;
    server { listen 127.0.0.1:$NGX; root $W3; }
}
EOF_NGINX
timeout 600 nginx -e "$OC/nginx/error.log" -c "$OC/nginx/nginx.conf" -p "$OC/nginx/" -g 'daemon off;' \
    >/dev/null 2>&1 &
nginx_pid=$!
tb_wait_port "$NGX" || bail "nginx did not listen on $NGX: $(cat "$OC/nginx/error.log")"
etag=$(curl -sI "$URL3" | tr -d '\r' | sed -n 's/^[Ee][Tt]ag: //p')
like "$etag" '^"[0-9a-f]+-[0-9a-f]+"$' "nginx sends an ETag: $etag"
tb_ctl cert import --cert "$OC/crl3.test.pem" --chain "$OC/inter.pem" --key "$OC/crl3.test.key" \
    --name crl3.test >/dev/null || bail "import crl3.test"
oc_wait_status crl3.test status good 20
ok $? "a leaf whose CRL nginx serves: good"
is "$(sqlite3 "$db" "SELECT crl_etag FROM ocsp_certs WHERE cert_name = 'crl3.test'")" "$etag" \
    "nginx's ETag kept"
tb_ctl ocsp refresh crl3.test >/dev/null
is "$(awk '$6 == "\"GET" && $7 == "/inter.crl" {print $9}' "$OC/nginx/access.log" | paste -sd' ')" "200 304" \
    "nginx: the first GET 200, the refresh 304"
touch "$W3/inter.crl" # published again: a new mtime, so a new ETag and Last-Modified
tb_ctl ocsp refresh crl3.test >/dev/null
is "$(awk '$6 == "\"GET" && $7 == "/inter.crl" {print $9}' "$OC/nginx/access.log" | paste -sd' ')" "200 304 200" \
    "a CRL published again is downloaded again"
is "$(sqlite3 "$db" "SELECT count(*) FROM ocsp_certs WHERE cert_name = 'crl3.test' AND crl_etag IS NULL AND crl_last_modified IS NULL")" \
    1 "and, published seconds ago, its validators are not kept"
kill "$nginx_pid" 2>/dev/null
wait "$nginx_pid" 2>/dev/null

# 2. Bad CRLs: refused, saying what and where; the status stays good.  Each
# is a new file, so the validators of 1b get them in full.
this=$(oc_status crl.test this_update)
refused() { # refused WHAT WANT: refresh crl.test and check the refusal
    local out
    out=$(tb_ctl ocsp refresh crl.test)
    like "$(oc_status crl.test last_error)" "$2" "$1: refused, saying why"
    like "$out" "last error +$URL" "$1: tlsboxctl ocsp refresh names the CRL's URL"
    is "$(oc_status crl.test status)" good "$1: the status stays good"
    is "$(oc_status crl.test this_update)" "$this" "$1: the stored CRL facts stay"
}
older() { # a CRL timestamp an hour before the one held
    date -u -d "@$(($(oc_status crl.test this_update) - 3600))" +%Y%m%d%H%M%SZ
}
crl_publish idp inter -crl_lastupdate "$(older)" || bail "older CRL"
refused "an older CRL (replayed or cached)" \
    "^$URL: CRL refused: the CRL \(thisUpdate [0-9TZ:-]+\) is older than the one already held"
crl_publish plain root || bail "root CRL"
refused "a CRL signed by another CA" "^$URL: CRL refused: the CRL is from another issuer"
crl_publish shard || bail "shard CRL"
refused "another shard's CRL" "CRL refused: the CRL is for another distribution point"
printf '<html>maintenance</html>\n' >"$WWW/inter.crl"
refused "an HTML page" "CRL refused: not a CRL \(neither DER nor PEM\)"
rm -f "$WWW/inter.crl"
refused "no CRL at the URL" "^$URL: HTTP status 404$"
out=$(tb_ctl set ocsp.max_crl_kib 8 2>&1)
ok $(($? == 0)) "ocsp.max_crl_kib 8 refused"
like "$out" "ocsp.max_crl_kib" "naming the setting: $out"
is "$(tb_ctl get ocsp.max_crl_kib)" 10240 "the setting stays 10240"
tb_ctl set ocsp.max_crl_kib 16 >/dev/null
head -c 20000 /dev/zero >"$WWW/inter.crl"
refused "a 20 kB CRL over max_crl_kib 16" "^$URL: CRL larger than 16384 bytes \(ocsp.max_crl_kib\)$"
tb_ctl set ocsp.max_crl_kib 10240 >/dev/null
is "$(oc_status crl.test failures)" 6 "six failures in a row counted"

# 3. A CRL that runs out: STALE (revocation unknown), then fresh again.
crl_publish idp inter -crlsec 10 || bail "short CRL"
tb_ctl ocsp refresh crl.test >/dev/null
is "$(oc_status crl.test last_error)" null "a CRL valid for 10 s is accepted"
is "$(tb_wait_says 30 stale oc_status crl.test status)" stale "once it has run out: stale"
like "$(tb_ctl ocsp status crl.test)" "STALE - the last CRL ran out" "tlsboxctl says STALE"
crl_publish idp || bail "fresh CRL"
tb_ctl ocsp refresh crl.test >/dev/null
is "$(oc_status crl.test status)" good "a fresh CRL: good again"
is "$(oc_status crl.test failures)" 0 "failures reset"

# 4. Revoked: listed in the CRL.
# tlsbox writes a serial as the hex of its DER INTEGER content, as RFC 9773
# and the CRL do: with a leading 00 when the first byte has its top bit set
# (openssl -serial leaves it out; about 1 run in 256 has such a serial here).
serial=$(openssl x509 -in "$OC/crl.test.pem" -noout -serial | cut -d= -f2 | tr A-F a-f)
case $serial in [89a-f]*) serial=00$serial ;; esac
# An older CRL that does not list it yet, for later.
mkdir -p "$OC/older"
WWW="$OC/older" crl_publish idp inter -crl_lastupdate "$(older)" || bail "older CRL"
openssl ca -config "$OC/crl.cnf" -revoke "$OC/crl.test.pem" -keyfile "$OC/inter.key" \
    -cert "$OC/inter.pem" -crl_reason keyCompromise >>"$OC/setup.log" 2>&1 || bail "revoke"
crl_publish idp || bail "CRL with the revocation"
when=$(openssl crl -in "$OC/last.crl.pem" -noout -text | sed -n 's/.*Revocation Date: //p')
out=$(tb_ctl ocsp refresh crl.test)
like "$out" "status +REVOKED" "the refresh shows REVOKED"
is "$(oc_status crl.test status)" revoked "status revoked"
is "$(oc_status crl.test revoked_at)" "$(date -u -d "$when" +%s)" \
    "revoked at the CRL's revocation date ($when)"
like "$(grep ERR "$TB_TMP/daemon.log")" \
    "ocsp: crl.test: certificate REVOKED \(serial $serial, at [0-9]+, reason 1\) says the CRL at $URL" \
    "an error line in the log names the certificate, the reason (1: keyCompromise) and the CRL"
like "$(tb_ctl metrics)" "tlsbox_ocsp_revoked_total 1" "the metric counts the revocation"
tb_wait_says 20 1 grep -c '"event": "ocsp.revoked"' "$hooks" >/dev/null
ev=$(grep '"event": "ocsp.revoked"' "$hooks" | head -1 | jq -r .body)
is "$(jq -r '.data.name + " " + .data.method + " " + .data.serial' <<<"$ev")" \
    "crl.test crl $serial" "the webhook is told: ocsp.revoked, crl.test, by CRL, its serial"
tb_ctl ocsp refresh crl2.test >/dev/null
is "$(oc_status crl2.test status)" good "the other leaf of the same CRL stays good"
tb_ctl ocsp refresh crl.test >/dev/null
is "$(grep -c 'certificate REVOKED' "$TB_TMP/daemon.log")" 1 "one alarm per revocation"
# That older CRL again (replayed, or from a cache in front of the CRL
# server): it must not make the revoked certificate good again.
this=$(oc_status crl.test this_update)
cp "$OC/older/inter.crl" "$WWW/.next" && mv "$WWW/.next" "$WWW/inter.crl"
out=$(tb_ctl ocsp refresh crl.test)
like "$out" "status +REVOKED" "an older CRL that does not list it: still REVOKED"
like "$(oc_status crl.test last_error)" \
    "^$URL: CRL refused: the CRL \(thisUpdate [0-9TZ:-]+\) is older than the one already held" \
    "refused, saying why"
is "$(sqlite3 "$db" "SELECT state, this_update, revoked_at FROM ocsp_certs WHERE cert_name = 'crl.test'")" \
    "revoked|$this|$(date -u -d "$when" +%s)" "the store keeps the revocation and its CRL's thisUpdate"
openssl crl -in "$OC/last.crl.pem" -outform DER -out "$WWW/.next" && mv "$WWW/.next" "$WWW/inter.crl"
tb_ctl ocsp refresh crl.test >/dev/null
is "$(oc_status crl.test status) $(oc_status crl.test failures)" "revoked 0" \
    "the current CRL again: revoked, no failure"

# 5. The web UI, in headless Chromium.
tb_need_browser
tb_ctl set admin.pbkdf2_iterations 10000 >/dev/null
SITE_PORT=$SITE_HTTPS tb_ui_run ocsp_crl_ui.py 120 9 CRL_URL="$URL" CRL_REVOKED=crl.test \
    CRL_GOOD=crl2.test CRL_CHECKED=3

# 6. After a restart the facts come from the store.
tb_stop_daemon
ok $? "tlsboxd stops cleanly"
oc_start_tlsbox || bail "tlsboxd did not start again"
is "$(tb_wait_says 20 revoked oc_status crl.test status)" revoked "after a restart: still revoked"
is "$(oc_status crl2.test method)" crl "and the other still checked by CRL"

# 7. A stale CRL (past its nextUpdate) cannot say "not listed, so good"
# any more, but one that lists a certificate still proves it revoked: a
# revocation is final, as a REVOKED OCSP answer is whatever its nextUpdate.
# Not a hold, which may have been lifted since.  Its own URL, a plain CRL.
SURL="http://127.0.0.1:$CP/stale/inter.crl"
for n in stale.test held.test unlisted.test; do
    OC_AIA=0 oc_make_leaf "$n" 30 "crlDistributionPoints=URI:$SURL" || bail "leaf $n"
done
openssl ca -config "$OC/crl.cnf" -revoke "$OC/stale.test.pem" -keyfile "$OC/inter.key" \
    -cert "$OC/inter.pem" -crl_reason keyCompromise >>"$OC/setup.log" 2>&1 || bail "revoke"
openssl ca -config "$OC/crl.cnf" -revoke "$OC/held.test.pem" -keyfile "$OC/inter.key" \
    -cert "$OC/inter.pem" -crl_hold holdInstructionNone >>"$OC/setup.log" 2>&1 || bail "hold"
mkdir -p "$WWW/stale"
WWW="$WWW/stale" crl_publish plain inter -crl_lastupdate "$(date -u -d '-2 days' +%Y%m%d%H%M%SZ)" \
    -crl_nextupdate "$(date -u -d '-1 day' +%Y%m%d%H%M%SZ)" || bail "stale CRL"
stale_next=$(crl_next_update)
ok $((stale_next >= $(date +%s))) "the CRL's nextUpdate is a day ago"
# when_of NAME: the revocation date the CRL gives NAME's serial, in seconds.
when_of() {
    local s
    s=$(openssl x509 -in "$OC/$1.pem" -noout -serial | cut -d= -f2)
    date -u -d "$(openssl crl -in "$OC/last.crl.pem" -noout -text |
        awk -v s="$s" '$1 == "Serial" && $3 == s {getline; sub(/.*Revocation Date: /, ""); print}')" +%s
}
like "$(openssl crl -in "$OC/last.crl.pem" -noout -text)" "Certificate Hold" \
    "it lists held.test on hold"
revoked_before=$(tb_ctl metrics | awk '$1 == "tlsbox_ocsp_revoked_total" {print $2}')
for n in stale.test held.test unlisted.test; do
    tb_ctl cert import --cert "$OC/$n.pem" --chain "$OC/inter.pem" --key "$OC/$n.key" \
        --name "$n" >/dev/null || bail "import $n"
done
oc_wait_status stale.test status revoked 20
ok $? "a stale CRL listing the certificate (keyCompromise): status revoked"
is "$(oc_status stale.test answer)/$(oc_status stale.test stapled)/$(oc_status stale.test last_error)" \
    "revoked/false/null" "the API: answer revoked, not stapled, no error"
is "$(oc_status stale.test revoked_at)" "$(when_of stale.test)" "revoked at the CRL's date for it"
is "$(oc_status stale.test next_update)" "$stale_next" "the CRL's nextUpdate, past, as it is"
like "$(tb_ctl ocsp status stale.test)" "status +REVOKED" "tlsboxctl ocsp status: REVOKED"
like "$(oc_staple stale.test)" "OCSP response: no response sent" "no staple is sent"
is "$(sqlite3 "$db" "SELECT count(*) FROM tls_staples WHERE cert_name = 'stale.test'")" 0 \
    "the core holds no staple for it"
sserial=$(openssl x509 -in "$OC/stale.test.pem" -noout -serial | cut -d= -f2 | tr A-F a-f)
case $sserial in [89a-f]*) sserial=00$sserial ;; esac
like "$(grep ERR "$TB_TMP/daemon.log")" \
    "ocsp: stale.test: certificate REVOKED \(serial $sserial, at [0-9]+, reason 1\) says the CRL at $SURL" \
    "the error line in the log"
is "$(tb_ctl metrics | awk '$1 == "tlsbox_ocsp_revoked_total" {print $2}')" \
    "$((revoked_before + 1))" "the metric counts the revocation"
is "$(tb_wait_says 20 2 grep -c '"event": "ocsp.revoked"' "$hooks")" 2 "a second ocsp.revoked event"
is "$(grep '"event": "ocsp.revoked"' "$hooks" | jq -r '.body | fromjson | .data |
    select(.name == "stale.test") | .method + " " + .serial')" "crl $sserial" \
    "the webhook is told: stale.test revoked, by CRL"
oc_wait_status unlisted.test failures 1 20
ok $? "the same stale CRL, not listing another certificate: refused"
like "$(oc_status unlisted.test last_error)" "^$SURL: CRL refused: expired: nextUpdate was [0-9]+ s ago$" \
    "saying it ran out"
is "$(oc_status unlisted.test status)/$(oc_status unlisted.test next_update)" "pending/null" \
    "not made good: still pending, no CRL facts kept"
oc_wait_status held.test failures 1 20
ok $? "the same stale CRL, listing a certificate on hold: refused"
like "$(oc_status held.test last_error)" \
    "^$SURL: CRL refused: expired: nextUpdate was [0-9]+ s ago \(it lists the certificate on hold, which may have been lifted\)$" \
    "saying it ran out and the hold may have been lifted"
is "$(oc_status held.test status)" pending "neither revoked nor good"
is "$(grep -c 'held.test: certificate REVOKED' "$TB_TMP/daemon.log")" 0 "and no alarm for it"

kill "$crl_server" "$receiver" 2>/dev/null
wait "$crl_server" "$receiver" 2>/dev/null
tb_stop_daemon
ok $? "tlsboxd stops cleanly"
done_testing
