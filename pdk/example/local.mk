# The plugin kit's example, built in tree like any plugin.  tests/integration
# also builds it out of tree against an installed kit (tlsbox-plugin.pc).
plugin_LTLIBRARIES += pdk/example/example.la
pdk_example_example_la_SOURCES = pdk/example/example.c
pdk_example_example_la_CFLAGS = $(PLUGIN_CFLAGS)
pdk_example_example_la_LDFLAGS = $(PLUGIN_LDFLAGS)
EXTRA_DIST += pdk/example/Makefile
