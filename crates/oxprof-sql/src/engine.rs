//! The query engine: one DataFusion context over the runs of a [`Session`], with the
//! schema's tables registered only when a query names them (directly or through a view).
//!
//! Model tables are streamed: one partition per host, each decoding its host when the
//! plan runs it (hosts in parallel, never all resident), with what was built kept in a
//! bounded cache for the next query. Tool tables are small and built whole when named.
//! User SQL is read-only: no DDL, no DML (`COPY`, `INSERT`), no `SET`; there is no
//! function that reads or writes files.

use crate::model_tables::{self, HostKey, arrow_schema};
use crate::schema::{self, Source, TableDef};
use crate::views;
use crate::{SqlError, tool_tables};
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::MemTable;
use datafusion::catalog::streaming::StreamingTable;
use datafusion::config::Dialect;
use datafusion::execution::TaskContext;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::physical_plan::SendableRecordBatchStream;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::PartitionStream;
use datafusion::prelude::{SQLOptions, SessionConfig, SessionContext};
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::Statement as SqlStatement;
use futures::StreamExt;
use oxprof_api::catalog::ServedRun;
use oxprof_api::session::Session;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Budgets of one query.
#[derive(Debug, Clone, Copy)]
pub struct QueryLimits {
    /// Rows returned at most (the rest are not computed once this many are out).
    pub max_rows: Option<usize>,
    /// Wall time after which the query is cancelled.
    pub timeout: Option<Duration>,
    /// Memory DataFusion's operators may hold (sorts, joins, aggregations), in bytes.
    pub memory_bytes: usize,
    /// Built model-table batches kept for later queries, in bytes (0: none).
    pub cache_bytes: usize,
}

impl Default for QueryLimits {
    fn default() -> Self {
        QueryLimits { max_rows: None, timeout: None, memory_bytes: 4 << 30, cache_bytes: 0 }
    }
}

/// A query's answer.
#[derive(Debug, Clone)]
pub struct QueryResult {
    /// Its columns.
    pub schema: SchemaRef,
    /// Its rows.
    pub batches: Vec<RecordBatch>,
    /// Whether rows past [`QueryLimits::max_rows`] were left out.
    pub truncated: bool,
}

impl QueryResult {
    /// How many rows it holds.
    pub fn row_count(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }
}

/// What the partitions of every table share: the session, the runs and the cache.
struct Shared {
    session: Arc<Session>,
    runs: Vec<ServedRun>,
    cache: Mutex<BatchCache>,
}

/// (table, run, host).
type CacheKey = (String, String, String);

/// Built batches by (table, run, host) with their size, oldest dropped first past the budget.
#[derive(Default)]
struct BatchCache {
    budget: usize,
    used: usize,
    order: VecDeque<CacheKey>,
    entries: HashMap<CacheKey, (Arc<Vec<RecordBatch>>, usize)>,
}

impl BatchCache {
    fn get(&self, key: &CacheKey) -> Option<Arc<Vec<RecordBatch>>> {
        self.entries.get(key).map(|(b, _)| b.clone())
    }

    fn put(&mut self, key: CacheKey, batches: Arc<Vec<RecordBatch>>) {
        let size: usize = batches.iter().map(RecordBatch::get_array_memory_size).sum();
        if size > self.budget || self.entries.contains_key(&key) {
            return;
        }
        while self.used + size > self.budget {
            let Some(old) = self.order.pop_front() else { break };
            if let Some((_, s)) = self.entries.remove(&old) {
                self.used -= s;
            }
        }
        self.used += size;
        self.order.push_back(key.clone());
        self.entries.insert(key, (batches, size));
    }
}

/// SQL over the runs of a session.
pub struct Engine {
    shared: Arc<Shared>,
    ctx: SessionContext,
    runtime: tokio::runtime::Runtime,
    registered: Mutex<HashSet<String>>,
    limits: QueryLimits,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").field("runs", &self.shared.runs.len()).finish()
    }
}

/// The read-only statement rules user SQL runs under.
fn read_only() -> SQLOptions {
    SQLOptions::new().with_allow_ddl(false).with_allow_dml(false).with_allow_statements(false)
}

impl Engine {
    /// An engine over `runs` of `session`, within `limits`.
    pub fn new(session: Arc<Session>, runs: Vec<ServedRun>, limits: QueryLimits) -> Result<Engine, SqlError> {
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .thread_name("oxprof-sql")
            .enable_time()
            .build()
            .map_err(|e| SqlError::Internal(format!("cannot start the query runtime: {e}")))?;
        let memory = RuntimeEnvBuilder::new()
            .with_memory_limit(limits.memory_bytes, 1.0)
            .build_arc()
            .map_err(|e| SqlError::Internal(e.to_string()))?;
        let config = SessionConfig::new()
            .with_target_partitions(threads)
            .with_information_schema(false)
            .with_default_catalog_and_schema("oxprof", "main");
        let ctx = SessionContext::new_with_config_rt(config, memory);
        let cache = Mutex::new(BatchCache { budget: limits.cache_bytes, ..Default::default() });
        Ok(Engine {
            shared: Arc::new(Shared { session, runs, cache }),
            ctx,
            runtime,
            registered: Mutex::default(),
            limits,
        })
    }

    /// The runs it queries.
    pub fn runs(&self) -> &[ServedRun] {
        &self.shared.runs
    }

    /// Runs one read-only statement.
    pub fn query(&self, sql: &str) -> Result<QueryResult, SqlError> {
        self.runtime.block_on(self.query_async(sql))
    }

    async fn query_async(&self, sql: &str) -> Result<QueryResult, SqlError> {
        let statement = self.ctx.state().sql_to_statement(sql, &Dialect::Generic).map_err(SqlError::from_datafusion)?;
        refuse_writes(&statement)?;
        let references = self.ctx.state().resolve_table_references(&statement).map_err(SqlError::from_datafusion)?;
        for reference in references {
            self.ensure(reference.table(), 0).await?;
        }
        let collect = async {
            let frame = self.ctx.sql_with_options(sql, read_only()).await.map_err(SqlError::from_datafusion)?;
            let schema: SchemaRef = Arc::new(frame.schema().as_arrow().clone());
            let mut stream = frame.execute_stream().await.map_err(SqlError::from_datafusion)?;
            let mut batches = Vec::new();
            let mut rows = 0usize;
            let mut truncated = false;
            while let Some(batch) = stream.next().await {
                let batch = batch.map_err(SqlError::from_datafusion)?;
                if let Some(max) = self.limits.max_rows
                    && rows + batch.num_rows() > max
                {
                    batches.push(batch.slice(0, max - rows));
                    truncated = true;
                    break;
                }
                rows += batch.num_rows();
                batches.push(batch);
            }
            Ok(QueryResult { schema, batches, truncated })
        };
        match self.limits.timeout {
            None => collect.await,
            Some(limit) => tokio::time::timeout(limit, collect).await.map_err(|_| SqlError::TimedOut(limit))?,
        }
    }

    /// Registers the schema table or library view `name` (and what the view reads) unless
    /// it is already; other names are left for DataFusion to report.
    async fn ensure(&self, name: &str, depth: usize) -> Result<(), SqlError> {
        let name = name.to_ascii_lowercase();
        let known = match self.registered.lock() {
            Ok(registered) => registered.contains(&name),
            Err(_) => true,
        };
        if known || depth > 8 {
            return Ok(());
        }
        if let Some(view) = views::view(&name) {
            let statement =
                self.ctx.state().sql_to_statement(view.sql, &Dialect::Generic).map_err(SqlError::from_datafusion)?;
            for reference in self.ctx.state().resolve_table_references(&statement).map_err(SqlError::from_datafusion)? {
                Box::pin(self.ensure(reference.table(), depth + 1)).await?;
            }
            self.ctx
                .sql(&format!("CREATE VIEW {} AS {}", view.name, view.sql))
                .await
                .map_err(SqlError::from_datafusion)?;
        } else if let Some(def) = schema::table(&name) {
            let provider = self.provider(def)?;
            self.ctx.register_table(def.name, provider).map_err(SqlError::from_datafusion)?;
        } else {
            return Ok(());
        }
        if let Ok(mut registered) = self.registered.lock() {
            registered.insert(name);
        }
        Ok(())
    }

    fn provider(&self, def: &'static TableDef) -> Result<Arc<dyn datafusion::catalog::TableProvider>, SqlError> {
        let internal = |e: datafusion::error::DataFusionError| SqlError::Internal(e.to_string());
        match def.source {
            Source::Catalog => {
                let batch = crate::catalog_tables::build(def, &self.shared.session, &self.shared.runs)?;
                Ok(Arc::new(MemTable::try_new(batch.schema(), vec![vec![batch]]).map_err(internal)?))
            }
            Source::Tool { tool, table } => {
                let batches = tool_batches(&self.shared, tool, table)?;
                let (schema, batches) = tool_tables::unify(batches)?;
                Ok(Arc::new(MemTable::try_new(schema, vec![batches]).map_err(internal)?))
            }
            Source::Model => {
                let schema = arrow_schema(def);
                let partitions: Vec<Arc<dyn PartitionStream>> = host_keys(&self.shared.runs)
                    .into_iter()
                    .map(|(run, host)| {
                        Arc::new(HostPartition { shared: self.shared.clone(), def, schema: schema.clone(), run, host })
                            as Arc<dyn PartitionStream>
                    })
                    .collect();
                if partitions.is_empty() {
                    return Ok(Arc::new(MemTable::try_new(schema, vec![vec![]]).map_err(internal)?));
                }
                Ok(Arc::new(StreamingTable::try_new(schema, partitions).map_err(internal)?))
            }
        }
    }
}

/// Refuses every statement but queries and EXPLAIN before anything is planned (so a
/// write is never half-planned against a table), with the one line people get.
fn refuse_writes(statement: &DfStatement) -> Result<(), SqlError> {
    let kind = match statement {
        DfStatement::Statement(s) if matches!(**s, SqlStatement::Query(_)) => return Ok(()),
        DfStatement::Explain(_) => return Ok(()),
        DfStatement::Statement(s) => {
            let text = s.to_string();
            text.split_whitespace().take(2).collect::<Vec<_>>().join(" ").to_ascii_uppercase()
        }
        DfStatement::CreateExternalTable(_) => "CREATE EXTERNAL TABLE".into(),
        DfStatement::CopyTo(_) => "COPY".into(),
        DfStatement::Reset(_) => "RESET".into(),
    };
    Err(SqlError::Sql(format!(
        "refused: {kind} (oxprof runs read-only queries: SELECT, WITH, EXPLAIN; no COPY, CREATE, INSERT or SET)"
    )))
}

/// Every (run index, host name) of the runs.
fn host_keys(runs: &[ServedRun]) -> Vec<(usize, String)> {
    runs.iter().enumerate().flat_map(|(i, r)| r.hosts.iter().map(move |h| (i, h.host.clone()))).collect()
}

/// A tool table's batch for every host of every run that has it.
fn tool_batches(shared: &Shared, tool: &str, table: &str) -> Result<Vec<RecordBatch>, SqlError> {
    let mut out = Vec::new();
    for run in &shared.runs {
        for file in &run.hosts {
            let key = HostKey { run: &run.name, host: &file.host };
            if let Some(batch) = tool_tables::build(&shared.session, run, key, tool, table)? {
                out.push(batch);
            }
        }
    }
    Ok(out)
}

/// One host's rows of a model table.
struct HostPartition {
    shared: Arc<Shared>,
    def: &'static TableDef,
    schema: SchemaRef,
    run: usize,
    host: String,
}

impl std::fmt::Debug for HostPartition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HostPartition({}, {})", self.def.name, self.host)
    }
}

impl PartitionStream for HostPartition {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, _ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let (shared, def, host, run) = (self.shared.clone(), self.def, self.host.clone(), self.run);
        let built = async move {
            let batches = tokio::task::spawn_blocking(move || host_batches(&shared, def, run, &host))
                .await
                .map_err(|e| datafusion::error::DataFusionError::External(Box::new(e)))?
                .map_err(|e| datafusion::error::DataFusionError::External(Box::new(e)))?;
            Ok::<_, datafusion::error::DataFusionError>(futures::stream::iter(
                batches.iter().cloned().map(Ok).collect::<Vec<_>>(),
            ))
        };
        let stream = futures::stream::once(built).map(|r| match r {
            Ok(s) => s.boxed(),
            Err(e) => futures::stream::iter(vec![Err(e)]).boxed(),
        });
        Box::pin(RecordBatchStreamAdapter::new(self.schema.clone(), stream.flatten()))
    }
}

/// One host's batches of a model table: from the cache, else decoded and built.
fn host_batches(
    shared: &Shared,
    def: &'static TableDef,
    run: usize,
    host: &str,
) -> Result<Arc<Vec<RecordBatch>>, SqlError> {
    let Some(served) = shared.runs.get(run) else { return Ok(Arc::new(Vec::new())) };
    let key = (def.name.to_string(), served.name.clone(), host.to_string());
    if let Some(hit) = shared.cache.lock().ok().and_then(|c| c.get(&key)) {
        return Ok(hit);
    }
    let Some(file) = served.host(host) else { return Ok(Arc::new(Vec::new())) };
    let space = {
        let _admission = shared.session.admit();
        shared.session.load(file, &|_| true).map_err(|e| SqlError::Profile(e.to_string()))?
    };
    let host_key = HostKey { run: &served.name, host };
    let batches = model_tables::build(def.name, def, &space, host_key)
        .unwrap_or_else(|| Ok(Vec::new()))
        .map_err(|e| SqlError::Internal(format!("{}: {e}", def.name)))?;
    let batches = Arc::new(batches);
    if let Ok(mut cache) = shared.cache.lock() {
        cache.put(key, batches.clone());
    }
    Ok(batches)
}
