# A real DNS server for ACME dns-01 tests (bash): Debian's BIND 9 (named),
# primary for zone example.test on a free loopback port, taking RFC 2136
# updates signed with one TSIG key.  Source after lib.sh and tb_setup.
#
#   bind_start [LABEL...]  start named in $TB_TMP/bind -> BIND_PORT, BIND_SERVER
#       (127.0.0.1:port), BIND_KEY (key name), BIND_SECRET (base64).  Each
#       LABEL.example.test has the address 127.0.0.1, and so has every other
#       name by a wildcard A, until a name below it exists (then it is an
#       empty non-terminal, and the wildcard no longer covers it: a name that
#       gets an _acme-challenge record must be a LABEL)
#       It is primary for static.test too, which takes no updates (a zone
#       at a DNS provider without an API): *.static.test has 127.0.0.1, and
#       BIND_STATIC holds more of its records, as zone file lines.
#       With BIND_STUB=ADDRESS (a loopback address) named answers on
#       ADDRESS port 53 too: what a resolv.conf can name (it has no port).
#   bind_txt NAME       the TXT strings named answers for NAME, one a line
#   bind_stop           stop it

bind_start() {
    BIND_DIR="$TB_TMP/bind"
    mkdir -p "$BIND_DIR"
    BIND_PORT=$(tb_free_port)
    BIND_SERVER="127.0.0.1:$BIND_PORT"
    BIND_KEY=tlsbox-acme
    tsig-keygen -a hmac-sha256 "$BIND_KEY" >"$BIND_DIR/key.conf" || return 1
    BIND_SECRET=$(sed -n 's/.*secret "\(.*\)";/\1/p' "$BIND_DIR/key.conf")
    cat >"$BIND_DIR/example.test.zone" <<'ZONE'
$TTL 60
@   IN SOA ns.example.test. hostmaster.example.test. 1 60 60 600 60
    IN NS ns.example.test.
ns  IN A 127.0.0.1
*   IN A 127.0.0.1
ZONE
    # The root zone too, empty: the recursion below finds every answer in
    # this server's zones, and asks no other server (NXDOMAIN for the rest).
    cat >"$BIND_DIR/root.zone" <<'ZONE'
$TTL 60
@   IN SOA ns.example.test. hostmaster.example.test. 1 60 60 600 60
    IN NS ns.example.test.
ns.example.test. IN A 127.0.0.1
ZONE
    cat >"$BIND_DIR/static.test.zone" <<ZONE
\$TTL 60
@   IN SOA ns.example.test. hostmaster.example.test. 1 60 60 600 60
    IN NS ns.example.test.
*   IN A 127.0.0.1
${BIND_STATIC:-}
ZONE
    local l
    for l in "$@"; do
        printf '%s IN A 127.0.0.1\n' "$l" >>"$BIND_DIR/example.test.zone"
    done
    local stub=""
    [ -n "${BIND_STUB:-}" ] && stub="listen-on port 53 { $BIND_STUB; };"
    # No control channel (port 953) and no session key or managed keys in
    # /run or /var: each are the machine's, shared by every named on it.
    cat >"$BIND_DIR/named.conf" <<CONF
controls { };
options {
    directory "$BIND_DIR";
    pid-file "$BIND_DIR/named.pid";
    session-keyfile "$BIND_DIR/session.key";
    managed-keys-directory "$BIND_DIR";
    listen-on port $BIND_PORT { 127.0.0.1; };
    $stub
    listen-on-v6 { none; };
    // Recursion for loopback only, so that a CNAME from static.test into
    // example.test is followed, as a resolver does for the CA (this server
    // is primary for the root zone: nothing is asked elsewhere).
    recursion yes;
    allow-recursion { 127.0.0.1; };
    dnssec-validation no;
};
include "$BIND_DIR/key.conf";
zone "example.test" {
    type primary;
    file "$BIND_DIR/example.test.zone";
    allow-update { key "$BIND_KEY"; };
};
zone "." {
    type primary;
    file "$BIND_DIR/root.zone";
};
zone "static.test" {
    type primary;
    file "$BIND_DIR/static.test.zone";
};
CONF
    # As root, named would switch to user bind, who cannot write the journal here.
    local user=()
    [ "$(id -u)" = 0 ] && user=(-u root)
    tb_bg /usr/sbin/named -g -c "$BIND_DIR/named.conf" "${user[@]}" >>"$BIND_DIR/named.log" 2>&1
    BIND_PID=$TB_BG_PID
    local i
    for i in $(seq 1 100); do
        [ "$(dig +short +time=1 +tries=1 -p "$BIND_PORT" @127.0.0.1 ns.example.test A 2>/dev/null)" = 127.0.0.1 ] &&
            { [ -z "${BIND_STUB:-}" ] ||
                [ "$(dig +short +time=1 +tries=1 -p 53 "@$BIND_STUB" ns.example.test A 2>/dev/null)" = 127.0.0.1 ]; } &&
            return 0
        sleep 0.1
    done
    echo "# named did not start:"
    sed 's/^/#   /' "$BIND_DIR/named.log" | tail -5
    return 1
}

bind_txt() {
    dig +short +time=1 +tries=1 -p "$BIND_PORT" @127.0.0.1 "$1" TXT 2>/dev/null | tr -d '"'
}

bind_stop() {
    [ -n "${BIND_PID:-}" ] || return 0
    kill -TERM "$BIND_PID" 2>/dev/null
    wait "$BIND_PID" 2>/dev/null
    BIND_PID=""
}
