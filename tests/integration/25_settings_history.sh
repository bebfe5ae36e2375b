#!/bin/bash
# Settings history and undo, on the real daemon through tlsboxctl and the
# control socket's API: every write is one change with the values before and
# after; undo puts them back as a new change, validated and applied like any
# write; a change that cannot be undone (changed again since, a secret, an
# old value no longer valid, a port now taken, no such change) is refused
# with a message that says why, and nothing is written.
. "$(dirname "$0")/lib.sh"
tb_setup

P1=$(tb_free_port)
P2=$(tb_free_port)
tb_start_daemon --demo --set site.https_port="$P1" --set site.http_port="$P2"
ok $? "tlsboxd starts"
db() { sqlite3 "$TB_STATE/tlsbox.db" "$1"; }
api() { curl -s --unix-socket "$TB_STATE/control.sock" "$@"; }
api_code() { curl -s -o "$TB_TMP/reply" -w '%{http_code}' --unix-socket "$TB_STATE/control.sock" "$@"; }
# The stored settings and the history, as text: a refusal must leave both.
snapshot() {
    db "SELECT key, value FROM settings ORDER BY key;
        SELECT count(*), max(id) FROM settings_changes; SELECT count(*) FROM settings_change_items"
}
last_change() { db "SELECT max(id) FROM settings_changes"; }

# ---- one write, one change ------------------------------------------------
tb_ctl set site.idle_timeout 30 >/dev/null
c1=$(last_change)
is "$(db "SELECT key, quote(old_value), quote(new_value), secret FROM settings_change_items
          WHERE change_id = $c1")" "site.idle_timeout|NULL|'30'|0" \
    "set records one change: from the default (NULL) to 30"
is "$(db "SELECT actor, undo_of IS NULL FROM settings_changes WHERE id = $c1")" "control|1" \
    "by the control socket's user, not an undo"

# Several settings in one PUT are one change.
is "$(api_code -X PUT http://x/api/v1/plugins/site/settings \
    -d '{"idle_timeout": 45, "max_connections_per_ip": 20}')" 200 "two site settings in one PUT"
c2=$(last_change)
is "$(db "SELECT key || ':' || quote(old_value) || '->' || quote(new_value)
          FROM settings_change_items WHERE change_id = $c2 ORDER BY key" | tr '\n' ' ')" \
    "site.idle_timeout:'30'->'45' site.max_connections_per_ip:NULL->'20' " \
    "are one change with both settings, old and new values"
# Writing the value a setting already has changes nothing.
tb_ctl set site.idle_timeout 45 >/dev/null
is "$(last_change)" "$c2" "a write of the same value records no change"

out=$(tb_ctl settings history site)
ok $? "settings history site exits 0"
like "$out" "^CHANGE +TIME \(UTC\) +BY +SETTING +OLD -> NEW" "it prints a header"
like "$out" "
$c2 +[0-9-]+ [0-9:]+ +control +site\.idle_timeout +30 -> 45
 +site\.max_connections_per_ip +\(default\) -> 20
$c1 +[0-9-]+ [0-9:]+ +control +site\.idle_timeout +\(default\) -> 30" \
    "newest first, each setting with its old and new value"
is "$(tb_ctl --json settings history site | jq -r '.changes[0] | "\(.id) \(.undoable)"')" \
    "$c2 true" "the newest change can be undone"
is "$(tb_ctl --json settings history site | jq -r '.changes[1] | "\(.undoable) \(.undo_blocked)"')" \
    "false site.idle_timeout was changed again by change $c2" "the older one cannot, and says why"

# ---- undo ----------------------------------------------------------------
out=$(tb_ctl settings undo "$c2")
is "$? $out" "0 change $c2 undone by change $((c2 + 1))" "settings undo puts change $c2 back"
c3=$(last_change)
is "$(tb_ctl get site.idle_timeout) $(tb_ctl get site.max_connections_per_ip)" "30 256" \
    "both settings have their old values (30, and the default 256)"
is "$(db "SELECT count(*) FROM settings WHERE key = 'site.max_connections_per_ip'")" 0 \
    "the one that was at its default has no stored value again"
is "$(db "SELECT undo_of FROM settings_changes WHERE id = $c3")" "$c2" "the undo is change $c3, of $c2"
like "$(tb_ctl settings history site)" "\(undone by change $c3\)" "history says change $c2 was undone"
is "$(db "SELECT action, target, detail FROM audit WHERE action LIKE 'settings.%'
          ORDER BY id DESC LIMIT 2" | sort | tr '\n' ' ')" \
    "settings.reset|site.max_connections_per_ip|(default) settings.set|site.idle_timeout|30 " \
    "the undo's writes are in the audit log like any write"
is "$(db "SELECT action FROM audit WHERE action LIKE 'POST settings/%' ORDER BY id DESC LIMIT 1")" \
    "POST settings/history/$c2/undo" "and so is the undo request itself"

# Undoing it again is refused: the settings hold what the undo left.
before=$(snapshot)
out=$(tb_ctl settings undo "$c2" 2>&1)
is "$? $out" "1 tlsboxctl: cannot undo settings change $c2: site.idle_timeout was changed again by change $c3 (it is 30 now); undo that one first" \
    "undoing a change twice is refused, naming the newer change"
is "$(snapshot)" "$before" "and changes nothing"

# Undoing the undo makes the change again.
tb_ctl settings undo "$c3" >/dev/null
is "$(tb_ctl get site.idle_timeout) $(tb_ctl get site.max_connections_per_ip)" "45 20" \
    "undoing the undo makes change $c2 again"

# ---- refusals: nothing written ------------------------------------------
before=$(snapshot)
out=$(tb_ctl settings undo 999999 2>&1)
is "$? $out" "1 tlsboxctl: settings change 999999: no such change (the newest 1000 are kept)" \
    "an unknown change is refused"
is "$(api_code -X POST http://x/api/v1/settings/history/999999/undo -d '{}')" 404 "with 404 over the API"
is "$(api_code -X POST http://x/api/v1/settings/history/x1/undo -d '{}')" 404 "a path without a number: 404"
out=$(tb_ctl settings undo -3 2>&1)
is "$?" 2 "a number that is not a change is a usage error"
is "$(snapshot)" "$before" "none of these wrote anything"

# A secret: the history says it changed, never what to.
tb_ctl set acme.eab_hmac c2VjcmV0LWhtYWMta2V5 >/dev/null
cs=$(last_change)
is "$(db "SELECT secret, quote(old_value), quote(new_value) FROM settings_change_items
          WHERE change_id = $cs")" "1|NULL|NULL" "a secret's change keeps no value"
is "$(db "SELECT count(*) FROM settings_change_items WHERE new_value LIKE '%c2VjcmV0%'
          OR old_value LIKE '%c2VjcmV0%'")" 0 "the secret is nowhere in the history"
unlike "$(tb_ctl --json settings history acme)" "c2VjcmV0" "nor in its listing"
like "$(tb_ctl settings history acme)" "acme\.eab_hmac +\*{8} -> \*{8}" "which shows ******** for it"
before=$(snapshot)
out=$(tb_ctl settings undo "$cs" 2>&1)
is "$? $out" "1 tlsboxctl: cannot undo settings change $cs: it set acme.eab_hmac, a secret, whose old value is not kept; set it again (tlsboxctl set acme.eab_hmac VALUE)" \
    "undoing a secret's change is refused"
is "$(snapshot)" "$before" "and changes nothing"

# An old value the plugin no longer takes (its rules changed since): the
# history row is made by hand, as an older plugin version would have left it.
tb_ctl set site.workers 2 >/dev/null
cw=$(last_change)
db "UPDATE settings_change_items SET old_value = '65' WHERE change_id = $cw"
before=$(snapshot)
is "$(api_code -X POST "http://x/api/v1/settings/history/$cw/undo" -d '{}')" 400 \
    "an old value that is no longer valid: 400"
is "$(jq -r .error "$TB_TMP/reply")" \
    "cannot undo settings change $cw: site.workers: \"65\" is out of range 0..64" "saying which and why"
is "$(snapshot)" "$before" "and nothing is written"

# A port the site cannot take back (something else listens there now): the
# site refuses, the store keeps the value that serves.
P3=$(tb_free_port)
tb_ctl set site.https_port "$P3" >/dev/null
cp=$(last_change)
tb_wait_port "$P3" || diag "the site did not move to $P3"
# The site's old listener may still be closing: bind until it is free (10 s at most).
python3 -c 'import socket,sys,time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
for _ in range(100):
    try:
        s.bind(("127.0.0.1", int(sys.argv[1]))); break
    except OSError:
        time.sleep(0.1)
s.listen(1); print("up", flush=True); time.sleep(60)' "$P1" >"$TB_TMP/holder.out" &
holder=$!
tb_wait_file "$TB_TMP/holder.out" "$holder"
is "$(cat "$TB_TMP/holder.out")" up "another process listens on $P1 now"
before=$(snapshot)
out=$(tb_ctl settings undo "$cp" 2>&1)
rc=$?
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
is "$rc" 1 "undoing a port change onto a port now in use is refused"
like "$out" "cannot undo settings change $cp: site\.https_port: .*$P1.* in use" "with the site's reason"
is "$(snapshot)" "$before" "nothing is written"
is "$(curl -sk -o /dev/null -w '%{http_code}' "https://127.0.0.1:$P3/")" 200 "the site still serves on $P3"
# Once the port is free the same undo works.
out=$(tb_ctl settings undo "$cp")
is "$? $out" "0 change $cp undone by change $((cp + 1))" "with the port free again, the undo goes through"
tb_wait_port "$P1"
is "$(curl -sk -o /dev/null -w '%{http_code}' "https://127.0.0.1:$P1/")" 200 "and the site serves on $P1 again"

# A setting read at start only: the undo is stored and says when it applies.
tb_ctl set core.maintenance_threads 3 >/dev/null
cm=$(last_change)
out=$(tb_ctl settings undo "$cm")
like "$out" "^change $cm undone by change [0-9]+ \(.*restart" "an undo of a start-only setting says it waits for a restart"
is "$(db "SELECT count(*) FROM settings WHERE key = 'core.maintenance_threads'")" 0 "its old (default) value is stored"

# ---- tlsboxctl reset: no stored value, one change like any other --------
tb_ctl set site.idle_timeout 50 >/dev/null
dflt=$(tb_ctl --json settings site | jq -r '.[] | select(.key == "idle_timeout") | .default')
out=$(tb_ctl reset site.idle_timeout)
is "$? $out" "0 site.idle_timeout = $dflt (the default)" "reset prints the declared default ($dflt)"
is "$(tb_ctl get site.idle_timeout)" "$dflt" "which serves again"
is "$(db "SELECT count(*) FROM settings WHERE key = 'site.idle_timeout'")" 0 "and stores no value for it"
is "$(db "SELECT quote(old_value), quote(new_value) FROM settings_change_items
          WHERE change_id = $(last_change)")" "'50'|NULL" "the history has 50 -> the default"
out=$(tb_ctl settings undo "$(last_change)")
is "$(tb_ctl get site.idle_timeout)" 50 "and undo brings 50 back"
before=$(snapshot)
out=$(tb_ctl reset site.nosuch 2>&1)
is "$? $out" "1 tlsboxctl: site.nosuch: no such setting" "reset of an unknown setting is refused"
out=$(tb_ctl reset site 2>&1)
is "$?" 2 "reset without a key is a usage error"
out=$(tb_ctl reset "site.$(printf '\377')" 2>&1)
is "$?" 2 "reset of a name that is not UTF-8 is a usage error"
is "$(snapshot)" "$before" "none of these wrote anything"

# ---- listing: paging, filter, survives a restart ------------------------
n_site=$(db "SELECT count(DISTINCT change_id) FROM settings_change_items WHERE key LIKE 'site.%'")
ids=$(api "http://x/api/v1/settings/history?plugin=site&limit=2" | jq -r '[.changes[].id] | join(" ")')
next=$(api "http://x/api/v1/settings/history?plugin=site&limit=2" | jq -r .next_before)
is "$next" "${ids##* }" "a page of 2 names where the next one starts"
all=$(api "http://x/api/v1/settings/history?plugin=site&limit=500" | jq '.changes | length')
is "$all" "$n_site" "the site filter lists every change of a site setting ($n_site)"
is "$(api "http://x/api/v1/settings/history?plugin=site&limit=500" |
    jq '[.changes[] | select([.items[].key | startswith("site.")] | any | not)] | length')" 0 \
    "and only those"
is "$(tb_ctl --json settings history site --before "$c2" | jq -r '[.changes[].id | select(. >= '"$c2"')] | length')" 0 \
    "settings history --before $c2 lists only older changes"
like "$(tb_ctl settings history site --before "$c2")" "
$c1 +[0-9-]+ [0-9:]+ +control +site\.idle_timeout +\(default\) -> 30" "among them change $c1"
# %00 used to cut the value short: an empty filter that listed every change.
# (Other bad escapes, "%zz", stay literal text, as libmicrohttpd leaves them.)
is "$(api_code "http://x/api/v1/settings/history?plugin=%00site&limit=500")" 400 "%00 is refused"
like "$(jq -r .error "$TB_TMP/reply")" '^query string: bad percent escape at byte [0-9]+ ' \
    "saying where"
is "$(api "http://x/api/v1/settings/history?plugin=%25zzsite&limit=500" | jq '.changes | length')" \
    0 "a literal %zz names no plugin: nothing listed"
is "$(api "http://x/api/v1/settings/history?plugin=%73ite&limit=500" | jq '.changes | length')" \
    "$n_site" "an escaped name still filters (%73ite is site)"
is "$(api_code "http://x/api/v1/settings/history?limit=0")" 400 "limit=0 is refused"
is "$(jq -r .error "$TB_TMP/reply")" "limit=0: expected a whole number from 1 to 500" "saying the range"

tb_stop_daemon
ok $? "daemon stops cleanly"
tb_start_daemon --demo
ok $? "and starts again"
is "$(tb_ctl --json settings history site | jq '.changes | length')" "$(( n_site < 50 ? n_site : 50 ))" \
    "the history is still there after a restart"
tb_ctl set site.idle_timeout 60 >/dev/null
tb_ctl settings undo "$(last_change)" >/dev/null
is "$(tb_ctl get site.idle_timeout)" 50 "and undo works after it (back to 50)"

# Values of another JSON type than the setting's are refused, as PUT
# /settings/KEY refuses them, and nothing is written.
before=$(snapshot)
is "$(api_code -X PUT http://x/api/v1/plugins/site/settings -d '{"idle_timeout": 4.5e1}')" 400 \
    "a number with an exponent (4.5e1) for an integer: 400"
is "$(jq -r .error "$TB_TMP/reply")" \
    "site.idle_timeout: 45 is not a whole number (write it without a point or exponent)" "saying so"
is "$(api_code -X PUT http://x/api/v1/plugins/site/settings -d '{"idle_timeout": ["50"]}')" 400 \
    "a list for a single value: 400"
is "$(jq -r .error "$TB_TMP/reply")" \
    "site.idle_timeout: a list is given, but the setting is one value, not a list" "saying so"
long=$(printf 'a%.0s' $(seq 1 63))
is "$(api_code -X PUT http://x/api/v1/plugins/core/settings -d "{\"hostname\": \"$long.$long.$long.$long.$long\"}")" \
    400 "a host name of 319 characters (labels of 63): 400"
is "$(snapshot)" "$before" "nothing was written"
is "$(api_code -X PUT http://x/api/v1/plugins/core/settings -d '{"plugins_disabled": ["example"]}')" 200 \
    "a list for a list setting: taken"
is "$(tb_ctl get core.plugins_disabled)" example "as one item"
tb_ctl set core.plugins_disabled "" >/dev/null
for v in 99999999999999999999 +1 " 1" 0; do
    tb_ctl settings undo "$v" >/dev/null 2>&1
    is "$?" 2 "tlsboxctl settings undo '$v': a usage error"
done

tb_stop_daemon
ok $? "daemon stops cleanly"
done_testing
