# The bench plugin: load generator, crypto ceiling, report, policy A/B (bench.so).
bench_sources = \
	plugins/bench/bench.c plugins/bench/bench.h \
	plugins/bench/bench_api.c plugins/bench/bench_job.c plugins/bench/bench_local.c \
	plugins/bench/bench_report.c plugins/bench/bench_ab.c \
	plugins/bench/bench_ceiling.c \
	plugins/bench/bench_gen.c plugins/bench/bench_gen.h \
	plugins/bench/bench_conn.c plugins/bench/bench_conn.h \
	plugins/bench/bench_h1.c plugins/bench/bench_h2.c \
	plugins/bench/bench_opts.c plugins/bench/bench_opts.h \
	plugins/bench/bench_addr.c plugins/bench/bench_addr.h \
	plugins/bench/bench_stats.c plugins/bench/bench_stats.h \
	plugins/bench/bench_store.c plugins/bench/bench_store.h \
	plugins/bench/bench_export.c plugins/bench/bench_export.h \
	plugins/bench/bench_machine.c plugins/bench/bench_machine.h \
	plugins/bench/bench_pin.c plugins/bench/bench_pin.h \
	plugins/bench/bench_util.c plugins/bench/bench_util.h

plugin_LTLIBRARIES += plugins/bench/bench.la
plugins_bench_bench_la_SOURCES = $(bench_sources)
plugins_bench_bench_la_CFLAGS = $(PLUGIN_CFLAGS) $(NGHTTP2_CFLAGS) $(JANSSON_CFLAGS)
plugins_bench_bench_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_bench_bench_la_LIBADD = $(GNUTLS_LIBS) $(NGHTTP2_LIBS) $(JANSSON_LIBS) $(SQLITE_LIBS)

# Integration tests: the real daemon, real peers (h2load, ab, nginx, h2o).
bench_itests = tests/integration/70_bench_run.sh tests/integration/73_bench_show_units.sh \
	tests/integration/73_bench_show_status.sh \
	tests/integration/72_bench_peers.sh tests/integration/73_bench_report.sh \
	tests/integration/74_bench_site_limits.sh tests/integration/75_bench_no_site.sh \
	tests/integration/76_bench_endless.sh tests/integration/77_bench_link_local.sh
TESTS += $(bench_itests)
EXTRA_DIST += $(bench_itests) plugins/bench/tests/bench_itest.sh \
	plugins/bench/tests/endless_peer.py

# Unit tests of the pure parts (no host needed).
check_PROGRAMS += plugins/bench/tests/bench_unit_test
TESTS += plugins/bench/tests/bench_unit_test
plugins_bench_tests_bench_unit_test_SOURCES = plugins/bench/tests/bench_unit_test.c \
	plugins/bench/bench_stats.c plugins/bench/bench_opts.c plugins/bench/bench_addr.c \
	plugins/bench/bench_export.c \
	plugins/bench/bench_gen.c plugins/bench/bench_conn.c plugins/bench/bench_h1.c \
	plugins/bench/bench_h2.c plugins/bench/bench_util.c
plugins_bench_tests_bench_unit_test_CFLAGS = $(AM_CFLAGS) $(GNUTLS_CFLAGS) $(NGHTTP2_CFLAGS) \
	$(JANSSON_CFLAGS)
plugins_bench_tests_bench_unit_test_LDADD = $(GNUTLS_LIBS) $(NGHTTP2_LIBS) $(JANSSON_LIBS)

# Its page in the admin web UI, installed next to bench.so.
plugin_DATA += plugins/bench/bench.ui.js
EXTRA_DIST += plugins/bench/bench.ui.js
