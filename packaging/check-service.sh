# shellcheck shell=bash
# The installed service's plugins at work under the hardened unit (sourced by
# check-install.sh once the container runs; bash).  Each part asserts what a
# user would see, with bounded waits on conditions:
#   svc_staple   the internal CA's leaf stapled (ocsp plugin): openssl
#                s_client -status and gnutls-cli --ocsp from this side
#   svc_renew    a certificate issued, then renewed, by the acme plugin against
#                Debian's pebble + pebble-challtestsrv on this side's loopback
#                (the container shares this network namespace)
#   svc_bench    a bounded bench run and the crypto ceiling, client pinned
#   svc_probe_unit  the unit lets a process go SCHED_IDLE, nice 19 and pin
#                itself (a probe unit with tlsbox.service's sandbox)
#   svc_dhparam  a 2048-bit generation at idle priority (a child process),
#                served to TLS 1.2 DHE
#   svc_cleanup  stops pebble (from check-install.sh's cleanup)
# Needs from check-install.sh: in_ct, $root, $work, $P (HTTPS), $PH (the
# site's HTTP port, pebble's HTTP-01 port), $ca (the box's CA).

. "$top/tests/integration/pebble.sh"

# One field of a tlsboxctl --json answer (a jq path), from inside.
svc_json() { # $1: jq path, then the tlsboxctl arguments
    local path=$1
    shift
    in_ct tlsboxctl --json "$@" 2>/dev/null | jq -r "$path" 2>/dev/null
}

# Wait (<= $1 s) until the command after it succeeds.
svc_wait() {
    local secs=$1 i
    shift
    for i in $(seq 1 $((secs * 5))); do
        "$@" && return 0
        sleep 0.2
    done
    return 1
}

svc_sclient() { # $1: server name, then more s_client options
    local name=$1
    shift
    echo | timeout 20 openssl s_client -connect "127.0.0.1:$P" -servername "$name" "$@" 2>&1
}

svc_staple() {
    local out
    _stapled() { [ "$(svc_json .stapled ocsp status internal)" = true ]; }
    svc_wait 60 _stapled
    ok $? "staple: the internal certificate is stapled (tlsboxctl ocsp status internal)"
    is "$(svc_json '"\(.status) \(.responder) \(.failures)"' ocsp status internal)" "good internal 0" \
        "staple: status good, answered by the internal CA, no failure"
    out=$(svc_sclient localhost -CAfile "$ca" -status)
    like "$out" "OCSP Response Status: successful" "staple: openssl s_client -status gets a successful response"
    like "$out" "Cert Status: good" "staple: cert status good"
    like "$out" "Verify return code: 0 \(ok\)" "staple: and the leaf verifies against the box's CA"
    out=$(timeout 20 gnutls-cli --ocsp --x509cafile "$ca" --port "$P" --sni-hostname localhost \
        --verify-hostname localhost 127.0.0.1 </dev/null 2>&1)
    like "$out" "Options: OCSP status request" "staple: gnutls-cli --ocsp checked the staple's signature"
    like "$out" "Status: The certificate is trusted" "staple: gnutls-cli: trusted"
}

SVC_NAME=renew.check.example
_svc_verifies() {
    curl -s -o /dev/null --max-time 5 --resolve "$SVC_NAME:$P:127.0.0.1" --cacert "$PB_ROOT" \
        "https://$SVC_NAME:$P/"
}
_svc_serial() {
    svc_sclient "$SVC_NAME" | openssl x509 -noout -serial 2>/dev/null | sed 's/^serial=//'
}

svc_renew() {
    local s1 s2 out chain
    # pebble issues 30 s certificates: the one-third-left rule renews at ~20 s.
    TB_TMP="$work" SITE_HTTPS=$P PB_VALIDITY=30 PB_HTTP_PORT=$PH pb_start ||
        { ok 1 "renew: pebble started on the loopback"; return; }
    ok 0 "renew: pebble and pebble-challtestsrv on 127.0.0.1 (directory $PB_DIRECTORY)"
    # pebble's HTTPS trusted the way a public CA's is: through the system's
    # trust store (ca-certificates), with no acme.ca_file, as a user of Let's
    # Encrypt has it.  A system without ca-certificates has no store at all.
    in_ct sh -c 'command -v update-ca-certificates' >/dev/null &&
        install -m 0644 "$PB_CA" "$root/usr/local/share/ca-certificates/tlsbox-check-pebble.crt" &&
        in_ct update-ca-certificates >/dev/null 2>&1 &&
        grep -qF "$(sed -n 2p "$PB_CA")" "$root/etc/ssl/certs/ca-certificates.crt"
    ok $? "renew: pebble's CA added to the system trust store (update-ca-certificates from ca-certificates)"
    in_ct tlsboxctl set acme.directory "$PB_DIRECTORY" >/dev/null &&
        in_ct tlsboxctl set acme.agree_tos true >/dev/null &&
        in_ct tlsboxctl set acme.email admin@example.org >/dev/null &&
        in_ct tlsboxctl set acme.domains "$SVC_NAME" >/dev/null
    ok $? "renew: acme set up with tlsboxctl set (pebble's directory, $SVC_NAME, no acme.ca_file)"
    svc_wait 60 _svc_verifies
    ok $? "renew: $SVC_NAME served, verifying against pebble's root"
    chain=$(svc_sclient "$SVC_NAME" -showcerts | sed -n '/BEGIN CERT/,/END CERT/p')
    printf '%s\n' "$chain" >"$work/acme-chain.pem"
    openssl verify -CAfile "$PB_ROOT" -untrusted "$work/acme-chain.pem" "$work/acme-chain.pem" >/dev/null 2>&1
    ok $? "renew: the served chain (leaf + pebble intermediate) verifies with openssl"
    like "$(openssl x509 -noout -issuer -in "$work/acme-chain.pem")" "issuer=CN ?= ?Pebble Intermediate CA" \
        "renew: issued by pebble's intermediate"
    s1=$(_svc_serial)
    like "$s1" "^[0-9A-F]+$" "renew: first serial $s1"
    s2=$s1
    _renewed() { s2=$(_svc_serial); [ -n "$s2" ] && [ "$s2" != "$s1" ]; }
    svc_wait 90 _renewed
    ok $? "renew: renewed without being asked: served serial $s1 -> $s2"
    _svc_verifies
    ok $? "renew: the renewed certificate verifies against pebble's root"
    out=$(in_ct tlsboxctl acme status 2>&1)
    like "$out" "certificate $SVC_NAME \(ecdsa-p256\)" "renew: tlsboxctl acme status shows the certificate"
    like "$out" "$SVC_NAME +done +ok" "renew: and a successful attempt"
    like "$(in_ct tlsboxctl --json acme status 2>/dev/null)" "one third of the lifetime left" \
        "renew: the attempt records why it renewed"
    is "$(svc_json '[.. | .failures? // empty] | add' acme status)" 0 "renew: no failure"
    out=$(in_ct tlsboxctl cert list 2>&1)
    like "$(grep -w "$SVC_NAME" <<<"$out")" "acme" "renew: tlsboxctl cert list shows it, from acme"
    # Stop renewing before pebble goes: the rest must not log failures.
    in_ct tlsboxctl set acme.domains "" >/dev/null
    pb_stop
    rm -f "$root/usr/local/share/ca-certificates/tlsbox-check-pebble.crt"
    in_ct update-ca-certificates --fresh >/dev/null 2>&1
}

# A copy of the installed unit's sandbox running a probe that needs what the
# daemon's plugins need: SCHED_IDLE and nice 19 (dhparam's generator) and
# CPU affinity (bench).  Deterministic, where watching the generator's own
# short-lived child would race it.
svc_probe_unit() {
    local u="$root/etc/systemd/system/tlsbox-probe.service" want
    cat >"$root/usr/local/sbin/tlsbox-probe" <<'SH'
#!/bin/sh
r() { "$@" >/dev/null 2>&1 && echo ok || echo refused; }
echo "probe: sched_idle=$(r chrt --idle 0 true) nice19=$(r nice -n 19 true) affinity=$(r taskset -c 0 true)"
SH
    chmod 0755 "$root/usr/local/sbin/tlsbox-probe"
    # Only the start line, the type and the runtime directory (shared with
    # tlsbox.service: the probe's stop would remove it) differ.
    sed -e 's/^Type=.*/Type=oneshot/' -e 's|^ExecStart=.*|ExecStart=/usr/local/sbin/tlsbox-probe|' \
        -e '/^RuntimeDirectory/d' -e '/^Restart/d' -e '/^\[Install\]/,$d' \
        "$root/lib/systemd/system/tlsbox.service" >"$u"
    in_ct systemctl daemon-reload
    is "$(in_ct systemctl show -P SystemCallFilter tlsbox-probe)" \
        "$(in_ct systemctl show -P SystemCallFilter tlsbox)" "probe: a unit with tlsbox.service's system call filter"
    in_ct systemctl start tlsbox-probe
    ok $? "probe: it ran"
    want="probe: sched_idle=ok nice19=ok affinity=ok"
    _probed() { in_ct journalctl -u tlsbox-probe -o cat --no-pager 2>/dev/null | grep -qx "$want"; }
    svc_wait 30 _probed
    is "$(in_ct journalctl -u tlsbox-probe -o cat --no-pager 2>/dev/null | grep '^probe:' | tail -1)" "$want" \
        "probe: under it a process may go SCHED_IDLE (dhparam), nice 19 (dhparam), pin itself (bench)"
    rm -f "$u" "$root/usr/local/sbin/tlsbox-probe"
    in_ct systemctl daemon-reload
}

svc_bench() {
    local run r ncpu
    run=$(in_ct timeout 300 tlsboxctl --json bench run -s h2 -n 2000 -c 4 -m 8 --path /index.html 2>/dev/null)
    is "$(jq -r .state <<<"$run")" done "bench: a bounded h2 run (2000 requests) finished"
    r=$(jq -c '.results[0].result' <<<"$run")
    is "$(jq -r '[.complete, .failed, .status."2xx"] | @tsv' <<<"$r")" "2000	0	2000" \
        "bench: 2000 complete, 0 failed, all 200"
    ok "$(jq -r '.rps > 0' <<<"$r" | grep -qx true; echo $?)" "bench: $(jq -r '.rps | floor' <<<"$r") req/s"
    ncpu=$(in_ct nproc)
    if [ "$ncpu" -ge 2 ]; then
        like "$(jq -r .pinning.client_cpu <<<"$r")" "^[0-9]+$" \
            "bench: the client was pinned to a core (affinity allowed by the unit): $(jq -r .pinning.note <<<"$r")"
    fi
    run=$(in_ct timeout 300 tlsboxctl --json bench ceiling 2>/dev/null)
    is "$(jq -r .state <<<"$run")" done "bench: the crypto ceiling finished"
    is "$(jq -r '.results[0].result | [.signatures_per_s[], .key_exchanges_per_s[], .aead_mb_per_s[]] | map(select(type == "number" and . > 0)) | length' <<<"$run")" 8 \
        "bench: its 8 measurements are all > 0"
}

_svc_dh_status() { svc_json "$1" dh status; }

svc_dhparam() {
    local out
    is "$(in_ct tlsboxctl get dhparam.priority 2>&1)" idle "dhparam: generation at idle priority (the default)"
    # A DHE policy with an RSA certificate (imported; its key removed at once).
    openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj /CN=localhost \
        -addext subjectAltName=DNS:localhost -keyout "$root/root/rsa.key" -out "$root/root/rsa.pem" 2>/dev/null
    in_ct tlsboxctl cert import --cert /root/rsa.pem --key /root/rsa.key --name localhost-rsa >/dev/null
    ok $? "dhparam: an RSA certificate imported"
    rm -f "$root/root/rsa.key"
    in_ct tlsboxctl policy set kx ECDHE-ECDSA,ECDHE-RSA,DHE-RSA >/dev/null &&
        in_ct tlsboxctl policy set key_types ecdsa,rsa >/dev/null &&
        in_ct tlsboxctl policy set groups X25519,SECP256R1 >/dev/null
    ok $? "dhparam: a policy with DHE-RSA and no FFDHE group (generated parameters are used)"
    in_ct tlsboxctl set dhparam.bits 2048 >/dev/null
    is "$(in_ct tlsboxctl dh mode generated 2>&1)" "mode: generated" "dhparam: tlsboxctl dh mode generated"
    _dh_done() { [ "$(_svc_dh_status .last_run.state)" = done ]; }
    svc_wait 300 _dh_done
    ok $? "dhparam: the generator process ran to the end under the unit (last run: done)"
    _dh_served() { [ "$(_svc_dh_status .served.source)" = generated ]; }
    svc_wait 30 _dh_served
    ok $? "dhparam: the generated parameters are served"
    is "$(_svc_dh_status .served.bits)" 2048 "dhparam: 2048 bits"
    out=$(svc_sclient localhost -tls1_2 -cipher DHE-RSA-AES256-GCM-SHA384)
    is "$(sed -n 's/^Server Temp Key: DH, \([0-9]*\) bits$/\1/p' <<<"$out" | head -1)" 2048 \
        "dhparam: a TLS 1.2 DHE-RSA client gets the 2048-bit parameters"
}

# All of it on every architecture but the probe unit: under qemu-user the
# system call filter is not installed (qemu-aarch64 answers PR_SET_SECCOMP
# with EINVAL and seccomp() with ENOSYS: checked), so the
# probe would pass there whatever the unit says.  Under qemu bench and the
# generation add ~15 s to the arm64 check.
service_checks() {
    local since warn
    since=$(in_ct date +%s)
    svc_staple
    svc_renew
    if [ "$arch" = "$(dpkg --print-architecture)" ]; then
        svc_probe_unit
    else
        diag "$arch under qemu: the probe unit runs on the native architecture only"
    fi
    svc_bench
    svc_dhparam
    warn=$(in_ct journalctl -u tlsbox -p warning --since "@$since" --no-pager -q 2>&1)
    unlike "$warn" "[Pp]ermission denied|not permitted|[Ss]eccomp|SIGSYS|core-dump|fail" \
        "no denial nor failure in tlsbox's journal during these checks"
    [ -n "$warn" ] && diag "tlsbox warnings: $warn"
}

svc_cleanup() {
    pb_stop 2>/dev/null
    if [ -n "${PB_CTS_PID:-}" ]; then
        kill -TERM "$PB_CTS_PID" 2>/dev/null
        wait "$PB_CTS_PID" 2>/dev/null
    fi
    return 0
}
