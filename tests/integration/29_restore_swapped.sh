#!/bin/bash
# tlsboxctl restore, run as root, writes its copy into the state directory,
# which is the service user's, then gives the copy to that user.  That user
# (a process of it that outlived the stop) may put a symbolic link to any
# file (/etc/shadow) at the copy's name after the copy: a chown() by name
# would follow it and give that file to the service user.  What a user
# checks: the restore refuses (exit 4) and says the copy was replaced; the
# file the link names keeps its owner and mode; the store is as it was; no
# link is left in the state directory.  The link is put there every time,
# just before the ownership step (tests/integration/swap_for_link.c), not by
# racing.  Then the same restore, undisturbed, works.
. "$(dirname "$0")/lib.sh"
tb_setup

[ "$(id -u)" = 0 ] || bail "needs root: the restore gives the copy to the service user"
tb_start_daemon --set site.https_port="$(tb_free_port)" --set site.http_port="$(tb_free_port)" ||
    bail "tlsboxd did not start"
tb_ctl backup "$TB_TMP/b.db" >/dev/null
ok $? "a backup"
tb_stop_daemon
ok $? "tlsboxd stops"
db="$TB_STATE/tlsbox.db"
owner=$(stat -c %U "$db")
unlike "$owner" "^root$" "the store is the service user's ($owner)"
sum=$(cat "$db" "$db-wal" 2>/dev/null | sha256sum)

cc -std=c11 -shared -fPIC -o "$TB_TMP/swap_for_link.so" \
    "$top_srcdir/tests/integration/swap_for_link.c" -ldl || bail "building the swap shim"
printf 'root only\n' >"$TB_TMP/victim"
chmod 0600 "$TB_TMP/victim"
out=$(SWAP_AT="$TB_STATE/.tlsbox.db.restoring" SWAP_TO="$TB_TMP/victim" \
    LD_PRELOAD="$TB_TMP/swap_for_link.so" \
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
    "$TB_TLSBOXCTL" --state-dir "$TB_STATE" restore "$TB_TMP/b.db" 2>&1)
is "$?" 4 "a copy swapped for a link before it is given to $owner: refused"
like "$out" "^tlsboxctl: $TB_STATE/\.tlsbox\.db\.restoring: the copy was replaced while it was written" \
    "saying so"
is "$(stat -c '%U:%G %a' "$TB_TMP/victim")" "root:root 600" "the file the link names keeps its owner and mode"
is "$(cat "$db" "$db-wal" 2>/dev/null | sha256sum)" "$sum" "the store is as it was"
is "$(find "$TB_STATE" -maxdepth 1 -type l | wc -l)" 0 "no link is left in the state directory"
is "$(ls -A "$TB_STATE" | grep -c before-restore)" 0 "nothing was set aside"

rm -f "$TB_STATE/.tlsbox.db.restoring.aside"
out=$(tb_ctl restore "$TB_TMP/b.db")
is "$?" 0 "undisturbed, the same restore works"
is "$(stat -c %U "$db")" "$owner" "and the store is $owner's"
done_testing
