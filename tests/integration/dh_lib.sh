# Helpers shared by the 6x_dh_* tests (sourced after lib.sh): an RSA
# certificate made here and imported, a TLS policy that allows DHE, and
# what real clients see of the DH parameters.
#
#   dh_start                 daemon on free ports ($DH_PORT), RSA cert, DHE policy
#   dh_groups LIST           set the policy's groups (e.g. X25519,FFDHE3072)
#   dh_wait_bundle_after G   wait until a bundle newer than generation G is served
#   dh_tls12_bits            N of "Server Temp Key: DH, N bits" (TLS 1.2 DHE-RSA)
#   dh_tls13_bits GROUPS     the same with TLS 1.3 and a client offering only GROUPS
#   dh_status FIELD          a field of tlsboxctl --json dh status (python path)
#   dh_wait_status P V [S]   wait (max S s, default 30) until dh_status P prints V
#   dh_wait_served F V [S]   the same for served.F
#   dh_rows                  the DH rows of the store, for before/after comparisons

dh_start() {
    DH_PORT=$(tb_free_port)
    DH_HTTP=$(tb_free_port)
    tb_start_daemon --set site.https_port="$DH_PORT" --set site.http_port="$DH_HTTP" "$@" ||
        return 1
    tb_wait_port "$DH_PORT" || return 1
    [ -f "$TB_TMP/rsa.pem" ] || openssl req -x509 -newkey rsa:2048 -nodes -days 30 \
        -subj /CN=localhost -addext subjectAltName=DNS:localhost \
        -keyout "$TB_TMP/rsa.key" -out "$TB_TMP/rsa.pem" 2>/dev/null || return 1
    tb_ctl cert list | grep -q 'localhost-rsa' ||
        tb_ctl cert import --cert "$TB_TMP/rsa.pem" --key "$TB_TMP/rsa.key" \
            --name localhost-rsa >/dev/null || return 1
    tb_ctl policy set kx ECDHE-ECDSA,ECDHE-RSA,DHE-RSA >/dev/null &&
        tb_ctl policy set key_types ecdsa,rsa >/dev/null &&
        dh_groups X25519,SECP256R1,FFDHE2048,FFDHE3072
}

# Apply a groups list and wait for the bundle built from it.
dh_groups() {
    local before
    before=$(dh_status '["served"]["bundle"]')
    tb_ctl policy set groups "$1" >/dev/null || return 1
    dh_wait_bundle_after "$before"
}

# Wait (max 5 s) until a bundle newer than generation $1 is served.
dh_wait_bundle_after() {
    local i
    for i in $(seq 1 50); do
        [ "$(dh_status '["served"]["bundle"]')" -gt "$1" ] && return 0
        sleep 0.1
    done
    return 1
}

dh_sclient() {
    timeout 20 openssl s_client -connect "127.0.0.1:$DH_PORT" -servername localhost "$@" \
        </dev/null 2>&1
}

_dh_bits() {
    sed -n 's/^Server Temp Key: DH, \([0-9]*\) bits$/\1/p' | head -1
}

dh_tls12_bits() {
    dh_sclient -tls1_2 -cipher DHE-RSA-AES256-GCM-SHA384 | _dh_bits
}

dh_tls13_bits() {
    dh_sclient -tls1_3 -groups "$1" | _dh_bits
}

dh_status() {
    tb_ctl --json dh status | python3 -c "import json,sys; v=json.load(sys.stdin)$1; print('' if v is None else v)"
}

dh_wait_status() {
    local i
    for i in $(seq 1 $((${3:-30} * 10))); do
        [ "$(dh_status "$1")" = "$2" ] && return 0
        sleep 0.1
    done
    return 1
}

dh_wait_served() {
    dh_wait_status "[\"served\"][\"$1\"]" "$2" "${3:-30}"
}

dh_rows() {
    sqlite3 "file:$TB_STATE/tlsbox.db?mode=ro" \
        "SELECT * FROM tls_dh; SELECT id, bits, source, created_at, length(pem) FROM dhparam_params;
         SELECT key, value FROM settings WHERE key LIKE 'dhparam.%';"
}
