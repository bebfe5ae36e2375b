# Benchmark against nginx and h2o (tests/perf/compare.sh).  It prints numbers
# and is never part of make check; run it by hand:  make perf  or
# make perf PERF_ARGS=--quick
EXTRA_DIST += tests/perf/compare.sh tests/perf/peer_conf.sh tests/perf/idle_conns.c tests/perf/dh_gen.sh \
	tests/perf/acme_certbot.sh

perf: all
	top_builddir='$(abs_top_builddir)' $(SHELL) $(top_srcdir)/tests/perf/compare.sh $(PERF_ARGS)
.PHONY: perf

# Start to first stapled handshake, tlsbox vs nginx vs h2o (prints numbers).
EXTRA_DIST += tests/perf/ocsp_first_staple.sh
perf-ocsp: all
	top_builddir='$(abs_top_builddir)' top_srcdir='$(abs_top_srcdir)' \
		$(SHELL) $(top_srcdir)/tests/perf/ocsp_first_staple.sh $(PERF_ARGS)
.PHONY: perf-ocsp

# ACME issuance time against certbot on the same pebble (prints numbers).
perf-acme: all
	top_builddir='$(abs_top_builddir)' top_srcdir='$(abs_top_srcdir)' $(SHELL) $(top_srcdir)/tests/perf/acme_certbot.sh
.PHONY: perf-acme

# bench's req/s next to h2load's and ab's on tlsbox, nginx and h2o (prints a
# table; the agreement is a number here, never a make check pass/fail).
EXTRA_DIST += tests/perf/bench_accuracy.sh
perf-bench: all
	top_builddir='$(abs_top_builddir)' top_srcdir='$(abs_top_srcdir)' \
		$(SHELL) $(top_srcdir)/tests/perf/bench_accuracy.sh $(PERF_ARGS)
.PHONY: perf-bench

# What a CRL check costs tlsboxd by the CRL's size, next to OpenSSL reading
# the same CRL (prints a table).
EXTRA_DIST += tests/perf/crl_check.sh
perf-crl: all
	top_builddir='$(abs_top_builddir)' top_srcdir='$(abs_top_srcdir)' \
		$(SHELL) $(top_srcdir)/tests/perf/crl_check.sh $(PERF_ARGS)
.PHONY: perf-crl

# tlsboxd's memory, store and log size across failed ACME attempts (prints a
# table; PERF_ARGS is the number of attempts, 300 by default).
EXTRA_DIST += tests/perf/acme_retry_mem.sh
perf-acme-retry: all
	top_builddir='$(abs_top_builddir)' top_srcdir='$(abs_top_srcdir)' \
		$(SHELL) $(top_srcdir)/tests/perf/acme_retry_mem.sh $(PERF_ARGS)
.PHONY: perf-acme-retry

# The handshake signature through GnuTLS: nettle's against libcrypto's
# (core/tls_sign.h), alternated rounds on one core (prints a table).
# Built only here: EXTRA_PROGRAMS, not part of all or check.
EXTRA_PROGRAMS += tests/perf/sign_speed
tests_perf_sign_speed_SOURCES = tests/perf/sign_speed.c core/tls_sign.c core/tls_sign.h
tests_perf_sign_speed_CFLAGS = $(TLS_TEST_CFLAGS)
tests_perf_sign_speed_LDADD = $(TLS_TEST_LIBS)
perf-sign: tests/perf/sign_speed$(EXEEXT)
	taskset -c 1 ./tests/perf/sign_speed $(PERF_ARGS)
.PHONY: perf-sign
