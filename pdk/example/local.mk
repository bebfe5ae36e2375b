# The plugin kit's example: built in tree (and linked into build-plugins/ for
# the tests and the demo) but not installed as a plugin; its sources are
# installed with the kit, and tests/integration builds them out of tree
# against the installed kit (tlsbox-plugin.pc).
noinst_LTLIBRARIES += pdk/example/example.la
pdk_example_example_la_SOURCES = pdk/example/example.c
pdk_example_example_la_CFLAGS = $(PLUGIN_CFLAGS)
pdk_example_example_la_LDFLAGS = $(PLUGIN_LDFLAGS)
BUILD_TREE_PLUGINS += pdk/example/example.la

pdkexampledir = $(datadir)/tlsbox/pdk/example
dist_pdkexample_DATA = pdk/example/example.c pdk/example/example_test.c pdk/example/example.ui.js pdk/example/Makefile

# Its unit test against the kit's mock host (tests/integration/12 builds the
# same test out of tree against the installed kit).
check_PROGRAMS += pdk/example/example_test
TESTS += pdk/example/example_test
pdk_example_example_test_SOURCES = pdk/example/example_test.c pdk/example/example.c
pdk_example_example_test_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden $(GNUTLS_CFLAGS) $(SQLITE_CFLAGS)
pdk_example_example_test_LDADD = $(MOCKHOST_LIBS)
