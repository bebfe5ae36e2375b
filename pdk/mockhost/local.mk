# The plugin kit's mock host: a static library installed with the kit
# (pkg-config --variable=mockhost_libs tlsbox-plugin) for plugins' unit
# tests.  It compiles the core's table guard (core/store_guard.c), the
# core's schema (core/migrations_embedded.c), the core's settings checks
# (core/settings_check.c, with core/utf8.c and xset_err from core/xalloc.c),
# the core's own settings tables (core/settings_tables.c: another owner's
# key read through setting_get has the daemon's default)
# and its metric and event name checks (core/metrics_name.c,
# core/events_name.h), so a plugin's tests meet the same store, the same
# store rule and the same settings, metric and event rules and messages as in
# the daemon.  Every symbol it defines is
# named tlsbox_mock_* (tlsbox_mockp_* for its own parts): the -D below rename
# the core's, and tests/integration/12_pdk_out_of_tree.sh checks with nm.
lib_LIBRARIES = pdk/mockhost/libtlsbox-mockhost.a
pdk_mockhost_libtlsbox_mockhost_a_SOURCES = pdk/mockhost/mock.h pdk/mockhost/mock_host.c \
	pdk/mockhost/mock_settings.c pdk/mockhost/mock_store.c pdk/mockhost/mock_events.c \
	pdk/mockhost/mock_routes.c pdk/mockhost/mock_bundle.c pdk/mockhost/mock_dh.c \
	pdk/mockhost/mock_alpn.c \
	core/store_guard.c core/store_guard.h core/settings_check.c core/settings_check.h \
	core/settings_tables.c core/settings_tables.h \
	core/utf8.c core/utf8.h core/xalloc.c core/xalloc.h core/metrics_name.c core/metrics_name.h \
	core/events_name.h
# The core's schema, so a plugin's migrations meet the store the daemon has.
nodist_pdk_mockhost_libtlsbox_mockhost_a_SOURCES = core/migrations_embedded.c
pdk_mockhost_libtlsbox_mockhost_a_CPPFLAGS = $(AM_CPPFLAGS) \
	-Dlog_msg=tlsbox_mock_log_msg_ -Dstore_guard_attach=tlsbox_mock_guard_attach_ \
	-Dstore_guard_detach=tlsbox_mock_guard_detach_ -Dstore_guard_owns=tlsbox_mock_guard_owns_ \
	-Dstore_guard_attach_migration=tlsbox_mock_guard_attach_migration_ \
	-Dstore_guard_set_plugins=tlsbox_mock_guard_set_plugins_ \
	-Dstore_guard_mark=tlsbox_mock_guard_mark_ -Dstore_guard_verify=tlsbox_mock_guard_verify_ \
	-Dstore_guard_mark_free=tlsbox_mock_guard_mark_free_ \
	-Dstore_guard_check_foreign_keys=tlsbox_mock_guard_check_foreign_keys_ \
	-Dstore_migrations=tlsbox_mock_core_migrations_ \
	-Dstore_migrations_count=tlsbox_mock_core_migrations_count_ \
	-Dsettings_check=tlsbox_mock_settings_check_ \
	-Dsettings_check_compile=tlsbox_mock_settings_check_compile_ \
	-Dsettings_check_free_regex=tlsbox_mock_settings_check_free_regex_ \
	-Dsettings_check_parse_int=tlsbox_mock_settings_check_parse_int_ \
	-Dsettings_check_owner=tlsbox_mock_settings_check_owner_ \
	-Dsettings_check_def=tlsbox_mock_settings_check_def_ \
	-Dsettings_check_decl=tlsbox_mock_settings_check_decl_ \
	-Dsettings_check_type_name=tlsbox_mock_settings_check_type_name_ \
	-Dsettings_parse_bool=tlsbox_mock_settings_parse_bool_ \
	-Dcore_settings=tlsbox_mock_core_settings_ -Dadmin_settings=tlsbox_mock_admin_settings_ \
	-Dutf8_clip=tlsbox_mock_utf8_clip_ -Dutf8_sanitize=tlsbox_mock_utf8_sanitize_ \
	-Dutf8_invalid_at=tlsbox_mock_utf8_invalid_at_ \
	-Dxset_err=tlsbox_mock_xset_err_ -Dmetrics_name_check=tlsbox_mock_metrics_name_check_
pdk_mockhost_libtlsbox_mockhost_a_CFLAGS = $(AM_CFLAGS) -fPIC $(GNUTLS_CFLAGS) $(SQLITE_CFLAGS)
tlsboxinclude_HEADERS += include/tlsbox/mock_host.h

# What a test program links besides the library (also in tlsbox-plugin.pc).
MOCKHOST_LIBS = pdk/mockhost/libtlsbox-mockhost.a $(GNUTLS_LIBS) $(SQLITE_LIBS)
