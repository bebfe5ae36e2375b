# Helpers to run Debian's pebble + pebble-challtestsrv for ACME tests (bash).
# Source after lib.sh and tb_setup.  Everything lives in $TB_TMP/pebble and
# listens on free loopback ports; pebble resolves every name through
# challtestsrv to 127.0.0.1 (never the system resolver).
#
#   PB_HTTP_PORT=<site http port> [PB_TLS_PORT=<port tls-alpn-01 is checked on>]
#   [PB_VALIDITY=secs] [PB_ENV="VAR=x ..."] [PB_DNS_SERVER=host:port pebble asks
#   instead of challtestsrv (a real DNS server for dns-01: bind_lib.sh)]
#   [PB_OCSP_URL=<AIA OCSP URL pebble writes into its certificates>] pb_start
#     -> PB_DIRECTORY (ACME directory URL), PB_CA (trust anchor for pebble's
#        own HTTPS: acme.ca_file), PB_ROOT (pebble's issuing root, PEM),
#        PB_MGMT (management base URL)
#   pb_stop                       stop pebble (challtestsrv keeps running)
#   pb_restart                    start pebble again, config rewritten from
#       PB_HTTP_PORT/PB_VALIDITY (NB: pebble keeps no state: a restart makes a
#       new root and forgets accounts and orders)
#   pb_start_tlsbox [ARGS]        tb_start_daemon on free site ports ($SITE_HTTP,
#       $SITE_HTTPS, SITE_HTTP must equal PB_HTTP_PORT) with acme.* pointing at pebble
#   pb_start_forward              acme_forward.py in front of pebble (a CA that
#       rate-limits or breaks its orders on request: see that file) -> FW (its
#       folder: requests.log, injection files), FW_DIRECTORY (the ACME directory
#       through it; trusted with the same $PB_CA).  Then
#       PB_DIRECTORY=$FW_DIRECTORY pb_start_tlsbox
#   pb_wait_served NAME [SECS]    wait until https://NAME verifies against $PB_ROOT
#   pb_served_serial NAME         serial of the certificate served for NAME
#   pb_wait_new_serial NAME OLD [SECS]  wait until NAME is served with a serial
#       other than OLD; prints the serial served last
#   pb_wait_failure [SECS]        wait until `acme status` counts a failure;
#       prints its JSON (the last one read when none came)
#   pb_st_get EXPR                a python expression over the `acme status`
#       JSON: s (all of it), c (its first certificate), e (its newest event)
#   pb_st_wait EXPR [SECS]        wait until pb_st_get EXPR prints True
#   pb_st_until EXPR SECS         the same, bounded by wall time (each status
#       read takes a while on a loaded machine: pb_st_wait's SECS count polls)
#   pb_orders_placed              orders pebble took (201) through the front:
#       not its badNonce answers (400, retried at once), which place nothing

if ! type tb_free_port >/dev/null 2>&1; then
    tb_free_port() {
        python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
    }
fi
if ! type tb_bg >/dev/null 2>&1; then
    _pb_pids=""
    tb_bg() {
        "$@" &
        TB_BG_PID=$!
        _pb_pids="$_pb_pids $TB_BG_PID"
    }
fi

_pb_wait_port() {
    local port=$1 i
    for i in $(seq 1 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
        sleep 0.05
    done
    return 1
}

# A throwaway CA and a localhost certificate for pebble's own HTTPS listener.
pb_make_certs() {
    local d=$1
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
        -keyout "$d/ca.key" -out "$d/ca.pem" -days 3 -subj "/CN=tlsbox test pebble HTTPS CA" \
        -addext "basicConstraints=critical,CA:TRUE" \
        -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null || return 1
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
        -keyout "$d/key.pem" -out "$d/csr.pem" -subj "/CN=localhost" 2>/dev/null || return 1
    printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n' \
        >"$d/ext.cnf"
    openssl x509 -req -in "$d/csr.pem" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial \
        -days 3 -extfile "$d/ext.cnf" -out "$d/cert.pem" 2>/dev/null || return 1
}

pb_start() {
    PB_DIR="$TB_TMP/pebble"
    mkdir -p "$PB_DIR"
    [ -f "$PB_DIR/cert.pem" ] || pb_make_certs "$PB_DIR" || { echo "# pebble: certificate setup failed"; return 1; }
    PB_DNS_PORT=$(tb_free_port)
    PB_CTS_PORT=$(tb_free_port)
    PB_PORT=$(tb_free_port)
    PB_MGMT_PORT=$(tb_free_port)
    PB_TLS_PORT=${PB_TLS_PORT:-$(tb_free_port)}
    tb_bg pebble-challtestsrv -management "127.0.0.1:$PB_CTS_PORT" -dns01 "127.0.0.1:$PB_DNS_PORT" \
        -defaultIPv4 127.0.0.1 -defaultIPv6 "" -http01 "" -https01 "" -tlsalpn01 "" \
        >>"$PB_DIR/challtestsrv.log" 2>&1
    PB_CTS_PID=$TB_BG_PID
    _pb_wait_port "$PB_CTS_PORT" || { echo "# pebble-challtestsrv did not start"; return 1; }
    pb_restart
}

_pb_write_config() {
    local validity=""
    [ -n "${PB_VALIDITY:-}" ] && validity=", \"certificateValidityPeriod\": $PB_VALIDITY"
    cat >"$PB_DIR/config.json" <<JSON
{"pebble": {
  "listenAddress": "127.0.0.1:$PB_PORT",
  "managementListenAddress": "127.0.0.1:$PB_MGMT_PORT",
  "certificate": "$PB_DIR/cert.pem",
  "privateKey": "$PB_DIR/key.pem",
  "httpPort": ${PB_HTTP_PORT:?PB_HTTP_PORT must be the site HTTP port},
  "tlsPort": $PB_TLS_PORT,
  "ocspResponderURL": "${PB_OCSP_URL:-}",
  "externalAccountBindingRequired": false$validity
}}
JSON
}

pb_restart() {
    _pb_write_config
    # shellcheck disable=SC2086
    tb_bg env PEBBLE_VA_NOSLEEP=1 ${PB_ENV:-} pebble -config "$PB_DIR/config.json" \
        -dnsserver "${PB_DNS_SERVER:-127.0.0.1:$PB_DNS_PORT}" >>"$PB_DIR/pebble.log" 2>&1
    PB_PID=$TB_BG_PID
    _pb_wait_port "$PB_PORT" && _pb_wait_port "$PB_MGMT_PORT" ||
        { echo "# pebble did not start:"; sed 's/^/#   /' "$PB_DIR/pebble.log" | tail -5; return 1; }
    PB_CA="$PB_DIR/ca.pem"
    PB_DIRECTORY="https://127.0.0.1:$PB_PORT/dir"
    PB_MGMT="https://127.0.0.1:$PB_MGMT_PORT"
    PB_ROOT="$PB_DIR/root.pem"
    curl -sf --cacert "$PB_CA" "$PB_MGMT/roots/0" >"$PB_ROOT" || { echo "# pebble: no /roots/0"; return 1; }
    export PB_CA PB_DIRECTORY PB_MGMT PB_ROOT
}

pb_stop() {
    [ -n "${PB_PID:-}" ] || return 0
    kill -TERM "$PB_PID" 2>/dev/null
    wait "$PB_PID" 2>/dev/null
    PB_PID=""
}

pb_start_tlsbox() {
    tb_start_daemon --set "site.http_port=$SITE_HTTP" --set "site.https_port=$SITE_HTTPS" \
        --set "acme.directory=$PB_DIRECTORY" --set "acme.ca_file=$PB_CA" \
        --set acme.agree_tos=true --set acme.email=admin@example.org "$@"
}

pb_start_forward() {
    FW=$TB_TMP/forward
    mkdir -p "$FW"
    : >>"$FW/requests.log"
    local port
    port=$(tb_free_port)
    # Its HTTPS certificate is pebble's own: one acme.ca_file for both.
    tb_bg /usr/bin/python3 "$(dirname "${BASH_SOURCE[0]}")/acme_forward.py" "$port" "$PB_PORT" \
        "$PB_DIR/cert.pem" "$PB_DIR/key.pem" "$PB_CA" "$FW" >>"$FW/forward.log" 2>&1
    _pb_wait_port "$port" || { echo "# acme_forward.py did not start"; return 1; }
    FW_DIRECTORY="https://127.0.0.1:$port/dir"
}

# pb_setup_forward: the site's ports (SITE_HTTP, SITE_HTTPS), pebble answering
# http-01 on SITE_HTTP, and acme_forward.py in front of it (FW, FW_DIRECTORY);
# bails when one does not start.  Then pb_start_tlsbox with
# PB_DIRECTORY=$FW_DIRECTORY.
pb_setup_forward() {
    SITE_HTTP=$(tb_free_port)
    SITE_HTTPS=$(tb_free_port)
    PB_HTTP_PORT=$SITE_HTTP pb_start || bail "pebble did not start"
    pb_start_forward || bail "acme_forward.py did not start"
}

pb_orders_placed() { grep -c ' newOrder .* 201$' "$FW/requests.log"; }

pb_wait_served() {
    local name=$1 secs=${2:-30} i
    for i in $(seq 1 $((secs * 20))); do
        # Any HTTP answer will do: curl fails only when the TLS part does not verify.
        curl -s -o /dev/null --max-time 2 --resolve "$name:$SITE_HTTPS:127.0.0.1" \
            --cacert "$PB_ROOT" "https://$name:$SITE_HTTPS/" 2>/dev/null && return 0
        sleep 0.05
    done
    return 1
}

pb_served_serial() {
    openssl s_client -connect "127.0.0.1:$SITE_HTTPS" -servername "$1" </dev/null 2>/dev/null |
        openssl x509 -noout -serial 2>/dev/null | sed 's/^serial=//'
}

pb_wait_new_serial() {
    local name=$1 old=$2 secs=${3:-30} i s=""
    for i in $(seq 1 $((secs * 10))); do
        s=$(pb_served_serial "$name")
        [ -n "$s" ] && [ "$s" != "$old" ] && break
        sleep 0.1
    done
    echo "$s"
    [ -n "$s" ] && [ "$s" != "$old" ]
}

pb_wait_failure() {
    local secs=${1:-10} json="" i
    for i in $(seq 1 $((secs * 10))); do
        json=$(tb_ctl --json acme status)
        printf '%s' "$json" | grep -Eq '"failures": ?[1-9]' && break
        sleep 0.1
    done
    printf '%s\n' "$json"
}

pb_st_get() {
    tb_ctl --json acme status | python3 -c '
import json,sys
s=json.load(sys.stdin)
c=(s.get("certificates") or [{}])[0]
e=(s.get("events") or [{}])[0]
print(eval(sys.argv[1]))' "$1" 2>/dev/null
}

pb_st_wait() {
    local i
    for i in $(seq 1 $((${2:-20} * 10))); do
        [ "$(pb_st_get "$1")" = True ] && return 0
        sleep 0.1
    done
    return 1
}

pb_st_until() {
    local end=$((SECONDS + $2))
    while [ $SECONDS -lt $end ]; do
        [ "$(pb_st_get "$1")" = True ] && return 0
        sleep 0.2
    done
    return 1
}
