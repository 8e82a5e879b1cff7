//! The XSpace protobuf codec (`.xplane.pb`, as TensorFlow, JAX and PyTorch/XLA write it):
//! bytes into oxprof's model through its public builder, and the model back to bytes.
//!
//! * [`decode_xspace`] … [`decode_xspace_within`]: bytes → [`oxprof_model::XSpace`]
//!   (lines in parallel, consumed input handed back through [`ReleasePages`](oxprof_model::ReleasePages), within
//!   [`oxprof_model::LoadLimits`]).
//! * [`encode_xspace`]: model → bytes (a hand-written protobuf writer).
//!
//! Tests build XSpace bytes with `oxprof-testkit`'s `XSpaceBuilder` (the model's builder
//! written by [`encode_xspace`]) and compare this decoder with prost there (`crosscheck`).
//!
//! Invariant: no protobuf wire type leaves this crate, and no file system is touched here
//! (files are `oxprof-format`'s). Odd input is repaired and counted in the model's
//! diagnostics; only structurally broken input is a [`DecodeError`].

// Library code must not panic on bad input: no unwrap/expect outside tests.
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

mod decode;
mod encode;
mod error;
mod wire;

pub use decode::{decode_xspace, decode_xspace_lines_of, decode_xspace_with, decode_xspace_within};
pub use encode::encode_xspace;
pub use error::{DecodeError, WireError};
