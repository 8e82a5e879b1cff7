//! `/oxprof/api/query` and `/oxprof/api/query/schema`: SQL over the served runs, answered
//! by `oxprof-sql` (read-only statements, within the time, row and memory limits below).
//!
//! GET, like every read-only route: `?sql=...&run=...&max_rows=...`. One engine serves
//! every run of the service's session and reads through it (its store — local or object
//! store —, input budgets, decode gate and persistent cache); the tables it builds are
//! kept in the session's cache (`--cache-mb`), and its queries' working memory, all
//! queries together, within [`QUERY_MEMORY`] (both in `/oxprof/api/info`). A repeated
//! query's response comes from the session's response cache.

use oxprof_api::ApiError;
use oxprof_api::http::{HttpError, HttpResponse, Query, Service};
use oxprof_api::session::Rendered;
use oxprof_sql::{Engine, QueryLimits, QueryResult};
use serde_json::{Value, json};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Wall time after which a query is cancelled.
pub const QUERY_TIMEOUT: Duration = Duration::from_secs(20);
/// Rows a response carries at most (`max_rows` may ask for fewer).
pub const MAX_ROWS: usize = 10_000;
/// Memory the queries running at once may hold together (their operators' and the strings
/// their functions build); also charged to the session's bound (`--cache-mb`), which evicts
/// cached analyses to make room and refuses past it.
pub const QUERY_MEMORY: usize = 1 << 30;
/// Longest SQL accepted (a URL of about this length is the most the server reads).
pub const MAX_SQL_BYTES: usize = oxprof_sql::MAX_SQL_BYTES;

/// The session's engine, started by the first query.
#[derive(Default)]
pub struct QueryRoute {
    engine: OnceLock<Result<Arc<Engine>, String>>,
}

impl QueryRoute {
    /// A route over the service's runs, reading them through the service's session.
    pub fn new() -> QueryRoute {
        QueryRoute::default()
    }

    fn engine(&self, service: &Service) -> Result<Arc<Engine>, HttpError> {
        let started = self.engine.get_or_init(|| {
            let limits = QueryLimits {
                max_rows: Some(MAX_ROWS),
                timeout: Some(QUERY_TIMEOUT),
                memory_bytes: QUERY_MEMORY,
                max_sql_bytes: MAX_SQL_BYTES,
                within_session_bound: true,
                ..QueryLimits::default()
            };
            Engine::new(service.shared_session(), Vec::new(), limits).map(Arc::new).map_err(|e| e.to_string())
        });
        started.clone().map_err(|message| HttpError { status: 500, message })
    }

    /// `/oxprof/api/query?sql=...`.
    pub fn query(&self, service: &Service, q: &Query) -> Result<HttpResponse, HttpError> {
        let sql =
            q.get_nonempty("sql").ok_or_else(|| HttpError::bad_parameter("sql", "missing: give a SELECT statement"))?;
        if sql.len() > MAX_SQL_BYTES {
            return Err(HttpError::bad_parameter("sql", &format!("longer than {MAX_SQL_BYTES} bytes")));
        }
        let max_rows = match q.get_nonempty("max_rows") {
            None => MAX_ROWS,
            Some(v) => {
                v.parse::<usize>().map_err(|_| HttpError::bad_parameter("max_rows", "not a number"))?.min(MAX_ROWS)
            }
        };
        // A repeated query of unchanged files is answered from the session's response cache
        // (one owner, one bound: --cache-mb); `elapsed_ms` stays the computation's.
        let run = service.resolve_run(q)?;
        let key = format!("query\0{}\0{max_rows}\0{sql}", service.session().fingerprint(&run));
        let rendered = service.session().response(key, false, || {
            let engine = self.engine(service).map_err(|e| ApiError::Http { status: e.status, message: e.message })?;
            let started = std::time::Instant::now();
            // Profile errors answer as `/data` does (413, 422, …), the query's own as 400.
            let result = engine
                .query_runs(sql, std::slice::from_ref(&run))
                .map_err(|e| ApiError::Http { status: e.http_status(), message: e.to_string() })?;
            let body = serde_json::to_vec(&result_json(&result, max_rows, started.elapsed())).unwrap_or_default();
            Ok(Rendered { content_type: "application/json", body: body.into(), notes: Vec::new() })
        })?;
        Ok(HttpResponse::bytes(200, rendered.content_type, rendered.body.to_vec()))
    }

    /// `/oxprof/api/query/schema`: tables (with their documented columns) and views.
    pub fn schema(&self) -> HttpResponse {
        let tables: Vec<Value> = oxprof_sql::schema::TABLES
            .iter()
            .map(|t| {
                let columns: Vec<Value> =
                    t.columns.iter().map(|c| json!({"name": c.name, "type": c.ty.sql_name(), "doc": c.doc})).collect();
                let tool = match t.source {
                    oxprof_sql::schema::Source::Tool { tool, .. } => Some(tool),
                    _ => None,
                };
                json!({"name": t.name, "doc": t.doc, "tool": tool, "columns": columns})
            })
            .collect();
        let views: Vec<Value> = oxprof_sql::views::VIEWS
            .iter()
            .map(|v| json!({"name": v.name, "doc": v.doc, "sql": v.sql, "example": v.example}))
            .collect();
        HttpResponse::json(200, &json!({"version": oxprof_sql::SCHEMA_VERSION, "tables": tables, "views": views}))
    }
}

/// A result as `{columns: [{name, type}], rows: [[…]], row_count, truncated, warnings,
/// elapsed_ms}` (`warnings`: hosts left out because their profile could not be read).
fn result_json(result: &QueryResult, max_rows: usize, elapsed: Duration) -> Value {
    let columns: Vec<Value> =
        result.schema.fields().iter().map(|f| json!({"name": f.name(), "type": type_name(f.data_type())})).collect();
    let mut rows: Vec<Value> = Vec::new();
    let mut truncated = result.truncated;
    let batches = oxprof_sql::output::plain(&result.batches).unwrap_or_default();
    'batches: for batch in &batches {
        let mut buffer = Vec::new();
        let mut writer = datafusion_json_rows(&mut buffer);
        if writer.write(batch).is_err() || writer.finish().is_err() {
            continue;
        }
        drop(writer);
        let parsed: Vec<serde_json::Map<String, Value>> = serde_json::from_slice(&buffer).unwrap_or_default();
        for object in parsed {
            if rows.len() >= max_rows {
                truncated = true;
                break 'batches;
            }
            let row: Vec<Value> =
                result.schema.fields().iter().map(|f| object.get(f.name()).cloned().unwrap_or(Value::Null)).collect();
            rows.push(Value::Array(row));
        }
    }
    json!({
        "columns": columns,
        "row_count": rows.len(),
        "rows": rows,
        "truncated": truncated,
        "warnings": result.warnings,
        "elapsed_ms": elapsed.as_secs_f64() * 1e3,
    })
}

fn datafusion_json_rows(buffer: &mut Vec<u8>) -> oxprof_sql::output::JsonArrayWriter<&mut Vec<u8>> {
    oxprof_sql::output::JsonArrayWriter::new(buffer)
}

/// The column type as the UI groups them: `number` (charts), `text`, `boolean`.
fn type_name(ty: &oxprof_sql::output::DataType) -> &'static str {
    use oxprof_sql::output::DataType as T;
    match ty {
        T::Int8 | T::Int16 | T::Int32 | T::Int64 | T::UInt8 | T::UInt16 | T::UInt32 | T::UInt64 => "number",
        T::Float16 | T::Float32 | T::Float64 | T::Decimal128(..) => "number",
        T::Boolean => "boolean",
        _ => "text",
    }
}
