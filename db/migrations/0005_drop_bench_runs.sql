-- The benchmark moved into the bench plugin (plugins/bench), which keeps its
-- runs in its own tables (bench_runs, bench_results, bench_machines,
-- bench_ceilings, created by the plugin's migrations).  The placeholder from
-- 0001 never held data: no core code wrote it.
DROP TABLE IF EXISTS bench_runs;
