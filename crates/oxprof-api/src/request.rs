//! The vocabulary of a tool request and its answer, shared by every layer of the API:
//! [`DataRequest`] (a tool, a run, a host selection and parameters; [`ALL_HOSTS`]), the
//! host selection as XProf makes it ([`select_hosts`]), and the [`Answer`] a tool gives
//! (a typed report, or a bare [`Body`]). It imports no other module of the API but the
//! catalog's run type, so every module can use it without a circle.
//!
//! Host selection follows XProf: `host=ALL_HOSTS` or no host means every host of the run
//! (their OpStats combined); `host=h` means that host's file only.

use crate::ApiError;
use crate::catalog::ServedRun;
use oxprof_format::HostFile;
use oxprof_report::{Body, Report, Table, ToolId, XprofBody};
use serde_json::Value;
use std::collections::BTreeMap;

/// The host selector meaning "every host of the run".
pub const ALL_HOSTS: &str = "ALL_HOSTS";

/// A request for one tool's data. The tool is an id: the edges (the CLI, HTTP, Python,
/// the agent verbs) turn a name or alias into one through `registry::resolve`.
#[derive(Debug, Clone)]
pub struct DataRequest {
    /// Run name (`None`: the newest run).
    pub run: Option<String>,
    /// The tool.
    pub tool: ToolId,
    /// Host (`None` or `ALL_HOSTS`: all hosts).
    pub host: Option<String>,
    /// Further tool parameters.
    pub params: BTreeMap<String, String>,
}

impl DataRequest {
    /// A request for `tool` on the newest run, every host, no parameters.
    pub fn new(tool: ToolId) -> DataRequest {
        DataRequest { run: None, tool, host: None, params: BTreeMap::new() }
    }
}

/// A tool's response.
#[derive(Debug, Clone)]
pub struct DataResponse {
    /// MIME type of `body`.
    pub content_type: &'static str,
    /// The body, byte for byte what XProf's server returns (before compression).
    pub body: String,
    /// The JSON value of `body`, when it is JSON.
    pub json: Option<Value>,
    /// oxprof's own notes for users (e.g. why no steps were found); not part of `body`.
    pub notes: Vec<String>,
}

pub use oxprof_report::BodyWriter;

/// What a tool answers.
#[derive(Debug)]
pub enum Answer {
    /// A typed report: its body is XProf's, rendered when it is asked for.
    Report(Box<dyn Report>),
    /// A body with no report behind it (a trace's events, a binary protobuf), with
    /// oxprof's notes for users (never part of the body).
    Body {
        /// The bytes, whole or streamed.
        body: Body,
        /// oxprof's notes.
        notes: Vec<String>,
    },
}

impl Answer {
    /// A binary body (`application/octet-stream`).
    pub fn bytes(bytes: Vec<u8>) -> Answer {
        Answer::Body { body: Body::Bytes { content_type: "application/octet-stream", bytes }, notes: Vec::new() }
    }

    /// Whether the body is binary (written as it is, never as text).
    pub fn is_binary(&self) -> bool {
        matches!(self, Answer::Body { body: Body::Bytes { .. }, .. })
    }

    /// The body to send and oxprof's notes.
    pub fn into_body(self) -> (Body, Vec<String>) {
        match self {
            Answer::Report(report) => {
                let notes = report.notes();
                (report.xprof_body().into(), notes)
            }
            Answer::Body { body, notes } => (body, notes),
        }
    }

    /// The typed report, if the answer has one (a trace's events and binary bodies do not:
    /// they are not tables).
    pub fn report(&self) -> Option<&dyn Report> {
        match self {
            Answer::Report(report) => Some(&**report),
            Answer::Body { .. } => None,
        }
    }

    /// As a report: the typed one, or a text body read whole (a trace's JSON, which has no
    /// tables). A binary body is no report (unless its bytes are text).
    pub fn into_report(self) -> Result<Box<dyn Report>, ApiError> {
        let (content_type, body, notes) = match self {
            Answer::Report(report) => return Ok(report),
            Answer::Body { body: Body::Bytes { content_type, bytes }, notes } => match String::from_utf8(bytes) {
                // Text after all (an empty proto, a JSON body XProf labels binary).
                Ok(text) => (content_type, text, notes),
                Err(_) => {
                    return Err(ApiError::BadParameter {
                        name: "format".into(),
                        reason: "a binary body (such as graph_viewer type=pb or megascale_stats perfetto=true) is \
                                 no report: write it as it is (`oxprof data --format json`, the /data route)"
                            .into(),
                    });
                }
            },
            Answer::Body { body: Body::Text { content_type, text }, notes } => (content_type, text, notes),
            Answer::Body { body: body @ Body::Stream { .. }, notes } => {
                let content_type = body.content_type();
                let mut bytes = Vec::new();
                // Writing into memory cannot fail.
                let _ = body.write_to(&mut bytes);
                (content_type, String::from_utf8(bytes).unwrap_or_default(), notes)
            }
        };
        Ok(DataResponse { content_type, body, json: None, notes }.into_report())
    }
}

/// The files a host selection means, as XProf selects them.
pub fn select_hosts<'a>(run: &'a ServedRun, host: Option<&str>) -> Result<Vec<&'a HostFile>, ApiError> {
    match host {
        None | Some("") | Some(ALL_HOSTS) => Ok(run.hosts.iter().collect()),
        Some(h) => run.hosts.iter().find(|f| f.host == h).map(|f| vec![f]).ok_or_else(|| ApiError::UnknownHost {
            host: h.to_string(),
            run: run.name.clone(),
            available: run.hosts.iter().map(|f| f.host.as_str()).collect::<Vec<_>>().join(", "),
        }),
    }
}

/// `report` with oxprof's `notes` before its own.
pub fn with_notes(report: Box<dyn Report>, notes: Vec<String>) -> Box<dyn Report> {
    if notes.is_empty() {
        return report;
    }
    Box::new(Noted { report, notes })
}

/// A report with notes from the layer that computed it (hosts, selection).
#[derive(Debug)]
struct Noted {
    report: Box<dyn Report>,
    notes: Vec<String>,
}

impl Report for Noted {
    fn xprof_body(&self) -> XprofBody {
        self.report.xprof_body()
    }

    fn to_json(&self) -> Value {
        self.report.to_json()
    }

    fn tables(&self) -> Vec<Table> {
        self.report.tables()
    }

    fn notes(&self) -> Vec<String> {
        let mut notes = self.notes.clone();
        notes.extend(self.report.notes());
        notes
    }

    fn xprof_body_json(&self) -> Option<Value> {
        self.report.xprof_body_json()
    }
}

/// The output of a tool that has no typed report (the trace viewer's events, the graph
/// viewer's text, the module list): XProf's body as it is, its JSON value when the
/// producer kept one, and notes. It has no tables.
#[derive(Debug)]
pub struct BodyReport(pub DataResponse);

impl Report for BodyReport {
    fn xprof_body(&self) -> XprofBody {
        XprofBody { content_type: self.0.content_type, text: self.0.body.clone() }
    }

    /// The JSON value, or the body as a JSON string when it is not JSON.
    fn to_json(&self) -> Value {
        match &self.0.json {
            Some(json) => json.clone(),
            None => serde_json::from_str(&self.0.body).unwrap_or_else(|_| Value::String(self.0.body.clone())),
        }
    }

    fn tables(&self) -> Vec<Table> {
        Vec::new()
    }

    fn notes(&self) -> Vec<String> {
        self.0.notes.clone()
    }

    /// Only the value the producer kept: a trace body is not parsed again.
    fn xprof_body_json(&self) -> Option<Value> {
        self.0.json.clone()
    }
}

impl DataResponse {
    /// As a report (see [`BodyReport`]).
    pub fn into_report(self) -> Box<dyn Report> {
        Box::new(BodyReport(self))
    }
}
