-- The benchmark moved into the bench plugin (plugins/bench), which keeps its
-- runs in its own tables (bench_runs, bench_results, bench_machines: the
-- plugin's migrations create them after this one has run).  The placeholder from
-- 0001 never held data: no core code wrote it.
DROP TABLE IF EXISTS bench_runs;
