#!/bin/bash
# tlsboxctl backup and restore: the whole store as one file and back.  What a
# user checks: a backup made while tlsboxd runs is one SQLite file, 0600,
# whole (integrity_check), with the certificates and their keys, settings,
# the policy; it never replaces a file.  A restore under a running tlsboxd,
# or of a file that is not a tlsbox store (junk, another SQLite database, a
# newer schema, a damaged file, a symbolic link) is refused, saying what,
# and changes nothing.  A good restore brings back the certificates the site
# serves, the settings and the policy of the backup's time, keeps the store
# it replaced beside it (with its owner), and ends web UI sessions; that
# kept store restores the later state again.  Keys are made here, in the
# test's temporary directory, and never printed.
. "$(dirname "$0")/lib.sh"
tb_setup

SITE=$(tb_free_port)
start() { tb_start_daemon --set site.https_port="$SITE" --set site.http_port="$(tb_free_port)"; }
start || bail "tlsboxd did not start"
db="$TB_STATE/tlsbox.db"
B="https://127.0.0.1:$TB_ADMIN_PORT"

mkcert() { # mkcert NAME: a self-signed P-256 certificate for NAME.example, imported as NAME
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
        -subj "/CN=$1.example" -addext "subjectAltName=DNS:$1.example" \
        -keyout "$TB_TMP/$1.key" -out "$TB_TMP/$1.crt" 2>/dev/null &&
        tb_ctl cert import --cert "$TB_TMP/$1.crt" --key "$TB_TMP/$1.key" --name "$1" >/dev/null
}
served() { # served NAME: the subject the site sends for SNI NAME.example
    openssl s_client -connect "127.0.0.1:$SITE" -servername "$1.example" </dev/null 2>/dev/null |
        openssl x509 -noout -subject 2>/dev/null | sed 's/^subject= *//'
}
names() { tb_ctl --json cert list | jq -r '[.certificates[].name] | sort | join(",")'; }
policy_id() { sqlite3 "$db" "SELECT id FROM policy_versions WHERE active = 1"; }

mkcert one
ok $? "certificate one imported"
tb_ctl set notify.retry_seconds 77 >/dev/null &&
    tb_ctl policy preset modern >/dev/null
ok $? "a setting and the policy changed"
echo 'a long admin password 1' | tb_ctl admin passwd >/dev/null
J="$TB_TMP/cookies"
is "$(curl -sk --max-time 30 -c "$J" -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' \
    -X POST "$B/api/v1/session/login" -d '{"user":"admin","password":"a long admin password 1"}')" 200 \
    "an admin logs in to the web UI"
api_status() { curl -sk --max-time 30 -b "$J" -o /dev/null -w '%{http_code}' "$B/api/v1/status"; }
is "$(api_status)" 200 "the session works"
policy_then=$(policy_id)
names_then=$(names)
like "$names_then" "one" "the store lists one: $names_then"

# 1. A backup while tlsboxd runs.
out=$(tb_ctl backup "$TB_TMP/b1.db")
is "$?" 0 "tlsboxctl backup FILE while tlsboxd runs"
like "$out" "^backup of $db \(schema [0-9]+, [0-9]+ certificates, [0-9]+ settings, TLS policy version $policy_then, 1 admin users\) written to $TB_TMP/b1.db: [0-9]+ bytes, mode 0600" \
    "it says what it copied, where, and how big"
like "$out" "It holds the private keys: keep it as safe as the box" "and warns that it holds the keys"
is "$(stat -c %a "$TB_TMP/b1.db")" 600 "the file is 0600"
is "$(sqlite3 "$TB_TMP/b1.db" 'PRAGMA integrity_check')" ok "SQLite finds it whole"
is "$(sqlite3 "$TB_TMP/b1.db" 'PRAGMA journal_mode')" delete "one file: no WAL beside it"
is "$(ls "$TB_TMP" | grep -c '^b1\.db')" 1 "and nothing else: no -wal, no .partial"
is "$(sqlite3 "$TB_TMP/b1.db" "SELECT value FROM settings WHERE key = 'notify.retry_seconds'")" 77 \
    "the setting is in it"
n=$(sqlite3 "$db" "SELECT count(*) FROM certificates")
is "$(sqlite3 "$TB_TMP/b1.db" "ATTACH '$db' AS live;
    SELECT count(*) FROM certificates b JOIN live.certificates l USING (name)
    WHERE b.key_pem = l.key_pem AND b.chain_pem = l.chain_pem")" "$n" \
    "every certificate ($n) with the same key and chain as the store's"
is "$(sqlite3 "$TB_TMP/b1.db" "SELECT count(*) FROM admin_sessions")" 1 "the web UI session is in it"
is "$(grep -c 'BEGIN' <<<"$out")" 0 "no key in what it printed"

# To standard output, as over ssh (ssh box tlsboxctl backup - > box.db).
mkdir -p "$TB_TMP/tmp"
TMPDIR="$TB_TMP/tmp" tb_ctl backup - >"$TB_TMP/piped.db" 2>"$TB_TMP/piped.err"
is "$?" 0 "tlsboxctl backup - to a pipe"
like "$(cat "$TB_TMP/piped.err")" "^backup of $db \(schema [0-9]+, .*\) written to standard output: $(stat -c %s "$TB_TMP/piped.db") bytes\.$" \
    "what it sent is said on stderr, with the size it wrote"
is "$(sqlite3 "$TB_TMP/piped.db" "PRAGMA integrity_check; SELECT value FROM settings WHERE key = 'notify.retry_seconds'")" \
    "ok
77" "the bytes are a whole store, with the setting"
is "$(ls -A "$TB_TMP/tmp" | wc -l)" 0 "nothing is left in TMPDIR"
out=$(script -qec "$TB_TLSBOXCTL --state-dir $TB_STATE backup -" /dev/null | tr -d '\r')
like "$out" "^tlsboxctl: backup -: standard output is a terminal: send it to a file or a pipe" \
    "backup - to a terminal: refused"

sum=$(sha256sum <"$TB_TMP/b1.db")
out=$(tb_ctl backup "$TB_TMP/b1.db" 2>&1)
is "$?" 4 "a backup onto an existing file: refused (exit 4)"
is "$out" "tlsboxctl: $TB_TMP/b1.db exists: a backup never replaces a file (remove it or name another)" \
    "saying so"
is "$(sha256sum <"$TB_TMP/b1.db")" "$sum" "the file is unchanged"
out=$(tb_ctl --state-dir "$TB_TMP/nowhere" backup "$TB_TMP/b0.db" 2>&1)
is "$?" 4 "no store in the state directory: refused"
like "$out" "$TB_TMP/nowhere/tlsbox.db: No such file or directory \(no store here: name its directory with --state-dir\)" \
    "saying where it looked"

# 2. Later changes, and a restore under a running tlsboxd.
mkcert two
tb_ctl set notify.retry_seconds 88 >/dev/null
tb_ctl policy preset intermediate >/dev/null
policy_later=$(policy_id)
names_later=$(names)
out=$(tb_ctl restore "$TB_TMP/b1.db" 2>&1)
is "$?" 1 "restore while tlsboxd runs: refused"
like "$out" "tlsboxd is running \(.*control.sock\): stop it first \(systemctl stop tlsbox\), restore, then start it again; nothing was changed" \
    "saying to stop it first"
is "$(tb_ctl get notify.retry_seconds)|$(names)" "88|$names_later" "the store is as it was"
# The packaged service's socket is under /run, whatever --state-dir says: a
# restore that does not find the socket must still see the store in use.
# Here the socket is moved aside, so the check by socket finds nothing.
mv "$TB_STATE/control.sock" "$TB_STATE/moved.sock"
out=$("$TB_TLSBOXCTL" --state-dir "$TB_STATE" restore "$TB_TMP/b1.db" 2>&1)
is "$?" 1 "restore while tlsboxd runs, its socket elsewhere: refused"
like "$out" "^tlsboxctl: $TB_STATE/tlsbox.db is open in process $TB_PID \(tlsboxd, or another program using it\): stop it first" \
    "naming the process that has the store open"
is "$(ls "$TB_STATE" | grep -c before-restore)" 0 "nothing was set aside"
mv "$TB_STATE/moved.sock" "$TB_STATE/control.sock"
is "$(tb_ctl get notify.retry_seconds)|$(names)" "88|$names_later" "the store is as it was"

tb_stop_daemon
ok $? "tlsboxd stops cleanly"

# 3. Files that are not a backup this tlsbox can restore.
live_sum=$(cat "$db" "$db-wal" 2>/dev/null | sha256sum)
refused() { # refused FILE WANT WHAT
    local out
    out=$(tb_ctl restore "$1" 2>&1)
    is "$?" 4 "$3: refused"
    is "$out" "tlsboxctl: $1: $2
tlsboxctl: nothing was changed" "$3: saying why"
    is "$(cat "$db" "$db-wal" 2>/dev/null | sha256sum)" "$live_sum" "$3: the store is untouched"
}
printf 'hello\n' >"$TB_TMP/junk.db"
refused "$TB_TMP/junk.db" "not an SQLite database (a tlsbox backup is one)" "a text file"
sqlite3 "$TB_TMP/other.db" "CREATE TABLE t (x); INSERT INTO t VALUES (1)"
refused "$TB_TMP/other.db" "not a tlsbox store (no table settings)" "another SQLite database"
cp "$TB_TMP/b1.db" "$TB_TMP/newer.db"
sqlite3 "$TB_TMP/newer.db" "PRAGMA user_version = 99"
known=$(sqlite3 "$TB_TMP/b1.db" "PRAGMA user_version")
refused "$TB_TMP/newer.db" \
    "made by a newer tlsbox (store schema version 99; this one knows up to $known): upgrade tlsbox first" \
    "a store of a newer schema"
cp "$TB_TMP/b1.db" "$TB_TMP/damaged.db"
# The first page's b-tree header (after the 100-byte file header): garbage.
printf '\377\377\377\377\377\377\377\377' | dd of="$TB_TMP/damaged.db" bs=1 seek=100 conv=notrunc 2>/dev/null
refused "$TB_TMP/damaged.db" "damaged: database disk image is malformed" "a damaged file"
ln -s "$TB_TMP/b1.db" "$TB_TMP/link.db"
refused "$TB_TMP/link.db" "not a regular file" "a symbolic link"
refused "$TB_TMP/absent.db" "No such file or directory" "a file that is not there"
out=$(TMPDIR="$TB_TMP/tmp" tb_ctl restore - <"$TB_TMP/junk.db" 2>&1)
is "$?|$out" "4|tlsboxctl: standard input: not an SQLite database (a tlsbox backup is one)
tlsboxctl: nothing was changed" "junk on standard input (restore -): refused, saying so"
is "$(cat "$db" "$db-wal" 2>/dev/null | sha256sum)|$(ls -A "$TB_TMP/tmp" | wc -l)" "$live_sum|0" \
    "the store is untouched, and nothing is left in TMPDIR"
is "$(ls "$TB_STATE" | grep -c before-restore)" 0 "nothing was set aside"

# 3b. Two at once.  tlsboxd holds the state directory shared (flock) while
# its store is open; a restore holds it exclusively from its checks to its
# last rename.  Here this shell holds it as the other party would, so the
# overlap is certain, not timed.
exec 8<"$TB_STATE"
flock -s 8
out=$(tb_ctl restore "$TB_TMP/b1.db" 2>&1)
is "$?|$out" "1|tlsboxctl: $TB_STATE: in use by another tlsboxctl restore, or by a tlsboxd starting on it: try again when it has finished; nothing was changed" \
    "a restore while a tlsboxd starts on the directory (it holds it shared): refused, saying so"
is "$(cat "$db" "$db-wal" 2>/dev/null | sha256sum)|$(ls -A "$TB_STATE" | grep -c -e before-restore -e restoring)" \
    "$live_sum|0" "the store is untouched, nothing set aside, no .restoring copy"
flock -x 8
out=$(timeout 60 "$TB_TLSBOXD" --state-dir "$TB_STATE" --plugin-dir "$TB_PLUGINS" --foreground \
    --set admin.port="$(tb_free_port)" --set admin.bind=127.0.0.1 \
    --data-dir "$top_builddir/build-data" 2>&1)
is "$?" 1 "tlsboxd while a restore holds the state directory: does not start"
like "$out" "$TB_STATE: tlsboxctl restore is replacing the store in it: start tlsboxd again when the restore has finished" \
    "saying why, and what to do"
is "$(cat "$db" "$db-wal" 2>/dev/null | sha256sum)" "$live_sum" "the store is untouched"
exec 8<&-
out=$(tb_ctl restore "$TB_TMP/absent.db" 2>&1)
is "$?" 4 "the directory let go: a restore gets past the lock (to its next check)"

# 4. The restore.
owner=$(stat -c %U:%G "$db")
out=$(tb_ctl restore "$TB_TMP/b1.db")
is "$?" 0 "tlsboxctl restore FILE with tlsboxd stopped"
like "$out" "^restored $TB_TMP/b1.db \(schema $known, .*TLS policy version $policy_then, 1 admin users\) into $db\." \
    "it says what it restored, and where"
kept=$(ls "$TB_STATE" | grep -E '^tlsbox\.db\.before-restore-[0-9]{8}T[0-9]{6}Z$')
like "$out" "The store before it is kept as $TB_STATE/$kept\." "and where the store it replaced is kept"
like "$out" "Web UI sessions of the backup's time are gone: log in again" "and that sessions end"
is "$(stat -c '%U:%G %a' "$db")" "$owner 600" "the restored store has the old one's owner ($owner), 0600"
start || bail "tlsboxd did not start on the restored store"
is "$(tb_ctl get notify.retry_seconds)" 77 "the setting of the backup's time"
is "$(names)" "$names_then" "the certificates of the backup's time: $names_then"
is "$(served one)" "CN = one.example" "the site serves certificate one"
is "$(served two)" "$(served nothere)" "and two no more (the default certificate for its name)"
is "$(policy_id)" "$policy_then" "the policy version of the backup's time"
is "$(api_status)" 401 "the web UI session of the backup's time no longer works"
is "$(tb_admin_login 127.0.0.1 admin 'a long admin password 1')" 200 "the admin logs in again"
tb_stop_daemon
ok $? "tlsboxd stops cleanly"

# 5. The kept store brings the later state back.
out=$(tb_ctl restore "$TB_STATE/$kept")
is "$?" 0 "restoring the store that was set aside"
start || bail "tlsboxd did not start on the store set aside"
is "$(tb_ctl get notify.retry_seconds)|$(names)|$(policy_id)" "88|$names_later|$policy_later" \
    "the later setting, certificates and policy are back"
is "$(served two)" "CN = two.example" "the site serves certificate two again"
tb_stop_daemon
ok $? "tlsboxd stops cleanly"

# 6. From standard input, as over ssh (ssh box tlsboxctl restore - < box.db).
out=$(TMPDIR="$TB_TMP/tmp" tb_ctl restore - <"$TB_TMP/piped.db")
is "$?" 0 "tlsboxctl restore - from a pipe"
like "$out" "^restored standard input \(schema $known, .*\) into $db\." "it says what it restored"
is "$(ls -A "$TB_TMP/tmp" | wc -l)" 0 "nothing is left in TMPDIR"
start || bail "tlsboxd did not start on the store from standard input"
is "$(tb_ctl get notify.retry_seconds)|$(names)" "77|$names_then" "the backup's setting and certificates"
tb_stop_daemon
ok $? "tlsboxd stops cleanly"

# 7. Stores set aside do not pile up (each holds the keys of its time): a
# restore keeps its own and the 2 newest others.  Here the clock is behind
# them (a Pi without a real-time clock, before NTP): copies named from this
# second to 9 s ahead exist.  The new one stays anyway, named -2 (or -3...)
# beside the one of its second.  Restores in one second are named so too.
kept_all() { ls "$TB_STATE" | grep -E '^tlsbox\.db\.before-restore-' | sort; }
three=$(kept_all | grep -E '^tlsbox\.db\.before-restore-[0-9]{8}T[0-9]{6}Z(-[0-9]+)?$')
is "$(printf '%s\n' "$three" | wc -l)" 3 "three restores set three stores aside (nothing removed yet)"
like "$(kept_all | paste -sd' ')" "${three%%$'\n'*}-shm" \
    "  the one restored from in 5. has the -shm SQLite left beside it"
stamp() { date -u -d "@$1" +%Y%m%dT%H%M%SZ; }
now=$(date +%s)
# (A restore above may have set its store aside in this very second: kept.)
for i in $(seq 0 9); do
    f="$TB_STATE/tlsbox.db.before-restore-$(stamp $((now + i)))"
    [ -e "$f" ] || : >"$f"
done
others=$(kept_all | grep -cE 'Z(-[0-9]+)?$')
out=$(tb_ctl restore "$TB_TMP/b1.db")
is "$?" 0 "a fourth restore"
made=$(printf '%s\n' "$out" | sed -n 's|^The store before it is kept as '"$TB_STATE"'/\(.*\)\.$|\1|p')
like "$made" '^tlsbox\.db\.before-restore-[0-9]{8}T[0-9]{6}Z-[0-9]+$' \
    "the store is set aside as ...Z-N, its second's name being taken: $made"
is "$(sqlite3 "$TB_STATE/$made" 'PRAGMA user_version')" "$known" "  that is the store it replaced"
is "$(kept_all)" "$(printf '%s\n' "$made" "tlsbox.db.before-restore-$(stamp $((now + 8)))" \
    "tlsbox.db.before-restore-$(stamp $((now + 9)))" | sort)" \
    "three stay: that one and the two newest others (no -shm nor -wal of the others)"
is "$(printf '%s\n' "$out" | grep -c '^Removed an older store set aside: ')" $((others - 2)) \
    "it says which $((others - 2)) it removed (all $others but the two newest)"
for k in $three; do
    like "$out" "Removed an older store set aside: $TB_STATE/$k \(3 are kept\)\." "  among them $k"
done
start || bail "tlsboxd did not start on the store restored"
is "$(tb_ctl get notify.retry_seconds)|$(names)" "77|$names_then" "the box runs on the restored store"
tb_stop_daemon
ok $? "tlsboxd stops cleanly"
done_testing
