# The OCSP plugin: staples fetched with libcurl, verified with GnuTLS, handed
# to the core (host->staple_set); a libtool module using only the host table.
ocsp_core_sources = plugins/ocsp/ocsp.h plugins/ocsp/ocsp_cert.c plugins/ocsp/ocsp_verify.c \
	plugins/ocsp/ocsp_crl.c plugins/ocsp/ocsp_der.c plugins/ocsp/ocsp_der.h

plugin_LTLIBRARIES += plugins/ocsp/ocsp.la
plugins_ocsp_ocsp_la_SOURCES = $(ocsp_core_sources) plugins/ocsp/ocsp_plugin.h \
	plugins/ocsp/ocsp.c plugins/ocsp/ocsp_fetch.c plugins/ocsp/ocsp_store.c \
	plugins/ocsp/ocsp_run.c plugins/ocsp/ocsp_api.c plugins/ocsp/ocsp_serve.c
plugins_ocsp_ocsp_la_CFLAGS = $(PLUGIN_CFLAGS) $(CURL_CFLAGS) $(JANSSON_CFLAGS)
plugins_ocsp_ocsp_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_ocsp_ocsp_la_LIBADD = $(GNUTLS_LIBS) $(CURL_LIBS) $(JANSSON_LIBS) $(SQLITE_LIBS)

# Unit test of the building blocks: leaf reading, verification, schedule.
check_PROGRAMS += plugins/ocsp/tests/ocsp_unit_test
TESTS += plugins/ocsp/tests/ocsp_unit_test
ocsp_fixture_sources = plugins/ocsp/tests/ocsp_fixtures.c plugins/ocsp/tests/ocsp_fixtures.h
plugins_ocsp_tests_ocsp_unit_test_SOURCES = plugins/ocsp/tests/ocsp_unit_test.c $(ocsp_core_sources) \
	$(ocsp_fixture_sources) \
	plugins/ocsp/ocsp_plugin.h plugins/ocsp/ocsp_fetch.c
plugins_ocsp_tests_ocsp_unit_test_CFLAGS = $(AM_CFLAGS) $(GNUTLS_CFLAGS) $(CURL_CFLAGS) \
	$(JANSSON_CFLAGS)
plugins_ocsp_tests_ocsp_unit_test_LDADD = $(GNUTLS_LIBS) $(CURL_LIBS)

# The CRL check (revocation without OCSP) against CRLs from openssl ca.
check_PROGRAMS += plugins/ocsp/tests/ocsp_crl_test
TESTS += plugins/ocsp/tests/ocsp_crl_test
plugins_ocsp_tests_ocsp_crl_test_SOURCES = plugins/ocsp/tests/ocsp_crl_test.c $(ocsp_core_sources) \
	$(ocsp_fixture_sources)
plugins_ocsp_tests_ocsp_crl_test_CFLAGS = $(AM_CFLAGS) $(GNUTLS_CFLAGS)
plugins_ocsp_tests_ocsp_crl_test_LDADD = $(GNUTLS_LIBS)

EXTRA_DIST += tests/integration/ocsp_lib.sh tests/integration/ocsp_forward.py \
	tests/integration/ocsp_craft.py
ocsp_integration_tests = tests/integration/50_ocsp_staple.sh \
	tests/integration/51_ocsp_revoked.sh tests/integration/52_ocsp_outage.sh \
	tests/integration/53_ocsp_bad_responses.sh tests/integration/53_ocsp_first_single.sh \
	tests/integration/54_ocsp_internal.sh tests/integration/54_ocsp_cert_gone.sh \
	tests/integration/55_ocsp_acme_revoked.sh tests/integration/56_ocsp_hung_responder.sh \
	tests/integration/58_ocsp_crl.sh
TESTS += $(ocsp_integration_tests)
EXTRA_DIST += $(ocsp_integration_tests) tests/ui/ocsp_crl_ui.py

# Its page in the admin web UI, installed next to ocsp.so.
plugin_DATA += plugins/ocsp/ocsp.ui.js
EXTRA_DIST += plugins/ocsp/ocsp.ui.js
