#!/bin/bash
# The daemon answers a plugin's host calls as <tlsbox/host.h> and the kit's
# mock host say (tests/plugins/host_rules.c): what a plugin's unit tests
# saw against the mock, it meets in the daemon.
. "$(dirname "$0")/lib.sh"
tb_setup
dir="$TB_TMP/plugins"
mkdir -p "$dir"
cp "$top_builddir/tests/plugins/.libs/host_rules.so" "$dir/"
# A neighbour whose settings host_rules reads (setting_get below).
cp "$top_builddir/build-plugins/example.so" "$dir/"
TB_PLUGINS="$dir"
tb_start_daemon --plugin "$dir/host_rules.so" --plugin "$dir/example.so"
ok $? "tlsboxd starts with host_rules"

# setting_set from .apply_settings: -EDEADLK, as the mock answers; it used
# to wait for the settings lock its own thread held, and every later
# settings call (the control socket's thread with it) hung.
out=$(timeout 10 "$TB_TLSBOXCTL" --state-dir "$TB_STATE" set host_rules.trigger b 2>&1)
is "$?" 0 "a change whose .apply_settings calls setting_set: done (no hang)"
is "$(grep -o 'host_rules: apply_set rc=.*' "$TB_TMP/daemon.log")" \
    "host_rules: apply_set rc=-$(python3 -c 'import errno; print(errno.EDEADLK)') err=host_rules.other: set from .apply_settings, which the core refuses (it would wait for itself)" \
    "the nested setting_set is refused with -EDEADLK and a message naming the key"
is "$(timeout 10 "$TB_TLSBOXCTL" --state-dir "$TB_STATE" get host_rules.trigger)" b \
    "the change itself is stored, and settings still answer"
is "$(timeout 10 "$TB_TLSBOXCTL" --state-dir "$TB_STATE" get host_rules.other)" a \
    "the refused nested change is not"

# A "char **err" of NULL (host.h: pass NULL to do without the message),
# as the mock takes it: cert_install used to write through it and kill
# tlsboxd with SIGSEGV; dh_set too.
einval=$(python3 -c 'import errno; print(errno.EINVAL)')
api() { curl -s -m 10 --unix-socket "$TB_STATE/control.sock" "http://x/api/v1/$1"; }
is "$(api host_rules/cert_install)" "{\"rc\":-$einval}" "cert_install of junk with err NULL: -EINVAL"
is "$(api host_rules/dh_set)" "{\"rc\":-$einval}" "dh_set of junk with err NULL: -EINVAL"
kill -0 "$TB_PID" 2>/dev/null
ok $? "tlsboxd still runs"

# setting_get of another owner's key: the stored value, else its default
# (core and admin are always registered), NULL for a plugin not loaded or
# no such key.  tests/unit/pdk/mock_host_test reads the same from the mock.
is "$(api 'host_rules/setting_get?key=core.hostname')" '{"value":""}' "setting_get core.hostname: its default"
is "$(api 'host_rules/setting_get?key=core.cert_warn_days')" '{"value":"14,7,3,1"}' \
    "setting_get core.cert_warn_days: its default"
is "$(api 'host_rules/setting_get?key=admin.session_idle')" '{"value":"1800"}' \
    "setting_get admin.session_idle: its default"
is "$(api 'host_rules/setting_get?key=admin.port')" "{\"value\":\"$TB_ADMIN_PORT\"}" \
    "setting_get admin.port: the stored value (--set)"
is "$(api 'host_rules/setting_get?key=core.nope')" '{"value":null}' "setting_get of a key no table has: NULL"
is "$(api 'host_rules/setting_get?key=site.https_port')" '{"value":null}' \
    "setting_get of a plugin's key, that plugin not loaded: NULL"
is "$(api 'host_rules/setting_get?key=example.greeting')" '{"value":"hello"}' \
    "setting_get of a loaded neighbour's key: its default (the mock: tlsbox_mock_neighbour)"

# How the core registers and chooses API routes; the mock host does the
# same (tests/unit/pdk/mock_host_test).
like "$(cat "$TB_TMP/daemon.log")" "host_rules: route_slash rc=-$einval" \
    "a pattern starting with '/' is refused"
api_code() { curl -s -m 10 -w ' %{http_code}' --unix-socket "$TB_STATE/control.sock" "$@"; }
is "$(api_code http://x/api/v1/host_rules/other)" '{"route":"prefix"} 200' \
    "the prefix route takes the rest (the literal ones won above)"
is "$(api_code http://x/api/v1/host_rules/)" \
    '{"error":"no such API path: /api/v1/host_rules/"} 404' "but not an empty rest"
is "$(api_code -X DELETE http://x/api/v1/host_rules/dh_set)" \
    '{"error":"method DELETE not allowed on /api/v1/host_rules/dh_set"} 405' \
    "a path served for other methods only: 405"
is "$(api_code -X POST http://x/api/v1/host_rules/created)" '{} 201' \
    "a handler that sets no body: {}"
# api_route_add from a handler: -EDEADLK, as the mock answers; it used to
# wait for the route table's lock its own thread held, and the control
# socket (or admin server) answered nothing more.
edeadlk=$(python3 -c 'import errno; print(errno.EDEADLK)')
is "$(curl -s -m 10 -X POST --unix-socket "$TB_STATE/control.sock" \
    http://x/api/v1/host_rules/add_route)" "{\"rc\":-$edeadlk}" \
    "api_route_add from an API handler: -EDEADLK"
is "$(timeout 10 "$TB_TLSBOXCTL" --state-dir "$TB_STATE" get host_rules.trigger)" b \
    "and the control socket still answers"

# A store_open connection gives extended result codes (the mock's too).
is "$(api host_rules/store_dup)" '{"first":101,"second":1555}' \
    "a duplicate key: SQLITE_CONSTRAINT_PRIMARYKEY (1555), not SQLITE_CONSTRAINT (19)"
eexist=$(python3 -c 'import errno; print(errno.EEXIST)')
like "$(cat "$TB_TMP/daemon.log")" "host_rules: http_again rc=-$eexist" \
    "a second site HTTP route for the same prefix: -EEXIST"
like "$(cat "$TB_TMP/daemon.log")" "host_rules: timer_far rc=-$einval" \
    "a timer first due over 366 days away: -EINVAL"

tb_stop_daemon
ok $? "stops cleanly"
done_testing
