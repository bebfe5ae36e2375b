#!/bin/bash
# A plugin writes only its own tables: the real daemon hands the test plugin
# "rogue" store connections (host->store_open) on which writing certificates,
# acme_orders, settings, or changing the schema of what it does not own is
# refused with one log line each, and nothing changes; its own table takes
# writes.  A migration that writes a core table fails the plugin, store
# unchanged.  A table of rogue's with a foreign key to settings, already in
# the store, keeps rogue from starting, store unchanged; the core's delete
# that cascades into it runs none of its triggers.
. "$(dirname "$0")/lib.sh"
tb_setup
db="$TB_STATE/tlsbox.db"

dir="$TB_TMP/plugins"
mkdir -p "$dir"
for p in rogue rogue_schema; do
    cp "$top_builddir/tests/plugins/.libs/$p.so" "$dir/"
done
cp "$top_builddir"/plugins/acme/.libs/acme.so "$dir/"
TB_PLUGINS="$dir"

tb_start_daemon
ok $? "tlsboxd starts with the rogue plugins and acme"
try() {
    curl -s --unix-socket "$TB_STATE/control.sock" "http://x/api/v1/rogue/try/$1"
}
# A row of acme's for rogue to try to delete (acme's account key column
# holds no key here: nothing reads it).
sqlite3 "$db" "INSERT INTO acme_accounts (directory, key_pem, created_at) VALUES ('https://ca.test/dir', 'placeholder', 1);
    INSERT INTO acme_orders (account_id, cert_name, domains, key_type, status, created_at, updated_at)
    VALUES (1, 'a.test', '[\"a.test\"]', 'ecdsa-p256', 'pending', 1, 1)"
# Rows holding private keys are compared by a hash of their whole content,
# so a failed comparison prints no key.
dump() {
    sqlite3 "$db" .schema
    sqlite3 "$db" "SELECT id, name, serial, status FROM certificates;
        SELECT hex(sha3_query('SELECT * FROM certificates ORDER BY id'));
        SELECT hex(sha3_query('SELECT * FROM acme_accounts ORDER BY id'));
        SELECT * FROM acme_orders;
        SELECT key, value FROM settings; SELECT * FROM plugin_schema; SELECT * FROM sqlite_sequence;
        PRAGMA user_version"
}
before=$(dump)
ncerts=$(sqlite3 "$db" "SELECT count(*) FROM certificates WHERE status = 'active'")
ok $((ncerts < 1)) "the daemon made its certificate ($ncerts active)"

is "$(try own | jq -c .)" '{"ok":true,"error":""}' "rogue writes its own table"
is "$(sqlite3 "$db" "SELECT t FROM rogue_notes")" "mine" "the row is there"
is "$(try counted | jq -c .)" '{"ok":true,"error":""}' \
    "rogue fills its own AUTOINCREMENT table up to the last id"
is "$(sqlite3 "$db" "SELECT seq FROM sqlite_sequence WHERE name = 'rogue_counted'")" \
    9223372036854775807 "SQLite keeps its counter without asking the guard"
before=$(dump)
# neighbour: a table named for the loaded plugin rogue_schema, whose name
# starts with "rogue_" but is not rogue's.
for what in certificates acme_orders settings drop create neighbour index pragma attach keys; do
    n0=$(wc -l <"$TB_TMP/daemon.log")
    want='{"ok":false,"error":"not authorized"}'
    [ "$what" = keys ] && want='{"ok":false,"error":"access to certificates.key_pem is prohibited"}'
    is "$(try "$what" | jq -c .)" "$want" "$what: refused"
    new=$(tail -n +$((n0 + 1)) "$TB_TMP/daemon.log" | grep 'refused to')
    is "$(printf '%s\n' "$new" | grep -c .)" 1 "$what: one log line"
    like "$new" "plugin rogue: store: refused to (.* a plugin writes only its own tables \(named rogue_\.\.\.\)|create table rogue_schema_mine: it is plugin rogue_schema's \(a plugin writes only its own tables\)|read .*: it holds secrets of the core)" \
        "$what: it names the plugin and the rule"
done
# What SQLite does not show the guard: the rows of sqlite_sequence a
# statement changes, the new name of a rename, a table's foreign keys.  Each
# is refused with one line saying what, where and why.
runtime="here: a plugin's tables are created and altered only by its migration steps"
# The statistics table exists once something ran ANALYZE (here, the test).
sqlite3 "$db" "ANALYZE"
before=$(dump)
counters="sqlite_sequence: it holds the AUTOINCREMENT counters of every table, the core's too"
while IFS='|' read -r what re; do
    n0=$(wc -l <"$TB_TMP/daemon.log")
    is "$(try "$what" | jq -c .)" '{"ok":false,"error":"not authorized"}' "$what: refused"
    new=$(tail -n +$((n0 + 1)) "$TB_TMP/daemon.log" | grep 'refused to')
    is "$(printf '%s\n' "$new" | grep -c .)" 1 "$what: one log line"
    like "$new" "plugin rogue: store: refused to $re" "$what: it says what was refused, where, why"
done <<EOF
seq_delete|delete from $counters
seq_rename|update $counters
rename|alter table rogue_counted $runtime
fk|create table rogue_linked $runtime
add_fk|alter table rogue_notes $runtime
vtable|create table rogue_v $runtime
analyze|analyze: the query planner's statistics cover every table, the core's too
stat1|insert into sqlite_stat1: it holds the query planner's statistics of every table, the core's too
EOF
like "$(grep "refused to" "$TB_TMP/daemon.log" | grep -v rogue_schema | head -1)" "refused to update certificates" \
    "the line names the action and the table"
grep -q 'refused to delete from acme_orders' "$TB_TMP/daemon.log"
ok $? "another plugin's table is refused alike"
like "$(grep 'refused to read' "$TB_TMP/daemon.log")" "refused to read certificates.key_pem" \
    "reading a private key column is refused, named"
is "$(try read | jq -c .)" '{"ok":true,"error":""}' "reading the rest of certificates is allowed"
is "$(try totp | jq -c .)" '{"ok":false,"error":"access to admin_users.totp_secret is prohibited"}' \
    "reading the admins' two-factor secrets is refused"
is "$(try recovery | jq -c .)" '{"ok":false,"error":"access to admin_recovery_codes.hash is prohibited"}' \
    "and their recovery codes' hashes"

# A trigger on its own table is allowed, but what it does runs under the
# same rule: the insert that fires it is refused as a whole.
is "$(try trigger | jq -r .ok)" true "rogue creates a trigger on its own table"
is "$(try fire | jq -c .)" '{"ok":false,"error":"not authorized"}' \
    "an insert whose trigger writes certificates is refused"
is "$(sqlite3 "$db" "SELECT count(*) FROM rogue_notes")" 1 "and its own row was not added either"
sqlite3 "$db" "DROP TRIGGER rogue_trg"
is "$(dump)" "$before" "certificates, acme_orders, settings, schema, counters: all unchanged"
out=$(tb_ctl set core.cert_warn_days 21 2>&1)
ok $? "the core still changes a setting, with its audit row ($out)"
is "$(sqlite3 "$db" "SELECT count(*) FROM audit WHERE action = 'settings.set'
    AND target = 'core.cert_warn_days' AND id < 9223372036854775807")" 1 "the audit row is there"

lines=$(grep 'rogue_schema' "$TB_TMP/daemon.log" | grep -v 'loaded plugin')
like "$lines" "plugin rogue_schema: migration 0001_takeover failed: .*not authorized" \
    "a migration that writes certificates fails, saying why"
like "$lines" "refused to update certificates" "and the guard names the table"
like "$(tb_ctl plugins)" "rogue_schema .* failed" "that plugin is marked failed"
is "$(sqlite3 "$db" "SELECT count(*) FROM sqlite_master WHERE name LIKE 'rogue_schema%'")" 0 \
    "its own table of that step is not in the store"
is "$(sqlite3 "$db" "SELECT count(*) FROM certificates WHERE status = 'revoked'")" 0 \
    "no certificate was revoked"
tb_stop_daemon
ok $? "stops cleanly"

# A store made before the core checked a plugin's foreign keys (made here by
# hand): rogue's table refers to settings, ON DELETE CASCADE, and its
# trigger revokes every certificate.  rogue is not started, saying which
# table refers to what, and nothing of the store changes; the others start.
# The core's delete of that setting cascades into the table, but fires no
# trigger on the core's connection, where no guard is.
sqlite3 "$db" "CREATE TABLE rogue_legacy (k TEXT REFERENCES settings (key) ON DELETE CASCADE);
    INSERT INTO rogue_legacy VALUES ('core.cert_warn_days');
    CREATE TRIGGER rogue_legacy_trg AFTER DELETE ON rogue_legacy BEGIN
    UPDATE certificates SET status = 'revoked'; END"
# (tb_start_daemon stores admin.port and admin.bind at each start.)
stored() {
    sqlite3 "$db" .schema
    sqlite3 "$db" "SELECT id, name, serial, status, updated_at FROM certificates;
        SELECT key, value, updated_at FROM settings WHERE key NOT LIKE 'admin.%';
        SELECT * FROM plugin_schema;
        SELECT * FROM rogue_legacy; SELECT id, name, created_at FROM admin_users;
        SELECT * FROM sqlite_sequence WHERE name <> 'audit'; PRAGMA user_version"
}
before=$(stored)
active=$(sqlite3 "$db" "SELECT count(*) FROM certificates WHERE status = 'active'")
n0=$(wc -l <"$TB_TMP/daemon.log")
tb_start_daemon
ok $? "tlsboxd starts with a rogue table that refers to settings"
new=$(tail -n +$((n0 + 1)) "$TB_TMP/daemon.log" | grep 'plugin rogue: refused')
is "$(printf '%s\n' "$new" | grep -c .)" 1 "one log line refuses rogue"
like "$new" "plugin rogue: refused: table rogue_legacy has a foreign key to settings, not plugin rogue's" \
    "it names the table and the table it refers to"
out=$(tb_ctl plugins)
like "$out" "rogue +[^ ]+ +[^ ]+ +failed" "rogue is not running"
like "$out" "acme +[^ ]+ +[^ ]+ +running" "acme runs"
after=$(stored)
diff <(echo "$before") <(echo "$after") | sed 's/^/# /'
is "$after" "$before" "schema, certificates, settings, plugin versions: all unchanged"
out=$(tb_ctl reset core.cert_warn_days 2>&1)
ok $? "the core deletes the setting rogue_legacy refers to ($out)"
is "$(sqlite3 "$db" "SELECT count(*) FROM rogue_legacy")" 0 "the delete cascaded into rogue_legacy"
is "$(sqlite3 "$db" "SELECT count(*) FROM certificates WHERE status = 'active'")" "$active" \
    "and rogue's trigger did not run on the core's connection: no certificate was revoked"
tb_stop_daemon
ok $? "stops cleanly"

done_testing
