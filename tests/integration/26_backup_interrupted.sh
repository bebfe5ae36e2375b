#!/bin/bash
# tlsboxctl backup - and restore - pass the whole store (private keys
# included) through a directory of their own under $TMPDIR.  What a user
# checks: when the command is ended midway, by the reader of backup - going
# away (SIGPIPE: `| head`, an ssh connection dropped), by a hang-up or by
# Ctrl-C, that directory is gone, so no copy of the keys stays in /tmp; the
# command still dies of the signal (exit status 128 + N), and an interrupted
# restore leaves the store as it was.  Keys are made here, in the test's
# temporary directory, and never printed.
. "$(dirname "$0")/lib.sh"
tb_setup

tb_start_daemon --set site.https_port="$(tb_free_port)" --set site.http_port="$(tb_free_port)" ||
    bail "tlsboxd did not start"
db="$TB_STATE/tlsbox.db"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
    -subj "/CN=one.example" -addext "subjectAltName=DNS:one.example" \
    -keyout "$TB_TMP/one.key" -out "$TB_TMP/one.crt" 2>/dev/null &&
    tb_ctl cert import --cert "$TB_TMP/one.crt" --key "$TB_TMP/one.key" --name one >/dev/null
ok $? "a certificate with its key imported"
T="$TB_TMP/tmp"
mkdir -p "$T"
left() { find "$T" -mindepth 1 | sed "s|^$T/||" | sort | tr '\n' ' '; }

# 1. The reader goes away after 100 bytes: SIGPIPE.
TMPDIR="$T" tb_ctl backup - 2>"$TB_TMP/pipe.err" | head -c 100 >/dev/null
is "${PIPESTATUS[0]}" 141 "backup - whose reader stops reading dies of SIGPIPE (141)"
is "$(left)" "" "and leaves nothing in TMPDIR"

# 2. A hang-up (ssh gone) while the copy is sent: the reader holds the pipe
# open without reading, so the copy (larger than a pipe's 64 KiB) waits in
# TMPDIR until the signal comes.
tb_ctl backup "$TB_TMP/good.db" >/dev/null || bail "no backup"
size=$(stat -c %s "$TB_TMP/good.db")
[ "$size" -gt 65536 ] || bail "a copy of the store ($size bytes) fits a pipe: the test would not block"
mkfifo "$TB_TMP/fifo"
exec 7<>"$TB_TMP/fifo"
TMPDIR="$T" "$TB_TLSBOXCTL" --state-dir "$TB_STATE" backup - >"$TB_TMP/fifo" 2>/dev/null &
pid=$!
for _ in $(seq 1 300); do
    [ -n "$(find "$T" -name tlsbox.db -size +1 2>/dev/null)" ] && break
    sleep 0.1
done
is "$(find "$T" -name tlsbox.db | wc -l)" 1 "backup - made its copy in TMPDIR and is sending it"
ok "$(kill -0 "$pid" 2>/dev/null; echo $?)" "it waits for the reader"
kill -HUP "$pid"
{ wait "$pid"; } 2>/dev/null
is "$?" 129 "a hang-up ends it (129)"
is "$(left)" "" "and the copy in TMPDIR is gone"
exec 7>&-

# 3. restore - interrupted (SIGTERM, as from a shutdown) while it reads standard input: the part
# read so far is gone, and the store is as it was.
tb_stop_daemon || bail "tlsboxd did not stop"
before=$(sha256sum <"$db")
mkfifo "$TB_TMP/in"
exec 8<>"$TB_TMP/in"
TMPDIR="$T" "$TB_TLSBOXCTL" --state-dir "$TB_STATE" restore - <"$TB_TMP/in" >/dev/null 2>&1 &
pid=$!
head -c 8192 "$TB_TMP/good.db" >&8
for _ in $(seq 1 300); do
    [ -n "$(find "$T" -name tlsbox.db -size 8192c 2>/dev/null)" ] && break
    sleep 0.1
done
is "$(find "$T" -name tlsbox.db -size 8192c | wc -l)" 1 "restore - holds the 8 KiB read so far in TMPDIR"
kill -TERM "$pid"
{ wait "$pid"; } 2>/dev/null
is "$?" 143 "SIGTERM ends it (143)"
exec 8>&-
is "$(left)" "" "and nothing of the backup stays in TMPDIR"
is "$(sha256sum <"$db")" "$before" "the store is unchanged"
is "$(find "$TB_STATE" \( -name '*restoring*' -o -name '*before-restore*' \) | wc -l)" 0 \
    "no copy set aside and none half made in the state directory"

# 4. Uninterrupted, both still work and clean up.
TMPDIR="$T" tb_ctl restore - <"$TB_TMP/good.db" >/dev/null 2>&1
is "$?" 0 "restore - of the whole backup"
is "$(left)" "" "leaves nothing in TMPDIR"
is "$(sqlite3 "$db" "SELECT count(*) FROM certificates WHERE name = 'one'")" 1 \
    "and the store holds the certificate"

done_testing
