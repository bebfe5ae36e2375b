# The plugin kit's mock host: a static library installed with the kit
# (pkg-config --variable=mockhost_libs tlsbox-plugin) for plugins' unit
# tests.  It compiles the core's table guard (core/store_guard.c) and the
# core's schema (core/migrations_embedded.c), so a plugin's tests meet the
# same store and the same store rule as in the daemon.  Every symbol it
# defines is named tlsbox_mock_* (tlsbox_mockp_* for its own parts).
lib_LIBRARIES = pdk/mockhost/libtlsbox-mockhost.a
pdk_mockhost_libtlsbox_mockhost_a_SOURCES = pdk/mockhost/mock.h pdk/mockhost/mock_host.c \
	pdk/mockhost/mock_settings.c pdk/mockhost/mock_store.c pdk/mockhost/mock_events.c \
	pdk/mockhost/mock_routes.c pdk/mockhost/mock_bundle.c pdk/mockhost/mock_dh.c \
	core/store_guard.c core/store_guard.h
# The core's schema, so a plugin's migrations meet the store the daemon has.
nodist_pdk_mockhost_libtlsbox_mockhost_a_SOURCES = core/migrations_embedded.c
pdk_mockhost_libtlsbox_mockhost_a_CPPFLAGS = $(AM_CPPFLAGS) \
	-Dlog_msg=tlsbox_mock_log_msg_ -Dstore_guard_attach=tlsbox_mock_guard_attach_ \
	-Dstore_guard_detach=tlsbox_mock_guard_detach_ -Dstore_guard_owns=tlsbox_mock_guard_owns_ \
	-Dstore_guard_attach_migration=tlsbox_mock_guard_attach_migration_ \
	-Dstore_guard_set_plugins=tlsbox_mock_guard_set_plugins_ \
	-Dstore_migrations=tlsbox_mock_core_migrations_ \
	-Dstore_migrations_count=tlsbox_mock_core_migrations_count_
pdk_mockhost_libtlsbox_mockhost_a_CFLAGS = $(AM_CFLAGS) -fPIC $(GNUTLS_CFLAGS) $(SQLITE_CFLAGS)
tlsboxinclude_HEADERS += include/tlsbox/mock_host.h

# What a test program links besides the library (also in tlsbox-plugin.pc).
MOCKHOST_LIBS = pdk/mockhost/libtlsbox-mockhost.a $(GNUTLS_LIBS) $(SQLITE_LIBS)
