# tlsboxd: the daemon.  Everything but main() lives in a convenience library
# that the unit tests link too.
sbin_PROGRAMS += core/tlsboxd
noinst_LTLIBRARIES += core/libtlsboxcore.la

CORE_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden $(GNUTLS_CFLAGS) $(MHD_CFLAGS) \
	$(SQLITE_CFLAGS) $(JANSSON_CFLAGS) $(LIBCRYPTO_CFLAGS)
# -lm: metrics.c calls floor(), which gcc inlines at -O2 but clang does not.
CORE_LIBS = $(GNUTLS_LIBS) $(GMP_LIBS) $(MHD_LIBS) $(SQLITE_LIBS) $(JANSSON_LIBS) $(LIBCRYPTO_LIBS) \
	$(LIBS) -lm

core_libtlsboxcore_la_SOURCES = \
	core/xalloc.c core/xalloc.h core/xalloc_json.c core/utf8.c core/utf8.h \
	core/log.c core/log.h core/plugin_loader.c core/plugin_loader.h core/host.c core/host.h \
	core/plugin_schema.c core/plugin_schema.h core/store_guard.c core/store_guard.h \
	core/demo.c core/demo.h \
	core/api.c core/api.h core/api_core.c core/api_mhd.c core/api_mhd.h core/control.c \
	core/http_routes.c core/http_routes.h core/paths.c core/paths.h \
	core/privdrop.c core/privdrop.h \
	core/audit.c core/audit.h core/admin.h core/admin_server.c core/admin_api.c \
	core/admin_auth.c core/admin_auth.h core/admin_session.c core/admin_throttle.c \
	core/admin_throttle.h core/admin_static.c core/admin_live.c core/admin_cert.c \
	core/admin_connlimit.c core/admin_totp.c core/admin_totp.h core/admin_twofactor.c \
	core/admin_recovery.c core/admin_recovery.h core/qr_encode.c core/qr_encode.h \
	core/cert_expiry.c core/cert_expiry.h \
	$(core_store_sources) $(core_runtime_sources) $(core_tls_sources)
core_libtlsboxcore_la_CFLAGS = $(CORE_CFLAGS)
core_libtlsboxcore_la_LIBADD = $(CORE_LIBS)

core_tlsboxd_SOURCES = core/main.c core/restart.c core/restart.h core/startup_sets.c core/startup_sets.h core/dh_generate.c core/dh_generate.h
core_tlsboxd_CFLAGS = $(CORE_CFLAGS)
core_tlsboxd_LDADD = core/libtlsboxcore.la
