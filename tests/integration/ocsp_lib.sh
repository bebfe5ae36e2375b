# Helpers for the OCSP tests (bash).  Source after lib.sh and tb_setup.
# A test CA made here (root -> intermediate -> leaves whose AIA names the
# responder on a loopback port), and the real `openssl ocsp -port` as the
# responder.  Debian's openssl ocsp binds every interface, so it runs in a
# network namespace this test creates (only lo inside), and
# ocsp_forward.py fronts it on 127.0.0.1:$OC_PORT.
#
#   oc_make_ca                     $OC/{root,inter}.{pem,key}, empty index
#   oc_make_leaf NAME DAYS [EXT]   $OC/NAME.{pem,key,chain}; extra x509v3 line EXT;
#                                  the leaf is listed good in the index; OC_AIA=0:
#                                  no OCSP URL in the leaf (a CRL-only CA)
#   oc_revoke NAME [ARGS]          mark NAME revoked in the index and restart the responder
#                                  (Debian's openssl ocsp does not reliably reread it)
#   oc_start_responder [ARGS]      openssl ocsp in the namespace (ARGS e.g. -nmin 1;
#                                  default -ndays 1), front on $OC_PORT
#   oc_stop_responder              stop openssl ocsp (the front stays: connections drop)
#   oc_start_front PORT DIR        one more front of the same responder on PORT, with its
#                                  own DIR/requests.log and DIR/hang (a second responder URL)
#   oc_requests                    requests the front has seen
#   oc_staple SNI                  openssl s_client -status against $SITE_HTTPS
#   oc_crl_ca URL                  $OC/crl.cnf: `openssl ca -gencrl` by the intermediate
#                                  (7 days; -crlexts plain, idp: an Issuing Distribution
#                                  Point naming URL, shard: naming another), empty database
#   oc_status NAME FIELD           one field of tlsboxctl --json ocsp status NAME
#   oc_wait_status NAME FIELD VALUE [SECS]   poll until it has that value
#   oc_next_update_gauge NAME      tlsbox_ocsp_next_update_timestamp_seconds of NAME

OC="$TB_TMP/ocsp"
OC_NS="tbocsp$$"
OC_INNER=8888
OC_PORT=$(tb_free_port)
mkdir -p "$OC"
: >"$OC/index.txt"
: >"$OC/requests.log"

ip netns add "$OC_NS" || bail "cannot create network namespace $OC_NS (root needed)"
ip netns exec "$OC_NS" ip link set lo up

_oc_cleanup() {
    oc_stop_responder
    [ -n "${OC_FWD_PID:-}" ] && kill "$OC_FWD_PID" 2>/dev/null
    local p
    for p in ${OC_MORE_PIDS:-}; do kill "$p" 2>/dev/null; done
    ip netns del "$OC_NS" 2>/dev/null
    return 0
}
trap '_oc_rc=$?; _oc_cleanup; (exit $_oc_rc); _tb_cleanup' EXIT

oc_make_ca() {
    (
        cd "$OC" || exit 1
        set -e
        for k in root inter; do
            openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out $k.key
        done
        openssl req -x509 -new -key root.key -subj "/CN=tlsbox OCSP test root" -days 30 \
            -out root.pem -addext basicConstraints=critical,CA:TRUE \
            -addext keyUsage=critical,keyCertSign,cRLSign
        printf 'basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n' >ca.ext
        openssl req -new -key inter.key -subj "/CN=tlsbox OCSP test intermediate" |
            openssl x509 -req -CA root.pem -CAkey root.key -CAcreateserial -days 30 \
                -extfile ca.ext -out inter.pem
    ) >>"$OC/setup.log" 2>&1
}

oc_make_leaf() {
    local name=$1 days=$2 extra=${3:-}
    (
        cd "$OC" || exit 1
        set -e
        openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$name.key"
        {
            [ "${OC_AIA:-1}" = 0 ] || echo "authorityInfoAccess=OCSP;URI:http://127.0.0.1:$OC_PORT/"
            echo "subjectAltName=DNS:$name"
            echo "basicConstraints=CA:FALSE"
            echo "extendedKeyUsage=serverAuth"
            [ -n "$extra" ] && echo "$extra"
        } >"$name.ext"
        openssl req -new -key "$name.key" -subj "/CN=$name" |
            openssl x509 -req -CA inter.pem -CAkey inter.key -CAcreateserial -days "$days" \
                -extfile "$name.ext" -out "$name.pem"
        cat "$name.pem" inter.pem >"$name.chain"
        local exp serial
        exp=$(date -u -d "$(openssl x509 -in "$name.pem" -noout -enddate | cut -d= -f2)" +%y%m%d%H%M%SZ)
        serial=$(openssl x509 -in "$name.pem" -noout -serial | cut -d= -f2)
        printf 'V\t%s\t\t%s\tunknown\t/CN=%s\n' "$exp" "$serial" "$name" >>index.txt
    ) >>"$OC/setup.log" 2>&1
}

oc_revoke() {
    local name=$1 serial
    shift
    serial=$(openssl x509 -in "$OC/$name.pem" -noout -serial | cut -d= -f2)
    # R, expiry, revocation time, serial.
    sed -i "s/^V\t\([0-9Z]*\)\t\t$serial\t/R\t\1\t$(date -u +%y%m%d%H%M%SZ),keyCompromise\t$serial\t/" \
        "$OC/index.txt"
    oc_stop_responder
    oc_start_responder "$@"
}

oc_start_responder() {
    local args=("$@")
    [ ${#args[@]} -eq 0 ] && args=(-ndays 1)
    : >>"$OC/responder.log"
    ip netns exec "$OC_NS" openssl ocsp -port "$OC_INNER" -index "$OC/index.txt" \
        -CA "$OC/inter.pem" -rsigner "$OC/inter.pem" -rkey "$OC/inter.key" "${args[@]}" \
        -ignore_err >>"$OC/responder.log" 2>&1 &
    OC_RESP_PID=$!
    if [ -z "${OC_FWD_PID:-}" ]; then
        /usr/bin/python3 "$(dirname "${BASH_SOURCE[0]}")/ocsp_forward.py" "$OC_PORT" "$OC_NS" \
            "$OC_INNER" "$OC" >>"$OC/forward.log" 2>&1 &
        OC_FWD_PID=$!
    fi
    # No probe connection: openssl ocsp serves one connection at a time and
    # an empty one can hold it up.  Both say when they listen.
    local i
    for i in $(seq 1 50); do
        [ "$(grep -c 'waiting for OCSP client' "$OC/responder.log")" -gt "${OC_STARTS:-0}" ] &&
            grep -q listening "$OC/forward.log" && { OC_STARTS=$((${OC_STARTS:-0} + 1)); return 0; }
        sleep 0.1
    done
    diag "openssl ocsp did not start:"
    sed 's/^/#   /' "$OC/responder.log" | tail -5
    return 1
}

oc_start_front() {
    local port=$1 dir=$2 i
    mkdir -p "$dir"
    : >"$dir/requests.log"
    : >>"$dir/forward.log"
    /usr/bin/python3 "$(dirname "${BASH_SOURCE[0]}")/ocsp_forward.py" "$port" "$OC_NS" \
        "$OC_INNER" "$dir" >>"$dir/forward.log" 2>&1 &
    OC_MORE_PIDS="${OC_MORE_PIDS:-} $!"
    for i in $(seq 1 50); do
        grep -q listening "$dir/forward.log" && return 0
        sleep 0.1
    done
    return 1
}

oc_stop_responder() {
    [ -n "${OC_RESP_PID:-}" ] || return 0
    kill "$OC_RESP_PID" 2>/dev/null
    wait "$OC_RESP_PID" 2>/dev/null
    OC_RESP_PID=""
}

oc_requests() {
    wc -l <"$OC/requests.log" | tr -d ' '
}

oc_staple() {
    timeout 10 openssl s_client -connect "127.0.0.1:$SITE_HTTPS" -servername "$1" -status \
        </dev/null 2>&1
}

oc_crl_ca() {
    cat >"$OC/crl.cnf" <<EOF
[ca]
default_ca = d
[d]
database = $OC/crl.idx
crlnumber = $OC/crlnum
default_md = sha256
default_crl_days = 7
[plain]
authorityKeyIdentifier = keyid:always
[idp]
issuingDistributionPoint = critical, @idp_this
[idp_this]
fullname = URI:$1
[shard]
issuingDistributionPoint = critical, @idp_other
[idp_other]
fullname = URI:${1%/*}/other.crl
EOF
    : >"$OC/crl.idx"
    echo "unique_subject = no" >"$OC/crl.idx.attr"
    echo 01 >"$OC/crlnum"
}

oc_next_update_gauge() {
    tb_ctl metrics | awk -v k="tlsbox_ocsp_next_update_timestamp_seconds{cert=\"$1\"}" '$1 == k {print $2}'
}

oc_status() {
    tb_ctl --json ocsp status "$1" | /usr/bin/python3 -c '
import json, sys
v = json.load(sys.stdin).get(sys.argv[1])
print("null" if v is None else str(v).lower() if isinstance(v, bool) else v)' "$2"
}

oc_wait_status() {
    local name=$1 field=$2 want=$3 secs=${4:-20} i
    for i in $(seq 1 $((secs * 5))); do
        [ "$(oc_status "$name" "$field" 2>/dev/null)" = "$want" ] && return 0
        sleep 0.2
    done
    return 1
}

# Start tlsboxd on free site ports with the ocsp plugin's test settings.
oc_start_tlsbox() {
    tb_start_daemon --set "site.https_port=$SITE_HTTPS" --set "site.http_port=$SITE_HTTP" \
        --set ocsp.timeout_seconds=3 "$@"
}
