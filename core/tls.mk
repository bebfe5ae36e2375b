# The TLS bundle: certificates, internal CA, policy, ticket keys, session cache.
core_tls_sources += \
	core/tls.c core/tls.h core/tls_addr.c core/tls_addr.h core/tls_alpn.c core/tls_alpn.h \
	core/tls_api.c core/tls_api.h core/tls_select.c core/tls_select.h \
	core/tls_bundle.c core/tls_bundle.h core/tls_ca.c core/tls_ca.h \
	core/tls_cert.c core/tls_cert.h core/tls_policy.c core/tls_policy.h \
	core/tls_policy_store.c core/tls_policy_store.h core/tls_probe.c core/tls_probe.h \
	core/tls_session_cache.c core/tls_session_cache.h core/tls_sign.c core/tls_sign.h \
	core/tls_tickets.c core/tls_tickets.h core/tls_hello.c core/tls_hello.h \
	core/tls_dh.c core/tls_dh.h core/tls_dh_set.c \
	core/tls_staple.c core/tls_staple.h core/tls_ca_ocsp.c core/tls_ca_ocsp.h core/tls_ocsp.c

# Unit tests: each lists the TLS sources it needs next to the store's.
TLS_TEST_CFLAGS = $(AM_CFLAGS) $(GNUTLS_CFLAGS) $(SQLITE_CFLAGS) $(JANSSON_CFLAGS) $(LIBCRYPTO_CFLAGS)
TLS_TEST_LIBS = $(GNUTLS_LIBS) $(SQLITE_LIBS) $(JANSSON_LIBS) $(GMP_LIBS) $(LIBCRYPTO_LIBS)
TLS_TEST_STORE = core/store.c core/xalloc.c core/log.c tests/tap.h \
	tests/unit/core/tls_test_util.h

check_PROGRAMS += tests/unit/core/tls_cert_test
TESTS += tests/unit/core/tls_cert_test

tests_unit_core_tls_cert_test_SOURCES = tests/unit/core/tls_cert_test.c $(TLS_TEST_STORE) \
	core/tls_cert.c core/tls_ca.c core/tls_ca_ocsp.c
nodist_tests_unit_core_tls_cert_test_SOURCES = core/migrations_embedded.c
tests_unit_core_tls_cert_test_CFLAGS = $(TLS_TEST_CFLAGS)
tests_unit_core_tls_cert_test_LDADD = $(TLS_TEST_LIBS)

check_PROGRAMS += tests/unit/core/tls_addr_test
TESTS += tests/unit/core/tls_addr_test
tests_unit_core_tls_addr_test_SOURCES = tests/unit/core/tls_addr_test.c tests/tap.h \
	core/tls_addr.c core/tls_addr.h
tests_unit_core_tls_addr_test_CFLAGS = $(TLS_TEST_CFLAGS)
tests_unit_core_tls_addr_test_LDADD = $(TLS_TEST_LIBS)

check_PROGRAMS += tests/unit/core/tls_select_test
TESTS += tests/unit/core/tls_select_test
tests_unit_core_tls_select_test_SOURCES = tests/unit/core/tls_select_test.c tests/tap.h \
	core/tls_select.c core/tls_select.h core/tls_addr.c core/tls_addr.h core/log.c \
	core/xalloc.c
tests_unit_core_tls_select_test_CFLAGS = $(TLS_TEST_CFLAGS)
tests_unit_core_tls_select_test_LDADD = $(TLS_TEST_LIBS)

check_PROGRAMS += tests/unit/core/tls_policy_test
TESTS += tests/unit/core/tls_policy_test
tests_unit_core_tls_policy_test_SOURCES = tests/unit/core/tls_policy_test.c $(TLS_TEST_STORE) \
	core/tls_policy.c core/tls_policy_store.c core/tls_probe.c core/tls_dh.c
nodist_tests_unit_core_tls_policy_test_SOURCES = core/migrations_embedded.c
tests_unit_core_tls_policy_test_CFLAGS = $(TLS_TEST_CFLAGS)
tests_unit_core_tls_policy_test_LDADD = $(TLS_TEST_LIBS)

# What a test that builds bundles and serves handshakes from them links.
TLS_BUNDLE_TEST_SOURCES = $(TLS_TEST_STORE) tests/unit/core/tls_test_server.h \
	core/tls_bundle.c core/tls_policy.c core/tls_policy_store.c core/tls_probe.c core/tls_tickets.c \
	core/tls_session_cache.c core/tls_ca.c core/tls_cert.c core/tls_dh.c core/tls_staple.c \
	core/tls_ca_ocsp.c core/tls_alpn.c core/tls_addr.c core/tls_select.c core/tls_sign.c \
	core/tls_hello.c

check_PROGRAMS += tests/unit/core/tls_bundle_test tests/unit/core/tls_alpn_test
TESTS += tests/unit/core/tls_bundle_test tests/unit/core/tls_alpn_test
tests_unit_core_tls_bundle_test_SOURCES = tests/unit/core/tls_bundle_test.c \
	$(TLS_BUNDLE_TEST_SOURCES)
nodist_tests_unit_core_tls_bundle_test_SOURCES = core/migrations_embedded.c
tests_unit_core_tls_bundle_test_CFLAGS = $(TLS_TEST_CFLAGS)
tests_unit_core_tls_bundle_test_LDADD = $(TLS_TEST_LIBS)
tests_unit_core_tls_alpn_test_SOURCES = tests/unit/core/tls_alpn_test.c $(TLS_BUNDLE_TEST_SOURCES)
nodist_tests_unit_core_tls_alpn_test_SOURCES = core/migrations_embedded.c
tests_unit_core_tls_alpn_test_CFLAGS = $(TLS_TEST_CFLAGS)
tests_unit_core_tls_alpn_test_LDADD = $(TLS_TEST_LIBS)

check_PROGRAMS += tests/unit/core/tls_sign_test
TESTS += tests/unit/core/tls_sign_test
tests_unit_core_tls_sign_test_SOURCES = tests/unit/core/tls_sign_test.c tests/tap.h \
	core/tls_sign.c core/tls_sign.h
tests_unit_core_tls_sign_test_CFLAGS = $(TLS_TEST_CFLAGS)
tests_unit_core_tls_sign_test_LDADD = $(TLS_TEST_LIBS) -lpthread

check_PROGRAMS += tests/unit/core/tls_dh_test
TESTS += tests/unit/core/tls_dh_test
tests_unit_core_tls_dh_test_SOURCES = tests/unit/core/tls_dh_test.c tests/tap.h core/tls_dh.c \
	core/xalloc.c core/log.c
tests_unit_core_tls_dh_test_CFLAGS = $(TLS_TEST_CFLAGS)
tests_unit_core_tls_dh_test_LDADD = $(TLS_TEST_LIBS)

# Integration tests: the real daemon and real clients on loopback.
TLS_INTEGRATION = tests/integration/20_tls_certs.sh tests/integration/21_tls_policy.sh \
	tests/integration/21_tls_policy_race.sh \
	tests/integration/22_tls_site.sh tests/integration/23_cert_expiry.sh
TESTS += $(TLS_INTEGRATION)
EXTRA_DIST += $(TLS_INTEGRATION)

check_PROGRAMS += tests/unit/core/tls_ocsp_test
TESTS += tests/unit/core/tls_ocsp_test
tests_unit_core_tls_ocsp_test_SOURCES = tests/unit/core/tls_ocsp_test.c $(TLS_TEST_STORE) \
	core/tls_ca.c core/tls_cert.c core/tls_staple.c core/tls_ca_ocsp.c
nodist_tests_unit_core_tls_ocsp_test_SOURCES = core/migrations_embedded.c
tests_unit_core_tls_ocsp_test_CFLAGS = $(TLS_TEST_CFLAGS)
tests_unit_core_tls_ocsp_test_LDADD = $(TLS_TEST_LIBS)

check_PROGRAMS += tests/unit/core/tls_probe_test
TESTS += tests/unit/core/tls_probe_test
tests_unit_core_tls_probe_test_SOURCES = tests/unit/core/tls_probe_test.c $(TLS_TEST_STORE) \
	core/tls_policy.c core/tls_probe.c
nodist_tests_unit_core_tls_probe_test_SOURCES = core/migrations_embedded.c
tests_unit_core_tls_probe_test_CFLAGS = $(TLS_TEST_CFLAGS)
tests_unit_core_tls_probe_test_LDADD = $(TLS_TEST_LIBS)
