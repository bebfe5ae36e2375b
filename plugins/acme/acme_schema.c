/* The acme plugin's own tables (plugin kit ABI 1.1 migrations).
 *
 * Until kit 1.1 the core's schema (db/migrations/0001_init.sql) created
 * acme_accounts, acme_orders and acme_events, and acme kept its small
 * key/values in the core's plugin_kv.  Step 0001 therefore adopts those
 * tables in place where a store already has them (CREATE ... IF NOT EXISTS,
 * same columns as before: every row is kept) and creates them on a new store;
 * it copies acme's plugin_kv rows into acme_kv.  Never edit a shipped step:
 * add one.  (That copy reads the core's plugin_kv, which core schema 1 made:
 * a core migration that ever drops plugin_kv must keep a store on which
 * this step has not run yet working, e.g. by leaving an empty plugin_kv.) */
#include "plugins/acme/acme_plugin.h"

const struct tlsbox_migration acme_migrations[] = {
    {.name = "0001_tables",
     .sql =
         /* One account per directory URL, reused. */
     "CREATE TABLE IF NOT EXISTS acme_accounts ("
     "  id          INTEGER PRIMARY KEY AUTOINCREMENT,"
     "  directory   TEXT NOT NULL UNIQUE,"
     "  email       TEXT,"
     "  key_pem     BLOB NOT NULL,"
     "  account_url TEXT,"
     "  created_at  INTEGER NOT NULL);"
     /* Orders, kept so that a crash at any step resumes or restarts cleanly;
      * status: pending, ready, processing, valid, invalid, done, abandoned. */
     "CREATE TABLE IF NOT EXISTS acme_orders ("
     "  id           INTEGER PRIMARY KEY AUTOINCREMENT,"
     "  account_id   INTEGER NOT NULL REFERENCES acme_accounts(id),"
     "  cert_name    TEXT NOT NULL,"
     "  domains      TEXT NOT NULL,"
     "  key_type     TEXT NOT NULL,"
     "  order_url    TEXT,"
     "  status       TEXT NOT NULL,"
     "  finalize_url TEXT,"
     "  cert_url     TEXT,"
     "  key_pem      BLOB,"
     "  replaces     TEXT,"
     "  created_at   INTEGER NOT NULL,"
     "  updated_at   INTEGER NOT NULL);"
     /* Every attempt: what step, what problem, when the next try is. */
     "CREATE TABLE IF NOT EXISTS acme_events ("
     "  id           INTEGER PRIMARY KEY AUTOINCREMENT,"
     "  at           INTEGER NOT NULL,"
     "  cert_name    TEXT NOT NULL,"
     "  step         TEXT NOT NULL,"
     "  ok           INTEGER NOT NULL,"
     "  problem_type TEXT,"
     "  detail       TEXT,"
     "  next_attempt INTEGER);"
     "CREATE INDEX IF NOT EXISTS acme_events_by_cert ON acme_events(cert_name, at);"
     /* Cached ARI windows ("ari:<name>"), revoked serials ("revoked:<name>"). */
     "CREATE TABLE acme_kv ("
     "  key   TEXT PRIMARY KEY,"
     "  value BLOB) WITHOUT ROWID;"
     "INSERT INTO acme_kv (key, value) SELECT key, value FROM plugin_kv WHERE plugin = 'acme';"},
    /* dns-01 records put and not withdrawn yet (acme_answer.c): a row is
     * written before the update is sent and deleted once the record is
     * withdrawn, so that a record a killed tlsboxd left in the zone is
     * withdrawn at the next check.  No TSIG secret here: the settings keep
     * it, and the withdrawal uses theirs. */
    {.name = "0002_dns_records",
     .sql = "CREATE TABLE acme_dns_records ("
            "  id     INTEGER PRIMARY KEY,"
            "  server TEXT NOT NULL,"
            "  zone   TEXT NOT NULL,"
            "  fqdn   TEXT NOT NULL,"
            "  value  TEXT NOT NULL,"
            "  put_at INTEGER NOT NULL);"},
    TLSBOX_MIGRATIONS_END};
