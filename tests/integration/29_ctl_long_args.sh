#!/bin/bash
# tlsboxctl with long arguments and long answers.  What a user checks:
# nothing is cut short silently.  cert list shows every name of a
# certificate with many (here 40); cert export of a long name asks for that
# name, and the refusal names it whole; a request path over 2048 bytes is
# sent whole (settings history --before with a long number lists the same
# changes as the short number), and one over the 8192 bytes the control
# socket takes is refused (exit 2, usage) with the request named, rather
# than sent as another request.  Keys are made here, in the test's temporary
# directory, and never printed.
. "$(dirname "$0")/lib.sh"
tb_setup

tb_start_daemon --set site.https_port="$(tb_free_port)" --set site.http_port="$(tb_free_port)" ||
    bail "tlsboxd did not start"

# 1. cert list: a certificate with 40 names.
sans=$(for i in $(seq -w 1 40); do printf 'host-%s.many.example,' "$i"; done)
sans=${sans%,}
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
    -subj "/CN=host-01.many.example" -addext "subjectAltName=DNS:${sans//,/,DNS:}" \
    -keyout "$TB_TMP/many.key" -out "$TB_TMP/many.crt" 2>/dev/null &&
    tb_ctl cert import --cert "$TB_TMP/many.crt" --key "$TB_TMP/many.key" --name many >/dev/null
ok $? "a certificate with 40 names imported"
is "$(tb_ctl --json cert list | jq -r '.certificates[] | select(.name == "many") | .sans | join(",")')" \
    "$sans" "the API lists its 40 names"
is "$(tb_ctl cert list | awk '$1 == "many" { print $NF }')" "$sans" \
    "cert list shows all 40 (${#sans} characters), not the first 511"

# 2. cert export NAME: the name asked for is the one given, however long.
long=$(printf 'a%.0s' $(seq 1 600))
err=$(tb_ctl cert export "$long" 2>&1 >/dev/null)
is "$?" 1 "cert export of a 600-character name: refused by tlsboxd (exit 1)"
is "$err" "tlsboxctl: certificate name '$long' is not valid" "naming the 600 characters given"

# 3. A request path over 2048 bytes: three changes, then the ones before
# the newest, asked for with the number written with 2100 leading zeros.
for v in 71 72 73; do
    tb_ctl set notify.retry_seconds "$v" >/dev/null || bail "set notify.retry_seconds $v"
done
ids() { tb_ctl --json settings history "$@" | jq -c '[.changes[].id]'; }
newest=$(tb_ctl --json settings history | jq '.changes[0].id')
want=$(ids --before "$newest")
like "$want" '^\[[0-9]+,[0-9]+' "settings history --before $newest lists the older changes: $want"
zeros=$(printf '0%.0s' $(seq 1 2100))
is "$(ids --before "$zeros$newest")" "$want" "the same with the number in 2100+ characters"

# Over 8192 bytes: refused, naming the request.
zeros=$(printf '0%.0s' $(seq 1 9000))
path="settings/history?limit=50&before=$zeros$newest"
err=$(tb_ctl settings history --before "$zeros$newest" 2>&1 >/dev/null)
is "$?" 2 "a request path of ${#path} bytes: refused as a usage error (exit 2)"
is "$err" "tlsboxctl: GET /api/v1/${path:0:40}...: the request path is ${#path} bytes, more than the 8192 the control socket takes: an argument is too long; nothing was sent" \
    "saying which request and its size"

done_testing
