//! Failures as Python exceptions: each `ApiError` becomes the `oxprof.errors` class of
//! its kind, with the one line the CLI prints after `oxprof: ` (the error and its causes,
//! joined by `: `).

use oxprof_api::ApiError;
use oxprof_format::LoadError;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

/// The `oxprof.errors` class of an API error.
fn class_of(error: &ApiError) -> &'static str {
    match error {
        ApiError::Discovery(_) | ApiError::NotFound(_) => "ProfileNotFound",
        ApiError::Load(LoadError::LimitExceeded { .. }) => "LimitExceeded",
        ApiError::Load(_) | ApiError::Summary { .. } | ApiError::Partial { .. } => "InvalidProfile",
        ApiError::PodHostWithoutEvents { .. } | ApiError::PodHostSource { .. } => "BadParameter",
        ApiError::UnknownRun { .. } => "UnknownRun",
        ApiError::UnknownHost { .. } => "UnknownHost",
        ApiError::UnknownTool(_) | ApiError::NotYetAvailable { .. } => "UnknownTool",
        ApiError::BadParameter { .. } => "BadParameter",
        ApiError::Abandoned(_) | ApiError::Panicked => "InternalError",
        ApiError::Http { status: 400, .. } => "BadParameter",
        ApiError::Http { status: 404, .. } => "ProfileNotFound",
        ApiError::Http { .. } => "Error",
        ApiError::Shared(inner) => class_of(inner),
    }
}

/// `error` and its causes on one line, as the CLI prints them (anyhow's `{:#}`).
pub(crate) fn one_line(error: &dyn std::error::Error) -> String {
    let mut line = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        line.push_str(": ");
        line.push_str(&cause.to_string());
        source = cause.source();
    }
    line
}

/// An instance of `oxprof.errors.<class>` carrying `message` (a `RuntimeError` if that
/// module cannot be imported, which only a broken installation does). Every exception oxprof
/// raises is made here: no secret of a URL (userinfo, signature, token) is in one.
pub(crate) fn raise(py: Python<'_>, class: &str, message: String) -> PyErr {
    let message = oxprof_api::http::redact(&message).into_owned();
    let made = py.import("oxprof.errors").and_then(|module| module.getattr(class)?.call1((message.clone(),)));
    match made {
        Ok(instance) => PyErr::from_value(instance),
        Err(_) => PyRuntimeError::new_err(message),
    }
}

/// An API error as its Python exception.
pub(crate) fn api_error(py: Python<'_>, error: ApiError) -> PyErr {
    raise(py, class_of(&error), one_line(&error))
}
