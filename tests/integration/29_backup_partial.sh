#!/bin/bash
# tlsboxctl backup FILE writes its copy to FILE.partial first and renames it
# to FILE once whole.  What a user checks: when FILE.partial is already
# there -- a file of theirs, a symbolic link planted to have the keys
# written elsewhere (to a file, or to a name not yet made), a -wal SQLite
# would take as its own beside it -- the backup is refused (exit 4), the
# message names that file, and nothing changes: the file or link is as it
# was, nothing is written through the link, no FILE is made.  Once it is
# removed, the same backup works and leaves no .partial.  A file that
# appears at FILE itself while the copy is written (another backup to the same
# name, a file of the user's; put there every time by
# tests/integration/appear_at_rename.c, just before the rename) is not
# replaced either: refused, the file as it came, no .partial left.  The keys copied
# are the throwaway store's, in the test's temporary directory, never printed.
. "$(dirname "$0")/lib.sh"
tb_setup

tb_start_daemon --set site.https_port="$(tb_free_port)" --set site.http_port="$(tb_free_port)" ||
    bail "tlsboxd did not start"
n=$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT count(*) FROM certificates")
ok "$([ "$n" -ge 1 ]; echo $?)" "the store holds $n certificates with their keys (the internal CA's)"

D="$TB_TMP/bk"
mkdir -p "$D"
echo "precious" >"$TB_TMP/victim"
# What is in D and in the link targets: names, link targets, contents.
files() {
    (cd "$D" && find . -mindepth 1 | sort | while read -r f; do
        if [ -L "$f" ]; then echo "$f -> $(readlink "$f")"; else echo "$f $(sha256sum <"$f")"; fi
    done)
    sha256sum <"$TB_TMP/victim"
    [ -e "$TB_TMP/elsewhere.db" ] && echo "elsewhere.db made"
}
refused() { # refused BACKUP-FILE BLOCKER WHAT: the blocker is already in place
    local before out
    before=$(files)
    out=$(tb_ctl backup "$D/$1" 2>&1)
    is "$?" 4 "backup $1 with $WHAT: refused (exit 4)"
    is "$out" "tlsboxctl: $D/$2: exists: a backup writes its copy there first and never replaces or follows a file; if a backup that was killed left it (it holds the private keys), remove it, else name another FILE; nothing was written" \
        "naming $2"
    is "$(files)" "$before" "and nothing changed in $D or behind the link"
    ok "$([ ! -e "$D/$1" ]; echo $?)" "no $1 made"
}

echo "my notes" >"$D/a.db.partial"
WHAT="a file of the user's as a.db.partial" refused a.db a.db.partial
ln -s "$TB_TMP/victim" "$D/b.db.partial"
WHAT="b.db.partial a link to a file" refused b.db b.db.partial
ln -s "$TB_TMP/elsewhere.db" "$D/c.db.partial"
WHAT="c.db.partial a link to no file yet" refused c.db c.db.partial
: >"$D/d.db.partial-wal"
WHAT="a d.db.partial-wal beside it" refused d.db d.db.partial-wal

# Removed, the backup goes through, whole, and leaves no .partial.
rm -f "$D/a.db.partial"
out=$(tb_ctl backup "$D/a.db")
is "$?" 0 "with a.db.partial removed, backup a.db works"
like "$out" "written to $D/a.db: [0-9]+ bytes, mode 0600" "saying where"
is "$(sqlite3 "$D/a.db" "PRAGMA integrity_check; SELECT count(*) FROM certificates")" \
    "ok
$n" "a.db is a whole store with the $n certificates"
is "$(find "$D" -name 'a.db*' | sed "s|^$D/||" | sort | tr '\n' ' ')" "a.db " "and nothing beside it"

# A file appears at e.db between the check and the rename.
cc -std=c11 -shared -fPIC -o "$TB_TMP/appear_at_rename.so" \
    "$top_srcdir/tests/integration/appear_at_rename.c" -ldl || bail "building the rename shim"
out=$(APPEAR_AT_RENAME="$D/e.db" LD_PRELOAD="$TB_TMP/appear_at_rename.so" \
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
    tb_ctl backup "$D/e.db" 2>&1)
is "$?" 4 "a file appearing at e.db during the backup: refused (exit 4)"
is "$out" "tlsboxctl: $D/e.db appeared while the backup was written: a backup never replaces a file (the copy is removed; remove $D/e.db or name another)" \
    "saying so"
is "$(cat "$D/e.db")" "appeared" "e.db holds what appeared, not the store"
is "$(find "$D" -name 'e.db*' | sed "s|^$D/||" | sort | tr '\n' ' ')" "e.db " "and no e.db.partial is left"

done_testing
