/* A plugin whose migration writes a core table: the core must refuse the
 * step (the store unchanged) and mark the plugin failed. */
#include <tlsbox/plugin.h>

static const struct tlsbox_migration rogue_schema_migrations[] = {
    {.name = "0001_takeover",
     .sql = "CREATE TABLE rogue_schema_x (a);"
            "UPDATE certificates SET status = 'revoked';"},
    TLSBOX_MIGRATIONS_END};

TLSBOX_PLUGIN(.name = "rogue_schema", .version = "1",
              .description = "its migration writes certificates",
              .migrations = rogue_schema_migrations);
