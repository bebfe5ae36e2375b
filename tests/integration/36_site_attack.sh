#!/bin/bash
# The site attacked the way a security read found it weak: hidden files,
# open redirects, oversized headers, timeouts changed live, smuggling-shaped
# header values and log injection.  Each block fails on the code before the fix.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/plugins/site/tests/site_itest.sh"
tb_setup
site_www
w="$TB_TMP/www"
mkdir -p "$w/.git" "$w/.well-known" "$w/img" "$w/sub/.cache"
printf '[core]\n\tbare = false\n' >"$w/.git/config"
echo "SECRET=hunter2" >"$w/.env"
echo "cached" >"$w/sub/.cache/x"
echo "Contact: mailto:security@example.org" >"$w/.well-known/security.txt"
echo "img" >"$w/img/index.html"
mkdir -p "$w/loop/index.html"
long=$(printf 'd%.0s' $(seq 1 200))
mkdir -p "$w/$long/$long/$long/$long/$long/$long/$long"
site_start --set site.workers=1 --set site.access_log=stderr
ok $? "tlsboxd serves the site"
code() { curl -s --cacert "$CA" -o /dev/null -w '%{http_code}' --max-time 10 "$@"; }

# ---- hidden files ----------------------------------------------------------------------------
is "$(code "$URL/.git/config")" 404 "GET /.git/config: 404"
is "$(code "$URL/.env")" 404 "GET /.env: 404"
is "$(code --path-as-is "$URL/%2egit/config")" 404 "GET /%2egit/config (encoded dot): 404"
is "$(code --path-as-is "$URL/img/../.env")" 404 "GET /img/../.env: 404"
is "$(code "$URL/sub/.cache/x")" 404 "a hidden directory deeper down: 404"
is "$(code --http2 "$URL/.env")" 404 "over HTTP/2 as well: 404"
is "$(curl -s --cacert "$CA" "$URL/.well-known/security.txt")" \
    "Contact: mailto:security@example.org" "/.well-known/ (RFC 8615) is served"
tb_ctl set site.dotfiles allow >/dev/null
is "$(curl -s --cacert "$CA" "$URL/.env")" "SECRET=hunter2" \
    "site.dotfiles=allow (set live) serves them for those who want it"
tb_ctl set site.dotfiles deny >/dev/null
is "$(code "$URL/.env")" 404 "and deny again"

# ---- open redirect ---------------------------------------------------------------------------
loc() { curl -s --cacert "$CA" -o /dev/null -w '%{http_code} %{redirect_url}|%header{location}' \
    --max-time 10 "$@"; }
is "$(loc --path-as-is "$URL//evil.example/..%2Fimg")" "301 $URL/img/|/img/" \
    "GET //evil.example/..%2Fimg: Location /img/, not //evil.example/..."
is "$(loc --http2 --path-as-is "$URL//evil.example/..%2Fimg")" "301 $URL/img/|/img/" \
    "the same over HTTP/2"
is "$(loc --http1.1 --request-target "https://evil.example/img" "$URL/img")" "301 $URL/img/|/img/" \
    "absolute-form https://evil.example/img: Location /img/"
is "$(loc --path-as-is "$URL/img?next=//evil.example")" "301 $URL/img/?next=//evil.example|/img/?next=//evil.example" \
    "the query follows the slash, the host stays"
mkdir -p "$w/a\\b"
is "$(loc --path-as-is "$URL/a%5Cb")" "301 $URL/a%5Cb/|/a%5Cb/" \
    "a backslash in Location is encoded (browsers read '\\' as '/')"
# A directory named index.html: "/loop/" would redirect to itself for ever.
is "$(loc "$URL/loop/")" "500 |" "a directory named index.html: 500, no redirect loop"
# A Location longer than the header buffer: refused, not a 301 without Location.
ll="/$long/$long/$long/$long/$long/$long/$long"
is "$(loc "$URL$ll")" "414 |" "a ${#ll}-byte directory redirect that does not fit: 414"
is "$(loc "$URL$ll/" -o /dev/null)" "404 |" "and the directory itself: 404 (no index)"
like "$(cat "$TB_TMP/daemon.log")" "does not fit; 414|is a directory, not an index file" \
    "the refusal is logged"

# ---- end -------------------------------------------------------------------------------------
tb_stop_daemon
ok $? "tlsboxd stops"
done_testing
