#!/bin/bash
# HTTP semantics a review found wrong, with real clients: an HTTP/2 CONNECT
# (RFC 9113 8.5) is answered as HTTP/1.1 answers it, 405 with Allow, not
# 400.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/plugins/site/tests/site_itest.sh"
tb_setup
site_www
site_start --set site.workers=1 --set site.access_log=stderr
ok $? "tlsboxd serves the site"
W="$TB_TMP/www"
C=(curl -s --cacert "$CA" --max-time 10)
# The raw HTTP/2 client reads the answer's fields with python3-hpack, a
# Debian package: Debian's python3, whatever python3 PATH finds first.
H2S() { /usr/bin/python3 "$top_srcdir/plugins/site/tests/h2_streams.py" "$@"; }

# ---- CONNECT ---------------------------------------------------------------------------------
# HTTP/1.1's answer: the status and the Allow field.
h1=$("${C[@]}" --http1.1 -X CONNECT --request-target localhost:443 -D - -o /dev/null "$URL/" |
    tr -d '\r' | sed -n -e 's/^HTTP\/1.1 \([0-9]*\).*/status=\1/p' -e 's/^allow: /allow=/Ip' |
    paste -sd ' ')
is "$h1" "status=405 allow=GET, HEAD" "HTTP/1.1 CONNECT localhost:443: 405, Allow: GET, HEAD"
# :method and :authority only, no :scheme or :path: well-formed (RFC 9113 8.5).
out=$(H2S fields 127.0.0.1 "$P_HTTPS" :method=CONNECT :authority=localhost:443)
is "$out" "$h1
enable_connect_protocol=-" "HTTP/2 CONNECT localhost:443: the same 405 and Allow as HTTP/1.1, not 400"
# Extended CONNECT (RFC 8441) is not offered (no SETTINGS_ENABLE_CONNECT_PROTOCOL):
# a :protocol field is a stream error, PROTOCOL_ERROR (1).
out=$(H2S fields 127.0.0.1 "$P_HTTPS" :method=CONNECT :protocol=websocket :scheme=https \
    :path=/ :authority=localhost:443)
is "$out" "reset=1
enable_connect_protocol=-" "HTTP/2 CONNECT with :protocol: stream reset (PROTOCOL_ERROR)"
# A CONNECT with :scheme and :path but no :protocol is malformed (RFC 9113 8.5).
out=$(H2S fields 127.0.0.1 "$P_HTTPS" :method=CONNECT :scheme=https :path=/ \
    :authority=localhost:443)
is "$out" "reset=1
enable_connect_protocol=-" "HTTP/2 CONNECT with :scheme and :path: stream reset (PROTOCOL_ERROR)"
is "$(H2S fields 127.0.0.1 "$P_HTTPS" :method=GET :scheme=https :path=/ :authority=localhost |
    sed -n 1p)" "status=200 allow=-" "and a GET from the same raw client: 200"
is "$(grep -ao 'site access: 127.0.0.1 CONNECT .*' "$TB_TMP/daemon.log" | cut -d' ' -f4-7)" \
    "CONNECT localhost:443 HTTP/1.1 405
CONNECT localhost:443 HTTP/2 405" "the access log names the authority as the target, over both"

tb_stop_daemon
ok $? "tlsboxd stops"
done_testing
