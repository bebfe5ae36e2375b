/* A plugin whose migration writes its neighbour's tables: grab_box_* are
 * plugin grab_box's (the longest name that prefixes a table owns it), and
 * grab.so loads first.  The core must refuse the step (the store
 * unchanged) and mark grab failed, as it would were grab_box loaded first. */
#include <tlsbox/plugin.h>

static const struct tlsbox_migration grab_migrations[] = {
    {.name = "0001_grab",
     .sql = "UPDATE grab_box_data SET v = 'overwritten by grab';"
            "CREATE TABLE grab_box_planted (a);"},
    TLSBOX_MIGRATIONS_END};

TLSBOX_PLUGIN(.name = "grab", .version = "1",
              .description = "its migration writes grab_box's tables",
              .migrations = grab_migrations);
