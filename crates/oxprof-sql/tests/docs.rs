//! `docs/sql/` is rendered from the schema and the library of views: a page per table,
//! one for the views, and an index. `OXPROF_BLESS_DOCS=1 cargo test -p oxprof-sql --test
//! docs` rewrites them after a schema change.

use oxprof_api::session::SessionOptions;
use oxprof_sql::schema::{Source, TABLES, markdown_page};
use oxprof_sql::{Engine, QueryLimits, SCHEMA_VERSION};
use std::path::PathBuf;
use std::sync::Arc;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A tool table's own columns (name, SQL type), read from the first fixture that has it.
fn tool_columns(table: &str) -> Vec<(String, String)> {
    for fixture in ["testdata/profiles/jax_train", "testdata/kineto/ddp", "testdata/demo/mi300x_jax_gemm"] {
        let options = SessionOptions { confine_to_root: false, ..SessionOptions::default() };
        let session = Arc::new(oxprof_api::data::local_session(&repo().join(fixture), options).unwrap());
        let runs = session.catalog().current().runs.clone();
        let engine = Engine::new(session, runs, QueryLimits::default()).unwrap();
        let result = engine.query(&format!("SELECT * FROM {table} LIMIT 0")).unwrap();
        let columns: Vec<(String, String)> = result
            .schema
            .fields()
            .iter()
            .filter(|f| !matches!(f.name().as_str(), "run" | "host"))
            .map(|f| {
                let ty = match f.data_type() {
                    datafusion::arrow::datatypes::DataType::Int64 => "BIGINT",
                    datafusion::arrow::datatypes::DataType::Float64 => "DOUBLE",
                    datafusion::arrow::datatypes::DataType::Boolean => "BOOLEAN",
                    _ => "VARCHAR",
                };
                (f.name().clone(), ty.to_string())
            })
            .collect();
        if !columns.is_empty() {
            return columns;
        }
    }
    Vec::new()
}

fn pages() -> Vec<(String, String)> {
    let mut pages = Vec::new();
    let mut index = format!(
        "# SQL over profiles (schema version {SCHEMA_VERSION})\n\n\
         `oxprof query 'SQL' PATH`, `oxprof query --repl PATH`, the server's `/oxprof/api/query` and \
         the UI's Query page run SQL (Apache DataFusion's dialect) over these tables; \
         `oxprof export PATH --to parquet DIR` writes them as a Parquet dataset \
         (`DIR/<table>/run=<run>/host=<host>/part-0.parquet`). Shaped like Perfetto's trace_processor: \
         `ts`/`dur` in nanoseconds, `*_ps` exact. Ids are unique within one host of one run: join on \
         `run` and `host` too. Tables are built only when a query names them.\n\n\
         | table | rows |\n| --- | --- |\n"
    );
    for def in TABLES {
        let tool = match def.source {
            Source::Tool { table, .. } => tool_columns(def.name).into_iter().filter(|_| !table.is_empty()).collect(),
            _ => Vec::new(),
        };
        pages.push((format!("{}.md", def.name), markdown_page(def, &tool)));
        index.push_str(&format!("| [`{0}`]({0}.md) | {1} |\n", def.name, def.doc));
    }
    index.push_str("\nViews: [views.md](views.md). Limits and errors: [limits.md](limits.md).\n");
    let mut views =
        String::from("# Views\n\nNamed queries, registered (with the tables they read) when a query names them.\n");
    for v in oxprof_sql::views::VIEWS {
        views.push_str(&format!(
            "\n## `{}`\n\n{}\n\n```sql\nCREATE VIEW {} AS\n{}\n```\n\nExample:\n\n```sql\n{}\n```\n",
            v.name, v.doc, v.name, v.sql, v.example
        ));
    }
    pages.push(("views.md".into(), views));
    pages.push(("README.md".into(), index));
    pages
}

#[test]
fn docs_pages_match_the_schema() {
    let dir = repo().join("docs/sql");
    let bless = std::env::var_os("OXPROF_BLESS_DOCS").is_some();
    for (name, text) in pages() {
        let path = dir.join(&name);
        if bless {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, &text).unwrap();
            continue;
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert_eq!(committed, text, "{} is stale: rerun with OXPROF_BLESS_DOCS=1", path.display());
    }
}
