-- PerfettoSQL-style recipes: queries written the way Perfetto's trace_processor docs and
-- users write them against `slice`, `thread_track`, `process_track`, `args` and `flow`,
-- run unchanged by `oxprof query` (crates/oxprof-sql/tests/golden.rs checks each answers
-- and what it must hold). One statement per `-- name:` block. PerfettoSQL's own modules
-- (`INCLUDE PERFETTO MODULE`, `extract_arg`, span joins) are not SQL oxprof runs.

-- name: slices_with_thread
-- Every slice with its thread track's name (Perfetto's "slices on a thread").
SELECT slice.ts, slice.dur, slice.name, thread_track.name AS thread
FROM slice JOIN thread_track ON slice.track_id = thread_track.id
ORDER BY slice.ts LIMIT 100;

-- name: slices_with_process
-- Slices with their thread and process (thread_track.parent_id → process_track).
SELECT s.name, t.name AS thread, p.name AS process, s.dur
FROM slice s
JOIN thread_track t ON s.track_id = t.id
JOIN process_track p ON t.parent_id = p.id
ORDER BY s.dur DESC LIMIT 20;

-- name: top_slices
-- The heaviest names by total duration.
SELECT name, COUNT(1) AS cnt, SUM(dur) AS total_dur, AVG(dur) AS avg_dur
FROM slice GROUP BY name ORDER BY total_dur DESC LIMIT 10;

-- name: children_of_longest
-- The direct children of the longest slice.
SELECT id, name, depth, dur FROM slice
WHERE parent_id = (SELECT id FROM slice ORDER BY dur DESC, id LIMIT 1)
ORDER BY ts;

-- name: ancestors
-- Every ancestor of the deepest slice, walking parent_id (a recursive CTE).
WITH RECURSIVE chain(id, parent_id, name, depth) AS (
  SELECT id, parent_id, name, depth FROM slice WHERE id = (SELECT id FROM slice ORDER BY depth DESC, id LIMIT 1)
  UNION ALL
  SELECT s.id, s.parent_id, s.name, s.depth FROM slice s JOIN chain c ON s.id = c.parent_id
)
SELECT id, name, depth FROM chain ORDER BY depth;

-- name: slice_args
-- A slice's args through arg_set_id.
SELECT slice.name, args.key, args.int_value, args.string_value, args.real_value
FROM slice JOIN args USING (arg_set_id)
ORDER BY slice.id, args.key LIMIT 100;

-- name: self_time
-- Self time: a slice's duration minus its children's.
SELECT p.name, SUM(p.dur - COALESCE(c.child_dur, 0)) AS self_dur
FROM slice p LEFT JOIN (SELECT parent_id, SUM(dur) AS child_dur FROM slice GROUP BY parent_id) c
  ON c.parent_id = p.id
GROUP BY p.name ORDER BY self_dur DESC LIMIT 10;

-- name: flows
-- Flow arrows with the names at both ends.
SELECT o.name AS from_name, i.name AS to_name, COUNT(*) AS n
FROM flow f JOIN slice o ON f.slice_out = o.id JOIN slice i ON f.slice_in = i.id
GROUP BY o.name, i.name ORDER BY n DESC, from_name, to_name LIMIT 20;

-- name: busy_per_thread
-- Top-level busy time per thread (depth 0 slices).
SELECT t.name AS thread, SUM(s.dur) AS busy, COUNT(*) AS slices
FROM slice s JOIN thread_track t ON s.track_id = t.id
WHERE s.depth = 0 GROUP BY t.name ORDER BY busy DESC, thread;

-- name: glob_names
-- Names matching a pattern (Perfetto users write GLOB; LIKE is the standard spelling).
SELECT name, COUNT(*) AS n FROM slice WHERE name LIKE '%fusion%' OR name LIKE '%Conv%'
GROUP BY name ORDER BY n DESC, name LIMIT 20;
