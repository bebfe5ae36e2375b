#!/bin/bash
# tlsboxctl's output written to a file that cannot take it (a full disk:
# /dev/full answers every write with ENOSPC).  What a user checks: a script
# running "tlsboxctl cert export NAME > chain.pem" must not get exit 0 with
# a truncated file; tlsboxctl says on stderr that standard output failed and
# why, and exits 4 (local error).  A refusal keeps its own status (1), and
# the same commands to a writable file still exit 0 with the whole output.
. "$(dirname "$0")/lib.sh"
tb_setup

tb_start_daemon --set site.https_port="$(tb_free_port)" --set site.http_port="$(tb_free_port)" ||
    bail "tlsboxd did not start"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
    -subj "/CN=one.example" -addext "subjectAltName=DNS:one.example" \
    -keyout "$TB_TMP/one.key" -out "$TB_TMP/one.crt" 2>/dev/null &&
    tb_ctl cert import --cert "$TB_TMP/one.crt" --key "$TB_TMP/one.key" --name one >/dev/null
ok $? "a certificate imported"

tb_ctl cert export one >"$TB_TMP/chain.pem"
is "$?" 0 "cert export to a file exits 0"
is "$(openssl x509 -noout -fingerprint -sha256 <"$TB_TMP/chain.pem")" \
    "$(openssl x509 -noout -fingerprint -sha256 <"$TB_TMP/one.crt")" "with the certificate imported"

full_msg="^tlsboxctl: standard output: No space left on device; what was printed is not all there$"
for cmd in "cert export one" "--json cert list" "status" "get core.log_level" "--help"; do
    # shellcheck disable=SC2086 # the words of the command
    tb_ctl $cmd >/dev/full 2>"$TB_TMP/err"
    is "$?" 4 "tlsboxctl $cmd > /dev/full exits 4"
    like "$(cat "$TB_TMP/err")" "$full_msg" "and says standard output failed, and why"
done

tb_ctl get core.no_such_key >/dev/full 2>"$TB_TMP/err"
is "$?" 1 "a refusal to /dev/full still exits 1"
is "$(cat "$TB_TMP/err")" \
    "tlsboxctl: core.no_such_key: no such setting (keys are plugin.key; see tlsboxctl plugins)" \
    "with the refusal's reason alone (nothing was printed to fail)"

done_testing
