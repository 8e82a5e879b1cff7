//! XSpace → OpStats, the per-host database behind most tools, and the multi-host combine.

pub mod convert;
pub mod types;

pub use types::*;
