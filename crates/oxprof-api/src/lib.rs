//! oxprof's API layer: turns requests (a path, a tool, parameters) into response bodies.
//! It loads files and calls the analyses; it knows nothing of sockets or terminals, so the
//! CLI and the server are thin shells around it and everything here is testable directly.

mod error;
pub mod inspect;

pub use error::ApiError;
