#!/bin/bash
# tlsboxd --demo started as root gives a state directory without www/ the
# sample site: it makes www/, opens it up (0755, past umask 077) and copies
# the sample files in.  After the first start the state directory is the
# service user's, whose process could put a symbolic link at "www" between
# the mkdir and a chmod or copy by name, and have root open up or fill the
# directory it names.  What a user checks: that directory keeps its mode
# and gets no files, the daemon says it made no sample site, and still
# starts.  The link is put there every time, just after the mkdir
# (tests/integration/swap_for_link.c), not by racing.  Undisturbed, the next
# start makes the sample site.
. "$(dirname "$0")/lib.sh"
tb_setup

[ "$(id -u)" = 0 ] || bail "needs root: the case is a root start on the service user's directory"
start() { tb_start_daemon --demo --set site.https_port="$(tb_free_port)" --set site.http_port=0 \
    --set site.bind=127.0.0.1; }
start || bail "tlsboxd did not start in demo mode"
ok "$([ -f "$TB_STATE/www/index.html" ]; echo $?)" "the first start made the sample site"
tb_stop_daemon
owner=$(stat -c %U "$TB_STATE")
unlike "$owner" "^root$" "the state directory is the service user's now ($owner)"
rm -rf "$TB_STATE/www"

cc -std=c11 -shared -fPIC -o "$TB_TMP/swap_for_link.so" \
    "$top_srcdir/tests/integration/swap_for_link.c" -ldl || bail "building the swap shim"
mkdir -m 0700 "$TB_TMP/victim"
real=$(realpath "$TB_STATE")
printf '#!/bin/sh\nSWAP_AT="%s" SWAP_TO="%s" LD_PRELOAD="%s" ASAN_OPTIONS="%s" exec "%s" "$@"\n' \
    "$real/www" "$TB_TMP/victim" "$TB_TMP/swap_for_link.so" \
    "${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" "$TB_TLSBOXD" >"$TB_TMP/tlsboxd-swap"
chmod +x "$TB_TMP/tlsboxd-swap"
TB_TLSBOXD="$TB_TMP/tlsboxd-swap" start
ok $? "started as root with www swapped for a link just after it was made"
is "$(stat -c '%U:%G %a' "$TB_TMP/victim")" "root:root 700" "the directory the link names keeps its mode"
is "$(ls -A "$TB_TMP/victim" | wc -l)" 0 "and gets no files"
like "$(cat "$TB_TMP/daemon.log")" "demo mode: $real/www was replaced as it was made; no sample site" \
    "the daemon says it made no sample site"
tb_stop_daemon
ok $? "tlsboxd stops"

rm -f "$TB_STATE/www"
rm -rf "$TB_STATE/www.aside"
start
ok $? "undisturbed, it starts again"
is "$(stat -c %a "$TB_STATE/www")" 755 "and makes www/ (0755)"
ok "$([ -f "$TB_STATE/www/index.html" ]; echo $?)" "with the sample site"
tb_stop_daemon
ok $? "tlsboxd stops"
done_testing
