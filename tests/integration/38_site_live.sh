#!/bin/bash
# One daemon owns its ports: a second tlsboxd on the same ports refuses to
# start and names the holder (no silent SO_REUSEPORT sharing).  site.root,
# site.workers and the ports change live: the new root serves the next
# request, new workers and ports start while the old ones drain, the two
# ports swap by way of a free port (not in one change, which says so), and h2load
# running meanwhile sees no failed request.  tlsboxd --set values the site
# cannot start with are undone, in a second instance and across a restart;
# a site that failed to start starts once its settings are mended.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/plugins/site/tests/site_itest.sh"
tb_setup
site_www
mkdir -p "$TB_TMP/www2"
echo "site A" >"$TB_TMP/www/who.txt"
echo "site B" >"$TB_TMP/www2/who.txt"
cp "$TB_TMP/www/f16k.txt" "$TB_TMP/www2/"
site_start --set site.workers=2
ok $? "tlsboxd serves the site"

# ---- a second instance -------------------------------------------------------------------------
"$TB_TLSBOXD" --state-dir "$TB_TMP/state2" --plugin-dir "$TB_PLUGINS" --foreground \
    --set site.https_port="$P_HTTPS" --set site.http_port="$P_HTTP" \
    --set site.root="$TB_TMP/www2" --set site.bind=127.0.0.1,::1 >"$TB_TMP/second.log" 2>&1 &
pid2=$!
for i in $(seq 1 100); do kill -0 $pid2 2>/dev/null || break; sleep 0.1; done
if kill -0 $pid2 2>/dev/null; then
    kill $pid2
    wait $pid2
    rc2=running
else
    wait $pid2
    rc2=$?
fi
is "$rc2" 1 "a second tlsboxd on the same ports exits with status 1"
like "$(cat "$TB_TMP/second.log")" "site.https_port: port $P_HTTPS on 127.0.0.1 is in use by pid $TB_PID \\(tlsboxd\\)" \
    "its error names the port and the process holding it"
like "$(cat "$TB_TMP/second.log")" "held by another process.*not starting" "and says it does not start"
is "$(sqlite3 "$TB_TMP/state2/tlsbox.db" "SELECT count(*) FROM settings WHERE key LIKE 'site.%'")" 0 \
    "and keeps none of the site's --set values (a later start does not fail the same way)"
like "$(cat "$TB_TMP/second.log")" "tlsboxd --set: site could not start with the values given to site.https_port, site.http_port, site.root, site.bind \\(see above\\): undone" \
    "its log says they were undone"
n=0
for i in 1 2 3 4 5 6; do
    [ "$(curl -s --cacert "$CA" --max-time 5 "$URL/who.txt")" = "site A" ] && n=$((n + 1))
done
is "$n" 6 "all 6 requests answered by the first instance"

# ---- live changes under load -----------------------------------------------------------------
# h2load_bg URL [ARGS]: 3 s of requests in the background (pid in $lpid), so
# that the change made meanwhile happens under load.
h2load_bg() {
    local u=$1
    shift
    timeout -s INT 60 h2load -c 8 -m 4 -D 3 "$@" "$u" >"$TB_TMP/h2load.out" 2>&1 &
    lpid=$!
    sleep 0.5
}
h2load_failed() { # after wait $lpid, in the test's own shell
    sed -n 's/^requests: .* \([0-9]*\) failed, \([0-9]*\) errored.*/failed=\1 errored=\2/p' "$TB_TMP/h2load.out"
}

# wait_who TEXT: until who.txt says TEXT (a root change reaches the site
# through the settings event, a moment later), at most 5 s; prints it.
wait_who() {
    local i who
    for i in $(seq 1 50); do
        who=$(curl -s --cacert "$CA" --max-time 5 "$URL/who.txt")
        [ "$who" = "$1" ] && break
        sleep 0.1
    done
    echo "$who"
}

h2load_bg "$URL/who.txt"
tb_ctl set site.root "$TB_TMP/www2" >/dev/null
is "$(wait_who "site B")" "site B" "site.root changed live: served from the new root"
wait $lpid
is "$(h2load_failed)" "failed=0 errored=0" "h2load meanwhile: no failed request"
# A root that does not exist (a typing error) is refused, not stored to
# answer every request with 404.
out=$(tb_ctl set site.root "$TB_TMP/www3" 2>&1)
is "$?" 1 "site.root set live to a missing directory: tlsboxctl set exits 1"
is "$out" "tlsboxctl: site.root: cannot open $TB_TMP/www3 as a directory: No such file or directory; create it first (the site still serves $TB_TMP/www2)" \
    "saying why and which root still serves"
is "$(tb_ctl get site.root)" "$TB_TMP/www2" "the store keeps the root served"
is "$(curl -s --cacert "$CA" --max-time 5 "$URL/who.txt")" "site B" "which still answers"
mkdir "$TB_TMP/www3" && echo "site C" >"$TB_TMP/www3/who.txt"
tb_ctl set site.root "$TB_TMP/www3" >/dev/null
is "$?" 0 "once the directory exists the same change is accepted"
is "$(wait_who "site C")" "site C" "and served"
tb_ctl set site.root "$TB_TMP/www2" >/dev/null
is "$(wait_who "site B")" "site B" "back to $TB_TMP/www2"

h2load_bg "$URL/f16k.txt"
tb_ctl set site.workers 3 >/dev/null && sleep 0.5 && tb_ctl set site.workers 1 >/dev/null
ok $? "site.workers 2 -> 3 -> 1 live"
wait $lpid
is "$(h2load_failed)" "failed=0 errored=0" "h2load (HTTP/2) meanwhile: no failed request"
h2load_bg "$URL/f16k.txt" --h1
tb_ctl set site.workers 2 >/dev/null && sleep 0.5 && tb_ctl set site.workers 1 >/dev/null
wait $lpid
is "$(h2load_failed)" "failed=0 errored=0" "h2load (HTTP/1.1) across 1 -> 2 -> 1: no failed request"
for i in $(seq 1 50); do
    [ "$(ls /proc/"$TB_PID"/task | while read -r k; do cat /proc/"$TB_PID"/task/$k/comm; done |
        grep -c '^site-w')" = 1 ] && break
    sleep 0.1
done
t=$(ls /proc/"$TB_PID"/task | while read -r k; do cat /proc/"$TB_PID"/task/$k/comm; done | grep -c '^site-w')
is "$t" 1 "one worker thread left once the old ones drained"
[ "$t" = 1 ] || diag "threads: $(cat /proc/"$TB_PID"/task/*/comm | tr '\n' ' '); open: $(site_metric tlsbox_site_connections_open); sockets: $(ss -tanp 2>/dev/null | grep "pid=$TB_PID," | awk "{print \$1}" | sort | uniq -c | tr "\n" " ")"

new_http=$(tb_free_port)
h2load_bg "$URL/f16k.txt"
tb_ctl set site.http_port "$new_http" >/dev/null
ok $? "site.http_port changed live"
tb_wait_port "$new_http"
wait $lpid
is "$(h2load_failed)" "failed=0 errored=0" "h2load on the HTTPS port meanwhile: no failed request"
# The settings event applies the change a moment after tlsboxctl returns.
port_closed() {
    local i
    for i in $(seq 1 50); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null || return 0
        sleep 0.1
    done
    return 1
}
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$new_http/x")
is "$code" 301 "the new plain port answers"
port_closed "$P_HTTP"
curl -s -o /dev/null --max-time 5 "http://127.0.0.1:$P_HTTP/x"
is "$?" 7 "the old plain port is closed (connection refused)"

new_https=$(tb_free_port)
tb_ctl set site.https_port "$new_https" >/dev/null
tb_wait_port "$new_https"
is "$(curl -s --cacert "$CA" --max-time 5 "https://localhost:$new_https/who.txt")" "site B" \
    "the new HTTPS port serves"
loc=$(curl -s -o /dev/null -w '%header{location}' --max-time 5 "http://127.0.0.1:$new_http/x")
is "$loc" "https://127.0.0.1:$new_https/x" "the redirect points at the new HTTPS port"
port_closed "$P_HTTPS"
curl -s --cacert "$CA" -o /dev/null --max-time 5 "$URL/"
is "$?" 7 "the old HTTPS port is closed"
# A port someone else holds: the change is refused, the old port keeps serving.
# The holder runs as the daemon's user: a daemon that dropped root can only
# name processes of its own user.
mkdir -m 0777 "$TB_TMP/busy" && chmod 0777 "$TB_TMP/busy"
du=$(awk '/^Uid:/ { print $2 }' "/proc/$TB_PID/status")
dg=$(awk '/^Gid:/ { print $2 }' "/proc/$TB_PID/status")
setpriv --reuid "$du" --regid "$dg" --clear-groups /usr/bin/python3 -c '
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past TIME_WAIT, not a listener
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen()
open(sys.argv[2], "w").close()
time.sleep(120)' "$P_HTTPS" "$TB_TMP/busy/ready" &
busy=$!
for i in $(seq 1 50); do [ -e "$TB_TMP/busy/ready" ] && break; sleep 0.1; done
out=$(tb_ctl set site.https_port "$P_HTTPS" 2>&1)
is "$?" 1 "tlsboxctl set site.https_port to a port in use exits 1"
like "$out" "site\.https_port: port $P_HTTPS on 127\.0\.0\.1 is in use by pid $busy \\(python3\\)" \
    "its message names the setting, the port, the address and the holder"
is "$(tb_ctl get site.https_port)" "$new_https" "the store keeps the port that is served"
is "$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT value FROM settings WHERE key = 'site.https_port'")" \
    "$new_https" "the store file too"
is "$(curl -s --cacert "$CA" --max-time 5 "https://localhost:$new_https/who.txt")" "site B" \
    "a change to a port in use is refused; the current port keeps serving"
like "$(cat "$TB_TMP/daemon.log")" "port $P_HTTPS on 127.0.0.1 is in use by pid $busy \\(python3\\)" \
    "and the log names the holder"
# The API (the web UI's path) refuses it the same way: 409 and the message.
put() { # put PATH JSON: print the status, the reply in $TB_TMP/put.json
    curl -s --unix-socket "$TB_STATE/control.sock" -o "$TB_TMP/put.json" -w '%{http_code}' \
        -X PUT -H 'Content-Type: application/json' -d "$2" "http://x/api/v1/$1"
}
is "$(put plugins/site/settings "{\"https_port\": $P_HTTPS, \"idle_timeout\": 61}")" 409 \
    "PUT plugins/site/settings with the port in use: 409"
like "$(jq -r .error "$TB_TMP/put.json")" "^site\.https_port: port $P_HTTPS on 127\.0\.0\.1 is in use" \
    "with the message, which the web UI puts by the port's field"
is "$(tb_ctl get site.https_port) $(tb_ctl get site.idle_timeout)" "$new_https 60" \
    "nothing of that request is stored"
is "$(put settings/site.https_port "{\"value\": $P_HTTPS}")" 409 "PUT settings/site.https_port: 409"
kill $busy 2>/dev/null
wait $busy 2>/dev/null
is "$(curl -s --cacert "$CA" --max-time 5 "https://localhost:$new_https/who.txt")" "site B" \
    "after all that the current port still serves"
# Once the port is free the same change is applied, and stored.
tb_ctl set site.https_port "$P_HTTPS" >/dev/null
ok $? "the same change once the port is free: accepted"
is "$(tb_ctl get site.https_port)" "$P_HTTPS" "and stored"
is "$(curl -s --cacert "$CA" --max-time 5 "$URL/who.txt")" "site B" \
    "served on the new port when tlsboxctl returns"

# The two ports are the site's own: one change cannot give both the same port,
# nor swap them (each is still held by the other until the change is made);
# the messages say so, and that a free port in between does it.
out=$(tb_ctl set site.https_port "$new_http" 2>&1)
is "$?" 1 "site.https_port set to site.http_port's port: exit 1"
is "$out" "tlsboxctl: site.https_port and site.http_port are both $new_http: HTTPS and plain HTTP need a port each (to swap the two, move one to a free port first)" \
    "the message names both settings, not this process as a stranger holding the port"
is "$(put plugins/site/settings "{\"https_port\": $new_http, \"http_port\": $P_HTTPS}")" 409 \
    "PUT plugins/site/settings swapping the two ports in one change: 409"
is "$(jq -r .error "$TB_TMP/put.json")" "site.https_port: port $new_http is site.http_port's until that changes: change site.http_port first (to swap the two, by way of a free port)" \
    "the message says how to swap them"
is "$(tb_ctl get site.https_port) $(tb_ctl get site.http_port)" "$P_HTTPS $new_http" \
    "the store keeps both ports"
swap_ports() { # swap_ports HTTPS HTTP: move the site from HTTP/HTTPS to these, by way of a free port
    tb_ctl set site.http_port "$(tb_free_port)" >/dev/null &&
        tb_ctl set site.https_port "$1" >/dev/null && tb_ctl set site.http_port "$2" >/dev/null
}
swap_ports "$new_http" "$P_HTTPS"
ok $? "the two ports swapped by way of a free port (three changes)"
tb_wait_port "$new_http"
is "$(curl -s --cacert "$CA" --max-time 5 "https://localhost:$new_http/who.txt")" "site B" \
    "HTTPS serves on the former plain port"
tb_wait_port "$P_HTTPS"
loc=$(curl -s -o /dev/null -w '%header{location}' --max-time 5 "http://127.0.0.1:$P_HTTPS/x")
is "$loc" "https://127.0.0.1:$new_http/x" "and plain HTTP on the former HTTPS port redirects to it"
swap_ports "$P_HTTPS" "$new_http"
ok $? "and swapped back"
tb_wait_port "$P_HTTPS"
is "$(curl -s --cacert "$CA" --max-time 5 "$URL/who.txt")" "site B" "HTTPS serves on its first port again"

# An address this host does not have: refused, and the message names site.bind
# (the web UI shows it by that field), not a port.
out=$(tb_ctl set site.bind 240.0.0.1 2>&1)
is "$?" 1 "site.bind set live to an address not on this host: exit 1"
is "$out" "tlsboxctl: site.bind: cannot listen on 240.0.0.1 port $P_HTTPS: Cannot assign requested address" \
    "the message names site.bind and the address"
is "$(tb_ctl get site.bind)" "127.0.0.1,::1" "the store keeps the addresses served"
is "$(curl -s --cacert "$CA" --max-time 5 "$URL/who.txt")" "site B" "which still serve"
# An IPv6 address this host does not have, on a host with IPv6: refused the
# same way, not skipped with a warning (a change accepted that listened on
# nothing there).  This host has IPv6: the site serves ::1 above.
out=$(tb_ctl set site.bind 127.0.0.1,fd00:7e57::1 2>&1)
is "$?" 1 "site.bind set live to an IPv6 address not on this host: exit 1"
is "$out" "tlsboxctl: site.bind: cannot listen on fd00:7e57::1 port $P_HTTPS: Cannot assign requested address" \
    "the message names site.bind and the address"
is "$(tb_ctl get site.bind)" "127.0.0.1,::1" "the store keeps the addresses served"
# An IPv4-mapped IPv6 address (the site's IPv6 sockets are IPv6-only): the
# message names site.bind too, not site.https_port.
out=$(tb_ctl set site.bind 127.0.0.1,::ffff:127.0.0.2 2>&1)
is "$?" 1 "site.bind set live to an IPv4-mapped IPv6 address: exit 1"
is "$out" "tlsboxctl: site.bind: cannot listen on ::ffff:127.0.0.2 port $P_HTTPS: Invalid argument" \
    "the message names site.bind and the address"
# The wildcard for the addresses served: the served ones hold the same ports
# until the change is made, and both cannot listen at once.  The message says
# so, not that the admin UI or another plugin holds the port.
out=$(tb_ctl set site.bind 0.0.0.0,:: 2>&1)
is "$?" 1 "site.bind set live from 127.0.0.1,::1 to 0.0.0.0,:: on the same ports: exit 1"
like "$out" "^tlsboxctl: site\.bind: 0\.0\.0\.0 port $P_HTTPS overlaps 127\.0\.0\.1, where the site listens on that port now.*change site\.https_port and site\.http_port in the same change" \
    "the message names the overlap with the addresses served, and how to make the change"
is "$(tb_ctl get site.bind)" "127.0.0.1,::1" "the store keeps the addresses served"
# A list whose addresses overlap each other can never listen: the message
# says which two, not that the admin UI holds the port.  The same at start,
# where the daemon did not start, blaming site.https_port.
out=$(tb_ctl set site.bind 127.0.0.1,::1,0.0.0.0 2>&1)
is "$?" 1 "site.bind set live to 127.0.0.1,::1,0.0.0.0: exit 1"
like "$out" "^tlsboxctl: site\.bind: 0\.0\.0\.0 and 127\.0\.0\.1, both in the list, are one address or overlap" \
    "the message names the two addresses of the list"
p3=$(tb_free_port)
"$TB_TLSBOXD" --state-dir "$TB_TMP/state3" --plugin-dir "$TB_PLUGINS" --foreground \
    --set admin.port="$(tb_free_port)" --set admin.bind=127.0.0.1 \
    --set site.https_port="$p3" --set site.http_port=0 --set site.root="$TB_TMP/www" \
    --set site.bind=127.0.0.1,127.0.0.1 >"$TB_TMP/third.log" 2>&1 &
pid3=$!
for i in $(seq 1 100); do kill -0 $pid3 2>/dev/null || break; sleep 0.1; done
kill $pid3 2>/dev/null
wait $pid3
like "$(cat "$TB_TMP/third.log")" "site\.bind: 127\.0\.0\.1 and 127\.0\.0\.1, both in the list, are one address or overlap" \
    "tlsboxd started with site.bind 127.0.0.1,127.0.0.1: the log says what is wrong with the list"

# ---- SIGHUP: settings changed in the store take effect ---------------------------------------
# The store changed behind the daemon's back (a restored backup, sqlite3):
# SIGHUP moves the site to the stored port and root, as tlsboxctl set would.
hup_https=$(tb_free_port)
sqlite3 "$TB_STATE/tlsbox.db" "UPDATE settings SET value = '$hup_https' WHERE key = 'site.https_port';
    UPDATE settings SET value = '$TB_TMP/www' WHERE key = 'site.root'"
kill -HUP "$TB_PID"
tb_wait_port "$hup_https"
ok $? "after SIGHUP the site listens on the stored https port $hup_https"
URL="https://localhost:$hup_https"
is "$(wait_who "site A")" "site A" "and serves the stored root"
port_closed "$P_HTTPS"
curl -s --cacert "$CA" -o /dev/null --max-time 5 "https://localhost:$P_HTTPS/"
is "$?" 7 "the old HTTPS port is closed"
is "$(tb_ctl get site.https_port)" "$hup_https" "tlsboxctl get says the port that is served"
# A stored root the site cannot open: the log says so, the old root serves.
sqlite3 "$TB_STATE/tlsbox.db" "UPDATE settings SET value = '$TB_TMP/gone' WHERE key = 'site.root'"
kill -HUP "$TB_PID"
for i in $(seq 1 50); do
    grep -q "settings reload: site refused" "$TB_TMP/daemon.log" && break
    sleep 0.1
done
like "$(cat "$TB_TMP/daemon.log")" "settings reload: site refused the stored values: site\.root: cannot open $TB_TMP/gone as a directory.*the old ones stay in effect" \
    "a reload to a root that does not exist: the log says it is not applied"
is "$(curl -s --cacert "$CA" --max-time 5 "$URL/who.txt")" "site A" "and the old root still serves"
tb_ctl set site.root "$TB_TMP/www2" >/dev/null
is "$(wait_who "site B")" "site B" "tlsboxctl set moves it on from there"
# A stored port the site cannot open (the admin port: the daemon holds it)
# with a root it can: the root is applied, the port refused, and the log
# line says which is which.
sqlite3 "$TB_STATE/tlsbox.db" "UPDATE settings SET value = '$TB_ADMIN_PORT' WHERE key = 'site.https_port';
    UPDATE settings SET value = '$TB_TMP/www' WHERE key = 'site.root'"
kill -HUP "$TB_PID"
for i in $(seq 1 50); do
    grep -q "settings reload: site applied" "$TB_TMP/daemon.log" && break
    sleep 0.1
done
like "$(grep 'settings reload: site applied' "$TB_TMP/daemon.log")" \
    "settings reload: site applied site\.root; it refused site\.https_port: port $TB_ADMIN_PORT on [^ ]+ is taken by this tlsboxd already \\(the admin UI's admin\.port, or another plugin's port\\): choose a free port; the old values of those refused stay in effect until tlsboxd restarts" \
    "a reload with a new root and a port in use: the log says the root was applied and the port refused"
is "$(wait_who "site A")" "site A" "the stored root serves"
is "$(curl -s --cacert "$CA" --max-time 5 "$URL/who.txt")" "site A" "on the port that served before"
tb_ctl set site.https_port "$hup_https" >/dev/null
is "$(tb_ctl get site.https_port)" "$hup_https" "tlsboxctl set stores the served port again"

# ---- tickets survive the master key change ---------------------------------------------------
# A session ticket is taken (TLS 1.3 and 1.2); the master key is then made a
# week old and the daemon restarted, which replaces it.  Tickets under the
# previous master still resume.
sess() { # sess VERSION-FLAG OUT|IN FILE: print "New" or "Reused"
    # stdin stays open until the ticket is saved (out), or 1 s (in).
    [ "$2" = out ] && rm -f "$3"
    (for i in $(seq 1 100); do
        if [ "$2" = out ]; then [ -s "$3" ] && break; else [ "$i" -gt 10 ] && break; fi
        sleep 0.1
    done) | openssl s_client -connect "127.0.0.1:$tport" -servername localhost \
        -CAfile "$CA" "$1" "-sess_$2" "$3" 2>/dev/null | sed -n 's/^\(New\|Reused\), .*/\1/p'
}
tport=$hup_https
is "$(sess -tls1_3 out "$TB_TMP/s13")" New "TLS 1.3: a full handshake, ticket saved"
is "$(sess -tls1_2 out "$TB_TMP/s12")" New "TLS 1.2: a full handshake, ticket saved"
is "$(sess -tls1_3 in "$TB_TMP/s13")" Reused "the TLS 1.3 ticket resumes"
tb_stop_daemon
sqlite3 "$TB_STATE/tlsbox.db" "UPDATE ticket_keys SET created_at = created_at - 8 * 86400"
: >"$TB_TMP/daemon.log"
site_start --set site.workers=1
ok $? "restarted with a master key older than a week"
tport=$P_HTTPS
like "$(cat "$TB_TMP/daemon.log")" "new session ticket master key" "the master key was replaced"
is "$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT count(*) FROM ticket_keys")" 2 "the previous one is kept"
is "$(sess -tls1_3 in "$TB_TMP/s13")" Reused "a TLS 1.3 ticket under the previous master resumes"
is "$(sess -tls1_2 in "$TB_TMP/s12")" Reused "a TLS 1.2 ticket under the previous master resumes"

# --set values the site cannot start with (both its ports the same) are
# undone: the site starts with the values stored before, and says why.
tb_stop_daemon
: >"$TB_TMP/daemon.log"
same=$(tb_free_port)
tb_start_daemon --set site.https_port="$same" --set site.http_port="$same" --set site.workers=2
ok $? "tlsboxd --set with both site ports $same: tlsboxd starts"
log=$(cat "$TB_TMP/daemon.log")
like "$log" "plugin site: start hook failed: site.https_port and site.http_port are both $same:" \
    "the site's start fails, and the log says why"
like "$log" "tlsboxd --set: site could not start with the values given to site.https_port, site.http_port, site.workers \\(see above\\): undone, the values stored before are back" \
    "the log names the --set keys undone"
is "$(tb_ctl get site.https_port) $(tb_ctl get site.http_port) $(tb_ctl get site.workers)" \
    "$P_HTTPS $P_HTTP 1" "the store keeps the ports and workers it had"
is "$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT actor, target, detail FROM audit ORDER BY id DESC LIMIT 3" | sort)" \
    "tlsboxd --set undone|site.http_port|$P_HTTP
tlsboxd --set undone|site.https_port|$P_HTTPS
tlsboxd --set undone|site.workers|1" "the audit log records the three undone"
is "$(curl -s --unix-socket "$TB_STATE/control.sock" http://x/api/v1/plugins |
    jq -r '.[] | select(.name == "site") | "\(.state) \(.error)"')" "running null" \
    "the site runs, with no error left"
tb_wait_port "$P_HTTPS"
is "$(curl -s --cacert "$CA" --max-time 5 "$URL/who.txt")" "site A" "HTTPS serves on the port stored before"

# A site that cannot start (site.bind names an address this machine does not
# have, as after an address change) is mended from the web UI's form: the
# change is stored and the site starts with it, without a restart.
tb_stop_daemon
sqlite3 "$TB_STATE/tlsbox.db" "UPDATE settings SET value = '192.0.2.1' WHERE key = 'site.bind'"
: >"$TB_TMP/daemon.log"
tb_start_daemon
ok $? "tlsboxd starts with site.bind 192.0.2.1 stored"
site_state() {
    curl -s --unix-socket "$TB_STATE/control.sock" http://x/api/v1/plugins |
        jq -r '.[] | select(.name == "site") | "\(.state) \(.error)"'
}
is "$(site_state)" "failed start hook failed: site.bind: cannot listen on 192.0.2.1 port $P_HTTPS: Cannot assign requested address" \
    "the site failed, and says why"
is "$(put plugins/site/settings '{"bind": "127.0.0.1,::1"}')" 200 "PUT plugins/site/settings with a bind address it has: 200"
like "$(jq -r '.[] | select(.key == "bind") | "\(.value) \(.note)"' "$TB_TMP/put.json")" \
    "^127\\.0\\.0\\.1,::1 plugin site is not running \\(start hook failed: site\\.bind: cannot listen on 192\\.0\\.2\\.1 .*\\): stored, tlsboxd starts it again with this now" \
    "the reply's note (which the form shows) says the site starts again with it"
tb_wait_port "$P_HTTPS"
is "$(curl -s --cacert "$CA" --max-time 5 "$URL/who.txt")" "site A" "the site serves, no restart needed"
is "$(site_state)" "running null" "and runs, with no error left"
is "$(tb_ctl get site.bind)" "127.0.0.1,::1" "the new value is stored"

# Each live change retires a generation of workers; once drained it is
# freed, not kept until the site stops (each kept its workers' epoll,
# eventfd and root descriptors: 6 a change with 2 workers, without bound).
tb_ctl set site.workers 2 >/dev/null
sleep 0.5
fds0=$(ls "/proc/$TB_PID/fd" | wc -l)
for i in $(seq 1 12); do
    tb_ctl set site.http_port "$(tb_free_port)" >/dev/null || break
    sleep 0.2
done
sleep 0.5
fds1=$(ls "/proc/$TB_PID/fd" | wc -l)
ok "$([ $((fds1 - fds0)) -le 8 ]; echo $?)" \
    "12 live port changes: the daemon holds $((fds1 - fds0)) more descriptors (at most one generation's)"

tb_stop_daemon
ok $? "tlsboxd stops"
done_testing
