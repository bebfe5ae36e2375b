# Helpers for the site's integration tests (tests/integration/3x_site_*.sh),
# sourced after tests/integration/lib.sh.

# A test site under $TB_TMP/www: the demo page, a 16,127-byte text file with
# a .gz sibling, a 2 MB binary, a subdirectory, and a symlink out of the root.
site_www() {
    local w="$TB_TMP/www"
    mkdir -p "$w/sub"
    cp "$top_srcdir/plugins/site/www/index.html" "$w/index.html"
    head -c 20000 /dev/urandom | base64 -w 76 | head -c 16127 >"$w/f16k.txt"
    gzip -9 -k "$w/f16k.txt"
    head -c 2097152 /dev/urandom >"$w/big.bin"
    echo "sub page" >"$w/sub/index.html"
    ln -s /etc/passwd "$w/evil"
}

# Call the control API: site_api METHOD PATH [JSON]
site_api() {
    local m=$1 p=$2
    shift 2
    curl -s --unix-socket "$TB_STATE/control.sock" -X "$m" ${1:+-d "$1"} "http://tlsbox/api/v1/$p"
}

# Start tlsboxd serving $TB_TMP/www on free ports; sets P_HTTPS, P_HTTP, URL, CA.
site_start() {
    P_HTTPS=$(tb_free_port)
    P_HTTP=$(tb_free_port)
    tb_start_daemon --set site.https_port="$P_HTTPS" --set site.http_port="$P_HTTP" \
        --set site.root="$TB_TMP/www" --set site.bind=127.0.0.1,::1 "$@" || return 1
    tb_wait_port "$P_HTTPS" || return 1
    CA="$TB_TMP/ca.pem"
    site_api GET cert/root | jq -r .pem >"$CA"
    URL="https://localhost:$P_HTTPS"
    grep -q "BEGIN CERTIFICATE" "$CA"
}

# Switch the TLS policy preset (tlsboxctl when it has the command, else the API).
site_policy() {
    tb_ctl policy preset "$1" >/dev/null 2>&1 ||
        site_api POST policy/preset "{\"preset\":\"$1\"}" | grep -q '"id"'
}

# Import a certificate: site_cert_import NAME CERT.pem KEY.pem
site_cert_import() {
    tb_ctl cert import --cert "$2" --key "$3" --name "$1" >/dev/null 2>&1 ||
        site_api POST cert/import "$(jq -n --arg n "$1" --rawfile c "$2" --rawfile k "$3" \
            '{name:$n, cert_pem:$c, key_pem:$k}')" | grep -q '"name"'
}

# Bundle generation as the API reports it.
site_generation() {
    site_api GET cert | jq -r .bundle.generation
}

# Value of one metric series from the control API's JSON metrics (0 when absent).
site_metric() {
    local v
    v=$(site_api GET metrics | jq -r --arg k "$1" '(.metrics // .)[$k] // 0 |
        if type == "object" then .count else . end' 2>/dev/null)
    echo "${v:-0}"
}

# Change a setting live: in effect when tlsboxctl set returns (the site
# applies it before the core stores it), no wait for "settings.changed".
site_set() {
    tb_ctl set "$1" "$2" >/dev/null
}
