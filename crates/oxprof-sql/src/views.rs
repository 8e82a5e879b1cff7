//! The library of views: queries people ask often, named, documented with an example,
//! and registered (with the tables they read) only when a query names them.

/// One view.
#[derive(Debug, Clone, Copy)]
pub struct View {
    /// Its name in SQL.
    pub name: &'static str,
    /// What a row is.
    pub doc: &'static str,
    /// Its definition.
    pub sql: &'static str,
    /// A query using it.
    pub example: &'static str,
}

/// Every view.
pub const VIEWS: &[View] = &[
    View {
        name: "kernel_by_op",
        doc: "GPU kernel time per framework op and host (kernels' `op_name`), heaviest first.",
        sql: "SELECT run, host, op_name, count(*) AS kernels, sum(occurrences) AS launches, \
              sum(total_duration_us) AS total_us FROM kernels GROUP BY run, host, op_name",
        example: "SELECT * FROM kernel_by_op ORDER BY total_us DESC LIMIT 10",
    },
    View {
        name: "step_ops",
        doc: "Every event with the step it belongs to (its `group_id`) and its track's name.",
        sql: "SELECT s.run, s.host, s.group_id AS step, t.name AS track, s.name, s.ts, s.dur, s.depth \
              FROM slice s JOIN thread_track t ON s.track_id = t.id AND s.run = t.run AND s.host = t.host \
              WHERE s.group_id IS NOT NULL",
        example: "SELECT step, count(*) AS events, sum(dur) AS dur FROM step_ops GROUP BY step ORDER BY step",
    },
    View {
        name: "top_ops_per_step",
        doc: "Per host and step, events ranked by their total duration within the step (rank 1 = heaviest).",
        sql: "SELECT run, host, step, name, total_dur, occurrences, \
              row_number() OVER (PARTITION BY run, host, step ORDER BY total_dur DESC, name) AS rank \
              FROM (SELECT run, host, step, name, sum(dur) AS total_dur, count(*) AS occurrences \
              FROM step_ops GROUP BY run, host, step, name) AS per_step",
        example: "SELECT * FROM top_ops_per_step WHERE rank <= 3 ORDER BY step, rank",
    },
    View {
        name: "step_time_all_hosts",
        doc: "XProf's ALL_HOSTS step table: per step, the slowest host's step time and the mean over hosts.",
        sql: "SELECT run, step_num, count(*) AS hosts, max(step_time_ms) AS max_step_time_ms, \
              avg(step_time_ms) AS mean_step_time_ms, min(step_time_ms) AS min_step_time_ms FROM steps \
              GROUP BY run, step_num",
        example: "SELECT * FROM step_time_all_hosts ORDER BY step_num",
    },
    View {
        name: "stragglers",
        doc: "Hosts whose step time exceeds the step's median over hosts by more than 10%, per step.",
        sql: "SELECT s.run, s.step_num, s.host, s.step_time_ms AS step_time_ms, m.median_ms, \
              s.step_time_ms / m.median_ms AS ratio FROM steps s JOIN (SELECT run, step_num, \
              median(step_time_ms) AS median_ms FROM steps GROUP BY run, step_num) m \
              ON s.run = m.run AND s.step_num = m.step_num WHERE s.step_time_ms > 1.1 * m.median_ms",
        example: "SELECT host, count(*) AS slow_steps FROM stragglers GROUP BY host ORDER BY 2 DESC",
    },
];

/// The view named `name` (case-insensitive).
pub fn view(name: &str) -> Option<&'static View> {
    VIEWS.iter().find(|v| v.name.eq_ignore_ascii_case(name))
}
