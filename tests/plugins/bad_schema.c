/* A plugin whose second migration step fails: the core must leave the store
 * as it was (the first step's table included), mark the plugin failed and
 * serve on. */
#include <tlsbox/plugin.h>

static const struct tlsbox_migration bad_schema_migrations[] = {
    {.name = "0001_items",
     .sql = "CREATE TABLE bad_schema_items (id INTEGER PRIMARY KEY, v TEXT);"
            "INSERT INTO bad_schema_items (v) VALUES ('one');"},
    {.name = "0002_typo", .sql = "ALTER TABLE bad_schema_itemz ADD COLUMN w TEXT;"},
    TLSBOX_MIGRATIONS_END};

TLSBOX_PLUGIN(.name = "bad_schema", .version = "1", .description = "its second migration fails",
              .migrations = bad_schema_migrations);
