//! Hostile SQL within budgets (issue 38): statements too wide, deep or large to plan are
//! refused before planning; strings are sized before they are built and charged to the
//! engine's pool while they live; planning counts against the time limit; the engine's
//! tables live in the session's cache; concurrent first queries of a view all answer; an
//! engine dropped inside a runtime does not panic; a host whose profile cannot be read is
//! left out with a warning (or, when every host failed, its error with `/data`'s status).

use oxprof_api::session::{Session, SessionOptions};
use oxprof_sql::{Engine, QueryLimits, SqlError};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

const JAX: &str = "testdata/profiles/jax_train";

fn session_over(path: &Path, cache_bytes: usize) -> Arc<Session> {
    let options = SessionOptions { confine_to_root: false, cache_bytes, ..SessionOptions::default() };
    Arc::new(oxprof_api::data::local_session(path, options).unwrap())
}

fn engine_with(limits: QueryLimits) -> Engine {
    let session = session_over(&repo().join(JAX), 256 << 20);
    let runs = session.catalog().current().runs.clone();
    Engine::new(session, runs, limits).unwrap()
}

/// The limits of the server's route.
fn served() -> QueryLimits {
    QueryLimits { timeout: Some(Duration::from_secs(20)), memory_bytes: 1 << 30, ..QueryLimits::default() }
}

fn doubling(levels: usize) -> String {
    let mut ctes = vec!["a0 AS (SELECT 1 AS x)".to_string()];
    for i in 1..=levels {
        ctes.push(format!("a{i} AS (SELECT x FROM a{0} UNION ALL SELECT x FROM a{0})", i - 1));
    }
    format!("WITH {} SELECT count(*) FROM a{levels}", ctes.join(", "))
}

/// Runs `check` on a thread with a small stack (a server's request thread is 2 MiB): the
/// engine must not need the caller's stack for anything deep.
fn on_small_stack(check: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new().stack_size(512 << 10).spawn(check).unwrap().join().unwrap();
}

/// Before: a 2,500-term UNION ALL (47 KB) overflowed the stack and aborted the process;
/// `1+1+…` and doubling CTEs too. Now each is one line naming the limit, at once.
#[test]
fn statements_too_wide_deep_or_large_to_plan_are_refused() {
    on_small_stack(|| {
        let engine = engine_with(served());
        let union = format!("SELECT 1{}", " UNION ALL SELECT 1".repeat(2_499));
        assert!(union.len() < 64 << 10);
        let cases = [
            (union, "2500 UNION/INTERSECT/EXCEPT terms"),
            (format!("SELECT 1{}", "+1".repeat(30_000)), "nested too deeply"),
            (doubling(20), "too large to plan"),
            (format!("SELECT 1{}", " UNION ALL SELECT 1".repeat(4_000)), "too long"),
        ];
        for (sql, says) in cases {
            let error = engine.query(&sql).unwrap_err();
            assert!(matches!(error, SqlError::Sql(_)), "{says}: {error:?}");
            assert!(error.to_string().contains(says), "{says}: {error}");
            assert!(!error.to_string().contains('\n'), "{error}");
            assert_eq!(error.http_status(), 400);
        }
        // What is within the limits still answers.
        let union = format!("SELECT 1 AS x{}", " UNION ALL SELECT 1".repeat(500));
        let result = engine.query(&format!("SELECT count(*) FROM ({union})")).unwrap();
        assert_eq!(result.row_count(), 1);
        assert_eq!(engine.query(&doubling(8)).unwrap().row_count(), 1);
    });
}

/// Before: `lpad(…, 1000000000)` over 8 rows asked for 8 GB at once and aborted the process,
/// `repeat('x', 2147483647)` built 2 GB. Now every function that can grow its output is
/// sized first: past the value cap, or past what the pool has left, it is refused before
/// anything is allocated.
#[test]
fn string_functions_are_sized_before_they_build() {
    on_small_stack(|| {
        let engine = engine_with(served());
        let cases = [
            ("SELECT sum(length(lpad(CAST(value AS VARCHAR), 1000000000))) FROM range(8)", "lpad() would build"),
            ("SELECT length(repeat('x', 2147483647))", "repeat() would build"),
            ("SELECT length(repeat(CAST(value AS VARCHAR), 100000000)) FROM range(8)", "repeat() would build"),
            ("SELECT sum(length(rpad(name, 50000000, 'é'))) FROM slice", "rpad() would build"),
            ("SELECT length(repeat('ab', 10000))", "a string built from constants is at most 16 KiB"),
            ("SELECT length(repeat('ab', 8000) || repeat('ab', 8000))", "|| would build"),
            (
                "SELECT sum(length(x || x || x || x || x || x || x || x)) FROM \
                 (SELECT repeat(CAST(value AS VARCHAR), 10000000) AS x FROM range(8))",
                "|| would build",
            ),
            (
                "SELECT length(concat(repeat(CAST(value AS VARCHAR), 40000000), 'x', repeat(CAST(value AS VARCHAR), 40000000))) FROM range(2)",
                "concat() would build",
            ),
            (
                "SELECT length(replace(repeat(CAST(value AS VARCHAR), 1000000), '', repeat('y', 100))) FROM range(2)",
                "replace() would build",
            ),
            (
                "SELECT length(regexp_replace(repeat(CAST(value AS VARCHAR), 1000000), '', repeat('y', 100), 'g')) FROM range(2)",
                "regexp_replace() would build",
            ),
            (
                "SELECT levenshtein(repeat(CAST(value AS VARCHAR), 100000), repeat(CAST(value + 1 AS VARCHAR), 100000)) FROM range(2)",
                "levenshtein() would compare",
            ),
            (
                "SELECT length(string_agg(repeat(CAST(value AS VARCHAR), 1000000), ',')) FROM range(100)",
                "string_agg() of one group passed",
            ),
        ];
        for (sql, says) in cases {
            let error = engine.query(sql).unwrap_err();
            let text = error.to_string();
            assert!(text.contains(says), "{sql}: {text}");
            assert_eq!(error.http_status(), 400, "{sql}: {text}");
            released(&engine);
        }
        // Ordinary uses answer as before.
        let result = engine.query("SELECT lpad('7', 3, '0') || repeat('-', 2) || concat('a', NULL, 'b') AS s").unwrap();
        let s = datafusion::arrow::compute::cast(
            result.batches[0].column(0),
            &datafusion::arrow::datatypes::DataType::Utf8,
        )
        .unwrap();
        assert_eq!(datafusion::arrow::array::AsArray::as_string::<i32>(&s).value(0), "007--ab");
        let result = engine.query("SELECT 'a' || NULL IS NULL AS n").unwrap();
        assert!(format!("{:?}", result.batches[0].column(0)).contains("true"));
        let result = engine.query("SELECT name || '!' AS n FROM slice LIMIT 2").unwrap();
        assert_eq!(result.schema.field(0).name(), "n");
        let result = engine.query("SELECT 'x' || 'y'").unwrap();
        assert_eq!(result.schema.field(0).name(), "Utf8(\"x\") || Utf8(\"y\")");
    });
}

/// Waits until the engine's pool is empty (what a query held is released as its tasks end,
/// which may be just after its answer), at most a few seconds.
fn released(engine: &Engine) {
    for _ in 0..500 {
        if engine.memory().used_bytes == 0 {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("the pool still holds {:?}", engine.memory());
}

/// The strings a function built stay charged to the pool while a result holds them, and
/// are released with it.
#[test]
fn built_strings_are_charged_while_they_live() {
    let engine = engine_with(served());
    let result = engine.query("SELECT repeat(CAST(value AS VARCHAR), 1000000) AS s FROM range(4)").unwrap();
    assert_eq!(result.row_count(), 4);
    // At least one batch's strings are still charged while the result holds them (a batch
    // that an operator copies on the way out, e.g. coalescing, leaves the pool with the copy).
    let held = engine.memory().used_bytes;
    assert!(held >= 1_000_000, "{held}");
    drop(result);
    released(&engine);
    assert!(engine.memory().peak_bytes >= held);
}

/// Before: the time limit started after planning (a 41 s plan answered 200). Now a
/// statement whose plan would take long is cancelled at the limit, planning included.
#[test]
fn planning_counts_against_the_time_limit() {
    let mut limits = served();
    limits.timeout = Some(Duration::from_millis(300));
    // The plan-size check off: this plan takes seconds to optimize.
    limits.shape.max_plan_nodes = u64::MAX;
    let engine = engine_with(limits);
    let error = engine.query(&doubling(17)).unwrap_err();
    assert!(matches!(error, SqlError::TimedOut(_)), "{error:?}");
    // The engine is free for the next query.
    assert_eq!(engine.query("SELECT 1").unwrap().row_count(), 1);
}

/// Before: each engine kept up to 512 MiB of built tables outside `--cache-mb`. Now they
/// are entries of the session's cache, under its bound.
#[test]
fn built_tables_live_in_the_sessions_cache() {
    let session = session_over(&repo().join(JAX), 64 << 20);
    let runs = session.catalog().current().runs.clone();
    let engine = Engine::new(session.clone(), runs, served()).unwrap();
    let before = session.cache_stats();
    engine.query("SELECT name, count(*) FROM slice GROUP BY name").unwrap();
    let after = session.cache_stats();
    assert!(after.entries > before.entries && after.bytes > before.bytes, "{before:?} → {after:?}");
    // Under a bound too small for them, nothing is kept.
    let session = session_over(&repo().join(JAX), 1024);
    let runs = session.catalog().current().runs.clone();
    let engine = Engine::new(session.clone(), runs, served()).unwrap();
    engine.query("SELECT name, count(*) FROM slice GROUP BY name").unwrap();
    assert!(session.cache_stats().bytes <= 1024, "{:?}", session.cache_stats());
    // The engine's pool is reported by the session.
    let accounts = session.memory_accounts();
    assert_eq!(accounts.len(), 1);
    assert_eq!((accounts[0].name, accounts[0].limit_bytes, accounts[0].active), ("sql", 1 << 30, 0));
}

/// Before: concurrent first queries of a view raced to create it ("already exists").
#[test]
fn concurrent_first_queries_of_a_view_all_answer() {
    let engine = Arc::new(engine_with(served()));
    let threads: Vec<_> = (0..16)
        .map(|i| {
            let engine = engine.clone();
            std::thread::spawn(move || engine.query(&format!("SELECT count(*) + {i} FROM top_ops_per_step")))
        })
        .collect();
    for t in threads {
        let answer = t.join().unwrap();
        assert!(answer.is_ok(), "{answer:?}");
    }
}

/// Before: dropping an engine where tokio refuses to block (a server's task on shutdown)
/// panicked "Cannot drop a runtime in a context where blocking is not allowed".
#[test]
fn an_engine_dropped_inside_a_runtime_does_not_panic() {
    let engine = engine_with(served());
    engine.query("SELECT count(*) FROM slice").unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    runtime.block_on(async move { drop(engine) });
}

/// A run of two hosts, one a copy of the JAX fixture and one whose file is not a profile
/// (`bad`), in a temporary directory.
fn run_with_a_bad_host(bad: &[u8]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("plugins/profile/2024_01_01_00_00_00");
    std::fs::create_dir_all(&run).unwrap();
    let good = repo().join(JAX).join("plugins/profile/2026_11_22_03_01_45/vm.xplane.pb.gz");
    std::fs::copy(good, run.join("good.xplane.pb.gz")).unwrap();
    std::fs::write(run.join("bad.xplane.pb"), bad).unwrap();
    dir
}

/// Before: one bad host failed SQL over the whole run, with status 500. Now its rows are
/// left out with a warning naming it; only when every host read failed is the query an
/// error, with the status `/data` answers (422 damaged, 413 past an input budget).
#[test]
fn a_bad_host_is_left_out_with_a_warning() {
    let dir = run_with_a_bad_host(b"\x0a\xff\xff\xff\xff\x0fnot a profile");
    let session = session_over(dir.path(), 64 << 20);
    let runs = session.catalog().current().runs.clone();
    assert_eq!(runs[0].hosts.len(), 2, "{runs:?}");
    let engine = Engine::new(session, runs, served()).unwrap();
    let all = engine.query("SELECT host, count(*) FROM slice GROUP BY host").unwrap();
    assert_eq!(all.row_count(), 1);
    assert_eq!(all.warnings.len(), 1, "{:?}", all.warnings);
    assert!(
        all.warnings[0].starts_with("host bad of run ") && all.warnings[0].contains(" left out: "),
        "{:?}",
        all.warnings
    );
    let tools = engine.query("SELECT count(*) FROM op_stats").unwrap();
    assert_eq!(tools.warnings.len(), 1, "{:?}", tools.warnings);
    // The bad host alone: its error, with /data's status.
    let error = engine.query("SELECT count(*) FROM slice WHERE host = 'bad'").unwrap_err();
    assert!(matches!(error, SqlError::Profile { status: 422, .. }), "{error:?}");
    assert!(error.to_string().contains("bad.xplane.pb"), "{error}");
    // Past --max-profile-bytes: 413.
    let limits = oxprof_api::LoadLimits::default().with_max_profile_bytes(1000);
    let options = SessionOptions { confine_to_root: false, limits, ..SessionOptions::default() };
    let session = Arc::new(oxprof_api::data::local_session(&repo().join(JAX), options).unwrap());
    let runs = session.catalog().current().runs.clone();
    let engine = Engine::new(session, runs, served()).unwrap();
    let error = engine.query("SELECT count(*) FROM slice").unwrap_err();
    assert_eq!(error.http_status(), 413, "{error}");
}
