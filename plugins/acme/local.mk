# The ACME plugin (RFC 8555, ARI, profiles): a libtool module using only the host table.
acme_core_sources = plugins/acme/acme.h plugins/acme/acme_util.c plugins/acme/acme_jws.c \
	plugins/acme/acme_csr.c plugins/acme/acme_renew.c plugins/acme/acme_http.c \
	plugins/acme/acme_store.c plugins/acme/acme_flow.c plugins/acme/acme_dns.c \
	plugins/acme/acme_dns_wire.c plugins/acme/acme_dns_tsig.c plugins/acme/acme_dns.h \
	plugins/acme/acme_dns_int.h

plugin_LTLIBRARIES += plugins/acme/acme.la
plugins_acme_acme_la_SOURCES = $(acme_core_sources) plugins/acme/acme_plugin.h \
	plugins/acme/acme.c plugins/acme/acme_run.c plugins/acme/acme_api.c \
	plugins/acme/acme_certs.c plugins/acme/acme_schema.c plugins/acme/acme_answer.c
plugins_acme_acme_la_CFLAGS = $(PLUGIN_CFLAGS) $(CURL_CFLAGS) $(JANSSON_CFLAGS)
plugins_acme_acme_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_acme_acme_la_LIBADD = $(GNUTLS_LIBS) $(CURL_LIBS) $(JANSSON_LIBS) $(SQLITE_LIBS)

# Unit tests of the building blocks, and of the glue against the kit's mock host.
check_PROGRAMS += plugins/acme/tests/acme_unit_test plugins/acme/tests/acme_plugin_test \
	plugins/acme/tests/flow_pebble
TESTS += plugins/acme/tests/acme_unit_test plugins/acme/tests/acme_plugin_test
plugins_acme_tests_acme_unit_test_SOURCES = plugins/acme/tests/acme_unit_test.c \
	plugins/acme/acme.h plugins/acme/acme_util.c plugins/acme/acme_jws.c \
	plugins/acme/acme_csr.c plugins/acme/acme_renew.c
plugins_acme_tests_acme_unit_test_CFLAGS = $(AM_CFLAGS) $(GNUTLS_CFLAGS) $(JANSSON_CFLAGS) \
	$(CURL_CFLAGS) $(SQLITE_CFLAGS)
plugins_acme_tests_acme_unit_test_LDADD = $(GNUTLS_LIBS) $(JANSSON_LIBS)

plugins_acme_tests_acme_plugin_test_SOURCES = plugins/acme/tests/acme_plugin_test.c \
	$(acme_core_sources)
plugins_acme_tests_acme_plugin_test_CFLAGS = $(AM_CFLAGS) $(GNUTLS_CFLAGS) $(JANSSON_CFLAGS) \
	$(CURL_CFLAGS) $(SQLITE_CFLAGS)
plugins_acme_tests_acme_plugin_test_LDADD = $(MOCKHOST_LIBS) $(CURL_LIBS) $(JANSSON_LIBS)

# The HTTP client's header handling against real libcurl and a loopback server.
check_PROGRAMS += plugins/acme/tests/acme_http_test
TESTS += plugins/acme/tests/acme_http_test
plugins_acme_tests_acme_http_test_SOURCES = plugins/acme/tests/acme_http_test.c \
	plugins/acme/acme.h plugins/acme/acme_util.c plugins/acme/acme_jws.c \
	plugins/acme/acme_renew.c
plugins_acme_tests_acme_http_test_CFLAGS = $(AM_CFLAGS) $(GNUTLS_CFLAGS) $(JANSSON_CFLAGS) \
	$(CURL_CFLAGS) $(SQLITE_CFLAGS)
plugins_acme_tests_acme_http_test_LDADD = $(GNUTLS_LIBS) $(CURL_LIBS) $(JANSSON_LIBS) -lpthread

# The RFC 2136 + TSIG client against a real named the test starts (bind9).
check_PROGRAMS += plugins/acme/tests/acme_dns_test
TESTS += plugins/acme/tests/acme_dns_test
plugins_acme_tests_acme_dns_test_SOURCES = plugins/acme/tests/acme_dns_test.c \
	plugins/acme/acme_dns.h plugins/acme/acme_dns.c plugins/acme/acme_dns_wire.c \
	plugins/acme/acme_dns_tsig.c plugins/acme/acme_dns_int.h
plugins_acme_tests_acme_dns_test_CFLAGS = $(AM_CFLAGS) $(GNUTLS_CFLAGS)
plugins_acme_tests_acme_dns_test_LDADD = $(GNUTLS_LIBS)

# Development driver: the flow against a real pebble without the daemon.
plugins_acme_tests_flow_pebble_SOURCES = plugins/acme/tests/flow_pebble.c $(acme_core_sources)
plugins_acme_tests_flow_pebble_CFLAGS = $(AM_CFLAGS) $(GNUTLS_CFLAGS) $(JANSSON_CFLAGS) \
	$(CURL_CFLAGS) $(SQLITE_CFLAGS)
plugins_acme_tests_flow_pebble_LDADD = $(GNUTLS_LIBS) $(CURL_LIBS) $(JANSSON_LIBS) $(SQLITE_LIBS)

EXTRA_DIST += tests/integration/pebble.sh tests/integration/acme_forward.py \
	tests/integration/bind_lib.sh

acme_integration_tests = tests/integration/40_acme_issue.sh tests/integration/41_acme_renew.sh \
	tests/integration/42_acme_bad_nonce.sh tests/integration/43_acme_challenge_failure.sh \
	tests/integration/44_acme_crash.sh tests/integration/45_acme_errors.sh \
	tests/integration/46_acme_ca_retry_after.sh tests/integration/47_acme_order_stuck.sh \
	tests/integration/48_acme_ip.sh tests/integration/49_acme_tls_alpn.sh \
	tests/integration/49_acme_dns01.sh tests/integration/49_acme_ari_replaces.sh \
	tests/integration/49_acme_install_refused.sh tests/integration/49_acme_authz_flap.sh \
	tests/integration/49_acme_revoke_lost.sh tests/integration/49_acme_order_unavailable.sh \
	tests/integration/49_acme_huge_answer.sh tests/integration/49_acme_dns01_stop.sh \
	tests/integration/49_acme_dns01_crash.sh tests/integration/49_acme_dns01_stop_hung.sh \
	tests/integration/49_acme_tls_alpn_rsa.sh
TESTS += $(acme_integration_tests)
EXTRA_DIST += $(acme_integration_tests)
