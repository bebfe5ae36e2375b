# libFuzzer targets for the parsers of untrusted input (STYLE.md).  Under
# `make check` each target is linked with replay.c and run over its committed
# corpus (tests/fuzz/corpus/NAME); `make fuzz` builds real libFuzzer binaries
# with clang and runs each for FUZZ_TIME seconds.
FUZZ_TARGETS = site_h1 site_h2 settings tls_policy acme acme_dns ocsp site_path tls_cert \
	bench api_request

fuzz_site_h1_sources = tests/fuzz/site_h1_fuzz.c $(site_sources)
fuzz_site_h1_cflags = $(GNUTLS_CFLAGS) $(NGHTTP2_CFLAGS) $(SQLITE_CFLAGS) -I$(top_srcdir)/plugins/site
fuzz_site_h1_libs = $(GNUTLS_LIBS) $(NGHTTP2_LIBS) $(IPSEC_MB_LIBS)

# site_h2: a client's bytes after TLS (preface, frames) through site_h2.c's
# nghttp2 callbacks and serve(), output drained and checked as frames.
fuzz_site_h2_sources = tests/fuzz/site_h2_fuzz.c $(site_sources)
fuzz_site_h2_cflags = $(fuzz_site_h1_cflags)
fuzz_site_h2_libs = $(fuzz_site_h1_libs)

fuzz_site_path_sources = tests/fuzz/site_path_fuzz.c $(site_sources)
fuzz_site_path_cflags = $(fuzz_site_h1_cflags)
fuzz_site_path_libs = $(fuzz_site_h1_libs)

fuzz_settings_sources = tests/fuzz/settings_fuzz.c core/settings_check.c core/utf8.c \
	core/xalloc.c core/log.c
fuzz_settings_cflags = $(SQLITE_CFLAGS) $(JANSSON_CFLAGS)
fuzz_settings_libs = $(SQLITE_LIBS) $(JANSSON_LIBS)

fuzz_tls_policy_sources = tests/fuzz/tls_policy_fuzz.c core/tls_policy.c core/xalloc.c core/log.c
fuzz_tls_policy_cflags = $(GNUTLS_CFLAGS) $(JANSSON_CFLAGS)
fuzz_tls_policy_libs = $(GNUTLS_LIBS) $(JANSSON_LIBS)

# tls_cert: a certificate upload (cert/import) through tls_cert_check(); the
# target stubs the store functions tls_cert_store() would call.
fuzz_tls_cert_sources = tests/fuzz/tls_cert_fuzz.c core/tls_cert.c core/xalloc.c core/log.c
fuzz_tls_cert_cflags = $(GNUTLS_CFLAGS) $(JANSSON_CFLAGS) $(SQLITE_CFLAGS)
fuzz_tls_cert_libs = $(GNUTLS_LIBS) $(JANSSON_LIBS) $(SQLITE_LIBS)

check_PROGRAMS += tests/fuzz/tls_cert_replay
TESTS += tests/fuzz/tls_cert_replay
tests_fuzz_tls_cert_replay_SOURCES = tests/fuzz/replay.c $(fuzz_tls_cert_sources)
tests_fuzz_tls_cert_replay_CFLAGS = $(AM_CFLAGS) $(fuzz_tls_cert_cflags)
tests_fuzz_tls_cert_replay_LDADD = $(fuzz_tls_cert_libs)

# bench: a server's answers read by the bench client (bench_h1.c, bench_h2.c)
# with the real load-generator bookkeeping; the target replaces bench_conn.c.
fuzz_bench_sources = tests/fuzz/bench_fuzz.c plugins/bench/bench_h1.c plugins/bench/bench_h2.c \
	plugins/bench/bench_gen.c plugins/bench/bench_stats.c plugins/bench/bench_util.c
fuzz_bench_cflags = $(GNUTLS_CFLAGS) $(NGHTTP2_CFLAGS) $(JANSSON_CFLAGS)
fuzz_bench_libs = $(GNUTLS_LIBS) $(NGHTTP2_LIBS) $(JANSSON_LIBS)

check_PROGRAMS += tests/fuzz/bench_replay
TESTS += tests/fuzz/bench_replay
tests_fuzz_bench_replay_SOURCES = tests/fuzz/replay.c $(fuzz_bench_sources)
tests_fuzz_bench_replay_CFLAGS = $(AM_CFLAGS) $(fuzz_bench_cflags)
tests_fuzz_bench_replay_LDADD = $(fuzz_bench_libs)

# api_request: a request's query string and JSON body as the API reads them
# (api.c).
fuzz_api_request_sources = tests/fuzz/api_request_fuzz.c core/api.c core/utf8.c core/xalloc.c \
	core/log.c
fuzz_api_request_cflags = $(GNUTLS_CFLAGS) $(JANSSON_CFLAGS) $(SQLITE_CFLAGS) $(MHD_CFLAGS)
fuzz_api_request_libs = $(GNUTLS_LIBS) $(JANSSON_LIBS) $(SQLITE_LIBS)

check_PROGRAMS += tests/fuzz/api_request_replay
TESTS += tests/fuzz/api_request_replay
tests_fuzz_api_request_replay_SOURCES = tests/fuzz/replay.c $(fuzz_api_request_sources)
tests_fuzz_api_request_replay_CFLAGS = $(AM_CFLAGS) $(fuzz_api_request_cflags)
tests_fuzz_api_request_replay_LDADD = $(fuzz_api_request_libs)

# acme_fuzz.c includes acme_http.c (static callbacks), so it is not listed.
fuzz_acme_sources = tests/fuzz/acme_fuzz.c plugins/acme/acme.h plugins/acme/acme_util.c \
	plugins/acme/acme_jws.c plugins/acme/acme_csr.c plugins/acme/acme_renew.c
fuzz_acme_cflags = $(GNUTLS_CFLAGS) $(JANSSON_CFLAGS) $(CURL_CFLAGS) $(SQLITE_CFLAGS)
fuzz_acme_libs = $(GNUTLS_LIBS) $(CURL_LIBS) $(JANSSON_LIBS)

# acme_dns_fuzz.c includes acme_dns.c (static callbacks), so it is not listed.
fuzz_acme_dns_sources = tests/fuzz/acme_dns_fuzz.c plugins/acme/acme_dns.h \
	plugins/acme/acme_dns_int.h plugins/acme/acme_dns_wire.c plugins/acme/acme_dns_tsig.c
fuzz_acme_dns_cflags = $(GNUTLS_CFLAGS)
fuzz_acme_dns_libs = $(GNUTLS_LIBS)

check_PROGRAMS += tests/fuzz/acme_dns_replay
TESTS += tests/fuzz/acme_dns_replay
tests_fuzz_acme_dns_replay_SOURCES = tests/fuzz/replay.c $(fuzz_acme_dns_sources)
tests_fuzz_acme_dns_replay_CFLAGS = $(AM_CFLAGS) $(fuzz_acme_dns_cflags)
tests_fuzz_acme_dns_replay_LDADD = $(fuzz_acme_dns_libs)

fuzz_ocsp_sources = tests/fuzz/ocsp_fuzz.c plugins/ocsp/ocsp.h plugins/ocsp/ocsp_cert.c \
	plugins/ocsp/ocsp_crl.c plugins/ocsp/ocsp_der.c plugins/ocsp/ocsp_der.h \
	plugins/ocsp/ocsp_verify.c
fuzz_ocsp_cflags = $(GNUTLS_CFLAGS)
fuzz_ocsp_libs = $(GNUTLS_LIBS)

check_PROGRAMS += tests/fuzz/ocsp_replay
TESTS += tests/fuzz/ocsp_replay
tests_fuzz_ocsp_replay_SOURCES = tests/fuzz/replay.c $(fuzz_ocsp_sources)
tests_fuzz_ocsp_replay_CFLAGS = $(AM_CFLAGS) $(fuzz_ocsp_cflags)
tests_fuzz_ocsp_replay_LDADD = $(fuzz_ocsp_libs)

check_PROGRAMS += tests/fuzz/site_h1_replay tests/fuzz/settings_replay \
	tests/fuzz/tls_policy_replay tests/fuzz/acme_replay tests/fuzz/site_path_replay \
	tests/fuzz/site_h2_replay
TESTS += tests/fuzz/site_h1_replay tests/fuzz/settings_replay \
	tests/fuzz/tls_policy_replay tests/fuzz/acme_replay tests/fuzz/site_path_replay \
	tests/fuzz/site_h2_replay

tests_fuzz_site_h1_replay_SOURCES = tests/fuzz/replay.c $(fuzz_site_h1_sources)
tests_fuzz_site_h1_replay_CFLAGS = $(AM_CFLAGS) $(fuzz_site_h1_cflags)
tests_fuzz_site_h1_replay_LDADD = $(fuzz_site_h1_libs)
tests_fuzz_site_h2_replay_SOURCES = tests/fuzz/replay.c $(fuzz_site_h2_sources)
tests_fuzz_site_h2_replay_CFLAGS = $(AM_CFLAGS) $(fuzz_site_h2_cflags)
tests_fuzz_site_h2_replay_LDADD = $(fuzz_site_h2_libs)
tests_fuzz_site_path_replay_SOURCES = tests/fuzz/replay.c $(fuzz_site_path_sources)
tests_fuzz_site_path_replay_CFLAGS = $(AM_CFLAGS) $(fuzz_site_path_cflags)
tests_fuzz_site_path_replay_LDADD = $(fuzz_site_path_libs)
tests_fuzz_settings_replay_SOURCES = tests/fuzz/replay.c $(fuzz_settings_sources)
tests_fuzz_settings_replay_CFLAGS = $(AM_CFLAGS) $(fuzz_settings_cflags)
tests_fuzz_settings_replay_LDADD = $(fuzz_settings_libs)
tests_fuzz_tls_policy_replay_SOURCES = tests/fuzz/replay.c $(fuzz_tls_policy_sources)
tests_fuzz_tls_policy_replay_CFLAGS = $(AM_CFLAGS) $(fuzz_tls_policy_cflags)
tests_fuzz_tls_policy_replay_LDADD = $(fuzz_tls_policy_libs)
tests_fuzz_acme_replay_SOURCES = tests/fuzz/replay.c $(fuzz_acme_sources)
tests_fuzz_acme_replay_CFLAGS = $(AM_CFLAGS) $(fuzz_acme_cflags)
tests_fuzz_acme_replay_LDADD = $(fuzz_acme_libs)

EXTRA_DIST += tests/fuzz/corpus

# make fuzz [FUZZ_TIME=60]: libFuzzer binaries in tests/fuzz/bin, each run
# for FUZZ_TIME seconds on a scratch copy of its corpus (new inputs found
# land in tests/fuzz/work/NAME, not in the source tree).
FUZZ_CC = clang
FUZZ_TIME = 60
FUZZ_FLAGS = -std=gnu11 $(WARN_CFLAGS) -pthread -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-include config.h -I$(top_builddir) -I$(top_srcdir) -I$(top_srcdir)/include
fuzz_only_c = $(filter %.c,$(1))

# Always relinked (cheap): the pattern rule cannot list each target's sources.
tests/fuzz/bin/%_fuzz: fuzz-force
	@$(MKDIR_P) tests/fuzz/bin
	$(FUZZ_CC) $(FUZZ_FLAGS) $(fuzz_$*_cflags) -o $@ \
		$(addprefix $(top_srcdir)/,$(call fuzz_only_c,$(fuzz_$*_sources))) $(fuzz_$*_libs)

fuzz: $(FUZZ_TARGETS:%=tests/fuzz/bin/%_fuzz)
	@set -e; for t in $(FUZZ_TARGETS); do \
		mkdir -p tests/fuzz/work/$$t; \
		echo "== fuzz $$t for $(FUZZ_TIME)s"; \
		tests/fuzz/bin/$${t}_fuzz -max_total_time=$(FUZZ_TIME) -print_final_stats=1 \
			-artifact_prefix=tests/fuzz/work/$$t- tests/fuzz/work/$$t \
			$(abs_top_srcdir)/tests/fuzz/corpus/$$t; \
	done

fuzz-force:
fuzz-clean:
	rm -rf tests/fuzz/bin tests/fuzz/work
.PHONY: fuzz fuzz-clean fuzz-force
