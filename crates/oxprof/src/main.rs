//! The `oxprof` command: a thin shell over `oxprof-api` (and `oxprof-agent`, `oxprof-mcp`). Parses arguments, prints
//! responses, maps failures to exit codes (2 = bad input; a closed standard output ends
//! the process quietly, killed by `SIGPIPE`: see `stdout`).

use anyhow::{Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;

mod memory;
mod output;
mod progress;
mod sql;
mod stdout;

use stdout::{errln, out, outln};

/// oxprof: a profiler for machine-learning workloads (XSpace / XProf profiles).
#[derive(Debug, Parser)]
#[command(name = "oxprof", version = version_text(), about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Read object-store logdirs (s3://, gs://, az://) without credentials, as public
    /// buckets allow (like the AWS CLI's --no-sign-request).
    // Last among each command's options, whatever the command defines (clap would place a
    // global option by its definition order, which moves as commands are added).
    #[arg(long, global = true, display_order = 900)]
    no_sign_request: bool,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Show what profiles hold: runs, hosts, planes, lines, event and metadata counts.
    Inspect {
        /// A log directory, a run directory, or one profile file (.xplane.pb, .pt.trace.json; .gz too).
        path: PathBuf,
        /// Print JSON instead of tables.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        budget: InputBudget,
    },
    /// Print one tool's output, as XProf's /data endpoint returns it (or as CSV/Markdown).
    Data {
        /// The tool (XProf's name; `oxprof data --help` lists them).
        #[arg(value_parser = parse_tool, long_help = tools_help())]
        tool: oxprof_api::registry::ToolId,
        /// A log directory, a run directory, or one profile file (.xplane.pb, .pt.trace.json; .gz too).
        path: PathBuf,
        /// Run name (default: the newest run).
        #[arg(long)]
        run: Option<String>,
        /// Host name, or ALL_HOSTS (default: all hosts).
        #[arg(long)]
        host: Option<String>,
        /// Tool parameter as key=value (repeatable), e.g. --param group_by=category.
        #[arg(long = "param", value_name = "KEY=VALUE", value_parser = parse_key_value)]
        params: Vec<(String, String)>,
        /// Output format: XProf's exact body, its first table as CSV, every table as Markdown, or oxprof's
        /// typed report as JSON.
        #[arg(long, value_enum, default_value_t = Format::Json)]
        format: Format,
        /// Also read a pod result's hosts' own profiles from PLACE (repeatable; a folder or
        /// an object-store prefix such as s3://bucket/logs): the tools that need a host's
        /// events read the profile its pod.json names when it lies inside PATH or a PLACE,
        /// and refuse it otherwise.
        #[arg(long = "pod-sources", value_name = "PLACE")]
        pod_sources: Vec<String>,
        #[command(flatten)]
        budget: InputBudget,
        #[command(flatten)]
        cache: AnalysisCacheArgs,
    },
    /// Say what bounds a run, in one screen: the step time and its breakdown, each detector's
    /// finding ranked by the time it costs (with evidence and the next action), the top ops
    /// and the memory peak. Works on XSpace runs (TensorFlow, JAX) and PyTorch traces.
    ///
    /// Exit code 0, or 1 when a finding is at or above --fail-on; 2 on bad input.
    Explain {
        /// A log directory, a run directory, or one profile file (.xplane.pb, .pt.trace.json; .gz too).
        path: PathBuf,
        /// Run name (default: the newest run).
        #[arg(long)]
        run: Option<String>,
        /// One host (default: every host of the run).
        #[arg(long)]
        host: Option<String>,
        /// Markdown for people, or JSON (schema `oxprof.explain/1`, see the manual) for scripts and agents.
        #[arg(long, value_enum, default_value_t = ExplainFormat::Md)]
        format: ExplainFormat,
        /// Most bytes of Markdown to print (sections past it are counted, not printed).
        #[arg(long, default_value_t = 16 * 1024)]
        budget: usize,
        /// Exit with 1 when a finding is at least this severe.
        #[arg(long, value_enum)]
        fail_on: Option<FailOn>,
        #[command(flatten)]
        input: InputBudget,
        #[command(flatten)]
        cache: AnalysisCacheArgs,
    },
    /// Compare two runs: step time and its breakdown (with a noise test), framework ops,
    /// GPU kernels, HLO ops, memory and the input pipeline; gates for CI.
    ///
    /// A and B are each a log directory, a run directory, one .xplane.pb(.gz) file or a
    /// summary saved by `oxprof summary`. Exit code 0 (no gate tripped), 1 (a --fail-if
    /// gate tripped: a change past its threshold and beyond noise), 2 (bad input or usage).
    Diff {
        /// The baseline: a log directory, run directory, profile file or summary file.
        a: PathBuf,
        /// The run compared with it (the same kinds of path).
        b: PathBuf,
        /// A's run within a log directory (default: the newest).
        #[arg(long)]
        run_a: Option<String>,
        /// B's run within a log directory (default: the newest).
        #[arg(long)]
        run_b: Option<String>,
        /// Host name, or ALL_HOSTS, for both runs (default: all hosts combined; a summary's
        /// own selection).
        #[arg(long)]
        host: Option<String>,
        /// A's host when it differs from --host (e.g. rank 0 against rank 1 of one run).
        #[arg(long, value_name = "HOST")]
        host_a: Option<String>,
        /// B's host when it differs from --host.
        #[arg(long, value_name = "HOST")]
        host_b: Option<String>,
        /// Output format: Markdown for people (gates first), oxprof's typed comparison as
        /// JSON, or one CSV row per compared value.
        #[arg(long, value_enum, default_value_t = DiffFormat::Md)]
        format: DiffFormat,
        /// Exit 1 when a change passes this threshold beyond noise (repeatable), e.g.
        /// 'step_time>+5%', 'step:input>+2ms', 'input.share>+10', 'op:MatMul.self_time>+10%',
        /// 'kernel:*.time>+20%', 'hlo:fusion.N.mean>+15%', 'memory.peak>+256MiB'.
        #[arg(long = "fail-if", value_name = "GATE", value_parser = parse_gate)]
        fail_if: Vec<oxprof_diff::gate::Gate>,
        /// Let gates trip on changes within noise, and without a verdict (too few steps).
        #[arg(long)]
        no_noise_check: bool,
        /// Drop template arguments from kernel names before matching them
        /// (`gemm<float, 128>(…)` → `gemm<>(…)`).
        #[arg(long)]
        strip_templates: bool,
        /// Rows per op table in Markdown.
        #[arg(long, value_name = "N", default_value_t = 10)]
        top: usize,
        /// Keep at most N ops in each list of each kind (the largest changes) in every format;
        /// the counts stay those of all ops (default: every op).
        #[arg(long, value_name = "N")]
        limit: Option<usize>,
        /// Largest summary file read (e.g. 256MiB): a larger one is refused with a message.
        #[arg(long, value_name = "BYTES", value_parser = parse_size, default_value = "64MiB")]
        max_summary_bytes: u64,
        #[command(flatten)]
        budget: InputBudget,
        #[command(flatten)]
        cache: AnalysisCacheArgs,
    },
    /// Save a run's reports as a versioned summary file that `oxprof diff` reads in place
    /// of the run (a baseline for CI, without the profile).
    Summary {
        /// A log directory, a run directory, or one .xplane.pb(.gz) file.
        path: PathBuf,
        /// Run name (default: the newest run).
        #[arg(long)]
        run: Option<String>,
        /// Host name, or ALL_HOSTS (default: all hosts combined).
        #[arg(long)]
        host: Option<String>,
        /// The file to write (default: standard output). An existing file is kept unless
        /// --force.
        #[arg(long, short)]
        out: Option<PathBuf>,
        /// Replace the --out file if it exists (a symbolic link there is replaced itself,
        /// never written through).
        #[arg(long, requires = "out")]
        force: bool,
        #[command(flatten)]
        budget: InputBudget,
        #[command(flatten)]
        cache: AnalysisCacheArgs,
    },
    /// Convert one profile (XSpace or PyTorch trace, plain or gzip) to another format:
    /// an XSpace that XProf opens, or Chrome trace JSON for Perfetto and chrome://tracing.
    ///
    /// OUTPUT ending in .gz is gzip-compressed.
    Convert {
        /// The profile file (.xplane.pb, .pt.trace.json, … optionally .gz; its content decides),
        /// or its URL (s3://, gs://, az://, http(s)://).
        input: PathBuf,
        /// The format to write.
        #[arg(long, value_enum)]
        to: ConvertTo,
        /// The file to write (an existing file is kept unless --force), or an object URL
        /// (s3://, gs://, az://) to upload it to.
        output: PathBuf,
        /// Replace OUTPUT if it exists (a symbolic link there is replaced itself, never
        /// written through).
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        budget: InputBudget,
    },
    /// Run SQL over profiles: Perfetto-shaped tables (slice, track, args, flow, …) and
    /// XProf's tool tables (op_stats, kernels, hlo_ops, steps, …); docs/sql/ documents them.
    ///
    /// Read-only: SELECT, WITH and EXPLAIN only. `--repl` reads statements from stdin.
    /// Exit code 2 for bad SQL or unreadable profiles.
    Query {
        /// The SQL statement (or, with --repl, the path).
        #[arg(required_unless_present = "repl")]
        sql: Option<String>,
        /// A log directory, a run directory, or one profile file.
        path: Option<PathBuf>,
        /// Only this run (default: every run under PATH).
        #[arg(long)]
        run: Option<String>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = sql::QueryFormat::Table)]
        format: sql::QueryFormat,
        /// Read statements ending in ';' from stdin and print each answer.
        #[arg(long)]
        repl: bool,
        /// Host files a scan decodes at once: 1 keeps memory near twice the largest host
        /// file whatever the host count; more overlap decoding on multi-host runs.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
        hosts_at_once: u16,
        /// Cancel a query running longer than this many seconds (default: no limit).
        #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
        timeout: Option<u64>,
        /// Memory queries may hold for sorts, joins, aggregations and the strings their
        /// functions build (e.g. 8GiB); a query needing more is cancelled with a message.
        #[arg(long, value_name = "BYTES", value_parser = parse_size, default_value = "4GiB")]
        sql_memory: u64,
        #[command(flatten)]
        budget: InputBudget,
    },
    /// Export every SQL table of profiles as a Parquet dataset (one directory per table,
    /// Hive-partitioned by run= and host=, zstd) for Spark, DuckDB or DataFusion.
    Export {
        /// A log directory, a run directory, or one profile file.
        path: PathBuf,
        /// The format to write.
        #[arg(long, value_enum)]
        to: ExportTo,
        /// The directory to write (new or empty), or a bucket prefix URL (s3://, gs://, az://;
        /// new or empty) to upload the dataset to.
        dir: PathBuf,
        /// Only this run (default: every run under PATH).
        #[arg(long)]
        run: Option<String>,
        #[command(flatten)]
        budget: InputBudget,
    },
    /// Capture a profile from running TensorFlow/JAX programs (their profiler servers)
    /// into <logdir>/plugins/profile/<session>/<host_port>.xplane.pb.
    Capture(oxprof_capture::cli::CaptureArgs),
    /// Serve the web UI and XProf-compatible HTTP routes for a log directory, run or file.
    ///
    /// With no path, serves a bundled demo (four small real profiles). Binds to loopback
    /// unless --bind says otherwise.
    Serve {
        /// A log directory, a run directory, or one profile file (.xplane.pb, .pt.trace.json; .gz too) (default: the bundled demo).
        path: Option<PathBuf>,
        /// Port to listen on (0: any free port).
        #[arg(long, default_value_t = oxprof_server::DEFAULT_PORT)]
        port: u16,
        /// Address to bind. Anything but loopback exposes the profiles to the network.
        #[arg(long, default_value = "127.0.0.1")]
        bind: std::net::IpAddr,
        /// Bound of the in-memory caches together (decoded profiles, per-host analyses,
        /// rendered tool outputs), in MB.
        ///
        /// [default: a quarter of this machine's memory, at least 512]
        #[arg(long, value_name = "MB")]
        cache_mb: Option<usize>,
        /// Do not log requests to stderr.
        #[arg(long)]
        quiet: bool,
        /// Also answer requests whose Host header names HOST (repeatable). By default only
        /// loopback names and the bound address are answered, so that no other web site can
        /// reach the server through a name of its own (DNS rebinding).
        #[arg(long = "allow-host", value_name = "HOST")]
        allow_hosts: Vec<String>,
        /// Let the UI's Capture Profile dialog also reach TARGET (repeatable): HOST,
        /// HOST:PORT, IP, IP:PORT or a CIDR block such as 10.0.0.0/8. By default only
        /// loopback addresses are captured from, so that no web page can use the server
        /// to reach other machines.
        #[arg(long = "capture-allow", value_name = "TARGET", value_parser = oxprof_capture::CapturePolicy::parse_allow)]
        capture_allow: Vec<oxprof_capture::AllowedTarget>,
        /// Also serve runs whose profile files are symlinks to outside PATH (by default they
        /// are skipped, so that a link cannot expose other files).
        #[arg(long)]
        follow_symlinks: bool,
        /// Let pages of SOURCE show the UI in a frame (repeatable): a CSP frame-ancestors
        /// source such as 'self' or http://127.0.0.1:6006. By default no page may
        /// (clickjacking); the TensorBoard tab passes 'self', as it serves the UI through
        /// TensorBoard's own origin.
        #[arg(long = "frame-ancestors", value_name = "SOURCE", value_parser = frame_source)]
        frame_ancestors: Vec<String>,
        /// Also read a pod result's hosts' own profiles from PLACE (repeatable; a folder or
        /// an object-store prefix such as s3://bucket/logs): the tools that need a host's
        /// events read the profile its pod.json names when it lies inside PATH or a PLACE,
        /// and refuse it otherwise.
        #[arg(long = "pod-sources", value_name = "PLACE")]
        pod_sources: Vec<String>,
        #[command(flatten)]
        budget: InputBudget,
        #[command(flatten)]
        cache: AnalysisCacheArgs,
    },
    /// Top rows of a tool's main table, most first, bounded for agents and scripts: ops
    /// (framework ops), kernels (GPU kernels), hlo (HLO ops), operators (PyTorch).
    ///
    /// The answer fits --budget bytes and ends with what was left out and how to get more
    /// (`… 412 more rows: --offset 20`). Exit code 2 for bad input.
    Top {
        /// What to rank.
        #[arg(value_enum)]
        what: TopWhat,
        /// A log directory, a run directory, or one profile file (.xplane.pb, .pt.trace.json; .gz too).
        path: PathBuf,
        /// The numeric column to sort by, most first (default: self time; a wrong name lists them).
        #[arg(long, value_name = "COLUMN")]
        by: Option<String>,
        #[command(flatten)]
        select: Select,
        #[command(flatten)]
        page: Page,
        #[command(flatten)]
        budget: InputBudget,
        #[command(flatten)]
        cache: AnalysisCacheArgs,
    },
    /// The step list with each step's time breakdown, bounded (the input pipeline
    /// analyzer's steps; the PyTorch overview's for a PyTorch trace).
    Steps {
        /// A log directory, a run directory, or one profile file.
        path: PathBuf,
        #[command(flatten)]
        select: Select,
        #[command(flatten)]
        page: Page,
        #[command(flatten)]
        budget: InputBudget,
        #[command(flatten)]
        cache: AnalysisCacheArgs,
    },
    /// Any tool's report as tables, notes first, each table bounded (--limit rows, then
    /// --budget bytes); `oxprof data` prints the whole output.
    Tool {
        /// The tool (XProf's name; `oxprof data --help` lists them).
        #[arg(value_parser = parse_tool)]
        tool: oxprof_api::registry::ToolId,
        /// A log directory, a run directory, or one profile file.
        path: PathBuf,
        #[command(flatten)]
        select: Select,
        #[command(flatten)]
        page: Page,
        #[command(flatten)]
        budget: InputBudget,
        #[command(flatten)]
        cache: AnalysisCacheArgs,
    },
    /// The runs of a path (newest first) and their hosts, bounded.
    Runs {
        /// A log directory, a run directory, or one profile file.
        path: PathBuf,
        #[command(flatten)]
        page: Page,
    },
    /// Trace events whose name matches a regex, in a time window (ms from each host's first
    /// event), listed in time order or aggregated by name (count, total and self time,
    /// min/avg/max), bounded; XSpace and PyTorch alike.
    Events {
        /// A log directory, a run directory, or one profile file.
        path: PathBuf,
        /// A regular expression matched anywhere in event names (`^name$` for one name).
        #[arg(long, value_name = "REGEX")]
        name: String,
        /// Start of the window, ms from the host's first event.
        #[arg(long, value_name = "MS")]
        start_ms: Option<f64>,
        /// End of the window, ms from the host's first event.
        #[arg(long, value_name = "MS")]
        end_ms: Option<f64>,
        /// One row per name instead of one per event.
        #[arg(long)]
        aggregate: bool,
        #[command(flatten)]
        select: Select,
        #[command(flatten)]
        page: Page,
        #[command(flatten)]
        budget: InputBudget,
        #[command(flatten)]
        cache: AnalysisCacheArgs,
    },
    /// One HLO module's text (one row per line), or an instruction's neighbourhood
    /// (operands and users to --depth), bounded; without --module, the run's modules.
    Hlo {
        /// A log directory, a run directory, or one profile file.
        path: PathBuf,
        /// The module, as the list names it (`jit_step(12)`).
        #[arg(long, value_name = "NAME")]
        module: Option<String>,
        /// An instruction of the module: its neighbourhood instead of the whole text.
        #[arg(long, value_name = "NAME", requires = "module")]
        instruction: Option<String>,
        /// How far the neighbourhood reaches through operands and users (at most 16).
        #[arg(long, value_name = "N", default_value_t = 1)]
        depth: usize,
        /// Run name (default: the newest run).
        #[arg(long)]
        run: Option<String>,
        #[command(flatten)]
        page: Page,
        #[command(flatten)]
        budget: InputBudget,
        #[command(flatten)]
        cache: AnalysisCacheArgs,
    },
    /// The allocations live at the memory peak, largest first, per allocator or device
    /// (memory_profile; the PyTorch memory view's allocation events), bounded.
    Allocations {
        /// A log directory, a run directory, or one profile file.
        path: PathBuf,
        #[command(flatten)]
        select: Select,
        #[command(flatten)]
        page: Page,
        #[command(flatten)]
        budget: InputBudget,
        #[command(flatten)]
        cache: AnalysisCacheArgs,
    },
    /// Serve a path's profiles to AI agents over the Model Context Protocol: the tools
    /// explain, list_runs, top, steps, tool, events, hlo, allocations, query and diff
    /// (read-only), the runs as resources.
    ///
    /// Over stdin/stdout by default (what MCP hosts start); --http PORT serves streamable
    /// HTTP at http://127.0.0.1:PORT/mcp instead (loopback only; foreign Host and Origin
    /// headers are refused).
    Mcp {
        /// A log directory, a run directory, or one profile file.
        path: PathBuf,
        /// Serve streamable HTTP on 127.0.0.1 at this port (0: any free port) instead of stdio.
        #[arg(long, value_name = "PORT")]
        http: Option<u16>,
        /// Most MCP sessions open at once over HTTP (a new one beyond them is refused with
        /// 503; a session ends when its client closes it or after 5 idle minutes).
        #[arg(long, value_name = "N", default_value_t = oxprof_mcp::DEFAULT_MAX_HTTP_SESSIONS, requires = "http")]
        max_sessions: usize,
        /// Bound of the in-memory caches together (decoded profiles, per-host analyses,
        /// SQL tables), in MB.
        ///
        /// [default: a quarter of this machine's memory, at least 512]
        #[arg(long, value_name = "MB")]
        cache_mb: Option<usize>,
        #[command(flatten)]
        budget: InputBudget,
        #[command(flatten)]
        cache: AnalysisCacheArgs,
    },
    /// Pods of many hosts computed apart: a job's plan, one host's partial result, a pod's combine.
    ///
    /// `plan` lists a run's hosts as tasks; `partial` computes one host's partial result (what
    /// the multi-host tools need of it) where its file is; `combine` combines every host of a
    /// pod result once. A directory of partials with the job's pod.json is a run every command
    /// reads (overview_page, input_pipeline_analyzer, framework_op_stats, pod_viewer,
    /// megascale_stats, ... for ALL_HOSTS), answering as the hosts' files would (docs/pods.md).
    Pod {
        #[command(subcommand)]
        action: PodAction,
    },
    /// Manage the persistent analysis cache (per-host results kept for later runs).
    Cache {
        #[command(subcommand)]
        action: CacheAction,
    },
    /// Print a shell completion script (e.g. `oxprof completions bash > ~/.local/share/bash-completion/completions/oxprof`).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), generated from the command line's definition (`oxprof man | man -l -`).
    Man,
}

/// `oxprof --version`: the release and the build (the fingerprint of its sources, which
/// also keys the persistent analysis cache).
fn version_text() -> &'static str {
    static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEXT.get_or_init(|| format!("{} (build {})", env!("CARGO_PKG_VERSION"), oxprof_api::BUILD_FINGERPRINT))
}

#[derive(Debug, Subcommand)]
enum PodAction {
    /// The hosts of a run, one task each: the host, its profile (a path or URL, as `pod
    /// partial` takes it) and its size.
    Plan {
        /// A log directory or run directory, local or in a bucket (s3://, gs://, az://).
        source: PathBuf,
        /// Run name (default: the newest run).
        #[arg(long)]
        run: Option<String>,
        /// Output format: a table, or {"run", "hosts": [{"host", "source", "bytes"}]} as JSON.
        #[arg(long, value_enum, default_value_t = VerbFormat::Md)]
        format: VerbFormat,
    },
    /// One host's partial result (HOST.oxpartial): its OpStats analysis, DCN collective facts
    /// and features, from one read of its profile. An existing FILE is kept unless --force.
    Partial {
        /// The host's profile (local or in a bucket), or a run directory with --host.
        source: PathBuf,
        /// The file to write (`-`: standard output).
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
        /// The host, when SOURCE holds several.
        #[arg(long)]
        host: Option<String>,
        /// Replace an existing FILE (a link there is replaced itself, never written through).
        #[arg(long)]
        force: bool,
        /// What to print once written: a line for people, or {"host", "source",
        /// "source_bytes", "out", "partial_bytes"} as JSON.
        #[arg(long, value_enum, default_value_t = VerbFormat::Md)]
        format: VerbFormat,
        #[command(flatten)]
        budget: InputBudget,
    },
    /// Combine every host of a pod result once (ALL_HOSTS.oxcombined beside its partials),
    /// so that its multi-host tools answer ALL_HOSTS with one read instead of one per host.
    /// Replaces only an earlier combine; a stale one (partials changed since) is ignored.
    Combine {
        /// The pod result directory (a directory of .oxpartial files).
        path: PathBuf,
        /// Run name (default: the newest run).
        #[arg(long)]
        run: Option<String>,
        /// What to print once written: a line for people, or {"out", "hosts", "bytes"} as JSON.
        #[arg(long, value_enum, default_value_t = VerbFormat::Md)]
        format: VerbFormat,
        #[command(flatten)]
        budget: InputBudget,
    },
    /// Run the pod job on Apache Spark: `spark-submit [--master URL] [--conf K=V] JOB SOURCE OUT --oxprof
    /// <this oxprof> [JOB_ARGS]`, JOB being `oxprof.spark` (python/oxprof/spark.py) of the
    /// Python environment this oxprof came with, or --job. Executors compute each host's
    /// partial where its file is (a directory every executor sees, or a bucket); OUT becomes
    /// the pod result directory. Exits with spark-submit's code (docs/pods.md).
    Run {
        /// The run: a directory, a logdir or an object-store URL (s3://, gs://, az://).
        source: String,
        /// The pod result directory to write (new or empty).
        out: PathBuf,
        /// The Spark master (e.g. spark://HOST:7077; default: spark-submit's).
        #[arg(long)]
        master: Option<String>,
        /// A Spark setting for spark-submit, repeatable (e.g. --conf spark.executor.memory=2g).
        #[arg(long = "conf", value_name = "KEY=VALUE")]
        spark_conf: Vec<String>,
        /// The spark-submit to run.
        #[arg(long, value_name = "PATH", default_value = "spark-submit")]
        spark_submit: PathBuf,
        /// The job's file (default: where the Python environment's `oxprof.spark` is).
        #[arg(long, value_name = "FILE")]
        job: Option<PathBuf>,
        /// The Python that finds `oxprof.spark` when --job is not given.
        #[arg(long, value_name = "PATH", default_value = "python3")]
        python: PathBuf,
        /// More arguments for the job, after `--` (e.g. -- --format json --plan plan.json).
        #[arg(last = true)]
        job_args: Vec<String>,
    },
}

#[derive(Debug, Subcommand)]
enum CacheAction {
    /// Show where the cache is and how much it holds.
    Info {
        #[command(flatten)]
        cache: AnalysisCacheArgs,
    },
    /// Remove every entry.
    Clear {
        #[command(flatten)]
        cache: AnalysisCacheArgs,
    },
}

/// The run and host a verb reads.
#[derive(Debug, Clone, clap::Args)]
struct Select {
    /// Run name (default: the newest run).
    #[arg(long)]
    run: Option<String>,
    /// Host name, or ALL_HOSTS (default: all hosts).
    #[arg(long)]
    host: Option<String>,
}

/// How much of an answer a verb shows, and how.
#[derive(Debug, Clone, clap::Args)]
struct Page {
    /// Rows to show (of each table).
    #[arg(long, value_name = "N", default_value_t = oxprof_agent::DEFAULT_LIMIT)]
    limit: usize,
    /// Rows to skip first.
    #[arg(long, value_name = "N", default_value_t = 0)]
    offset: usize,
    /// Most bytes the answer may take, in Markdown and in JSON alike (e.g. 64KiB): rows past
    /// it are left out, and said so.
    #[arg(long, value_name = "BYTES", value_parser = parse_size, default_value = "16KiB")]
    budget: u64,
    /// Output format: Markdown for people and agents, or the typed answer as JSON (what
    /// `oxprof mcp` sends).
    #[arg(long, value_enum, default_value_t = VerbFormat::Md)]
    format: VerbFormat,
}

impl Page {
    fn budget(&self) -> Option<usize> {
        Some(usize::try_from(self.budget).unwrap_or(usize::MAX))
    }
}

/// Output formats of the bounded verbs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum VerbFormat {
    /// Markdown: notes, the tables, what was left out.
    Md,
    /// The typed answer as one line of JSON.
    Json,
}

/// What `oxprof top` ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum TopWhat {
    /// Framework ops (framework_op_stats), by total self time.
    Ops,
    /// GPU kernels (kernel_stats; pytorch_kernel_stats on a PyTorch trace), by total time.
    Kernels,
    /// HLO ops (hlo_stats), by total self time.
    Hlo,
    /// PyTorch operators (pytorch_op_stats), by self time.
    Operators,
}

impl From<TopWhat> for oxprof_agent::TopKind {
    fn from(what: TopWhat) -> Self {
        match what {
            TopWhat::Ops => oxprof_agent::TopKind::Ops,
            TopWhat::Kernels => oxprof_agent::TopKind::Kernels,
            TopWhat::Hlo => oxprof_agent::TopKind::Hlo,
            TopWhat::Operators => oxprof_agent::TopKind::Operators,
        }
    }
}

/// A one-shot session for a verb over `path`.
fn verb_session(
    path: &std::path::Path,
    budget: &InputBudget,
    cache: &AnalysisCacheArgs,
) -> Result<oxprof_api::session::Session> {
    let options = oxprof_api::session::SessionOptions {
        limits: budget.limits(),
        disk_cache: cache.open(),
        ..oxprof_api::session::SessionOptions::one_shot()
    };
    Ok(oxprof_api::data::local_session(path, options)?)
}

/// Prints a verb's answer as `format`.
fn print_verb<T: oxprof_agent::Windowed>(answer: &T, format: VerbFormat) -> Result<ExitCode> {
    match format {
        VerbFormat::Md => out!("{}", answer.markdown())?,
        VerbFormat::Json => outln!("{}", serde_json::to_string(answer)?)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Where per-host analyses are kept between runs, so that reopening a profile skips
/// decoding it.
#[derive(Debug, Clone, clap::Args)]
struct AnalysisCacheArgs {
    /// Directory of the persistent analysis cache (default: $OXPROF_CACHE_DIR, else the
    /// platform cache directory, e.g. ~/.cache/oxprof). Never beside the profiles.
    #[arg(long, value_name = "DIR")]
    cache_dir: Option<PathBuf>,
    /// Neither read nor write the persistent analysis cache.
    #[arg(long, conflicts_with = "cache_dir")]
    no_cache: bool,
    /// Bound of the persistent analysis cache, in MB (least recently used entries go first).
    #[arg(long, value_name = "MB", default_value_t = 4096)]
    cache_dir_mb: u64,
}

impl AnalysisCacheArgs {
    fn root(&self) -> Option<PathBuf> {
        self.cache_dir.clone().or_else(oxprof_api::DiskCache::default_root)
    }

    /// The cache, or `None` with `--no-cache` (or, with a warning, when it cannot be opened:
    /// answers do not need it).
    fn open(&self) -> Option<std::sync::Arc<oxprof_api::DiskCache>> {
        if self.no_cache {
            return None;
        }
        let root = self.root()?;
        match oxprof_api::DiskCache::open(&root, self.cache_dir_mb.saturating_mul(1 << 20)) {
            Ok(cache) => Some(std::sync::Arc::new(cache)),
            Err(e) => {
                errln!("oxprof: warning: {e}");
                None
            }
        }
    }
}

/// The input budget a user can raise (the others scale with each file's size).
#[derive(Debug, Clone, clap::Args)]
struct InputBudget {
    /// Largest profile oxprof reads, decompressed (e.g. 4GiB): a larger file, or a gzip
    /// file inflating past it, is refused with a message naming this flag.
    #[arg(long, value_name = "BYTES", value_parser = parse_size, default_value = "2GiB")]
    max_profile_bytes: u64,
    /// Most memory a PyTorch trace's distinct names, arg keys and string values may take
    /// (their bytes plus 16 per string; default 64MiB plus a quarter of the file): a trace
    /// past it is refused with a message naming this flag.
    #[arg(long, value_name = "BYTES", value_parser = parse_size)]
    max_interned_bytes: Option<u64>,
}

impl InputBudget {
    fn limits(&self) -> oxprof_api::LoadLimits {
        let limits = oxprof_api::LoadLimits::default().with_max_profile_bytes(self.max_profile_bytes);
        match self.max_interned_bytes {
            Some(bytes) => limits.with_max_interned_bytes(bytes),
            None => limits,
        }
    }
}

/// A size in bytes: a number with an optional unit (`k`/`KiB`, `M`/`MiB`, `G`/`GiB`; `KB`,
/// `MB`, `GB` are powers of 1000).
fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let number: u64 = digits.parse().map_err(|_| format!("not a size: {text:?} (e.g. 4GiB, 500MB, 1073741824)"))?;
    let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        other => return Err(format!("unknown size unit {other:?} in {text:?} (use KiB, MiB, GiB, KB, MB or GB)")),
    };
    number.checked_mul(scale).ok_or_else(|| format!("{text:?} is too large"))
}

/// Output formats of `oxprof data`.
/// `oxprof explain`'s output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ExplainFormat {
    /// One screen of Markdown.
    Md,
    /// The explanation as JSON (schema `oxprof.explain/1`).
    Json,
}

/// A finding severity for `--fail-on`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum FailOn {
    /// Any finding.
    Info,
    /// A warning or worse.
    Warning,
    /// A critical finding.
    Critical,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    /// The body XProf's server returns.
    Json,
    /// The first table as CSV (like XProf's /data_csv).
    Csv,
    /// Every table (and its properties) as Markdown, after oxprof's notes.
    Md,
    /// oxprof's typed report of the tool as JSON (numbers as numbers; reloadable, for scripts and diffs).
    Report,
}

/// Output formats of `oxprof convert`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ConvertTo {
    /// XProf's XSpace protobuf (`.xplane.pb`).
    Xspace,
    /// Chrome trace JSON (Perfetto, chrome://tracing).
    ChromeJson,
}

/// Loads `input` (a file or an object URL) through the format seam and writes it to
/// `output` as `to`; an output URL is written locally first, then uploaded whole.
fn convert(
    input: &std::path::Path,
    to: ConvertTo,
    output: &std::path::Path,
    force: bool,
    budget: &InputBudget,
) -> Result<()> {
    let Some(url) = output.to_str().filter(|s| oxprof_objstore::is_url(s)) else {
        return convert_to_file(input, to, output, force, budget);
    };
    let options = oxprof_objstore::RemoteOptions::default();
    // Credentials are checked before converting, not after.
    oxprof_objstore::RemoteStore::open(url, &options)?;
    let staging = tempfile::tempdir().context("cannot make a staging directory for the conversion")?;
    // The same file name, so that `.gz` still means gzip.
    let name = url.trim_end_matches('/').rsplit('/').next().filter(|n| !n.is_empty()).unwrap_or("profile");
    let local = staging.path().join(name);
    convert_to_file(input, to, &local, false, budget)?;
    let bytes = oxprof_objstore::upload_file(&local, url, &options)?;
    errln!("oxprof: uploaded {url} ({bytes} bytes)");
    Ok(())
}

/// Writes `input` converted to `to` as the local file `output` (see `output`: an existing
/// file only with `force`, never through a link, never half written).
fn convert_to_file(
    input: &std::path::Path,
    to: ConvertTo,
    output: &std::path::Path,
    force: bool,
    budget: &InputBudget,
) -> Result<()> {
    // Refused before the input is read, not after.
    output::check_target(output, force)?;
    let space = if input.to_str().is_some_and(oxprof_objstore::is_url) {
        let store = oxprof_objstore::open_store(input, &oxprof_objstore::RemoteOptions::default())?;
        store.load(input, &budget.limits(), &|_| true)?
    } else {
        oxprof_format::load_xspace_with(input, &budget.limits(), &|_| true)?
    };
    let mut what = String::new();
    output::write_file(output, force, |file| {
        if output.extension().is_some_and(|e| e == "gz") {
            let mut gz = flate2::write::GzEncoder::new(file, flate2::Compression::default());
            what = write_converted(&space, to, &mut gz)?;
            gz.try_finish()?;
        } else {
            what = write_converted(&space, to, file)?;
        }
        Ok(())
    })?;
    errln!("oxprof: wrote {} ({what})", output.display());
    Ok(())
}

/// Writes `space` as `to` into `out`; what was written, for the message.
fn write_converted(space: &oxprof_format::XSpace, to: ConvertTo, out: &mut dyn std::io::Write) -> Result<String> {
    Ok(match to {
        ConvertTo::Xspace => {
            out.write_all(&oxprof_xspace::encode_xspace(space))?;
            format!("{} events", space.event_count())
        }
        ConvertTo::ChromeJson => {
            let summary = oxprof_kineto::export_chrome_json(space, out)?;
            format!("{} events, {} flow endpoints", summary.events, summary.flows)
        }
    })
}

/// Dataset formats of `oxprof export`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ExportTo {
    /// Apache Parquet.
    Parquet,
}

/// Output formats of `oxprof diff`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum DiffFormat {
    /// Markdown: the runs, the gates (which tripped and why), then each section.
    Md,
    /// oxprof's typed comparison (with the gates' outcomes) as JSON.
    Json,
    /// One row per compared value, then one per gate.
    Csv,
}

/// A `--fail-if` gate.
fn parse_gate(text: &str) -> Result<oxprof_diff::gate::Gate, String> {
    oxprof_diff::gate::Gate::parse(text).map_err(|e| e.to_string())
}

/// A tool of the registry, by its name or an alias.
fn parse_tool(name: &str) -> Result<oxprof_api::registry::ToolId, String> {
    oxprof_api::registry::resolve(name).map(|tool| tool.id).map_err(|e| e.to_string())
}

/// The tool argument's long help: every tool of the registry with what it shows.
fn tools_help() -> String {
    let mut help = String::from("The tool (XProf's name):\n");
    for tool in oxprof_api::registry::tools().iter().filter(|t| t.available()) {
        help.push_str(&format!("  {:<28} {}: {}\n", tool.name(), tool.title, tool.summary));
    }
    help
}

fn parse_key_value(s: &str) -> Result<(String, String), String> {
    s.split_once('=')
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .ok_or_else(|| format!("expected KEY=VALUE, got {s:?}"))
}

/// Exit code for bad input (unreadable or corrupt profiles, nothing found).
const EXIT_BAD_INPUT: u8 = 2;
/// Exit code of `oxprof diff` when a gate trips.
const EXIT_GATE_TRIPPED: u8 = 1;

fn main() -> ExitCode {
    oxprof_format::return_freed_large_blocks_to_the_os();
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            // Whatever made the error, a URL's secrets (userinfo, signatures) are not printed.
            errln!("oxprof: {}", oxprof_objstore::redact(&format!("{e:#}")));
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode> {
    let code = run_command(cli)?;
    // What is still buffered: a closed pipe ends the process here, as at any write.
    std::io::Write::flush(&mut stdout::stdout()).context("cannot write to stdout")?;
    Ok(code)
}

/// `oxprof pod`: the plan, or one host's partial written to a new file.
fn pod_command(action: PodAction) -> Result<ExitCode> {
    match action {
        PodAction::Plan { source, run, format } => {
            let session = oxprof_api::data::one_shot_session(&source)?;
            let plan = oxprof_api::pod::plan(&session, run.as_deref())?;
            match format {
                VerbFormat::Json => outln!("{}", serde_json::to_string(&plan)?)?,
                VerbFormat::Md => {
                    outln!(
                        "run {}: {} hosts\n\n| host | bytes | source |\n|---|---:|---|",
                        plan.run,
                        plan.hosts.len()
                    )?;
                    for h in &plan.hosts {
                        let bytes = h.bytes.map_or("unreadable".to_string(), |b| b.to_string());
                        outln!("| {} | {bytes} | {} |", h.host, h.source)?;
                    }
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        PodAction::Partial { source, out, host, force, format, budget } => {
            use std::io::Write;
            let to_stdout = out.as_os_str() == "-";
            if !to_stdout {
                // Refused before the profile is read, not after.
                output::check_target(&out, force)?;
            }
            let session = oxprof_api::data::one_shot_session_with(&source, budget.limits())?;
            let partial = oxprof_api::pod::partial_of(&session, host.as_deref())?;
            let bytes = oxprof_api::pod::encode_partial(&partial);
            if to_stdout {
                std::io::stdout().lock().write_all(&bytes)?;
                return Ok(ExitCode::SUCCESS);
            }
            output::write_file(&out, force, |file| Ok(file.write_all(&bytes)?))?;
            match format {
                VerbFormat::Json => outln!(
                    "{}",
                    serde_json::json!({
                        "host": partial.host,
                        "source": partial.source,
                        "source_bytes": partial.source_bytes,
                        "out": out,
                        "partial_bytes": bytes.len(),
                    })
                )?,
                VerbFormat::Md => outln!(
                    "{}: host {} ({} bytes) -> {} bytes",
                    out.display(),
                    partial.host,
                    partial.source_bytes,
                    bytes.len()
                )?,
            }
            Ok(ExitCode::SUCCESS)
        }
        PodAction::Run { source, out, master, spark_conf, spark_submit, job, python, job_args } => {
            let job = match job {
                Some(job) => job,
                None => spark_job_of(&python)?,
            };
            let this = std::env::current_exe().context("cannot tell where this oxprof is")?;
            let mut command = std::process::Command::new(&spark_submit);
            if let Some(master) = &master {
                command.arg("--master").arg(master);
            }
            for setting in &spark_conf {
                if !setting.contains('=') {
                    anyhow::bail!("--conf {setting}: a Spark setting is KEY=VALUE (e.g. spark.executor.memory=2g)");
                }
                command.arg("--conf").arg(setting);
            }
            command.arg(&job).arg(&source).arg(&out).arg("--oxprof").arg(&this).args(&job_args);
            let status = command.status().with_context(|| {
                format!(
                    "cannot run {} (install Apache Spark or pyspark, or name it with --spark-submit)",
                    spark_submit.display()
                )
            })?;
            Ok(ExitCode::from(status.code().map_or(1, |c| u8::try_from(c).unwrap_or(1))))
        }
        PodAction::Combine { path, run, format, budget } => {
            let session = oxprof_api::data::one_shot_session_with(&path, budget.limits())?;
            let run = session.run(run.as_deref())?;
            let bytes = oxprof_api::pod::combine_pod(&session, &run)?;
            let out = run.dir.join(oxprof_api::pod::COMBINED_FILE);
            replace_own_artifact(&out, &bytes, oxprof_api::pod::COMBINED_KIND)?;
            match format {
                VerbFormat::Json => {
                    outln!("{}", serde_json::json!({"out": out, "hosts": run.hosts.len(), "bytes": bytes.len()}))?
                }
                VerbFormat::Md => {
                    outln!("{}: {} hosts combined, {} bytes", out.display(), run.hosts.len(), bytes.len())?
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The file of `oxprof.spark` in `python`'s environment (the wheel's), for spark-submit.
fn spark_job_of(python: &std::path::Path) -> Result<PathBuf> {
    let found = std::process::Command::new(python)
        .args(["-c", "import importlib.util as u; s = u.find_spec('oxprof.spark'); print(s.origin if s else '')"])
        .output()
        .with_context(|| format!("cannot run {} to find oxprof.spark (name the job with --job)", python.display()))?;
    let origin = String::from_utf8_lossy(&found.stdout).trim().to_string();
    if !found.status.success() || origin.is_empty() {
        anyhow::bail!(
            "{} has no oxprof.spark (pip install oxprof there, or name python/oxprof/spark.py with --job)",
            python.display()
        );
    }
    Ok(PathBuf::from(origin))
}

/// Writes `bytes` to `path`: a new file, or in place of an earlier artifact of `kind` that
/// oxprof wrote (replaced by a rename, never written through a link); anything else there
/// is refused.
fn replace_own_artifact(path: &std::path::Path, bytes: &[u8], kind: &str) -> Result<()> {
    use std::io::Read;
    let earlier = match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => return Err(e).with_context(|| format!("{}: cannot check it", path.display())),
        Ok(meta) if !meta.is_file() => {
            anyhow::bail!("{}: exists and is not a file oxprof wrote; move it away first", path.display())
        }
        Ok(_) => {
            let mut head = Vec::new();
            std::fs::File::open(path)?.take(256).read_to_end(&mut head)?;
            if oxprof_api::pod::artifact_kind(&head).is_none_or(|found| found != kind) {
                anyhow::bail!(
                    "{}: exists and is not an oxprof {kind} file; oxprof never writes over it: move it away first",
                    path.display()
                );
            }
            true
        }
    };
    output::write_file(path, earlier, |file| Ok(file.write_all(bytes)?))
}

/// `--frame-ancestors`' value: one CSP source, refused here (exit 2, naming the flag) rather
/// than when the server starts.
fn frame_source(source: &str) -> Result<String, String> {
    if oxprof_api::http::is_frame_source(source) {
        Ok(source.to_string())
    } else {
        Err(format!("{source:?} is not a CSP frame-ancestors source (e.g. 'self' or http://127.0.0.1:6006)"))
    }
}

fn run_command(cli: Cli) -> Result<ExitCode> {
    oxprof_objstore::set_no_sign_request(cli.no_sign_request);
    if matches!(cli.command, Command::Serve { .. }) {
        // The server's pages show it (`/oxprof/api/progress`); its stderr is its log.
        oxprof_format::progress::install_tally();
    } else {
        progress::install();
    }
    match cli.command {
        Command::Inspect { path, json, budget } => {
            let report = oxprof_api::inspect::inspect_with(&path, &budget.limits())?;
            if json {
                outln!("{}", serde_json::to_string_pretty(&report)?)?;
            } else {
                out!("{}", oxprof_api::inspect::render_text(&report))?;
            }
            let mut failed = false;
            for host in report.failures() {
                failed = true;
                if let Some(err) = &host.error {
                    errln!("oxprof: {err}");
                }
            }
            Ok(if failed { ExitCode::from(EXIT_BAD_INPUT) } else { ExitCode::SUCCESS })
        }
        Command::Diff {
            a,
            b,
            run_a,
            run_b,
            host,
            host_a,
            host_b,
            format,
            fail_if,
            no_noise_check,
            strip_templates,
            top,
            limit,
            max_summary_bytes,
            budget,
            cache,
        } => {
            let host_a = host_a.as_deref().or(host.as_deref());
            let host_b = host_b.as_deref().or(host.as_deref());
            let side_a = oxprof_api::diff::SideRequest { path: &a, run: run_a.as_deref(), host: host_a };
            let side_b = oxprof_api::diff::SideRequest { path: &b, run: run_b.as_deref(), host: host_b };
            let options = oxprof_diff::DiffOptions { strip_templates, ..oxprof_diff::DiffOptions::default() };
            let limits = oxprof_api::diff::ReadOptions {
                profile: budget.limits(),
                summary: oxprof_diff::summary::SummaryLimits {
                    max_bytes: max_summary_bytes,
                    ..oxprof_diff::summary::SummaryLimits::default()
                },
                disk_cache: cache.open(),
            };
            let diff = oxprof_api::diff::diff_paths(&side_a, &side_b, &options, &limits)?;
            let mut report = oxprof_diff::DiffReport::new(diff, &fail_if, !no_noise_check);
            // After the gates, which read every op.
            if let Some(limit) = limit {
                report.diff.truncate_ops(limit);
            }
            let text = match format {
                DiffFormat::Md => oxprof_api::diff::markdown::render(&report, top),
                DiffFormat::Json => serde_json::to_string_pretty(&report)? + "\n",
                DiffFormat::Csv => oxprof_api::diff::csv::render(&report),
            };
            out!("{text}").context("cannot write to stdout")?;
            for gate in report.gates.iter().filter(|g| g.tripped()) {
                errln!("oxprof: gate {} tripped: {}", gate.gate, gate.reason);
            }
            Ok(if report.tripped { ExitCode::from(EXIT_GATE_TRIPPED) } else { ExitCode::SUCCESS })
        }
        Command::Summary { path, run, host, out, force, budget, cache } => {
            if let Some(out) = &out {
                output::check_target(out, force)?;
            }
            let side = oxprof_api::diff::SideRequest { path: &path, run: run.as_deref(), host: host.as_deref() };
            let read = oxprof_api::diff::ReadOptions {
                profile: budget.limits(),
                disk_cache: cache.open(),
                ..oxprof_api::diff::ReadOptions::default()
            };
            let summary = oxprof_api::diff::summarize(&side, &read)?;
            let text = summary.to_json() + "\n";
            match out {
                Some(out) => {
                    output::write_file(&out, force, |file| Ok(file.write_all(text.as_bytes())?))?;
                    errln!("oxprof: wrote {} (summary of {})", out.display(), summary.source.label());
                }
                None => out!("{text}").context("cannot write to stdout")?,
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Capture(args) => Ok(ExitCode::from(capture(&args)?)),
        Command::Query { sql, path, run, format, repl, hosts_at_once, timeout, sql_memory, budget } => {
            let sql_budget = sql::Budget {
                hosts_at_once: usize::from(hosts_at_once),
                timeout: timeout.map(std::time::Duration::from_secs),
                memory_bytes: usize::try_from(sql_memory).unwrap_or(usize::MAX),
            };
            if repl {
                let path = path.or_else(|| sql.map(PathBuf::from)).context("--repl needs a PATH")?;
                sql::repl(&path, run.as_deref(), sql_budget, budget.limits())?;
            } else {
                let (Some(sql), Some(path)) = (sql, path) else { anyhow::bail!("give the SQL and a PATH") };
                sql::query(&sql, &path, run.as_deref(), format, sql_budget, budget.limits())?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Export { path, to: ExportTo::Parquet, dir, run, budget } => {
            export_parquet(&path, run.as_deref(), &dir, budget.limits())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Convert { input, to, output, force, budget } => {
            convert(&input, to, &output, force, &budget)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Completions { shell } => {
            use clap::CommandFactory;
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "oxprof", &mut script);
            out!("{}", String::from_utf8_lossy(&script))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Man => {
            use clap::CommandFactory;
            let mut page = Vec::new();
            clap_mangen::Man::new(Cli::command()).render(&mut page).context("cannot render the man page")?;
            out!("{}", String::from_utf8_lossy(&page))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Pod { action } => pod_command(action),
        Command::Cache { action } => {
            let (CacheAction::Info { cache } | CacheAction::Clear { cache }) = &action;
            let root = cache.root().context("no cache directory: give one with --cache-dir")?;
            let disk = oxprof_api::DiskCache::open(&root, cache.cache_dir_mb.saturating_mul(1 << 20))?;
            let mb = |bytes: u64| bytes as f64 / 1e6;
            match action {
                CacheAction::Info { .. } => {
                    let usage = disk.usage();
                    outln!("{}: {} entries, {:.1} MB", disk.dir().display(), usage.entries, mb(usage.bytes))?;
                    outln!(
                        "this oxprof reads the entries of its build ({}) only; others age out, least recently used first",
                        oxprof_api::BUILD_FINGERPRINT
                    )?;
                }
                CacheAction::Clear { .. } => {
                    let removed = disk.clear()?;
                    outln!(
                        "{}: removed {} entries, {:.1} MB (only oxprof's entries: nothing else in it is touched)",
                        disk.dir().display(),
                        removed.entries,
                        mb(removed.bytes)
                    )?;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Serve {
            path,
            port,
            bind,
            cache_mb,
            quiet,
            allow_hosts,
            capture_allow,
            follow_symlinks,
            frame_ancestors,
            pod_sources,
            budget,
            cache,
        } => {
            if !bind.is_loopback() {
                errln!("oxprof: warning: serving on {bind}: anyone who can reach it can read these profiles");
            }
            let options = oxprof_server::ServeOptions {
                path,
                bind,
                port,
                cache_bytes: cache_mb.unwrap_or_else(memory::default_cache_mb).saturating_mul(1 << 20),
                log_requests: !quiet,
                allow_hosts,
                capture_policy: oxprof_capture::CapturePolicy::loopback_only().allowing(capture_allow),
                limits: budget.limits(),
                follow_symlinks,
                disk_cache: cache.open(),
                frame_ancestors,
                pod_sources,
            };
            let demo = options.path.is_none();
            oxprof_server::serve_blocking(options, |server| {
                let what = if demo { "the bundled demo".to_string() } else { server.root.display().to_string() };
                // A closed stdout ends the server here too (see `stdout`); other errors
                // only lose the banner.
                let _ = outln!("oxprof: serving {what} at {}", server.url());
                let _ = outln!("oxprof: press Ctrl-C to stop");
            })
            .context("cannot serve")?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Explain { path, run, host, format, budget, fail_on, input, cache } => {
            let options = oxprof_api::session::SessionOptions {
                limits: input.limits(),
                disk_cache: cache.open(),
                ..oxprof_api::session::SessionOptions::one_shot()
            };
            let session = oxprof_api::data::local_session(&path, options)?;
            let served = session.run(run.as_deref())?;
            let explanation = oxprof_explain::explain(&session, &served, host.as_deref())?;
            match format {
                ExplainFormat::Md => out!("{}", oxprof_explain::render_markdown(&explanation, budget))?,
                ExplainFormat::Json => outln!("{}", serde_json::to_string_pretty(&explanation)?)?,
            }
            let failed = fail_on.is_some_and(|at| {
                let at = match at {
                    FailOn::Info => oxprof_explain::Severity::Info,
                    FailOn::Warning => oxprof_explain::Severity::Warning,
                    FailOn::Critical => oxprof_explain::Severity::Critical,
                };
                explanation.findings.iter().any(|f| f.severity >= at)
            });
            Ok(if failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
        }
        Command::Top { what, path, by, select, page, budget, cache } => {
            let session = verb_session(&path, &budget, &cache)?;
            let args = oxprof_agent::TopArgs {
                what: what.into(),
                run: select.run,
                host: select.host,
                by,
                limit: Some(page.limit),
                offset: Some(page.offset),
                budget: page.budget(),
            };
            print_verb(&oxprof_agent::top(&session, &args)?, page.format)
        }
        Command::Steps { path, select, page, budget, cache } => {
            let session = verb_session(&path, &budget, &cache)?;
            let args = oxprof_agent::StepsArgs {
                run: select.run,
                host: select.host,
                limit: Some(page.limit),
                offset: Some(page.offset),
                budget: page.budget(),
            };
            print_verb(&oxprof_agent::steps(&session, &args)?, page.format)
        }
        Command::Tool { tool, path, select, page, budget, cache } => {
            let session = verb_session(&path, &budget, &cache)?;
            let args = oxprof_agent::ToolArgs {
                tool: tool.name().to_string(),
                run: select.run,
                host: select.host,
                limit: Some(page.limit),
                offset: Some(page.offset),
                budget: page.budget(),
            };
            print_verb(&oxprof_agent::tool(&session, &args)?, page.format)
        }
        Command::Events { path, name, start_ms, end_ms, aggregate, select, page, budget, cache } => {
            let session = verb_session(&path, &budget, &cache)?;
            let args = oxprof_agent::EventsArgs {
                name,
                run: select.run,
                host: select.host,
                start_ms,
                end_ms,
                aggregate,
                limit: Some(page.limit),
                offset: Some(page.offset),
                budget: page.budget(),
            };
            print_verb(&oxprof_agent::events(&session, &args)?, page.format)
        }
        Command::Hlo { path, module, instruction, depth, run, page, budget, cache } => {
            let session = verb_session(&path, &budget, &cache)?;
            let args = oxprof_agent::HloArgs {
                module,
                instruction,
                depth: Some(depth),
                run,
                limit: Some(page.limit),
                offset: Some(page.offset),
                budget: page.budget(),
            };
            print_verb(&oxprof_agent::hlo(&session, &args)?, page.format)
        }
        Command::Allocations { path, select, page, budget, cache } => {
            let session = verb_session(&path, &budget, &cache)?;
            let args = oxprof_agent::AllocationsArgs {
                run: select.run,
                host: select.host,
                limit: Some(page.limit),
                offset: Some(page.offset),
                budget: page.budget(),
            };
            print_verb(&oxprof_agent::allocations(&session, &args)?, page.format)
        }
        Command::Runs { path, page } => {
            let session = oxprof_api::data::one_shot_session(&path)?;
            let args =
                oxprof_agent::RunsArgs { limit: Some(page.limit), offset: Some(page.offset), budget: page.budget() };
            print_verb(&oxprof_agent::runs(&session, &args)?, page.format)
        }
        Command::Mcp { path, http, max_sessions, cache_mb, budget, cache } => {
            let disk_cache = cache.open();
            let options = oxprof_mcp::McpOptions {
                path,
                session: oxprof_api::session::SessionOptions {
                    cache_bytes: cache_mb.unwrap_or_else(memory::default_cache_mb).saturating_mul(1 << 20),
                    limits: budget.limits(),
                    disk_cache: disk_cache.clone(),
                    ..oxprof_api::session::SessionOptions::default()
                },
                read: oxprof_api::diff::ReadOptions {
                    profile: budget.limits(),
                    disk_cache,
                    ..oxprof_api::diff::ReadOptions::default()
                },
                max_http_sessions: max_sessions,
            };
            match http {
                // stdout is the protocol's channel: nothing else is written to it.
                None => oxprof_mcp::serve_stdio(options)?,
                Some(port) => oxprof_mcp::serve_http(options, port, |address| {
                    let _ = outln!("oxprof: MCP over streamable HTTP at http://{address}{}", oxprof_mcp::HTTP_PATH);
                    let _ = std::io::Write::flush(&mut stdout::stdout());
                })?,
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Data { tool, path, run, host, params, format, pod_sources, budget, cache } => {
            let request = oxprof_api::data::DataRequest { run, tool, host, params: params.into_iter().collect() };
            let options = oxprof_api::session::SessionOptions {
                limits: budget.limits(),
                disk_cache: cache.open(),
                pod_sources,
                ..oxprof_api::session::SessionOptions::one_shot()
            };
            let session = oxprof_api::data::local_session(&path, options)?;
            let served = session.run(request.run.as_deref())?;
            let answer = oxprof_api::answer::answer(&session, &served, &request, false)?;
            let binary = answer.is_binary();
            if format == Format::Json || binary {
                // Written as it is (a large trace while it is rendered; a binary body
                // without a line end).
                use std::io::Write;
                let (body, notes) = answer.into_body();
                let mut stdout = stdout::stdout();
                body.write_to(&mut stdout).context("cannot write to stdout")?;
                if !binary {
                    writeln!(stdout).context("cannot write to stdout")?;
                }
                print_notes(&notes);
                return Ok(ExitCode::SUCCESS);
            }
            if answer.report().is_none() && matches!(format, Format::Csv | Format::Md) {
                // Events, not tables: said without rendering a whole trace.
                anyhow::bail!(no_table_message(request.tool.name(), "to show as a table"));
            }
            let report = answer.into_report()?;
            let notes = report.notes();
            match format {
                // Written above, as it is.
                Format::Json => {}
                Format::Report => {
                    outln!("{}", serde_json::to_string_pretty(&report.to_json())?)?;
                    print_notes(&notes);
                }
                Format::Csv => {
                    let csv = oxprof_api::data::xprof_csv(&*report);
                    out!("{}", csv.with_context(|| no_table_message(request.tool.name(), "to write as CSV"))?)?;
                }
                Format::Md => {
                    let no_table = || no_table_message(request.tool.name(), "to show as Markdown");
                    let markdown = oxprof_api::markdown::report_markdown(&*report).with_context(no_table)?;
                    // oxprof's notes (e.g. why no steps were found) come before the tables.
                    for note in &notes {
                        outln!("> **Note:** {note}\n")?;
                    }
                    if markdown.is_empty() {
                        errln!("note: {}", no_table());
                    }
                    out!("{markdown}")?;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `oxprof export --to parquet`; into a bucket (`DIR` a URL), the dataset is written to a
/// temporary directory and uploaded file by file (each whole or not at all). Like a local
/// directory, the prefix must be new or empty.
fn export_parquet(
    path: &std::path::Path,
    run: Option<&str>,
    dir: &std::path::Path,
    limits: oxprof_api::LoadLimits,
) -> Result<()> {
    let Some(url) = dir.to_str().filter(|s| oxprof_objstore::is_url(s)) else {
        return sql::export(path, run, dir, limits);
    };
    let options = oxprof_objstore::RemoteOptions::default();
    let store = oxprof_objstore::RemoteStore::open(url, &options)?;
    let prefix = store.location().prefix.clone();
    if !store.list(&prefix)?.is_empty() {
        anyhow::bail!("{url}: not empty; export into a new prefix (or delete what is there)");
    }
    let staging = tempfile::tempdir().context("cannot make a staging directory for the export")?;
    let local = staging.path().join("dataset");
    sql::export(path, run, &local, limits)?;
    let (files, bytes) = oxprof_objstore::upload_dir(&local, url, &options)?;
    errln!("oxprof: uploaded {files} files ({bytes} bytes) to {url}");
    Ok(())
}

/// `oxprof capture`; into a bucket (`--logdir s3://…`), the capture is staged in a
/// temporary directory and uploaded file by file (each whole or not at all).
fn capture(args: &oxprof_capture::cli::CaptureArgs) -> Result<u8> {
    let _countdown = progress::Countdown::start(&args.addresses.join(", "), args.delay + args.duration);
    let Some(url) = args.logdir.to_str().filter(|s| oxprof_objstore::is_url(s)) else {
        return Ok(oxprof_capture::cli::run_with(args, &mut stdout::stdout()));
    };
    let options = oxprof_objstore::RemoteOptions::default();
    // Credentials are checked before tracing, not after.
    oxprof_objstore::RemoteStore::open(url, &options)?;
    let staging = tempfile::tempdir().context("cannot make a staging directory for the capture")?;
    let local = oxprof_capture::cli::CaptureArgs { logdir: staging.path().to_path_buf(), ..args.clone() };
    // The report is printed once the capture is uploaded: a closed stdout, which ends the
    // process, must not lose the capture.
    let mut report = Vec::new();
    let code = oxprof_capture::cli::run_with(&local, &mut report);
    if code == oxprof_capture::cli::EXIT_FAILED {
        out!("{}", String::from_utf8_lossy(&report))?;
        return Ok(code);
    }
    let (files, bytes) = oxprof_objstore::upload_dir(staging.path(), url, &options)?;
    errln!("oxprof: uploaded {files} files ({bytes} bytes) to {url}; view them with: oxprof serve {url}");
    out!("{}", String::from_utf8_lossy(&report))?;
    Ok(code)
}

/// oxprof's notes on stderr (stdout carries the body).
fn print_notes(notes: &[String]) {
    for note in notes {
        errln!("note: {note}");
    }
}

/// What `--format csv|md` says about a tool whose output has no table.
fn no_table_message(tool: &str, purpose: &str) -> String {
    format!("{tool}'s output has no table {purpose}; --format json prints it")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_valid() {
        Cli::command().debug_assert();
    }

    #[test]
    fn sizes_take_units() {
        assert_eq!(parse_size("1024"), Ok(1024));
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        assert_eq!(parse_size("500MB"), Ok(500_000_000));
        assert_eq!(parse_size("3 k"), Ok(3072));
        assert!(parse_size("12 parsecs").is_err());
        assert!(parse_size("99999999999G").is_err());
    }
}
