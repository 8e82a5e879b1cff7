//! tf.function statistics: calls and self time per function and execution mode, from the
//! `tf_function_call` stats of host events, as XProf's `xplane_to_tf_functions.cc`
//! computes `OpStats.tf_function_db`.

use super::types::{TfFunction, TfFunctionDb, TfFunctionMetrics, tf_function_mode};
use oxprof_model::schema::StatType;
use oxprof_model::{StatValue, XLine, XPlane, XSpace};

/// `TfFunctionCompiler` names (proto enum values).
mod compiler {
    pub const INVALID: &str = "INVALID_COMPILER";
    pub const OTHER: &str = "OTHER_COMPILER";
    pub const MIXED: &str = "MIXED_COMPILER";
    pub const XLA: &str = "XLA_COMPILER";
}

/// `Decode`: the execution mode and compiler of a `tf_function_call` value (unknown
/// values give `INVALID_MODE`, `INVALID_COMPILER`).
fn decode_mode(mode: &str) -> (i32, &'static str) {
    match mode {
        "eager" => (tf_function_mode::EAGER, compiler::INVALID),
        "concrete" => (tf_function_mode::CONCRETE, compiler::INVALID),
        "traced-xla" => (tf_function_mode::TRACED, compiler::XLA),
        "traced-nonXla" => (tf_function_mode::TRACED, compiler::OTHER),
        "notTraced-xla" => (tf_function_mode::NOT_TRACED, compiler::XLA),
        "notTraced-nonXla" => (tf_function_mode::NOT_TRACED, compiler::OTHER),
        _ => (tf_function_mode::INVALID, compiler::INVALID),
    }
}

/// `CombineCompilers`: invalid yields to the other; different valid ones are mixed.
pub fn combine_compilers(a: &str, b: &str) -> String {
    let invalid = |c: &str| c.is_empty() || c == compiler::INVALID;
    if invalid(a) {
        if b.is_empty() { compiler::INVALID.to_string() } else { b.to_string() }
    } else if invalid(b) || a == b {
        a.to_string()
    } else {
        compiler::MIXED.to_string()
    }
}

/// `ComputeExpensiveCallPercent`: % of self time spent in traced or eager calls.
pub fn expensive_call_percent(function: &TfFunction) -> f64 {
    let (mut total, mut expensive) = (0u64, 0u64);
    for (&mode, metrics) in &function.metrics {
        total = total.wrapping_add(metrics.self_time_ps);
        if mode == tf_function_mode::TRACED || mode == tf_function_mode::EAGER {
            expensive = expensive.wrapping_add(metrics.self_time_ps);
        }
    }
    let total = total as f64;
    if -1e-10 < total && total < 1e-10 { 0.0 } else { 100.0 * expensive as f64 / total }
}

/// `CombineTfFunctionDb`: adds `src` into `dst` (functions new to `dst` are copied;
/// others take the max tracing count, combined compilers, summed per-mode metrics and a
/// recomputed expensive-call percent).
pub fn combine_tf_function_db(src: &TfFunctionDb, dst: &mut TfFunctionDb) {
    for (name, src_fn) in &src.tf_functions {
        let Some(dst_fn) = dst.tf_functions.get_mut(name) else {
            dst.tf_functions.insert(name.clone(), src_fn.clone());
            continue;
        };
        dst_fn.total_tracing_count = src_fn.total_tracing_count.max(dst_fn.total_tracing_count);
        dst_fn.compiler = combine_compilers(&src_fn.compiler, &dst_fn.compiler);
        for (&mode, metrics) in &src_fn.metrics {
            let slot = dst_fn.metrics.entry(mode).or_default();
            slot.count = slot.count.wrapping_add(metrics.count);
            slot.self_time_ps = slot.self_time_ps.wrapping_add(metrics.self_time_ps);
        }
        dst_fn.expensive_call_percent = expensive_call_percent(dst_fn);
    }
}

/// One tf.function call (`ActivationRecord`).
struct Activation<'a> {
    name: &'a str,
    duration_ps: u64,
    mode: i32,
    compiler: &'static str,
    tracing_count: i64,
    children_duration_ps: u64,
}

/// `ConvertHostThreadsXLineToTfFunctionDb`: the tf.functions called on one line.
///
/// Events with a non-empty `tf_function_call` stat are calls. Their entries and exits are
/// sorted by time and walked with a call stack; a call's duration is added to the
/// children time of the call below it on the stack, and self time = duration − children:
///
/// ```text
///   |------------- f (100) -------------|     self(f) = 100 − 40 = 60
///        |--- g (40) ---|                     self(g) = 40
/// ```
///
/// XProf sorts with an unstable `std::sort`, so the order of entries and exits at equal
/// timestamps is unspecified there; here it is stable (entry before exit of one call,
/// event order otherwise). Calls must nest; an exit pops the top call whatever it is.
pub fn line_tf_function_db(plane: &XPlane, line: &XLine) -> TfFunctionDb {
    let mut activations: Vec<Activation<'_>> = Vec::new();
    // (timestamp, activation × 2 + is_exit): sorting by the pair is the stable sort.
    let mut points: Vec<(u64, u64)> = Vec::new();
    for event in line.events(plane) {
        let mut mode = "";
        let mut tracing_count = 0i64;
        for stat in event.stats() {
            match stat.stat_type() {
                Some(StatType::TfFunctionCall) => mode = stat.as_str().unwrap_or(""),
                Some(StatType::TfFunctionTracingCount) => {
                    tracing_count = if let StatValue::Int64(v) = stat.value { v } else { 0 };
                }
                _ => {}
            }
        }
        if mode.is_empty() {
            continue;
        }
        let begin_ps = event.timestamp_ps() as u64;
        let duration_ps = event.duration_ps() as u64;
        let (mode, compiler) = decode_mode(mode);
        let slot = 2 * activations.len() as u64;
        activations.push(Activation {
            name: event.name(),
            duration_ps,
            mode,
            compiler,
            tracing_count,
            children_duration_ps: 0,
        });
        points.push((begin_ps, slot));
        points.push((begin_ps.wrapping_add(duration_ps), slot + 1));
    }
    points.sort_unstable();

    let mut call_stack: Vec<usize> = Vec::new();
    for &(_, slot) in &points {
        let Ok(index) = usize::try_from(slot / 2) else { continue };
        if slot % 2 == 0 {
            call_stack.push(index);
            continue;
        }
        call_stack.pop();
        let duration = activations.get(index).map_or(0, |a| a.duration_ps);
        if let Some(parent) = call_stack.last().and_then(|&p| activations.get_mut(p)) {
            parent.children_duration_ps = parent.children_duration_ps.wrapping_add(duration);
        }
    }

    let mut db = TfFunctionDb::default();
    for record in &activations {
        let function = db
            .tf_functions
            .entry(record.name.to_string())
            .or_insert_with(|| TfFunction { compiler: compiler::INVALID.to_string(), ..Default::default() });
        function.total_tracing_count = function.total_tracing_count.max(record.tracing_count);
        function.compiler = combine_compilers(&function.compiler, record.compiler);
        let metrics: &mut TfFunctionMetrics = function.metrics.entry(record.mode).or_default();
        metrics.count = metrics.count.wrapping_add(1);
        metrics.self_time_ps =
            metrics.self_time_ps.wrapping_add(record.duration_ps.wrapping_sub(record.children_duration_ps));
    }
    for function in db.tf_functions.values_mut() {
        function.expensive_call_percent = expensive_call_percent(function);
    }
    db
}

/// `OpStats.tf_function_db`: the tf.functions of every line (derived ones included, as
/// XProf) of the host plane at `plane_index`, combined (empty for an out-of-range index).
pub fn tf_function_db(space: &XSpace, plane_index: usize) -> TfFunctionDb {
    let mut db = TfFunctionDb::default();
    let Some(plane) = space.planes.get(plane_index) else { return db };
    if plane.stat_metadata_of_type(StatType::TfFunctionCall).is_none() {
        return db; // No event can be a call: skip scanning every stat.
    }
    for line in &plane.lines {
        combine_tf_function_db(&line_tf_function_db(plane, line), &mut db);
    }
    db
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op_stats::host_op_metrics::find_host_plane;
    use crate::op_stats::host_op_metrics::reference_tests::{
        EXTERNAL_SINGLE_HOST, external_op_stats, external_root, refkit_profiles,
    };
    use oxprof_testkit::XSpaceBuilder;
    use oxprof_testkit::jsoncmp::{CmpOptions, compare};
    use oxprof_xspace::decode_xspace;

    // t(ps)  0    10        50  60     100
    // main   |------------ f (traced) ----|         self 100 − 40 − 10 = 50
    //             |-- g --|    |-h-|                g: notTraced-xla 40, h: eager 10
    // other  |-- f (notTraced-nonXla) --|  0..30    tracing_count 3
    #[test]
    fn self_time_modes_and_compilers() {
        let bytes = XSpaceBuilder::new()
            .plane("/host:CPU", |p| {
                p.line(1, "main", 0, |l| {
                    l.event("f", 0, 100).stat("tf_function_call", "traced-nonXla").stat("tracing_count", 1i64);
                    l.event("g", 10, 40).stat("tf_function_call", "notTraced-xla");
                    l.event("h", 50, 10).stat("tf_function_call", "eager");
                    l.event("not a function", 0, 5);
                });
                p.line(2, "other", 0, |l| {
                    l.event("f", 0, 30).stat("tf_function_call", "notTraced-nonXla").stat("tracing_count", 3i64);
                    l.event("g", 40, 10).stat("tf_function_call", "traced-nonXla");
                });
            })
            .to_bytes();
        let space = decode_xspace(&bytes).unwrap();
        let db = tf_function_db(&space, 0);
        let f = &db.tf_functions["f"];
        assert_eq!(f.metrics[&tf_function_mode::TRACED], TfFunctionMetrics { count: 1, self_time_ps: 50 });
        assert_eq!(f.metrics[&tf_function_mode::NOT_TRACED], TfFunctionMetrics { count: 1, self_time_ps: 30 });
        assert_eq!((f.total_tracing_count, f.compiler.as_str()), (3, "OTHER_COMPILER"));
        assert!((f.expensive_call_percent - 100.0 * 50.0 / 80.0).abs() < 1e-12);
        let g = &db.tf_functions["g"];
        assert_eq!(g.compiler, "MIXED_COMPILER");
        let h = &db.tf_functions["h"];
        assert_eq!((h.compiler.as_str(), h.expensive_call_percent), ("INVALID_COMPILER", 100.0));
        assert_eq!(db.tf_functions.len(), 3);
    }

    #[test]
    fn compilers_combine_like_xprof() {
        assert_eq!(combine_compilers("INVALID_COMPILER", "XLA_COMPILER"), "XLA_COMPILER");
        assert_eq!(combine_compilers("XLA_COMPILER", "INVALID_COMPILER"), "XLA_COMPILER");
        assert_eq!(combine_compilers("XLA_COMPILER", "OTHER_COMPILER"), "MIXED_COMPILER");
        assert_eq!(combine_compilers("", ""), "INVALID_COMPILER");
        assert_eq!(decode_mode("bogus"), (tf_function_mode::INVALID, "INVALID_COMPILER"));
    }

    fn check(label: &str, expected: &TfFunctionDb, actual: &TfFunctionDb, failures: &mut Vec<String>) {
        let report = compare(
            &serde_json::to_value(expected).unwrap(),
            &serde_json::to_value(actual).unwrap(),
            CmpOptions::default(),
        );
        if !report.is_match() {
            failures.push(format!("{label}:\n{}", report.summary(20)));
        }
    }

    #[test]
    fn refkit_tf_function_db_matches_xprof() {
        let mut failures = Vec::new();
        for (name, xplane, expected) in refkit_profiles() {
            let space = oxprof_testkit::files::load_xspace(&xplane).unwrap();
            let ours = find_host_plane(&space).map(|i| tf_function_db(&space, i)).unwrap_or_default();
            check(&name, &expected.tf_function_db, &ours, &mut failures);
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn external_tf_function_db_matches_xprof() {
        let root = external_root();
        if !root.exists() {
            eprintln!("SKIP: external test data not found at {}", root.display());
            return;
        }
        let mut failures = Vec::new();
        for (name, rel) in EXTERNAL_SINGLE_HOST {
            let path = root.join(rel);
            if !path.exists() {
                eprintln!("SKIP: {} not found", path.display());
                continue;
            }
            let space = oxprof_testkit::files::load_xspace(&path).unwrap();
            let ours = find_host_plane(&space).map(|i| tf_function_db(&space, i)).unwrap_or_default();
            check(name, &external_op_stats(name).tf_function_db, &ours, &mut failures);
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }
}
