//! oxprof's model of a profile: what every importer produces and every analysis reads.
//!
//! * [`XSpace`] → [`XPlane`] → [`XLine`] → events and stats in compact columns, read
//!   through borrowed views ([`Event`], [`Stat`], [`Stats`]); strings interned per plane
//!   ([`StringTable`]); repairs counted in [`Diagnostics`].
//! * [`PlaneBuilder`], [`LineBuilder`], [`LineDraft`]: the one way in, fast enough for the
//!   XSpace decoder (lines built in parallel, settled in input order); [`ModelBuilder`]:
//!   the same by names, for small importers and tests.
//! * [`schema`]: what names mean to XProf (stat and event types, plane names, derived
//!   lines), defined once for every analysis.
//! * [`limits`]: budgets against hostile input, shared by importers and loaders.
//! * [`compare`]: equality by content, for round-trip tests.
//! * [`ReleasePages`]: how an importer hands consumed input back to the loader;
//!   [`Incoming`]: input an importer may start on before it has all arrived.
//!
//! Invariant: no IO, no file system and no wire format here; importers (e.g.
//! `oxprof-xspace`) depend on this crate, never the reverse.

// Library code must not panic on bad input: no unwrap/expect outside tests.
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

mod builder;
mod columns;
pub mod compare;
mod diagnostics;
mod input;
mod key_index;
pub mod limits;
mod model;
pub mod schema;
mod sketch;
mod strings;

pub use builder::{BuildError, LineBuilder, LineDraft, MetadataIds, NewEventMetadata, PlaneBuilder, StatInput};
pub use diagnostics::{DiagnosticKind, Diagnostics, Severity};
pub use input::{Incoming, KeepPages, ReleasePages};
pub use limits::{Allowance, Limit, LimitExceeded, LoadLimits, STRING_ENTRY_BYTES, SharedBudget};
pub use model::{
    Event, EventMetadata, EventMetadataId, IntValue, Stat, StatMetadata, StatMetadataId, StatValue, Stats, ThinSlice,
    XLine, XPlane, XSpace,
};
pub use sketch::{EventSketch, LineSketch, ModelBuilder, PlaneSketch, Value};
pub use strings::{StrId, StringTable};
