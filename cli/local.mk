# tlsboxctl: talks to the daemon's control socket.
bin_PROGRAMS += cli/tlsboxctl
cli_tlsboxctl_SOURCES = cli/tlsboxctl.c cli/ctl.h core/xalloc.c core/xalloc_json.c cli/ctl_http.c cli/ctl_time.c cli/cmd_core.c cli/cmd_tls.c cli/cmd_acme.c cli/cmd_admin.c cli/cmd_dh.c \
	cli/cmd_ocsp.c cli/cmd_backup.c \
	$(cli_tls_sources) $(cli_acme_sources) $(cli_bench_sources)
# backup/restore read the store itself; the migrations say the newest schema.
nodist_cli_tlsboxctl_SOURCES = core/migrations_embedded.c
cli_tlsboxctl_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(CURL_CFLAGS) $(SQLITE_CFLAGS)
cli_tlsboxctl_LDADD = $(JANSSON_LIBS) $(CURL_LIBS) $(SQLITE_LIBS)
dist_man_MANS = doc/tlsboxctl.1 doc/tlsboxd.8
cli_bench_sources = cli/cmd_bench.c cli/cmd_bench.h cli/cmd_bench_show.c
