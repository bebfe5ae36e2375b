/* The neighbour plugin grab writes into (tests/plugins/grab.c): a table of
 * its own with one row. */
#include <tlsbox/plugin.h>

static const struct tlsbox_migration grab_box_migrations[] = {
    {.name = "0001_data",
     .sql = "CREATE TABLE grab_box_data (v TEXT);"
            "INSERT INTO grab_box_data VALUES ('precious');"},
    TLSBOX_MIGRATIONS_END};

TLSBOX_PLUGIN(.name = "grab_box", .version = "1", .description = "a table grab must not touch",
              .migrations = grab_box_migrations);
