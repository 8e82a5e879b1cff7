-- Queries answered identically by `oxprof query`, DuckDB and Spark SQL over
-- `oxprof export --to parquet` (scripts/ci/check-sql-readers.py). One statement per
-- `-- name:` block; every query orders its rows fully.

-- name: slice_counts
SELECT run, host, count(*) AS n, sum(dur_ps) AS total_ps, min(ts_ps) AS first_ps, max(depth) AS max_depth
FROM slice GROUP BY run, host ORDER BY run, host;

-- name: top_names
SELECT name, count(*) AS n, sum(dur) AS total_ns FROM slice GROUP BY name ORDER BY total_ns DESC, name LIMIT 20;

-- name: tracks
SELECT t.name AS track, count(*) AS n FROM slice s JOIN thread_track t
  ON s.track_id = t.id AND s.run = t.run AND s.host = t.host
GROUP BY t.name ORDER BY n DESC, track LIMIT 20;

-- name: nesting
SELECT depth, count(*) AS n FROM slice GROUP BY depth ORDER BY depth;

-- name: args
SELECT key, value_type, count(*) AS n FROM args GROUP BY key, value_type ORDER BY key, value_type;

-- name: process_tracks
SELECT name, line_count, event_count FROM process_track ORDER BY name;

-- name: flows
SELECT kind, count(*) AS n FROM flow GROUP BY kind ORDER BY kind;

-- name: steps
SELECT host, step_num, step_time_ms FROM steps ORDER BY host, step_num;

-- name: op_stats
SELECT host, host_or_device, count(*) AS n, sum(total_self_time) AS self_us FROM op_stats
GROUP BY host, host_or_device ORDER BY host, host_or_device;

-- name: hosts
SELECT run, host, file FROM hosts ORDER BY run, host;
