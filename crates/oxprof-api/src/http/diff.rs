//! `GET /oxprof/api/diff`: the comparison of two served runs, for the UI's compare view.
//! Read-only (nothing is written; answers are kept in the session's bounded cache under
//! both runs' fingerprints) and budgeted: profiles are read within the server's input
//! budgets and admission limits like every other route, and op lists are cut to `limit`
//! rows (largest changes first; the full counts stay in `counts`).
//!
//! Parameters: `run` (A, the baseline) and `run_b` (B), both looked up like `run`
//! everywhere (within `session_path` / `run_path` when given); `host` (A's host selection,
//! and B's unless `host_b` names another; default `ALL_HOSTS`); `strip_templates=true`;
//! `limit` (ops per list, default 1000, at most 5000); `format=json` (default: the typed
//! `oxprof_diff::RunDiff`), `csv` (one row per compared value, as a download) or `md`
//! (what `oxprof diff` prints, `top` rows per table, default 10, at most 100);
//! `use_saved_result=false` recomputes.

use super::{Body, HttpError, HttpResponse, Query, Service, query};
use crate::catalog::ServedRun;
use crate::data::ALL_HOSTS;
use crate::diff::ServedSide;
use crate::session::Rendered;

/// Ops per list unless `limit` says otherwise.
pub const DEFAULT_LIMIT: usize = 1000;
/// The most ops per list a request may ask for.
pub const MAX_LIMIT: usize = 5000;
/// The most rows per Markdown table (`format=md&top=`).
pub const MAX_TOP: usize = 100;

/// A count parameter: absent → `default`, else a number clamped to `1..=max`.
fn count(q: &Query, name: &str, default: usize, max: usize) -> Result<usize, HttpError> {
    match q.get_nonempty(name) {
        None => Ok(default),
        Some(text) => text
            .trim()
            .parse::<usize>()
            .map(|n| n.clamp(1, max))
            .map_err(|_| HttpError::bad_parameter(name, &format!("not a count: {text:?}"))),
    }
}

/// A host parameter, checked.
fn host_param<'q>(q: &'q Query, name: &str) -> Result<Option<&'q str>, HttpError> {
    let host = q.get_nonempty(name);
    if let Some(host) = host {
        query::check_plain_name(name, host)?;
    }
    Ok(host)
}

impl Service {
    pub(super) fn diff_route(&self, q: &Query) -> Result<HttpResponse, HttpError> {
        let a = self.run_of(q)?;
        let name_b = q
            .get_nonempty("run_b")
            .ok_or_else(|| HttpError::bad_parameter("run_b", "missing (the run to compare with `run`)"))?;
        query::check_run_name("run_b", name_b)?;
        let b = self.run_named(q, name_b)?;
        let host_a = host_param(q, "host")?;
        let host_b = host_param(q, "host_b")?.or(host_a);
        let format = q.get_nonempty("format").unwrap_or("json");
        if !matches!(format, "json" | "csv" | "md") {
            return Err(HttpError::bad_parameter("format", "must be json, csv or md"));
        }
        let limit = count(q, "limit", DEFAULT_LIMIT, MAX_LIMIT)?;
        let top = count(q, "top", 10, MAX_TOP)?;
        let options = oxprof_diff::DiffOptions {
            strip_templates: q.bool_arg("strip_templates", false),
            ..oxprof_diff::DiffOptions::default()
        };
        let refresh = !q.bool_arg("use_saved_result", true);
        let key = format!(
            "diff\0{}\0{}\0{}\0{}\0{}\0{format}\0{limit}\0{top}",
            self.session().fingerprint(&a),
            self.session().fingerprint(&b),
            host_a.unwrap_or(ALL_HOSTS),
            host_b.unwrap_or(ALL_HOSTS),
            options.strip_templates,
        );
        let session = self.session();
        let rendered = session.response(key, refresh, || {
            let side_a = ServedSide { run: &a, host: host_a };
            let side_b = ServedSide { run: &b, host: host_b };
            let mut diff = crate::diff::diff_runs(session, side_a, side_b, &options, refresh)?;
            diff.truncate_ops(limit);
            let notes = diff.notes.clone();
            let (content_type, body) = match format {
                "csv" => ("text/csv", crate::diff::csv::render(&oxprof_diff::DiffReport::new(diff, &[], true))),
                "md" => (
                    "text/markdown; charset=utf-8",
                    crate::diff::markdown::render(&oxprof_diff::DiffReport::new(diff, &[], true), top),
                ),
                // Plain data: serializing it cannot fail (non-finite numbers become null).
                _ => ("application/json", serde_json::to_string(&diff).unwrap_or_default()),
            };
            Ok(Rendered { content_type, body: body.into_bytes().into(), notes })
        })?;
        let mut response = HttpResponse::new(200, rendered.content_type, Body::Shared(rendered.body.clone()));
        if format == "csv" {
            let safe = |s: &str| {
                s.chars()
                    .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' })
                    .collect::<String>()
            };
            let name = format!("diff_{}_{}.csv", safe(&a.name), safe(&b.name));
            response.headers.push(("Content-Disposition", format!("attachment; filename=\"{name}\"")));
        }
        Ok(response)
    }

    /// The run `name` names, within `session_path` / `run_path` when the query gives them.
    fn run_named(&self, q: &Query, name: &str) -> Result<ServedRun, HttpError> {
        match self.catalog().scoped_runs(q.get("session_path"), q.get("run_path"))? {
            Some(scoped) => scoped
                .runs
                .into_iter()
                .find(|r| r.name == name)
                .ok_or_else(|| HttpError::not_found(format!("no run named {name:?} in that path"))),
            None => Ok(self.catalog().find_run(Some(name))?),
        }
    }
}
