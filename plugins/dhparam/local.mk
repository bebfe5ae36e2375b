# The dhparam plugin (dhparam.so): RFC 7919 groups, generated or imported DH parameters.
dhparam_sources = plugins/dhparam/dhparam.h plugins/dhparam/dhparam.c \
	plugins/dhparam/dhparam_run.c plugins/dhparam/dhparam_gen.c \
	plugins/dhparam/dhparam_store.c plugins/dhparam/dhparam_api.c
plugin_LTLIBRARIES += plugins/dhparam/dhparam.la
plugins_dhparam_dhparam_la_SOURCES = $(dhparam_sources)
plugins_dhparam_dhparam_la_CFLAGS = $(PLUGIN_CFLAGS) $(JANSSON_CFLAGS)
plugins_dhparam_dhparam_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_dhparam_dhparam_la_LIBADD = $(GNUTLS_LIBS) $(JANSSON_LIBS) $(SQLITE_LIBS)

# Unit test against the kit's mock host.
check_PROGRAMS += plugins/dhparam/tests/dhparam_test
TESTS += plugins/dhparam/tests/dhparam_test
plugins_dhparam_tests_dhparam_test_SOURCES = plugins/dhparam/tests/dhparam_test.c tests/tap.h \
	$(dhparam_sources) core/dh_generate.c core/dh_generate.h
plugins_dhparam_tests_dhparam_test_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden $(GNUTLS_CFLAGS) \
	$(SQLITE_CFLAGS) $(JANSSON_CFLAGS)
plugins_dhparam_tests_dhparam_test_LDADD = $(MOCKHOST_LIBS) $(JANSSON_LIBS) $(GNUTLS_LIBS)

dhparam_integration_tests = tests/integration/65_dh_modes.sh tests/integration/66_dh_rotate.sh \
	tests/integration/67_dh_cancel.sh tests/integration/67_dh_stop_group.sh \
	tests/integration/67_dh_stop_queued.sh tests/integration/dh_lib.sh
TESTS += tests/integration/65_dh_modes.sh tests/integration/66_dh_rotate.sh \
	tests/integration/67_dh_cancel.sh tests/integration/67_dh_stop_group.sh \
	tests/integration/67_dh_stop_queued.sh
EXTRA_DIST += $(dhparam_integration_tests)

# Its page in the admin web UI, installed next to dhparam.so.
plugin_DATA += plugins/dhparam/dhparam.ui.js
EXTRA_DIST += plugins/dhparam/dhparam.ui.js
