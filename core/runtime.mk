# Core runtime services: events, jobs and timers, metrics, the system sampler.
core_runtime_sources += core/events.c core/events.h core/events_name.h core/jobs.c \
	core/timers.c core/jobs.h core/mono_clock.h core/metrics.c core/metrics_name.c \
	core/sysstat.c core/metrics.h core/metrics_name.h

# Unit tests list the sources they need, so they build without the rest of the core.
runtime_test_common = core/xalloc.c core/log.c

check_PROGRAMS += tests/unit/core/events_test tests/unit/core/jobs_test \
	tests/unit/core/timers_test tests/unit/core/metrics_test tests/unit/core/sysstat_test
TESTS += tests/unit/core/events_test tests/unit/core/jobs_test \
	tests/unit/core/timers_test tests/unit/core/metrics_test tests/unit/core/sysstat_test

tests_unit_core_events_test_SOURCES = tests/unit/core/events_test.c core/events.c \
	$(runtime_test_common)
tests_unit_core_events_test_CFLAGS = $(CORE_CFLAGS)
tests_unit_core_events_test_LDADD = $(CORE_LIBS)

tests_unit_core_jobs_test_SOURCES = tests/unit/core/jobs_test.c core/jobs.c core/timers.c \
	$(runtime_test_common)
tests_unit_core_jobs_test_CFLAGS = $(CORE_CFLAGS)
tests_unit_core_jobs_test_LDADD = $(CORE_LIBS)

tests_unit_core_timers_test_SOURCES = tests/unit/core/timers_test.c core/jobs.c core/timers.c \
	$(runtime_test_common)
tests_unit_core_timers_test_CFLAGS = $(CORE_CFLAGS)
tests_unit_core_timers_test_LDADD = $(CORE_LIBS)

tests_unit_core_metrics_test_SOURCES = tests/unit/core/metrics_test.c core/metrics.c \
	core/metrics_name.c tests/unit/metrics_bad_names.h $(runtime_test_common)
tests_unit_core_metrics_test_CFLAGS = $(CORE_CFLAGS)
tests_unit_core_metrics_test_LDADD = $(CORE_LIBS) -lm

# Includes core/sysstat.c to reach its parsers, and stubs the store.
tests_unit_core_sysstat_test_SOURCES = tests/unit/core/sysstat_test.c core/metrics.c \
	core/metrics_name.c core/jobs.c core/timers.c $(runtime_test_common)
tests_unit_core_sysstat_test_CFLAGS = $(CORE_CFLAGS)
tests_unit_core_sysstat_test_LDADD = $(CORE_LIBS) -lm

# The logger alone: control bytes from clients folded or escaped.
check_PROGRAMS += tests/unit/core/log_test
TESTS += tests/unit/core/log_test
tests_unit_core_log_test_SOURCES = tests/unit/core/log_test.c core/log.c
tests_unit_core_log_test_CFLAGS = $(CORE_CFLAGS)
tests_unit_core_log_test_LDADD = $(CORE_LIBS)
