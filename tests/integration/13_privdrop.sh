#!/bin/bash
# Privilege drop, as a user would check it: tlsboxd started as root serves as
# the tlsbox user with no capability and NoNewPrivs (every thread), does not
# serve a file tlsbox may not read, keeps a port change for the restart it
# names, refuses a state directory others can write, one it would take from
# root (or anyone but tlsbox) with root's files in it, and a missing user; run
# as an ordinary user (demo mode, or with systemd's ambient
# CAP_NET_BIND_SERVICE) it serves as that user and keeps no capability.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/plugins/site/tests/site_itest.sh"
if [ "$(id -u)" != 0 ]; then
    echo "1..0 # SKIP the privilege drop is tested as root (CI runs as root)"
    exit 0
fi
id tlsbox >/dev/null 2>&1 || bail "no tlsbox user: packaging/install-deps.sh creates it"
tb_setup
U=$(id -u tlsbox)
G=$(id -g tlsbox)

# Field of /proc/PID/status (whitespace squeezed).
st() { sed -n "s/^$2:[[:space:]]*//p" "/proc/$1/status" | tr -s '\t ' ' '; }

site_www
echo "root's secret $RANDOM$RANDOM" >"$TB_TMP/www/secret.txt"
chmod 0600 "$TB_TMP/www/secret.txt"
site_start
ok $? "tlsboxd started as root serves on $P_HTTPS"
is "$(st "$TB_PID" Uid)" "$U $U $U $U" "real, effective, saved and fs uid are tlsbox's ($U)"
is "$(st "$TB_PID" Gid)" "$G $G $G $G" "gids are tlsbox's ($G)"
is "$(st "$TB_PID" Groups)" "" "no supplementary groups"
is "$(st "$TB_PID" CapEff)" 0000000000000000 "CapEff 0"
is "$(st "$TB_PID" CapPrm)" 0000000000000000 "CapPrm 0"
is "$(st "$TB_PID" NoNewPrivs)" 1 "NoNewPrivs 1"
# Every thread, the site's workers included, not just the main one: its
# uids, its four capability sets and NoNewPrivs, as "uids|inh prm eff amb|nnp";
# prints one line per thread that differs from @1.
Z=0000000000000000
threads_unlike() {
    local t id
    for t in /proc/"$TB_PID"/task/*; do
        id="$TB_PID/task/${t##*/}"
        printf '%s|%s %s %s %s|%s\n' "$(st "$id" Uid)" "$(st "$id" CapInh)" "$(st "$id" CapPrm)" \
            "$(st "$id" CapEff)" "$(st "$id" CapAmb)" "$(st "$id" NoNewPrivs)"
    done | grep -vxF "$1"
}
nthreads=$(ls /proc/"$TB_PID"/task | wc -l)
ok $((nthreads < 4)) "tlsboxd runs $nthreads threads (core, jobs, site workers)"
is "$(threads_unlike "$U $U $U $U|$Z $Z $Z $Z|1")" "" \
    "every one of them runs as tlsbox, with all four capability sets empty and NoNewPrivs"
is "$(find "$TB_STATE" -maxdepth 1 \( -type f -o -type s \) ! -user tlsbox -printf '%f\n')" "" \
    "every file in the state directory (the store, its WAL and shm, the socket) is tlsbox's"
like "$(cat "$TB_TMP/daemon.log")" "running as user tlsbox \\(uid $U, gid $G\\), no capabilities" \
    "the log says whom it runs as"

C=(curl -s --cacert "$CA" --max-time 10)
"${C[@]}" -o "$TB_TMP/got" "$URL/f16k.txt"
cmp -s "$TB_TMP/got" "$TB_TMP/www/f16k.txt"
ok $? "a readable file is served with its content"
code=$("${C[@]}" -o "$TB_TMP/got" -w '%{http_code}' "$URL/secret.txt")
like "$code" '^(403|404)$' "a root-only 0600 file is refused ($code)"
grep -q "root's secret" "$TB_TMP/got"
ok $((!$?)) "and its content is not in the answer"
is "$(stat -c %U "$TB_STATE/control.sock" "$TB_STATE/tlsbox.db" | sort -u)" tlsbox \
    "the control socket and the store belong to tlsbox"
is "$(stat -c %a "$TB_STATE")" 700 "the state directory stays 0700"
is "$(stat -c %U "$TB_STATE")" tlsbox "the state directory it created is tlsbox's"
out=$(tb_ctl status 2>&1)
ok $? "tlsboxctl (root) talks to it through the socket"
low=$(tb_free_low_port)
out=$(tb_ctl set site.https_port "$low" 2>&1)
is "$?" 0 "a live change to privileged port $low: stored (tlsboxctl set exits 0)"
like "$out" "^site\.https_port = $low \(site\.https_port: port $low on 127\.0\.0\.1 is below 1024: it opens only while tlsboxd starts as root; stored, it takes effect when tlsboxd restarts.*serves https port $P_HTTPS, http port $P_HTTP\)" \
    "and it says the port opens at the next start, and which ports serve until then"
like "$(cat "$TB_TMP/daemon.log")" "site.https_port: port $low on 127.0.0.1 is below 1024" \
    "the log says it too"
is "$(tb_ctl get site.https_port)" "$low" "the store holds the new port"
# The web UI's form: the reply marks the setting and carries the same note.
low2=$(tb_free_low_port)
got=$(site_api PUT plugins/site/settings "{\"https_port\": $low2}" |
    jq -r '.[] | select(.key == "https_port") | "\(.value) \(.restart_needed) \(.note)"')
like "$got" "^$low2 true site\.https_port: port $low2 on 127\.0\.0\.1 is below 1024.*takes effect when tlsboxd restarts" \
    "PUT plugins/site/settings to port $low2: stored, restart_needed and the note"
site_api PUT plugins/site/settings "{\"https_port\": $low}" >/dev/null
is "$("${C[@]}" -o /dev/null -w '%{http_code}' "$URL/f16k.txt")" 200 "and the site still serves on $P_HTTPS"
# Another live change of the site's listeners keeps the served port, not the
# stored one it cannot open yet.
out=$(tb_ctl set site.http_port 0 2>&1)
is "$?" 0 "a later change of site.http_port is applied: exit 0 ($out)"
is "$("${C[@]}" -o /dev/null -w '%{http_code}' "$URL/f16k.txt")" 200 "the site still serves on $P_HTTPS after it"
(exec 3<>"/dev/tcp/127.0.0.1/$P_HTTP") 2>/dev/null
ok $((!$?)) "and no longer listens on http port $P_HTTP"
tb_stop_daemon
ok $? "stops on SIGTERM"
# Restarted as root without --set for the port: the stored one opens.
tb_start_daemon --set site.root="$TB_TMP/www"
tb_wait_port "$low"
ok $? "restarted, tlsboxd serves on the stored privileged port $low"
is "$("${C[@]}" -o /dev/null -w '%{http_code}' "https://localhost:$low/f16k.txt")" 200 \
    "and the site answers there"
tb_stop_daemon
ok $? "stops on SIGTERM"

# ---- refusals -------------------------------------------------------------
bad_state="$TB_TMP/open"
mkdir -m 0777 "$bad_state"
chmod 0777 "$bad_state"
out=$("$TB_TLSBOXD" --state-dir "$bad_state" --plugin-dir "$TB_PLUGINS" --foreground 2>&1)
rc=$?
is "$rc" 1 "a world-writable state directory: exit 1"
like "$out" "$bad_state: the state directory is writable by everyone \\(mode 777\\): refused" \
    "with an error naming the directory and its mode"
is "$(ls -A "$bad_state")" "" "and nothing created in it"
chmod 0770 "$bad_state"
out=$("$TB_TLSBOXD" --state-dir "$bad_state" --plugin-dir "$TB_PLUGINS" --foreground 2>&1)
like "$out" "writable by its group \\(mode 770\\)" "a group-writable one too"

P1=$(tb_free_port)
out=$("$TB_TLSBOXD" --state-dir "$TB_TMP/s2" --plugin-dir "$TB_PLUGINS" --foreground \
    --user tlsbox-nobody-here --set site.https_port="$P1" --set site.http_port=0 \
    --set site.bind=127.0.0.1 2>&1)
rc=$?
is "$rc" 1 "started as root with a missing --user: exit 1 (never serves as root)"
like "$out" "user 'tlsbox-nobody-here'.*there is no such user.*adduser --system --group" \
    "the error names the user and how to create it"

# A state directory that was there, holds files tlsboxd does not make and
# is not tlsbox's (--state-dir /etc or . by mistake): started as root,
# tlsboxd would give the directory itself to tlsbox, so it refuses, before
# it writes anything there.  Never the real /etc: a copy of the case.
# refused_on DIR: tlsboxd as root on DIR; $out its output, $rc its exit
# (124: it was still running after 20 s, so it took DIR).
refused_on() {
    out=$(timeout 20 "$TB_TLSBOXD" --state-dir "$1" --plugin-dir "$TB_PLUGINS" --foreground \
        --set admin.port="$(tb_free_port)" --set admin.bind=127.0.0.1 \
        --set site.https_port="$(tb_free_port)" --set site.http_port=0 --set site.bind=127.0.0.1 2>&1)
    rc=$?
}
etc="$TB_TMP/etc"
mkdir -m 0755 "$etc"
echo "root's config" >"$etc/passwd.conf"
chmod 0600 "$etc/passwd.conf"
owner=$(stat -c %U "$etc")
refused_on "$etc"
is "$rc" 1 "a root-owned state directory holding a file of root's: exit 1"
like "$out" "$etc: refused as the state directory: it was there before, belongs to root, not to the service user 'tlsbox', and holds 'passwd.conf'.*chown tlsbox: $etc first" \
    "with an error naming the directory, its owner, the file and what to do"
is "$owner $(stat -c %U "$etc")" "root root" "the directory's owner is unchanged (root before, root after)"
is "$(ls -A "$etc" | tr '\n' ' ')" "passwd.conf " "nothing was created in it"
is "$(stat -c %U:%a "$etc/passwd.conf")" root:600 "and root's file stays root's, 0600"
# The same with a store in it (left by an earlier start that stopped before
# the drop): which user would get it is known once the store is open.
: >"$etc/tlsbox.db"
chmod 0600 "$etc/tlsbox.db"
refused_on "$etc"
is "$rc" 1 "with a store beside root's file: exit 1"
like "$out" "$etc: refused as the state directory: .*belongs to root, not to the service user \\(core.user in its store\\), and holds 'passwd.conf'" \
    "with the same error (the service user is the store's core.user)"
is "$(stat -c %U:%s "$etc" "$etc/tlsbox.db" | sort -u | tr '\n' ' ')" "root:0 root:4096 " \
    "the directory and the store stay root's, the store as it was (empty)"
# Someone else's (a user's directory): the store's core.user is read first.
chown nobody "$etc" "$etc/tlsbox.db"
refused_on "$etc"
is "$rc" 1 "a directory of nobody's with a file of root's and a store: exit 1"
like "$out" "$etc: refused as the state directory: .*belongs to nobody, not to the service user 'tlsbox', and holds 'passwd.conf'" \
    "naming its owner"
is "$(stat -c %U "$etc")" nobody "the directory stays nobody's"
# Refused before the store is opened: not migrated, no -wal or -shm beside it.
is "$(stat -c %s "$etc/tlsbox.db") $(ls -A "$etc" | tr '\n' ' ')" "0 passwd.conf tlsbox.db " \
    "its store stays empty (0 bytes, not migrated) and nothing is added beside it"
# A store a run left (schema, settings): its core.user is read without
# writing to it, and the --set values of the refused start are not stored.
held="$TB_TMP/held"
mkdir -m 0700 "$held"
# started_in DIR: tlsboxd as root on DIR, up (tlsboxctl status answers),
# then stopped; 0 if it started.
started_in() {
    local keep=$TB_STATE r
    TB_STATE=$1
    tb_start_daemon --set site.https_port="$(tb_free_port)" --set site.http_port=0 \
        --set site.bind=127.0.0.1
    r=$?
    tb_stop_daemon
    TB_STATE=$keep
    return $r
}
started_in "$held"
ok $? "a store made by an earlier run in a directory of its own"
rm -f "$held/control.sock"
echo "nobody's notes" >"$held/notes.txt"
chown -R nobody "$held"
sum=$(md5sum <"$held/tlsbox.db")
refused_on "$held"
is "$rc" 1 "that directory given to nobody, with a file of nobody's in it: exit 1"
like "$out" "$held: refused as the state directory: .*belongs to nobody, not to the service user 'tlsbox', and holds 'notes.txt'" \
    "naming its owner, the service user its store names and the file"
is "$(md5sum <"$held/tlsbox.db") $(ls -A "$held" | tr '\n' ' ')" "$sum notes.txt tlsbox.db " \
    "the store is byte for byte as it was (no --set value written) and no -wal or -shm is left"
# Its core.user is nobody: the directory is that user's, so it is taken.
sqlite3 "$held/tlsbox.db" "INSERT INTO settings (key, value, updated_at) VALUES ('core.user', 'nobody', 0)"
started_in "$held"
ok $? "with core.user nobody in that store it starts there"
# A web server's directory (/srv) holding only its www/.
srv="$TB_TMP/srv"
mkdir -m 0755 "$srv" "$srv/www"
refused_on "$srv"
is "$rc $(stat -c %U "$srv")" "1 root" "a root-owned directory with only a www/ in it is refused too"
# Reached through a symbolic link: refused by name, nothing made in the
# target (before, the check did not look there and tlsbox.db was created).
etc2="$TB_TMP/etc2"
mkdir -m 0755 "$etc2"
echo "root's config" >"$etc2/passwd.conf"
ln -s "$etc2" "$TB_TMP/etc-link"
refused_on "$TB_TMP/etc-link"
is "$rc" 1 "a state directory given as a symbolic link (to $etc2): exit 1"
like "$out" "$TB_TMP/etc-link: $TB_TMP/etc-link is a symbolic link \\(to $etc2\\): the store is never opened through one" \
    "with an error naming the link and where it leads"
is "$(ls -A "$etc2" | tr '\n' ' ')" "passwd.conf " "and nothing made in the directory it leads to"

# What may be taken: an empty directory (root's, made for it); one that is
# tlsbox's already (/var/lib/tlsbox from the package) even with a file of
# root's in it, which stays root's; one holding only what tlsboxd makes
# (a demo start that stopped before the drop: store and www/).
starts_on() {
    TB_STATE=$1
    shift
    tb_start_daemon --set site.https_port="$(tb_free_port)" --set site.http_port=0 \
        --set site.bind=127.0.0.1 "$@"
}
mkdir -m 0700 "$TB_TMP/empty"
starts_on "$TB_TMP/empty"
ok $? "started as root on an existing empty directory"
is "$(stat -c %U "$TB_STATE")" tlsbox "which is now tlsbox's"
tb_stop_daemon
ok $? "and stops"
# A new file system mounted for the state: empty but for mkfs's lost+found
# (a tmpfs with one stands for it), root's mount point.
mkdir -m 0700 "$TB_TMP/disk"
if mount -t tmpfs -o mode=0755,size=64m tmpfs "$TB_TMP/disk" 2>/dev/null; then
    mkdir -m 0700 "$TB_TMP/disk/lost+found"
    starts_on "$TB_TMP/disk"
    ok $? "started as root on a new file system's root holding only lost+found"
    is "$(stat -c %U "$TB_STATE") $(stat -c %U:%a "$TB_STATE/lost+found")" "tlsbox root:700" \
        "the directory is tlsbox's now, lost+found stays root's, 0700"
    tb_stop_daemon
    umount "$TB_TMP/disk"
    mkdir -m 0700 "$TB_TMP/nodisk" "$TB_TMP/nodisk/lost+found"
    refused_on "$TB_TMP/nodisk"
    is "$rc" 1 "a lost+found in a directory that is no file system's root is refused"
else
    ok 0 "# SKIP no tmpfs mount here: lost+found of a new file system"
    ok 0 "# SKIP no tmpfs mount here"
    ok 0 "# SKIP no tmpfs mount here"
fi
mkdir -m 0700 "$TB_TMP/pkg"
chown tlsbox:tlsbox "$TB_TMP/pkg"
echo "root's notes" >"$TB_TMP/pkg/notes.txt"
chmod 0600 "$TB_TMP/pkg/notes.txt"
starts_on "$TB_TMP/pkg"
ok $? "started as root on a directory of tlsbox's that holds a file of root's"
is "$(stat -c %U:%a "$TB_STATE/notes.txt")" root:600 "that file stays root's, 0600"
is "$(find "$TB_STATE" -maxdepth 1 \( -type f -o -type s \) -user tlsbox -printf '%f\n' | sort |
    tr '\n' ' ')" "control.sock tlsbox.db tlsbox.db-shm tlsbox.db-wal " \
    "tlsbox has the store, its WAL and shm and the socket, nothing else"
tb_stop_daemon
ok $? "and stops"
mkdir -m 0700 "$TB_TMP/demo" "$TB_TMP/demo/www"
: >"$TB_TMP/demo/tlsbox.db"
chmod 0600 "$TB_TMP/demo/tlsbox.db"
starts_on "$TB_TMP/demo" --demo
ok $? "started as root in demo mode on a root-owned directory holding only a store and www/"
is "$(stat -c %U "$TB_STATE" "$TB_STATE/tlsbox.db" | sort -u)" tlsbox "both are tlsbox's now"
tb_stop_daemon
ok $? "and stops"
starts_on "$TB_TMP/demo" --demo
ok $? "and starts again there"
tb_stop_daemon

# ---- as an ordinary user ----------------------------------------------------
# The tlsbox user itself stands for "an ordinary user": setpriv starts the
# daemon without root, as a shell of that user (or systemd's User=) would.
run_as() {
    setpriv --reuid tlsbox --regid tlsbox --clear-groups "$@"
}
ustate="$TB_TMP/ustate"
mkdir -m 0700 "$ustate" && chown tlsbox:tlsbox "$ustate"
TB_STATE="$ustate"
P2=$(tb_free_port)
TB_TLSBOXD_REAL="$TB_TLSBOXD"
TB_TLSBOXD="$TB_TMP/as-user"
printf '#!/bin/sh\nexec setpriv --reuid tlsbox --regid tlsbox --clear-groups "%s" "$@"\n' \
    "$TB_TLSBOXD_REAL" >"$TB_TLSBOXD"
chmod 0755 "$TB_TLSBOXD"
tb_start_daemon --demo --set site.https_port="$P2" --set site.http_port=0 --set site.bind=127.0.0.1
ok $? "as an ordinary user in demo mode it starts"
pid=$TB_PID
is "$(st "${pid:-0}" Uid)" "$U $U $U $U" "and runs as that user"
is "$(st "${pid:-0}" CapEff)" 0000000000000000 "with no capability"
got=$(curl -sk --max-time 10 "https://127.0.0.1:$P2/" | grep -c "<html" || true)
ok $((got < 1)) "the demo site answers over HTTPS"
# Never root, so never able to open a port below 1024: a live move there is
# refused, not stored for a restart that could not open it either.
low=$(tb_free_low_port)
out=$(tb_ctl set site.https_port "$low" 2>&1)
is "$?" 1 "a live change to privileged port $low of a daemon that never was root: exit 1"
like "$out" "site\.https_port: port $low on 127\.0\.0\.1 is below 1024: it opens only while tlsboxd starts as root, and this one did not: refused" \
    "saying why"
is "$(tb_ctl get site.https_port)" "$P2" "the store keeps the port served"
tb_stop_daemon
ok $? "and stops"

# systemd's User=tlsbox + AmbientCapabilities=CAP_NET_BIND_SERVICE: a port
# below 1024 binds, then the main thread drops the capability.
low=$(tb_free_low_port)
printf '#!/bin/sh\nexec setpriv --reuid tlsbox --regid tlsbox --clear-groups --inh-caps +net_bind_service --ambient-caps +net_bind_service "%s" "$@"\n' \
    "$TB_TLSBOXD_REAL" >"$TB_TLSBOXD"
tb_start_daemon --set site.https_port="$low" --set site.http_port=0 --set site.bind=127.0.0.1 \
    --set site.root="$TB_TMP/www"
ok $? "as tlsbox with ambient CAP_NET_BIND_SERVICE it starts"
tb_wait_port "$low"
ok $? "and listens on privileged port $low"
pid=$TB_PID
is "$(threads_unlike "$U $U $U $U|$Z $Z $Z $Z|1")" "" \
    "none of its $(ls /proc/"${pid:-0}"/task | wc -l) threads keeps a capability once bound"
is "$(curl -sk --max-time 10 -o /dev/null -w '%{http_code}' "https://127.0.0.1:$low/f16k.txt")" 200 \
    "and serves"
tb_stop_daemon
ok $? "and stops"

# A plugin thread that blocks every signal, the core's capability drop
# signal included (the kit forbids it), would keep CAP_NET_BIND_SERVICE:
# tlsboxd refuses to run.
bdir="$TB_TMP/blocker-plugins"
mkdir -p "$bdir" && cp "$top_builddir/tests/plugins/.libs/sig_blocker.so" "$bdir/"
mkdir -m 0700 "$TB_TMP/bstate" && chown tlsbox:tlsbox "$TB_TMP/bstate"
out=$(timeout 30 "$TB_TLSBOXD" --state-dir "$TB_TMP/bstate" --plugin-dir "$bdir" --foreground \
    --set admin.port="$(tb_free_port)" --set admin.bind=127.0.0.1 2>&1)
rc=$?
is "$rc" 1 "with a plugin thread that blocks the capability drop signal: exit 1"
like "$out" "thread [0-9]+ \\(tlsboxd\\) still holds a capability after 2 s: it blocks signal [0-9]+ \\(SIGRTMIN\\+4\\)" \
    "naming the thread and the signal"
done_testing
