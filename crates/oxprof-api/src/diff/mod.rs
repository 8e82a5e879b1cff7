//! Comparing runs (`oxprof diff`, `oxprof summary`, `/oxprof/api/diff`): the IO edge of
//! `oxprof_diff`. Each side's typed reports are computed from a profile through the
//! session's analyses or read from a saved summary, handed to `oxprof_diff`, and the
//! result rendered as Markdown ([`markdown`]) or CSV ([`csv`]) (JSON is its serde form).
//!
//! A side is a path: a log directory or run directory (its newest run unless a run is
//! named), one `.xplane.pb[.gz]` file, or a summary file written by `oxprof summary`
//! (recognised by its content: JSON). Each side has a host selection, `ALL_HOSTS` (every
//! host's OpStats combined, as XProf does) unless one host is named; the CLI gives both
//! sides the same one unless `--host-a`/`--host-b` say otherwise (rank 0 against rank 1 of
//! one run).
//!
//! Each side's reports are those of the registry's tools over one host analysis per file
//! (the session keeps it, so the server's diff after a look at the tools converts
//! nothing again): `overview_page` from XProf's step selection, `framework_op_stats`,
//! `kernel_stats` and `hlo_stats` from every step, and `memory_profile` of the hosts that
//! recorded allocator events (the only second read of a file, and only for those).
//!
//! PyTorch runs (Kineto traces, told by their content) also get torch-tb-profiler's
//! `pytorch_overview` and `pytorch_op_stats` of one worker (the first selected; a note
//! names the others), read through the session's parsed trace: the comparison takes steps
//! and framework ops from them, since XProf's step database and framework ops do not see
//! `ProfilerStep#N` and ATen operators. XSpace files are never parsed twice for this.
//!
//! Inputs are read within budgets: profiles within [`LoadLimits`] as everywhere, summary
//! files within [`SummaryLimits`] (size first, from the file's metadata and again while
//! reading, then the JSON's objects and arrays before anything is built). Profiles' host
//! analyses go through the persistent analysis cache when one is given, as for `oxprof
//! data`.

pub mod csv;
pub mod markdown;

use crate::ApiError;
use crate::catalog::ServedRun;
use crate::data::local_session;
use crate::request::{ALL_HOSTS, select_hosts};
use crate::session::{Session, SessionOptions};
use oxprof_diff::summary::{Summary, SummaryLimits};
use oxprof_diff::{DiffOptions, RunDiff, RunReports, Source};
use oxprof_diskcache::DiskCache;
use oxprof_format::{Format, HostFile};
use oxprof_model::LoadLimits;
use oxprof_pytorch::{operators::PytorchOpStats, overview::PytorchOverview};
use oxprof_xprof::op_stats::convert::{HostsCombiner, StepSelection};
use oxprof_xprof::tools::{
    framework_op_stats::FrameworkOpStats, hlo_stats::HloStats, kernel_stats::KernelStats, overview_page::OverviewPage,
};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

/// What a side may be, for error messages.
const SIDE_KINDS: &str =
    "each side is a log directory, a run directory, an .xplane.pb[.gz] file, or a summary written by `oxprof summary`";

/// One side of a comparison as the user names it.
#[derive(Debug, Clone, Copy)]
pub struct SideRequest<'a> {
    /// A log directory, run directory, profile file or summary file.
    pub path: &'a Path,
    /// The run within a log directory (`None`: the newest).
    pub run: Option<&'a str>,
    /// The host selection (`None` or `ALL_HOSTS`: every host).
    pub host: Option<&'a str>,
}

/// How a comparison's inputs are read: their budgets, and the persistent analysis cache.
#[derive(Clone, Default)]
pub struct ReadOptions {
    /// Profiles (`--max-profile-bytes` and the rest).
    pub profile: LoadLimits,
    /// Summary files (`--max-summary-bytes`).
    pub summary: SummaryLimits,
    /// Per-host analyses kept across processes (`--cache-dir`; `None`: `--no-cache`), so
    /// that comparing with a run analysed before does not decode it again.
    pub disk_cache: Option<Arc<DiskCache>>,
}

impl std::fmt::Debug for ReadOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadOptions")
            .field("profile", &self.profile)
            .field("summary", &self.summary)
            .field("disk_cache", &self.disk_cache.is_some())
            .finish()
    }
}

/// `host` as a selection: `None` for every host.
fn selection(host: Option<&str>) -> Option<&str> {
    host.filter(|h| !h.is_empty() && *h != ALL_HOSTS)
}

/// The reports of `run` for a host selection (`None` or `ALL_HOSTS`: every host),
/// computed through `session` (`refresh`: recompute what it keeps).
pub fn run_reports(
    session: &Session,
    run: &ServedRun,
    host: Option<&str>,
    refresh: bool,
) -> Result<RunReports, ApiError> {
    let files = select_hosts(run, selection(host))?;
    // Each host's analysis folded into both combines as it comes, not all held at once.
    let mut all_steps = HostsCombiner::new(StepSelection::All);
    let mut xprof_steps = HostsCombiner::new(StepSelection::DropIncomplete);
    crate::op_stats::fold_host_analyses(session, &files, refresh, |_, analysis| {
        all_steps.add(analysis);
        xprof_steps.add(analysis);
    })?;
    let (all_steps, xprof_steps) = (all_steps.finish(), xprof_steps.finish());
    let ((overview, framework), (kernels, hlo)) = rayon::join(
        || (OverviewPage::from_op_stats(&xprof_steps), FrameworkOpStats::from_op_stats(&all_steps)),
        || (KernelStats::from_op_stats(&all_steps), HloStats::from_op_stats(&all_steps)),
    );
    let mut memory_profile = BTreeMap::new();
    for file in &files {
        if let Some(profile) = crate::memory_profile::allocator_profile(session, file)? {
            memory_profile.insert(file.host.clone(), profile);
        }
    }
    let (pytorch_overview, pytorch_op_stats, notes) = pytorch_reports(session, &files, refresh)?;
    Ok(RunReports {
        overview_page: Some(overview),
        framework_op_stats: Some(framework),
        kernel_stats: Some(kernels),
        hlo_stats: Some(hlo),
        memory_profile,
        op_table_steps: Some(all_steps.step_db.step_sequence.len() as u64),
        pytorch_overview,
        pytorch_op_stats,
        notes,
    })
}

/// A PyTorch run's overview and operators, and notes on what was left out.
type PytorchReports = (Option<PytorchOverview>, Option<PytorchOpStats>, Vec<String>);

/// torch-tb-profiler's overview and operators of the first selected file when it is a
/// PyTorch trace (one worker: these views do not combine ranks), with a note naming the
/// workers left out; nothing for XSpace files (told from their first bytes, not decoded).
fn pytorch_reports(session: &Session, files: &[&HostFile], refresh: bool) -> Result<PytorchReports, ApiError> {
    let Some(first) = files.first() else { return Ok((None, None, Vec::new())) };
    let is_kineto = session.store().detect(&first.path).is_ok_and(|d| d.format == Format::Kineto);
    if !is_kineto {
        return Ok((None, None, Vec::new()));
    }
    let parsed =
        crate::pytorch::host_pytorch(session, &[*first], refresh)?.into_iter().next().ok_or(ApiError::Panicked)?;
    if !parsed.is_pytorch() {
        return Ok((None, None, Vec::new()));
    }
    let mut notes = Vec::new();
    if files.len() > 1 {
        let others: Vec<&str> = files[1..].iter().map(|f| f.host.as_str()).collect();
        notes.push(format!(
            "PyTorch steps and operators are of {} only (torch-tb-profiler's views are per worker; also selected: \
             {}; compare one with --host)",
            first.host,
            others.join(", ")
        ));
    }
    Ok((Some(PytorchOverview::from_parsed(&parsed)), Some(PytorchOpStats::from_parsed(&parsed)), notes))
}

/// Where `run`'s reports come from, for a host selection.
pub fn source_of(path: &str, run: &ServedRun, host: Option<&str>) -> Result<Source, ApiError> {
    let files = select_hosts(run, selection(host))?;
    Ok(Source {
        path: path.to_string(),
        run: run.name.clone(),
        host: selection(host).unwrap_or(ALL_HOSTS).to_string(),
        hosts: files.iter().map(|f| f.host.clone()).collect(),
        summary: None,
    })
}

/// Whether `path` is a summary file (JSON that no profile format recognises) rather than a
/// profile or a directory.
pub fn is_summary_file(path: &Path) -> bool {
    let Ok(mut file) = std::fs::File::open(path) else { return false };
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return false;
    }
    // Enough of the head for the format seam: an uncompressed PyTorch trace is JSON too.
    let mut start = Vec::with_capacity(oxprof_format::formats::SNIFF_BYTES);
    if (&mut file).take(oxprof_format::formats::SNIFF_BYTES as u64).read_to_end(&mut start).is_err() {
        return false;
    }
    oxprof_format::detect(&start).is_none() && Summary::looks_like_one(&start)
}

/// Reads a summary file within `limits`.
pub fn read_summary(path: &Path, limits: &SummaryLimits) -> Result<Summary, ApiError> {
    let shown = path.display().to_string();
    let error = |cause: String| ApiError::Summary { path: shown.clone(), cause };
    let cannot = |e: std::io::Error| error(format!("cannot read it ({e})"));
    let over = |bytes: u64| {
        error(format!(
            "{bytes} bytes or more, over the budget of {} (--max-summary-bytes); a summary of a real run is far \
             smaller: make it again with `oxprof summary RUN --out FILE`",
            limits.max_bytes
        ))
    };
    let file = std::fs::File::open(path).map_err(cannot)?;
    let len = file.metadata().map_err(cannot)?.len();
    if len > limits.max_bytes {
        return Err(over(len));
    }
    // The file may grow between the check and the read: never read past the budget.
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(limits.max_bytes.saturating_add(1)).read_to_end(&mut bytes).map_err(cannot)?;
    if bytes.len() as u64 > limits.max_bytes {
        return Err(over(bytes.len() as u64));
    }
    let text =
        String::from_utf8(bytes).map_err(|_| error("not UTF-8, so not a summary (summaries are JSON)".into()))?;
    Summary::parse_within(&text, limits).map_err(|e| error(e.to_string()))
}

/// The summary of a profile (`oxprof summary`): its reports as a summary file keeps them.
pub fn summarize(side: &SideRequest<'_>, read: &ReadOptions) -> Result<Summary, ApiError> {
    if is_summary_file(side.path) {
        return Err(ApiError::BadParameter {
            name: "path".into(),
            reason: format!(
                "{} is already a summary; summarise a log directory, a run directory or an .xplane.pb[.gz] file",
                side.path.display()
            ),
        });
    }
    let (source, reports) = load_profile_side(side, read)?;
    Ok(Summary::new(source, reports.for_summary(), env!("CARGO_PKG_VERSION")))
}

fn load_profile_side(side: &SideRequest<'_>, read: &ReadOptions) -> Result<(Source, RunReports), ApiError> {
    if !side.path.exists() && !side.path.to_str().is_some_and(oxprof_objstore::is_url) {
        return Err(ApiError::NotFound(format!("{}: no such file or directory; {SIDE_KINDS}", side.path.display())));
    }
    let options = SessionOptions {
        limits: read.profile.clone(),
        disk_cache: read.disk_cache.clone(),
        ..SessionOptions::one_shot()
    };
    let session = local_session(side.path, options)?;
    let run = session.run(side.run)?;
    let source = source_of(&side.path.display().to_string(), &run, side.host)?;
    let reports = run_reports(&session, &run, side.host, false)?;
    Ok((source, reports))
}

/// One side's source and reports: a summary file as saved (its host selection must be
/// the side's when one is named), or a profile's reports computed afresh.
pub fn load_side(side: &SideRequest<'_>, limits: &ReadOptions) -> Result<(Source, RunReports), ApiError> {
    if !is_summary_file(side.path) {
        return load_profile_side(side, limits);
    }
    let summary = read_summary(side.path, &limits.summary)?;
    let shown = side.path.display().to_string();
    let saved = &summary.source;
    if let Some(host) = selection(side.host) {
        // A summary of every host of a one-host run is that host's.
        let same = host == saved.host || (saved.host == ALL_HOSTS && saved.hosts.len() == 1 && saved.hosts[0] == host);
        if !same {
            return Err(ApiError::BadParameter {
                name: "host".into(),
                reason: format!(
                    "{shown} summarises host selection {:?} (hosts {}), not {host:?}: compare without --host, or make a \
                     summary with --host {host}",
                    saved.host,
                    saved.hosts.join(", ")
                ),
            });
        }
    } else if side.host == Some(ALL_HOSTS) && saved.host != ALL_HOSTS {
        return Err(ApiError::BadParameter {
            name: "host".into(),
            reason: format!(
                "{shown} summarises host {:?} only, not ALL_HOSTS: compare with --host {}, or make a summary without \
                 --host",
                saved.host, saved.host
            ),
        });
    }
    if let Some(run) = side.run
        && run != saved.run
    {
        return Err(ApiError::BadParameter {
            name: "run".into(),
            reason: format!("{shown} summarises run {:?}, not {run:?}", saved.run),
        });
    }
    let mut source = summary.source;
    source.summary = Some(shown);
    Ok((source, summary.reports))
}

/// Compares B with A (the baseline), reading both sides at once (each decode is parallel
/// inside; the two sides' sequential phases overlap). Two sides of one profile path (a run
/// against itself, rank 0 against rank 1 of one run) share one session, so a file both
/// read is decoded and analysed once.
pub fn diff_paths(
    a: &SideRequest<'_>,
    b: &SideRequest<'_>,
    options: &DiffOptions,
    limits: &ReadOptions,
) -> Result<RunDiff, ApiError> {
    let (side_a, side_b) = if same_profile(a, b) {
        both_from_one_session(a, b, limits)?
    } else {
        std::thread::scope(|scope| {
            let a = scope.spawn(|| load_side(a, limits));
            let side_b = load_side(b, limits);
            (a.join().unwrap_or(Err(ApiError::Panicked)), side_b)
        })
    };
    let (source_a, reports_a) = side_a?;
    let (source_b, reports_b) = side_b?;
    Ok(oxprof_diff::diff((&source_a, &reports_a), (&source_b, &reports_b), options))
}

/// Whether both sides name one profile path (not a summary).
fn same_profile(a: &SideRequest<'_>, b: &SideRequest<'_>) -> bool {
    match (a.path.canonicalize(), b.path.canonicalize()) {
        (Ok(pa), Ok(pb)) => pa == pb && !is_summary_file(a.path),
        _ => false,
    }
}

type LoadedSide = Result<(Source, RunReports), ApiError>;

/// Both sides of one profile path through one session that keeps each file's analysis
/// (the single-flight cache: a file both sides read is computed once, the other side
/// waits for it); sides of different files still run side by side.
fn both_from_one_session(
    a: &SideRequest<'_>,
    b: &SideRequest<'_>,
    read: &ReadOptions,
) -> Result<(LoadedSide, LoadedSide), ApiError> {
    let options = SessionOptions {
        limits: read.profile.clone(),
        disk_cache: read.disk_cache.clone(),
        confine_to_root: false,
        ..SessionOptions::default()
    };
    let session = local_session(a.path, options)?;
    let side = |request: &SideRequest<'_>| -> LoadedSide {
        let run = session.run(request.run)?;
        let source = source_of(&request.path.display().to_string(), &run, request.host)?;
        Ok((source, run_reports(&session, &run, request.host, false)?))
    };
    Ok(std::thread::scope(|scope| {
        let from_a = scope.spawn(|| side(a));
        let from_b = side(b);
        (from_a.join().unwrap_or(Err(ApiError::Panicked)), from_b)
    }))
}

/// One served run and its host selection, for [`diff_runs`].
#[derive(Debug, Clone, Copy)]
pub struct ServedSide<'a> {
    /// The run.
    pub run: &'a ServedRun,
    /// The host selection (`None` or `ALL_HOSTS`: every host).
    pub host: Option<&'a str>,
}

/// The comparison of two served runs (the server's `/oxprof/api/diff`): sources named by
/// run (no paths), reports through the session (kept between requests).
pub fn diff_runs(
    session: &Session,
    a: ServedSide<'_>,
    b: ServedSide<'_>,
    options: &DiffOptions,
    refresh: bool,
) -> Result<RunDiff, ApiError> {
    let source_a = source_of(&a.run.name, a.run, a.host)?;
    let source_b = source_of(&b.run.name, b.run, b.host)?;
    let reports_a = run_reports(session, a.run, a.host, refresh)?;
    let reports_b = run_reports(session, b.run, b.host, refresh)?;
    Ok(oxprof_diff::diff((&source_a, &reports_a), (&source_b, &reports_b), options))
}
