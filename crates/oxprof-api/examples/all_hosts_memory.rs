//! Memory of an ALL_HOSTS combine, for measuring under `/usr/bin/time -v` (#42): `folded`
//! combines as the OpStats tools do (each host's analysis folded in as it comes, then
//! dropped), `at-once` first holds every host's analysis, then combines (the tools' way
//! before). Without a cache, like `oxprof data --no-cache`. Prints the hosts combined, the
//! common steps and the most host analyses alive at once.
//!
//! cargo run --release -p oxprof-api --example all_hosts_memory -- POD folded|at-once

use oxprof_api::data::local_session;
use oxprof_api::session::SessionOptions;
use oxprof_xprof::op_stats::convert::{StepSelection, analyses_alive, combine_hosts};

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [path, mode] = args.as_slice() else {
        return Err("usage: all_hosts_memory POD folded|at-once".into());
    };
    let options = SessionOptions { confine_to_root: false, ..SessionOptions::one_shot() };
    let session = local_session(path.as_ref(), options).map_err(|e| e.to_string())?;
    let run = session.run(None).map_err(|e| e.to_string())?;
    let steps = StepSelection::DropIncomplete;
    let combined = match mode.as_str() {
        "folded" => oxprof_api::op_stats::combined_op_stats(&session, &run, Some("ALL_HOSTS"), steps),
        "at-once" => oxprof_api::request::select_hosts(&run, Some("ALL_HOSTS"))
            .and_then(|files| oxprof_api::op_stats::host_analyses(&session, &files, false))
            .map(|analyses| combine_hosts(&analyses, steps)),
        other => return Err(format!("mode is folded or at-once, not {other}")),
    }
    .map_err(|e| e.to_string())?;
    let (_, peak) = analyses_alive();
    println!(
        "{mode}: {} hosts, {} common steps, at most {peak} host analyses alive at once",
        combined.run_environment.host_count,
        combined.step_db.step_sequence.len()
    );
    Ok(())
}
