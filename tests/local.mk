# Test plugins (never installed) and the core's own tests.
TEST_PLUGIN_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version -shared -rpath /nowhere
check_LTLIBRARIES += tests/plugins/bad_major.la tests/plugins/newer_minor.la \
	tests/plugins/no_symbol.la tests/plugins/fail_start.la \
	tests/plugins/abi10.la tests/plugins/bad_schema.la \
	tests/plugins/rogue.la tests/plugins/rogue_schema.la \
	tests/plugins/sig_blocker.la tests/plugins/late_job.la \
	tests/plugins/slow_start.la tests/plugins/grab.la tests/plugins/grab_box.la \
	tests/plugins/host_rules.la
tests_plugins_bad_major_la_SOURCES = tests/plugins/bad_major.c
tests_plugins_bad_major_la_CFLAGS = $(PLUGIN_CFLAGS)
tests_plugins_bad_major_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_newer_minor_la_SOURCES = tests/plugins/newer_minor.c
tests_plugins_newer_minor_la_CFLAGS = $(PLUGIN_CFLAGS)
tests_plugins_newer_minor_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_no_symbol_la_SOURCES = tests/plugins/no_symbol.c
tests_plugins_no_symbol_la_CFLAGS = $(PLUGIN_CFLAGS)
tests_plugins_no_symbol_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_fail_start_la_SOURCES = tests/plugins/fail_start.c
tests_plugins_fail_start_la_CFLAGS = $(PLUGIN_CFLAGS)
tests_plugins_fail_start_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_abi10_la_SOURCES = tests/plugins/abi10.c
tests_plugins_abi10_la_CFLAGS = $(PLUGIN_CFLAGS)
tests_plugins_abi10_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_bad_schema_la_SOURCES = tests/plugins/bad_schema.c
tests_plugins_bad_schema_la_CFLAGS = $(PLUGIN_CFLAGS)
tests_plugins_bad_schema_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_rogue_la_SOURCES = tests/plugins/rogue.c
tests_plugins_rogue_la_CFLAGS = $(PLUGIN_CFLAGS)
tests_plugins_rogue_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_rogue_schema_la_SOURCES = tests/plugins/rogue_schema.c
tests_plugins_rogue_schema_la_CFLAGS = $(PLUGIN_CFLAGS)
tests_plugins_rogue_schema_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_grab_la_SOURCES = tests/plugins/grab.c
tests_plugins_grab_la_CFLAGS = $(PLUGIN_CFLAGS)
tests_plugins_grab_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_grab_box_la_SOURCES = tests/plugins/grab_box.c
tests_plugins_grab_box_la_CFLAGS = $(PLUGIN_CFLAGS)
tests_plugins_grab_box_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_sig_blocker_la_SOURCES = tests/plugins/sig_blocker.c
tests_plugins_sig_blocker_la_CFLAGS = $(PLUGIN_CFLAGS)
tests_plugins_sig_blocker_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_late_job_la_SOURCES = tests/plugins/late_job.c
tests_plugins_late_job_la_CFLAGS = $(PLUGIN_CFLAGS)
tests_plugins_late_job_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_slow_start_la_SOURCES = tests/plugins/slow_start.c
tests_plugins_slow_start_la_CFLAGS = $(PLUGIN_CFLAGS)
tests_plugins_slow_start_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_host_rules_la_SOURCES = tests/plugins/host_rules.c
tests_plugins_host_rules_la_CFLAGS = $(PLUGIN_CFLAGS)
tests_plugins_host_rules_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)

check_PROGRAMS += tests/unit/core/plugin_loader_test tests/unit/core/api_test \
	tests/unit/core/plugin_schema_test tests/unit/core/admin_test tests/unit/core/host_test \
	tests/unit/core/admin_totp_test tests/unit/core/qr_encode_test tests/unit/core/cert_expiry_test \
	tests/unit/core/http_routes_test
tests_unit_core_http_routes_test_SOURCES = tests/unit/core/http_routes_test.c
tests_unit_core_http_routes_test_CFLAGS = $(CORE_CFLAGS)
tests_unit_core_http_routes_test_LDADD = core/libtlsboxcore.la
tests_unit_core_cert_expiry_test_SOURCES = tests/unit/core/cert_expiry_test.c
tests_unit_core_cert_expiry_test_CFLAGS = $(CORE_CFLAGS)
tests_unit_core_cert_expiry_test_LDADD = core/libtlsboxcore.la
tests_unit_core_qr_encode_test_SOURCES = tests/unit/core/qr_encode_test.c
tests_unit_core_qr_encode_test_CFLAGS = $(CORE_CFLAGS)
tests_unit_core_qr_encode_test_LDADD = core/libtlsboxcore.la
tests_unit_core_admin_totp_test_SOURCES = tests/unit/core/admin_totp_test.c
tests_unit_core_admin_totp_test_CFLAGS = $(CORE_CFLAGS)
tests_unit_core_admin_totp_test_LDADD = core/libtlsboxcore.la
tests_unit_core_host_test_SOURCES = tests/unit/core/host_test.c
tests_unit_core_host_test_CFLAGS = $(CORE_CFLAGS)
tests_unit_core_host_test_LDADD = core/libtlsboxcore.la
tests_unit_core_plugin_schema_test_SOURCES = tests/unit/core/plugin_schema_test.c
tests_unit_core_plugin_schema_test_CFLAGS = $(CORE_CFLAGS)
tests_unit_core_plugin_schema_test_LDADD = core/libtlsboxcore.la
tests_unit_core_admin_test_SOURCES = tests/unit/core/admin_test.c
tests_unit_core_admin_test_CFLAGS = $(CORE_CFLAGS)
tests_unit_core_admin_test_LDADD = core/libtlsboxcore.la
tests_unit_core_plugin_loader_test_SOURCES = tests/unit/core/plugin_loader_test.c
tests_unit_core_plugin_loader_test_CFLAGS = $(CORE_CFLAGS)
tests_unit_core_plugin_loader_test_LDADD = core/libtlsboxcore.la
tests_unit_core_api_test_SOURCES = tests/unit/core/api_test.c
tests_unit_core_api_test_CFLAGS = $(CORE_CFLAGS)
tests_unit_core_api_test_LDADD = core/libtlsboxcore.la

# The kit's mock host, as a plugin's unit test meets it.
check_PROGRAMS += tests/unit/pdk/mock_apply_test
TESTS += tests/unit/pdk/mock_apply_test
tests_unit_pdk_mock_apply_test_SOURCES = tests/unit/pdk/mock_apply_test.c
tests_unit_pdk_mock_apply_test_CFLAGS = $(AM_CFLAGS) $(GNUTLS_CFLAGS) $(SQLITE_CFLAGS)
tests_unit_pdk_mock_apply_test_LDADD = $(MOCKHOST_LIBS)
# The mock's settings answers against the core's own settings_check, linked in
# under its own names next to the mock's renamed copy.
check_PROGRAMS += tests/unit/pdk/mock_settings_test
TESTS += tests/unit/pdk/mock_settings_test
tests_unit_pdk_mock_settings_test_SOURCES = tests/unit/pdk/mock_settings_test.c tests/tap.h \
	core/settings_check.c core/utf8.c core/xalloc.c
tests_unit_pdk_mock_settings_test_CFLAGS = $(AM_CFLAGS) $(GNUTLS_CFLAGS) $(SQLITE_CFLAGS)
tests_unit_pdk_mock_settings_test_LDADD = $(MOCKHOST_LIBS)
# The mock's metric registrations refused as the core's are.
check_PROGRAMS += tests/unit/pdk/mock_metrics_test
TESTS += tests/unit/pdk/mock_metrics_test
tests_unit_pdk_mock_metrics_test_SOURCES = tests/unit/pdk/mock_metrics_test.c tests/tap.h \
	tests/unit/metrics_bad_names.h
tests_unit_pdk_mock_metrics_test_CFLAGS = $(AM_CFLAGS) $(GNUTLS_CFLAGS) $(SQLITE_CFLAGS)
tests_unit_pdk_mock_metrics_test_LDADD = $(MOCKHOST_LIBS)
# The mock's event deliveries and names as the core's.
check_PROGRAMS += tests/unit/pdk/mock_events_test
TESTS += tests/unit/pdk/mock_events_test
tests_unit_pdk_mock_events_test_SOURCES = tests/unit/pdk/mock_events_test.c tests/tap.h
tests_unit_pdk_mock_events_test_CFLAGS = $(AM_CFLAGS) $(GNUTLS_CFLAGS) $(SQLITE_CFLAGS)
tests_unit_pdk_mock_events_test_LDADD = $(MOCKHOST_LIBS)

check_PROGRAMS += tests/unit/pdk/mock_host_test
TESTS += tests/unit/pdk/mock_host_test
tests_unit_pdk_mock_host_test_SOURCES = tests/unit/pdk/mock_host_test.c tests/tap.h
tests_unit_pdk_mock_host_test_CFLAGS = $(AM_CFLAGS) $(GNUTLS_CFLAGS) $(SQLITE_CFLAGS)
tests_unit_pdk_mock_host_test_LDADD = $(MOCKHOST_LIBS)

TESTS += tests/unit/core/plugin_loader_test tests/unit/core/api_test \
	tests/unit/core/plugin_schema_test tests/unit/core/admin_test tests/unit/core/host_test \
	tests/unit/core/admin_totp_test tests/unit/core/qr_encode_test tests/unit/core/cert_expiry_test \
	tests/unit/core/http_routes_test \
	tests/integration/10_daemon_basics.sh \
	tests/integration/11_plugin_loader.sh \
	tests/integration/12_pdk_out_of_tree.sh \
	tests/integration/13_plugin_schema.sh \
	tests/integration/13_privdrop.sh \
	tests/integration/14_plugin_store_guard.sh \
	tests/integration/14_plugin_neighbour_schema.sh \
	tests/integration/15_store_upgrade.sh \
	tests/integration/16_core_names_no_plugin.sh \
	tests/integration/16_help_man.sh \
	tests/integration/17_daemon_process.sh \
	tests/integration/17_demo_www_swapped.sh \
	tests/integration/17_set_no_start.sh \
	tests/integration/18_plugins_live_toggle.sh \
	tests/integration/19_daemon_restart.sh \
	tests/integration/24_store_backup.sh \
	tests/integration/25_settings_history.sh \
	tests/integration/26_backup_interrupted.sh \
	tests/integration/27_ctl_stdout_error.sh \
	tests/integration/28_state_dir_unreachable.sh \
	tests/integration/29_backup_partial.sh \
	tests/integration/29_restore_swapped.sh \
	tests/integration/29_ctl_long_args.sh \
	tests/integration/60_admin_api.sh tests/integration/61_admin_ui.sh \
	tests/integration/60_metrics_history.sh \
	tests/integration/62_webui_no_inline.sh tests/integration/63_admin_login_throttle.sh \
	tests/integration/63_admin_ipv6_client.sh tests/integration/63_admin_conn_hold.sh \
	tests/integration/63_admin_slow_read.sh tests/integration/63_admin_throttle_prefix.sh \
	tests/integration/63_admin_conn_flood.sh tests/integration/63_admin_throttle_ipv4.sh \
	tests/integration/63_admin_cert_curve.sh \
	tests/integration/64_admin_ui_live.sh tests/integration/64_admin_live_clock.sh \
	tests/integration/64_admin_live_method.sh \
	tests/integration/64_status_uptime_clock.sh \
	tests/integration/64_admin_ui_upgrade.sh tests/integration/62_admin_ui_mend.sh \
	tests/integration/62_admin_ui_stale.sh tests/integration/62_admin_ui_policy_versions.sh \
	tests/integration/62_admin_ui_policy_refused.sh tests/integration/62_admin_ui_journey.sh \
	tests/integration/68_admin_account.sh tests/integration/69_admin_totp.sh \
	tests/integration/78_pdk_host_rules.sh \
	tests/integration/69_admin_totp_confirm.sh tests/integration/64_admin_setup_clock.sh \
	tests/integration/68_admin_passwd_race.sh tests/integration/69_admin_totp_sessions.sh
EXTRA_DIST += tests/tap.h tests/integration/lib.sh tests/integration/10_daemon_basics.sh \
	tests/integration/11_plugin_loader.sh tests/integration/12_pdk_out_of_tree.sh \
	tests/integration/13_plugin_schema.sh tests/integration/14_plugin_store_guard.sh \
	tests/integration/14_plugin_neighbour_schema.sh \
	tests/integration/15_store_upgrade.sh tests/fixtures/store_schema1.sql \
	tests/integration/16_core_names_no_plugin.sh tests/integration/24_store_backup.sh \
	tests/integration/25_settings_history.sh \
	tests/integration/26_backup_interrupted.sh \
	tests/integration/27_ctl_stdout_error.sh \
	tests/integration/28_state_dir_unreachable.sh \
	tests/integration/29_backup_partial.sh \
	tests/integration/29_restore_swapped.sh tests/integration/swap_for_link.c \
	tests/integration/17_demo_www_swapped.sh \
	tests/integration/17_set_no_start.sh \
	tests/integration/16_help_man.sh \
	tests/integration/appear_at_rename.c \
	tests/integration/29_ctl_long_args.sh \
	tests/integration/60_admin_api.sh tests/integration/61_admin_ui.sh \
	tests/integration/60_metrics_history.sh \
	tests/integration/62_webui_no_inline.sh tests/integration/63_admin_login_throttle.sh \
	tests/integration/63_admin_ipv6_client.sh tests/integration/63_admin_conn_hold.sh \
	tests/integration/63_admin_slow_read.sh tests/integration/63_admin_throttle_prefix.sh \
	tests/integration/63_admin_conn_flood.sh tests/integration/admin_flood.py \
	tests/integration/63_admin_throttle_ipv4.sh tests/integration/63_admin_cert_curve.sh \
	tests/webui/check-no-inline.sh tests/webui/page_render.mjs tests/ui/admin_ui.py \
	tests/integration/64_admin_ui_live.sh tests/ui/admin_ui_live.py \
	tests/integration/64_admin_live_clock.sh tests/integration/clock_shift.c \
	tests/integration/64_admin_live_method.sh \
	tests/integration/64_status_uptime_clock.sh \
	tests/integration/64_admin_ui_upgrade.sh tests/ui/admin_ui_upgrade.py \
	tests/integration/62_admin_ui_mend.sh tests/ui/admin_ui_mend.py tests/ui/admin_ui_restart.py \
	tests/integration/62_admin_ui_stale.sh tests/ui/admin_ui_stale.py \
	tests/integration/62_admin_ui_policy_versions.sh tests/ui/policy_versions_ui.py \
	tests/integration/62_admin_ui_policy_refused.sh tests/ui/policy_refused_ui.py \
	tests/integration/62_admin_ui_journey.sh tests/ui/journey_ui.py \
	tests/integration/13_privdrop.sh tests/integration/17_daemon_process.sh \
	tests/integration/18_plugins_live_toggle.sh tests/integration/19_daemon_restart.sh \
	tests/integration/68_admin_account.sh tests/ui/account_ui.py \
	tests/integration/69_admin_totp.sh tests/integration/totp_code.py \
	tests/integration/78_pdk_host_rules.sh \
	tests/integration/69_admin_totp_confirm.sh tests/integration/64_admin_setup_clock.sh \
	tests/integration/68_admin_passwd_race.sh tests/integration/69_admin_totp_sessions.sh
include tests/perf/local.mk
include tests/fuzz/local.mk
