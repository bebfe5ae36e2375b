# The notify plugin (notify.so): a webhook and e-mail told of certificate,
# ACME, OCSP and TLS policy events, signed, retried, each delivery kept in
# its table.
notify_sources = plugins/notify/notify.h plugins/notify/notify.c plugins/notify/notify_send.c \
	plugins/notify/notify_mail.c plugins/notify/notify_store.c plugins/notify/notify_api.c
plugin_LTLIBRARIES += plugins/notify/notify.la
plugins_notify_notify_la_SOURCES = $(notify_sources)
plugins_notify_notify_la_CFLAGS = $(PLUGIN_CFLAGS) $(CURL_CFLAGS) $(JANSSON_CFLAGS) $(GNUTLS_CFLAGS)
plugins_notify_notify_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_notify_notify_la_LIBADD = $(GNUTLS_LIBS) $(CURL_LIBS) $(JANSSON_LIBS) $(SQLITE_LIBS)

notify_integration_tests = tests/integration/57_notify_webhook.sh tests/integration/59_notify_mail.sh \
	tests/integration/59_notify_stop.sh
TESTS += $(notify_integration_tests)
EXTRA_DIST += $(notify_integration_tests) tests/integration/webhook_receiver.py tests/ui/notify_ui.py \
	tests/integration/smtp_sink.py tests/ui/notify_mail_ui.py

# Its page in the admin web UI, installed next to notify.so.
plugin_DATA += plugins/notify/notify.ui.js
EXTRA_DIST += plugins/notify/notify.ui.js

# Unit test of the signature, the origin shown for a URL, the e-mail and a
# stop with a retry waiting (on the mock host).
check_PROGRAMS += plugins/notify/tests/notify_test
TESTS += plugins/notify/tests/notify_test
plugins_notify_tests_notify_test_SOURCES = plugins/notify/tests/notify_test.c tests/tap.h \
	$(notify_sources)
plugins_notify_tests_notify_test_CFLAGS = $(AM_CFLAGS) $(GNUTLS_CFLAGS) $(CURL_CFLAGS) \
	$(JANSSON_CFLAGS) $(SQLITE_CFLAGS)
plugins_notify_tests_notify_test_LDADD = $(GNUTLS_LIBS) $(CURL_LIBS) $(JANSSON_LIBS) $(SQLITE_LIBS) \
	$(MOCKHOST_LIBS)
