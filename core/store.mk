# The SQLite store and typed settings.
#
# Migrations are embedded into the binary at build time: every
# db/migrations/NNNN_name.sql must be listed here (the generator refuses a
# file it was not given, and a gap in the versions).
TLSBOX_MIGRATIONS = \
	db/migrations/0001_init.sql \
	db/migrations/0002_plugin_schema.sql \
	db/migrations/0003_admin.sql \
	db/migrations/0004_tls_dh.sql \
	db/migrations/0005_tls_staples.sql \
	db/migrations/0006_drop_bench_runs.sql \
	db/migrations/0007_admin_totp.sql \
	db/migrations/0008_admin_recovery.sql \
	db/migrations/0009_cert_expiry.sql \
	db/migrations/0010_settings_history.sql

core_store_sources += \
	core/store.c core/store.h \
	core/settings.c core/settings.h \
	core/settings_tables.c core/settings_tables.h \
	core/settings_check.c core/settings_check.h \
	core/settings_history.c core/settings_history.h

# Generated into the build tree, never distributed: a tarball regenerates it.
nodist_core_libtlsboxcore_la_SOURCES = core/migrations_embedded.c
BUILT_SOURCES += core/migrations_embedded.c
CLEANFILES += core/migrations_embedded.c
EXTRA_DIST += $(TLSBOX_MIGRATIONS) db/embed-migrations.sh

core/migrations_embedded.c: $(TLSBOX_MIGRATIONS) $(top_srcdir)/db/embed-migrations.sh
	$(AM_V_GEN)$(MKDIR_P) core && \
	$(SHELL) $(top_srcdir)/db/embed-migrations.sh $@ \
	  $(addprefix $(top_srcdir)/,$(TLSBOX_MIGRATIONS))

# Unit tests list exactly the sources they need, so they build before the rest
# of the core is finished.
STORE_TEST_SOURCES = core/store.c core/xalloc.c core/log.c
STORE_TEST_CFLAGS = $(AM_CFLAGS) $(SQLITE_CFLAGS) $(JANSSON_CFLAGS)
STORE_TEST_LIBS = $(SQLITE_LIBS) $(JANSSON_LIBS)

check_PROGRAMS += tests/unit/core/store_test tests/unit/core/settings_test \
	tests/unit/core/settings_history_test
TESTS += tests/unit/core/store_test tests/unit/core/settings_test \
	tests/unit/core/settings_history_test

tests_unit_core_store_test_SOURCES = tests/unit/core/store_test.c tests/tap.h \
	$(STORE_TEST_SOURCES)
nodist_tests_unit_core_store_test_SOURCES = core/migrations_embedded.c
tests_unit_core_store_test_CFLAGS = $(STORE_TEST_CFLAGS)
tests_unit_core_store_test_LDADD = $(STORE_TEST_LIBS)

# The settings registry with what it needs, for the two settings tests.
SETTINGS_TEST_SOURCES = tests/tap.h $(STORE_TEST_SOURCES) core/settings.c \
	core/settings_tables.c core/settings_check.c core/settings_history.c core/utf8.c

tests_unit_core_settings_test_SOURCES = tests/unit/core/settings_test.c \
	$(SETTINGS_TEST_SOURCES)
nodist_tests_unit_core_settings_test_SOURCES = core/migrations_embedded.c
tests_unit_core_settings_test_CFLAGS = $(STORE_TEST_CFLAGS)
tests_unit_core_settings_test_LDADD = $(STORE_TEST_LIBS)

tests_unit_core_settings_history_test_SOURCES = tests/unit/core/settings_history_test.c \
	$(SETTINGS_TEST_SOURCES)
nodist_tests_unit_core_settings_history_test_SOURCES = core/migrations_embedded.c
tests_unit_core_settings_history_test_CFLAGS = $(STORE_TEST_CFLAGS)
tests_unit_core_settings_history_test_LDADD = $(STORE_TEST_LIBS)
