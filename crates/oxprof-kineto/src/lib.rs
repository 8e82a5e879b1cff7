//! PyTorch profiler traces into oxprof's model: Kineto's Chrome-trace JSON
//! (`export_chrome_trace`, `tensorboard_trace_handler`'s `*.pt.trace.json`) imported the
//! way XProf's GPU profiles look (`/host:CPU` threads, `/device:GPU:N` streams, XProf's
//! stats), so the same analyses and trace viewer read them.
//!
//! * [`sniff`]: does a file's first few KiB look like a Chrome/Kineto trace?
//! * [`import_kineto`]: the whole trace into an [`XSpace`], streaming: the JSON is read
//!   once, front to back, without a document tree, and consumed input is handed back to the
//!   loader as it goes ([`ReleasePages`]), so peak memory is the model plus the events'
//!   compact rows, not the file. A large input is read as two halves side by side (on
//!   its own scoped thread), with the model one reader would build.
//!   [`import_kineto_incoming`] does the same while the input is still arriving
//!   ([`Incoming`]: a gzip file inflating on another thread), on one thread.
//!
//! * [`export_chrome_json`]: any model (XSpace or PyTorch) back out as Chrome trace JSON
//!   for Perfetto and `chrome://tracing`.
//!
//! Odd input (a file cut short by a killed process, trailing commas, unmatched `B`/`E`,
//! overlapping events, unnamed threads, string timestamps, unknown phases, NaN) is repaired
//! and counted in [`XSpace::diagnostics`]; input that is not a trace is one
//! [`KinetoError`]. Budgets come from [`LoadLimits`].
//!
//! Invariant: no file system (callers hand over bytes and a writer); depends on
//! `oxprof-model` only among oxprof crates (serde_json escapes strings, rayon drafts lines).

// Library code must not panic on bad input: no unwrap/expect outside tests.
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

mod build;
mod collect;
mod export;
mod intern;
mod json;
#[cfg(test)]
mod tests;
mod time;

use collect::split::Split;
pub use export::{ExportSummary, export_chrome_json};
use oxprof_model::limits::{LimitExceeded, LoadLimits};
use oxprof_model::{BuildError, Incoming, ReleasePages, XSpace};

/// Why a trace could not be imported.
#[derive(Debug, thiserror::Error)]
pub enum KinetoError {
    /// The bytes are not a Chrome/Kineto JSON trace.
    #[error("not a PyTorch/Chrome JSON trace: {reason}")]
    NotATrace {
        /// What was wrong, with the byte offset where it was found.
        reason: String,
    },
    /// The trace exceeds a budget of [`LoadLimits`].
    #[error("{0}")]
    LimitExceeded(LimitExceeded),
    /// The model refused the trace (one of its size limits).
    #[error("{0}")]
    Build(BuildError),
}

pub use oxprof_model::schema::TIME_SHIFT_STAT;

/// How much of a file [`sniff`] should see: Kineto writes its keys in the first KiB, but
/// tools that wrap traces may put tens of KiB of metadata first (TraceLens: 26 KiB).
pub const SNIFF_BYTES: usize = 64 << 10;

/// Imports a Kineto/Chrome JSON trace (uncompressed bytes) into an [`XSpace`].
///
/// `release` receives the byte ranges that have been consumed (a memory-mapped loader drops
/// their pages); `limits` bounds what the trace may cost.
pub fn import_kineto(bytes: &[u8], release: &dyn ReleasePages, limits: &LoadLimits) -> Result<XSpace, KinetoError> {
    let (collected, len) = collect::collect(collect::Input::Whole(bytes), release, limits, Split::Auto)?;
    build::build(collected, limits, len)
}

/// [`import_kineto`] with the events array read in two halves, the second reader starting
/// at byte `at` whatever the input's size or the machine's cores (`None`: one reader).
/// The model must be the one [`import_kineto`] builds: tests and fuzzing compare them.
#[doc(hidden)]
pub fn import_kineto_split_at(
    bytes: &[u8],
    release: &dyn ReleasePages,
    limits: &LoadLimits,
    at: Option<usize>,
) -> Result<XSpace, KinetoError> {
    let split = at.map_or(Split::Never, Split::At);
    let (collected, len) = collect::collect(collect::Input::Whole(bytes), release, limits, split)?;
    build::build(collected, limits, len)
}

/// [`import_kineto`] of input that is still arriving (a gzip file being inflated): events
/// are read as their bytes arrive, so inflating and importing run side by side. The model
/// is the one [`import_kineto`] builds from the complete input.
pub fn import_kineto_incoming(
    input: &dyn Incoming,
    release: &dyn ReleasePages,
    limits: &LoadLimits,
) -> Result<XSpace, KinetoError> {
    let (collected, len) = collect::collect(collect::Input::Incoming(input), release, limits, Split::Never)?;
    build::build(collected, limits, len)
}

/// The first pass of [`import_kineto`] alone (the streaming JSON read into compact rows,
/// without building the model), answering how many event rows it kept: for benchmarks that
/// time the parse apart from the model build.
#[doc(hidden)]
pub fn parse_only(bytes: &[u8], limits: &LoadLimits) -> Result<usize, KinetoError> {
    let (collected, _) = collect::collect(collect::Input::Whole(bytes), &oxprof_model::KeepPages, limits, Split::Auto)?;
    Ok(collected.lines.iter().map(|l| l.events.len()).sum())
}

/// Whether `head` (the start of a file, uncompressed; [`SNIFF_BYTES`] is enough for every
/// trace seen, a few KiB for most) looks like a Chrome or Kineto JSON trace: it starts (after whitespace and a UTF-8 byte order mark) with `{` or `[`, and
/// names a key traces have (`"traceEvents"`, `"schemaVersion"`, `"deviceProperties"`,
/// `"displayTimeUnit"`) or, for the bare-array form, an event's `"ph"`.
pub fn sniff(head: &[u8]) -> bool {
    let head = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
    let Some(start) = head.iter().position(|b| !b.is_ascii_whitespace()) else { return false };
    let rest = &head[start..];
    let has = |needle: &[u8]| memchr::memmem::find(rest, needle).is_some();
    match rest[0] {
        b'{' => {
            has(b"\"traceEvents\"")
                || has(b"\"schemaVersion\"")
                || has(b"\"deviceProperties\"")
                || has(b"\"displayTimeUnit\"")
        }
        b'[' => rest[1..].iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{') && has(b"\"ph\""),
        _ => false,
    }
}
