//! oxprof's analysis layer: pure functions from the decoded model to reports.
//! No IO and no HTTP here; callers load files and render outputs.

pub mod inspect;
