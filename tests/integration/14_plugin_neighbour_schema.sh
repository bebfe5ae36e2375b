#!/bin/bash
# A plugin's migration writes only its own tables, whatever order the
# plugins load in.  The longest plugin name that prefixes a table owns it,
# so grab_box_* tables are plugin grab_box's, not grab's; and grab.so sorts
# before grab_box.so.  When each plugin migrated as it loaded, grab's step
# ran before grab_box was known, and rewrote grab_box's rows and planted a
# table under its name.  What a user checks: with grab_box's table in the
# store from an earlier start, a start with grab added marks grab failed,
# saying whose table it touched, grab_box's row is as it was, no table is
# planted, and grab_box runs.
. "$(dirname "$0")/lib.sh"
tb_setup
db="$TB_STATE/tlsbox.db"
dir="$TB_TMP/plugins"
mkdir -p "$dir"
cp "$top_builddir/tests/plugins/.libs/grab_box.so" "$dir/"
TB_PLUGINS="$dir"

tb_start_daemon
ok $? "tlsboxd starts with grab_box alone"
is "$(sqlite3 "$db" "SELECT v FROM grab_box_data")" precious "its migration made its table and row"
tb_stop_daemon
ok $? "tlsboxd stops"

cp "$top_builddir/tests/plugins/.libs/grab.so" "$dir/"
tb_start_daemon
ok $? "tlsboxd starts with grab added"
like "$(grep 'plugin grab:' "$TB_TMP/daemon.log")" \
    "plugin grab: store: refused to update grab_box_data: it is plugin grab_box's" \
    "grab's step is refused: the table is grab_box's"
like "$(tb_ctl plugins)" "grab +.* failed" "grab is marked failed"
like "$(tb_ctl plugins)" "grab_box +.* running" "grab_box runs"
is "$(sqlite3 "$db" "SELECT v FROM grab_box_data")" precious "grab_box's row is as it was"
is "$(sqlite3 "$db" "SELECT count(*) FROM sqlite_master WHERE name = 'grab_box_planted'")" 0 \
    "no table is planted under grab_box's name"
is "$(sqlite3 "$db" "SELECT count(*) FROM plugin_schema WHERE plugin = 'grab'")" 0 \
    "grab's step is not recorded as applied"
tb_stop_daemon
ok $? "tlsboxd stops"
done_testing
