# The site plugin: HTTPS + HTTP/2 static server (site.so).
site_sources = \
	plugins/site/site.c plugins/site/site.h \
	plugins/site/site_worker.c plugins/site/site_conn.c plugins/site/site_tls.c \
	plugins/site/site_h1.c plugins/site/site_h2.c plugins/site/site_h2_mem.c \
	plugins/site/site_files.c \
	plugins/site/site_mime.c plugins/site/site_redirect.c plugins/site/site_metrics.c \
	plugins/site/site_listen.c plugins/site/site_wait.c plugins/site/site_record.c \
	plugins/site/site_limits.c plugins/site/site_limits.h \
	plugins/site/site_ipcount.c plugins/site/site_ipcount.h

plugin_LTLIBRARIES += plugins/site/site.la
plugins_site_site_la_SOURCES = $(site_sources)
plugins_site_site_la_CFLAGS = $(PLUGIN_CFLAGS) $(NGHTTP2_CFLAGS)
plugins_site_site_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_site_site_la_LIBADD = $(GNUTLS_LIBS) $(NGHTTP2_LIBS) $(IPSEC_MB_LIBS)

# Unit tests: the plugin's sources linked with the kit's mock host.
check_PROGRAMS += plugins/site/tests/site_test
TESTS += plugins/site/tests/site_test
plugins_site_tests_site_test_SOURCES = plugins/site/tests/site_test.c $(site_sources)
plugins_site_tests_site_test_CFLAGS = $(AM_CFLAGS) $(GNUTLS_CFLAGS) $(NGHTTP2_CFLAGS) \
	$(SQLITE_CFLAGS) -I$(top_srcdir)/plugins/site
plugins_site_tests_site_test_LDADD = $(MOCKHOST_LIBS) $(NGHTTP2_LIBS) $(IPSEC_MB_LIBS)

# Records sealed by site_record.c, decrypted by a real GnuTLS client.
check_PROGRAMS += plugins/site/tests/site_record_test
TESTS += plugins/site/tests/site_record_test
plugins_site_tests_site_record_test_SOURCES = plugins/site/tests/site_record_test.c \
	plugins/site/tests/tls_pair.h plugins/site/site_record.c plugins/site/site.h
plugins_site_tests_site_record_test_CFLAGS = $(AM_CFLAGS) $(GNUTLS_CFLAGS) -I$(top_srcdir)/plugins/site
plugins_site_tests_site_record_test_LDADD = $(GNUTLS_LIBS) $(IPSEC_MB_LIBS)

# Cached bodies sealed in place with queued bytes in front (site_conn.c),
# read by a real GnuTLS client.
check_PROGRAMS += plugins/site/tests/site_pack_test
TESTS += plugins/site/tests/site_pack_test
plugins_site_tests_site_pack_test_SOURCES = plugins/site/tests/site_pack_test.c \
	plugins/site/tests/tls_pair.h $(site_sources)
plugins_site_tests_site_pack_test_CFLAGS = $(plugins_site_tests_site_test_CFLAGS)
plugins_site_tests_site_pack_test_LDADD = $(plugins_site_tests_site_test_LDADD)

# A throwaway host that runs the plugin with a self-made bundle (manual
# testing and benchmarks without the daemon): site_testhost CERT KEY KEY=VALUE...
check_PROGRAMS += plugins/site/tests/site_testhost
plugins_site_tests_site_testhost_SOURCES = plugins/site/tests/site_testhost.c $(site_sources)
plugins_site_tests_site_testhost_CFLAGS = $(plugins_site_tests_site_test_CFLAGS)
plugins_site_tests_site_testhost_LDADD = $(MOCKHOST_LIBS) $(NGHTTP2_LIBS) $(IPSEC_MB_LIBS)

# Runs a program with openat2(2) failing with ENOSYS (36_site_attack).
check_PROGRAMS += plugins/site/tests/no_openat2
plugins_site_tests_no_openat2_SOURCES = plugins/site/tests/no_openat2.c

# The demo page, copied into <state>/www by the daemon in demo mode.
sitewwwdir = $(datadir)/tlsbox/www
dist_sitewww_DATA = plugins/site/www/index.html

EXTRA_DIST += plugins/site/tests/h2_streams.py

# Integration tests: the real tlsboxd with real clients on loopback.
site_itests = tests/integration/30_site_basic.sh tests/integration/31_site_tls.sh \
	tests/integration/32_site_limits.sh tests/integration/33_site_swap.sh \
	tests/integration/33_site_cert_select.sh tests/integration/33_site_cert_select_keytype.sh \
	tests/integration/33_site_cert_curve_groups.sh \
	tests/integration/34_site_testssl.sh tests/integration/35_site_robust.sh \
	tests/integration/36_site_attack.sh tests/integration/37_site_fd_attack.sh \
	tests/integration/38_site_live.sh tests/integration/38_site_batch.sh \
	tests/integration/39_site_h2_idle.sh tests/integration/39_site_semantics.sh \
	tests/integration/39_site_hello_records.sh
TESTS += $(site_itests)
EXTRA_DIST += $(site_itests) plugins/site/tests/site_itest.sh
