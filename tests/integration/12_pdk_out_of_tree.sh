#!/bin/bash
# The plugin kit as a third party uses it: install tlsbox to a prefix, build
# the example plugin out of tree with pkg-config, and run the installed
# daemon, which must find the plugins under its prefix with no flags.
. "$(dirname "$0")/lib.sh"
tb_setup

prefix="$TB_TMP/prefix"
make -C "$top_builddir" install prefix="$prefix" >"$TB_TMP/install.log" 2>&1
ok $? "make install prefix=... works"
pc=$(ls "$prefix"/lib*/pkgconfig/tlsbox-plugin.pc 2>/dev/null | head -1)
ok $([ -n "$pc" ]; echo $?) "tlsbox-plugin.pc is installed"
export PKG_CONFIG_PATH=$(dirname "$pc")
# The .pc file records the configured prefix; point it at this one.
sed -i "s|^prefix=.*|prefix=$prefix|" "$pc"
is "$(pkg-config --variable=abi_major tlsbox-plugin)" 1 "the kit exports its ABI major"
plugindir=$(pkg-config --variable=plugindir tlsbox-plugin)
like "$plugindir" "^$prefix/.*/tlsbox/plugins$" "the kit exports the plugin directory"

src="$TB_TMP/example-src"
mkdir -p "$src"
kitsrc="$prefix/share/tlsbox/pdk/example"
ok $([ -f "$kitsrc/example.c" ] && [ -f "$kitsrc/example_test.c" ] && [ -f "$kitsrc/Makefile" ]
    echo $?) "the kit installs the example's sources and its unit test"
ok $([ -f "$prefix/include/tlsbox/mock_host.h" ] && [ -f "$prefix/include/tlsbox/xalloc.h" ] &&
    ls "$prefix"/lib*/libtlsbox-mockhost.a >/dev/null 2>&1
    echo $?) "and the mock host (header and library) and the helpers header"
like "$(pkg-config --variable=mockhost_libs tlsbox-plugin)" "-ltlsbox-mockhost" \
    "tlsbox-plugin.pc names the mock host library"
# It is linked into third parties' tests: every symbol it defines is
# tlsbox_mock_*, so none can clash with theirs (the core code it compiles in,
# such as core/store_guard.c, is renamed).  An ASan build adds an
# __odr_asan.NAME companion for each global NAME: NAME is what counts.
is "$(nm --defined-only -g "$prefix"/lib*/libtlsbox-mockhost.a | awk 'NF == 3 {print $3}' |
    sed 's/^__odr_asan\.//' | grep -v '^tlsbox_mock' | sort | tr '\n' ' ')" "" \
    "the mock host library defines only tlsbox_mock_* symbols"
cp "$kitsrc/Makefile" "$src/"
# Out of tree under another name, as a third party starting from the example
# would, so it is told apart from the in-tree build.
rename='s/\.name = "example"/.name = "example_oot"/; s/"example\/hello"/"example_oot\/hello"/; s/example_greetings/example_oot_greetings/g'
sed "$rename" "$kitsrc/example.c" >"$src/example_oot.c"
sed "$rename" "$kitsrc/example_test.c" >"$src/example_oot_test.c"
make -C "$src" NAME=example_oot CFLAGS="-O2 -Wall -Wextra -Werror" >"$TB_TMP/build.log" 2>&1
rc=$?
ok $rc "the example builds out of tree against the installed kit (-Wall -Wextra -Werror)"
[ $rc -eq 0 ] || sed 's/^/# /' "$TB_TMP/build.log"
make -C "$src" NAME=example_oot CFLAGS="-O2 -Wall -Wextra -Werror" check >"$TB_TMP/check.log" 2>&1
rc=$?
ok $rc "its unit test builds against the installed mock host and passes"
[ $rc -eq 0 ] || sed 's/^/# /' "$TB_TMP/check.log"
plan=$(sed -n 's/^1\.\.\([0-9]*\)$/\1/p' "$TB_TMP/check.log")
ok $((${plan:-0} < 10)) "it planned its checks (${plan:-none})"
is "$(grep -c '^ok ' "$TB_TMP/check.log") $(grep -c '^not ok' "$TB_TMP/check.log")" "${plan:-x} 0" \
    "every planned check ran and passed"
syms=$(nm -D --defined-only "$src/example_oot.so" | awk '{print $3}' | grep -v '^_')
is "$syms" "tlsbox_plugin_descriptor" "it exports only the descriptor"
make -C "$src" NAME=example_oot install >/dev/null 2>&1
ok $? "make install puts it into the kit's plugin directory"

TB_TLSBOXD="$prefix/sbin/tlsboxd"
TB_TLSBOXCTL="$prefix/bin/tlsboxctl"
# No --plugin-dir: the installed daemon finds its own plugin directory.
: >>"$TB_TMP/daemon.log"
# --demo: the sample site comes from the installed data under the prefix
# (the ports stored by --set win over the site's demo defaults).
"$TB_TLSBOXD" --state-dir "$TB_STATE" --foreground --demo --set site.https_port="$(tb_free_port)" \
    --set site.http_port="$(tb_free_port)" >>"$TB_TMP/daemon.log" 2>&1 &
TB_PID=$!
for _ in $(seq 1 100); do
    tb_ctl status >/dev/null 2>&1 && break
    sleep 0.1
done
out=$(tb_ctl plugins)
like "$out" "example_oot .* running" "the installed daemon loads the out-of-tree plugin"
like "$out" "site .* running" "and the installed in-tree plugins"
unlike "$out" "^example " "the in-tree example is not installed as a plugin"
cmp -s "$TB_STATE/www/index.html" "$prefix/share/tlsbox/www/index.html"
ok $? "the installed daemon copied the sample page from its prefix's data"
n=$(find "$prefix/share/tlsbox/www" -maxdepth 1 -type f | wc -l)
files=files
[ "$n" -ne 1 ] || files=file
like "$(cat "$TB_TMP/daemon.log")" "demo mode: $n sample $files from $prefix/share/tlsbox/www/? in " \
    "and says how many files it copied, and from where"
body=$(curl -s --unix-socket "$TB_STATE/control.sock" http://x/api/v1/example_oot/hello)
like "$body" '"greeting":"hello"' "the out-of-tree plugin answers its route"
tb_stop_daemon
ok $? "stops cleanly"

done_testing
