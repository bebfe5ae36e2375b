# Benchmark against nginx and h2o (tests/perf/compare.sh).  It prints numbers
# and is never part of make check; run it by hand:  make perf  or
# make perf PERF_ARGS=--quick
EXTRA_DIST += tests/perf/compare.sh tests/perf/idle_conns.c tests/perf/dh_gen.sh

perf: all
	top_builddir='$(abs_top_builddir)' $(SHELL) $(top_srcdir)/tests/perf/compare.sh $(PERF_ARGS)
.PHONY: perf
