#!/bin/bash
# A store written by tlsbox before plugin kit 1.1 (core schema 1, which held
# acme's tables, and acme's values in the core's plugin_kv) upgrades in place:
# the acme plugin adopts its tables with every row (account, orders, events)
# and moves its values into acme_kv.  A new store gets the same columns.
# Keys in the old rows are generated here; none is printed or committed.
. "$(dirname "$0")/lib.sh"
tb_setup
db="$TB_STATE/tlsbox.db"
dir="$TB_TMP/plugins"
mkdir -p "$dir" "$TB_STATE"
chmod 700 "$TB_STATE"
cp "$top_builddir"/plugins/acme/.libs/acme.so "$dir/"
TB_PLUGINS="$dir"

openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$TB_TMP/account.pem" 2>/dev/null &&
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$TB_TMP/order.pem" 2>/dev/null
ok $? "generated an account key and an order key"
sqlite3 "$db" <"$top_srcdir/tests/fixtures/store_schema1.sql"
chmod 600 "$db"
sqlite3 "$db" <<SQL
INSERT INTO acme_accounts (directory, email, key_pem, account_url, created_at)
    VALUES ('https://ca.test/dir', 'ops@a.test', readfile('$TB_TMP/account.pem'),
            'https://ca.test/acct/7', 1700000000);
INSERT INTO acme_orders (account_id, cert_name, domains, key_type, order_url, status,
    finalize_url, cert_url, key_pem, replaces, created_at, updated_at) VALUES
    (1, 'a.test', '["a.test"]', 'ecdsa-p256', 'https://ca.test/o/1', 'done', NULL, NULL, NULL,
     NULL, 1700000100, 1700000200),
    (1, 'a.test', '["a.test","www.a.test"]', 'ecdsa-p256', 'https://ca.test/o/2', 'pending',
     'https://ca.test/f/2', NULL, readfile('$TB_TMP/order.pem'), 'aBc.123', 1700000300, 1700000400);
INSERT INTO acme_events (at, cert_name, step, ok, problem_type, detail, next_attempt) VALUES
    (1700000100, 'a.test', 'order', 1, NULL, NULL, NULL),
    (1700000300, 'a.test', 'challenge', 0, 'urn:ietf:params:acme:error:connection', 'refused', 1700003900),
    (1700000400, 'b.test', 'finalize', 0, NULL, 'timeout', 1700007000);
INSERT INTO plugin_kv (plugin, key, value) VALUES
    ('acme', 'ari:a.test', '{"id":"aBc.123","start":1,"end":2,"next":3}'),
    ('acme', 'revoked:b.test', '0a1b'),
    ('other', 'k', 'v');
SQL
is "$(sqlite3 "$db" "PRAGMA user_version; SELECT count(*) FROM acme_orders")" "1
2" "the old store is at schema 1 with two orders"
rows() {
    sqlite3 "$db" "SELECT * FROM acme_accounts ORDER BY id; SELECT * FROM acme_orders ORDER BY id;
        SELECT * FROM acme_events ORDER BY id" | sha256sum
}
old_rows=$(rows)
old_kv=$(sqlite3 "$db" "SELECT key, value FROM plugin_kv WHERE plugin = 'acme' ORDER BY key")

tb_start_daemon
ok $? "the daemon starts on the old store with the acme plugin"
nmig=$(ls "$top_srcdir"/db/migrations/[0-9][0-9][0-9][0-9]_*.sql | wc -l)
is "$(sqlite3 "$db" "PRAGMA user_version")" "$nmig" "the core schema is upgraded to $nmig"
is "$(sqlite3 "$db" "SELECT version FROM plugin_schema WHERE plugin = 'acme'")" 2 \
    "acme's tables are at its schema version 2 (0002 added acme_dns_records)"
is "$(rows)" "$old_rows" "account, orders and events: every row kept, value for value"
is "$(sqlite3 "$db" "SELECT count(*) FROM acme_accounts; SELECT count(*) FROM acme_orders;
    SELECT count(*) FROM acme_events")" "1
2
3" "1 account, 2 orders, 3 events"
is "$(sqlite3 "$db" "SELECT key, value FROM acme_kv ORDER BY key")" "$old_kv" \
    "acme's values moved into its own acme_kv"
like "$(tb_ctl plugins)" "acme .* running" "acme runs"
tb_stop_daemon

# A second start applies nothing again.
tb_start_daemon
is "$(grep -c 'plugin acme schema 0 -> 2' "$TB_TMP/daemon.log")" 1 "acme's steps ran once over two starts"
is "$(rows)" "$old_rows" "rows unchanged by the second start"
tb_stop_daemon

# A new store: acme creates the same columns it adopted.
cols() {
    for t in acme_accounts acme_orders acme_events acme_kv acme_dns_records; do
        sqlite3 "$1" "SELECT '$t', name, type, \"notnull\", pk FROM pragma_table_info('$t')"
    done
}
upgraded=$(cols "$db")
TB_STATE="$TB_TMP/fresh"
tb_start_daemon
is "$(cols "$TB_STATE/tlsbox.db")" "$upgraded" "a new store has the same acme columns as an adopted one"
is "$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT count(*) FROM acme_orders")" 0 "and no rows"
tb_stop_daemon

done_testing
