#!/bin/bash
# Certificate expiry, watched by the core: the gauge
# tlsbox_cert_not_after_timestamp_seconds per active certificate (equal to
# what openssl reads in the certificate), and cert.expiring sent by the
# notify plugin to a real webhook receiver when an imported certificate
# comes within core.cert_warn_days: once per threshold, not again after a
# restart, again after a renewal; a new list applies at once; the internal
# leaf (renewed by the box itself) is never announced; a certificate that
# is no longer active loses its gauge; bad lists are refused.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/plugins/site/tests/site_itest.sh"
tb_setup
site_www
site_start
ok $? "tlsboxd runs"

PW=$(tb_free_port)
hooks="$TB_TMP/hooks.jsonl"
: >"$hooks"
echo 0 >"$TB_TMP/fail"
timeout 300 python3 "$top_srcdir/tests/integration/webhook_receiver.py" "$PW" "$hooks" "$TB_TMP/fail" &
receiver=$!
tb_wait_port "$PW" || bail "the webhook receiver did not listen on $PW"
tb_ctl set notify.url "http://127.0.0.1:$PW/hook" >/dev/null
ok $? "notify.url set (its default events include cert.expiring)"

# mkcert NAME BEFORE AFTER: a self-signed certificate valid from BEFORE days
# ago to AFTER days ahead (python3-cryptography: openssl req cannot date
# one back), imported as NAME.  Warnings count only past a third of the
# lifetime, where renewals happen: the certificates here are long-lived.
mkcert() {
    /usr/bin/python3 - "$TB_TMP/$1" "$1.example" "$2" "$3" <<'PY' &&
import datetime, sys
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
out, cn, before, after = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
key = ec.generate_private_key(ec.SECP256R1())
now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=before))
        .not_valid_after(now + datetime.timedelta(days=after))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(cn)]), critical=False)
        .sign(key, hashes.SHA256()))
with open(out + ".crt", "wb") as f:
    f.write(cert.public_bytes(serialization.Encoding.PEM))
with open(out + ".key", "wb") as f:
    f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()))
PY
        tb_ctl cert import --cert "$TB_TMP/$1.crt" --key "$TB_TMP/$1.key" --name "$1" >/dev/null
}
end_of() { date -d "$(openssl x509 -enddate -noout -in "$TB_TMP/$1.crt" | cut -d= -f2)" +%s; }
gauge() { site_metric "tlsbox_cert_not_after_timestamp_seconds{name=\"$1\"}"; }
# expiring: the cert.expiring events the receiver got, one "name threshold
# source expired" each, and "days-ok" when days_left is the whole days from
# the check to not_after.  The check runs up to a minute before the event's
# time ("at" is stamped by notify when the event reaches it, on another
# thread): a certificate made in the check's second has 3 whole days left
# then, and 2 at "at" one second later.
expiring() {
    jq -r 'select(.event == "cert.expiring") | .body | fromjson |
        (.data.not_after - (.at | fromdateiso8601)) as $left |
        (.data.days_left >= ($left / 86400 | floor) and
         .data.days_left <= (($left + 60) / 86400 | floor)) as $d |
        .data | "\(.name) \(.threshold) \(.source) \(.expired) \(if $d then "days-ok" else "days-wrong" end)"' "$hooks"
}
days_left() { jq -r 'select(.event == "cert.expiring") | .body | fromjson | .data | select(.name == "'"$1"'") | .days_left' "$hooks" | tail -1; }
last_expiring() { expiring | tail -1; }
changed() { jq -r 'select(.event == "cert.changed") | .body | fromjson | .data.name' "$hooks"; }
wait_for() { tb_wait_says 20 "$1" "${@:2}"; } # wait_for TEXT CMD...: until CMD prints TEXT

# 1. A 90-day certificate with 5 days left: announced under 7 (14,7,3,1).
mkcert soon 85 5
ok $? "a 90-day certificate with 5 days left imported"
is "$(wait_for "soon 7 import false days-ok" expiring)" "soon 7 import false days-ok" \
    "cert.expiring: soon, under the 7-day threshold, imported, with the whole days left to its end"
d=$(days_left soon)
ok $([ "$d" = 4 ] || [ "$d" = 5 ]; echo $?) "that is 4 or 5 (5 days from its making, less the seconds since): $d"
is "$(wait_for "$(end_of soon)" gauge soon)" "$(end_of soon)" \
    "tlsbox_cert_not_after_timestamp_seconds{name=\"soon\"} is its notAfter (as openssl reads it)"
like "$(cat "$TB_TMP/daemon.log")" "certificate soon expires in $d days \(under 7; import\)" \
    "the log warns of it"
internal=$(site_api GET cert | jq -r '.certificates[] | select(.source == "internal") | .name' | head -1)
ok $([ -n "$internal" ] && [ "$(gauge "$internal")" -gt "$(date +%s)" ]; echo $?) \
    "the internal leaf ($internal) has its gauge too"
is "$(expiring | grep -c "^$internal ")" 0 "but it is never announced: the box renews it itself"

# 2. A 120-day one with 20 days left: nothing under 14,7,3,1.  And a 5-day
# one (short-lived: renewed daily, a third of its life): not under 7 either.
mkcert brief 0 5
mkcert later 100 20
is "$(wait_for "$(printf 'soon\nbrief\nlater')" changed | tail -1)" later \
    "brief and later imported (their cert.changed arrived)"
is "$(wait_for "$(end_of later)" gauge later)" "$(end_of later)" "its gauge"
is "$(expiring | wc -l)" 1 "20 days left, or 5 of a 5-day life: not announced"

# 3. A new list applies at once; a threshold already passed is not said again.
tb_ctl set core.cert_warn_days 30,14 >/dev/null
ok $? "core.cert_warn_days = 30,14"
is "$(wait_for "$(printf 'soon 7 import false days-ok\nlater 30 import false days-ok')" expiring)" \
    "$(printf 'soon 7 import false days-ok\nlater 30 import false days-ok')" \
    "later announced under 30; soon not again (it was told of 7 already)"

# 4. Bad lists are refused and change nothing.
for bad in 0 400 "7,x" "3.5"; do
    out=$(tb_ctl set core.cert_warn_days "$bad" 2>&1)
    ok $(($? == 0)) "core.cert_warn_days = '$bad' is refused"
    like "$out" "core.cert_warn_days" "naming the setting"
done
is "$(tb_ctl get core.cert_warn_days)" 30,14 "the stored list stays"

# 5. A restart says nothing new: what was told is remembered in the store.
tb_stop_daemon
site_start
ok $? "tlsboxd restarted"
is "$(wait_for "$(end_of soon)" gauge soon)" "$(end_of soon)" "the gauges are back (the start's check ran)"
sleep 1
is "$(expiring | wc -l)" 2 "and no certificate was announced again"

# 6. A renewal starts over: the same name with a new end.
mkcert soon 10 40
is "$(wait_for "$(end_of soon)" gauge soon)" "$(end_of soon)" "soon renewed: 40 days, its gauge moves"
mkcert soon 87 3
is "$(wait_for "$(end_of soon)" gauge soon)" "$(end_of soon)" "then 3 days again"
is "$(wait_for "soon 14 import false days-ok" last_expiring)" \
    "soon 14 import false days-ok" "announced anew, under 14 (30,14): a new end starts over"

# 7. A certificate no longer active loses its gauge.
sqlite3 "$TB_STATE/tlsbox.db" "UPDATE certificates SET status = 'disabled' WHERE name = 'later'"
tb_ctl set core.cert_warn_days 30,14,7 >/dev/null # any change checks again
has_later() { site_api GET metrics | jq -r '(.metrics // .) | has("tlsbox_cert_not_after_timestamp_seconds{name=\"later\"}")'; }
is "$(wait_for false has_later)" false "later disabled: its series is gone from GET metrics"
is "$(site_api GET metrics | jq -r '(.metrics // .) | has("tlsbox_cert_not_after_timestamp_seconds{name=\"soon\"}")')" \
    true "soon's stays"

kill "$receiver" 2>/dev/null
wait "$receiver" 2>/dev/null
tb_stop_daemon
ok $? "tlsboxd stops cleanly"
done_testing
