//! The relational schema, version [`SCHEMA_VERSION`]: every table's name, what its rows
//! are, where they come from and what each column means. The one list the engine
//! registers from, the docs pages (`docs/sql/*.md`, checked by a test) are rendered from,
//! and the server's query page shows beside the editor.
//!
//! Shaped like Perfetto's trace_processor (`slice`, `track`, `thread_track`,
//! `process_track`, `counter`, `flow`, `args`) so PerfettoSQL habits carry over: `ts` and
//! `dur` are nanoseconds, ids join tracks to slices. XSpace keeps picoseconds, so exact
//! `ts_ps`/`dur_ps` columns sit beside them. Ids are unique within one host of one run
//! (each host is exported alone, also on Spark's executors): join on `run` and `host` too.

/// The schema's version: bumped when a column changes meaning, is renamed or removed
/// (adding a table or a column keeps it).
pub const SCHEMA_VERSION: u32 = 1;

/// A column's type as the schema promises it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnType {
    /// 64-bit signed integer.
    Int,
    /// 64-bit float.
    Real,
    /// Text.
    Text,
    /// Text whose values repeat (names, hosts): stored dictionary-encoded.
    Label,
    /// 32-bit signed integer.
    SmallInt,
}

impl ColumnType {
    /// The type as SQL people read it.
    pub fn sql_name(self) -> &'static str {
        match self {
            ColumnType::Int => "BIGINT",
            ColumnType::SmallInt => "INT",
            ColumnType::Real => "DOUBLE",
            ColumnType::Text | ColumnType::Label => "VARCHAR",
        }
    }
}

/// One column of a table.
#[derive(Debug, Clone, Copy)]
pub struct ColumnDef {
    /// Its name in SQL.
    pub name: &'static str,
    /// Its type.
    pub ty: ColumnType,
    /// Whether it can be null.
    pub nullable: bool,
    /// What it means.
    pub doc: &'static str,
}

/// Where a table's rows come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Built straight from the model, per host: the columns are fixed.
    Model,
    /// A typed tool report's table (`tool`, `table`), per host; its columns are the
    /// report's, named in snake case, after `run` and `host`.
    Tool {
        /// The tool.
        tool: ToolId,
        /// The report table's name.
        table: &'static str,
    },
    /// The run catalog (no profile is decoded).
    Catalog,
}

/// One table of the schema.
#[derive(Debug, Clone, Copy)]
pub struct TableDef {
    /// Its name in SQL.
    pub name: &'static str,
    /// What a row is.
    pub doc: &'static str,
    /// Where rows come from.
    pub source: Source,
    /// Its columns (for tool tables: only `run` and `host`; the rest are the report's).
    pub columns: &'static [ColumnDef],
}

const fn col(name: &'static str, ty: ColumnType, doc: &'static str) -> ColumnDef {
    ColumnDef { name, ty, nullable: false, doc }
}

const fn opt(name: &'static str, ty: ColumnType, doc: &'static str) -> ColumnDef {
    ColumnDef { name, ty, nullable: true, doc }
}

use ColumnType::{Int, Label, Real, SmallInt, Text};
use oxprof_api::registry::ToolId;

const RUN: ColumnDef = col("run", Label, "The run (its name as `oxprof inspect` lists it).");
const HOST: ColumnDef = col("host", Label, "The host (its file name without the `.xplane.pb` suffix).");

/// Every table, in the order the docs list them.
pub const TABLES: &[TableDef] = &[
    TableDef {
        name: "slice",
        doc: "One row per event of the model (every plane, line and event of every host): \
              XSpace events, PyTorch CPU ops and GPU kernels alike.",
        source: Source::Model,
        columns: &[
            col("id", Int, "The event's id within its host: events numbered in plane, line, event order."),
            col("ts", Int, "Start, in nanoseconds since the epoch (floor of `ts_ps / 1000`)."),
            col("dur", Int, "Duration in nanoseconds (floor of `dur_ps / 1000`)."),
            col("ts_ps", Int, "Start in picoseconds, exact."),
            col("dur_ps", Int, "Duration in picoseconds, exact."),
            col("track_id", Int, "The `thread_track` (XSpace line) the event is on."),
            col("name", Label, "The event's name (its metadata's name)."),
            opt("category", Label, "The event's `hlo_category` or `category` stat, when it has one."),
            col("depth", SmallInt, "Nesting depth on its track: 0 for events no other event encloses."),
            opt("parent_id", Int, "The innermost event on the same track enclosing this one."),
            opt("arg_set_id", Int, "Key into `args` when the event has stats of its own (equal to `id`)."),
            opt("group_id", Int, "The step (XProf's `group_id` stat) the event belongs to, when recorded."),
            RUN,
            HOST,
        ],
    },
    TableDef {
        name: "track",
        doc: "Every track: one `process` track per XSpace plane (a device, or the host's \
              threads) and one `thread` track per line (a thread, a stream, an XLA op line).",
        source: Source::Model,
        columns: &[
            col("id", Int, "The track's id within its host (shared with `process_track` and `thread_track`)."),
            col("name", Text, "Plane name for process tracks, line display name for thread tracks."),
            col("type", Text, "`process` or `thread`."),
            opt("parent_id", Int, "For thread tracks: their process track."),
            RUN,
            HOST,
        ],
    },
    TableDef {
        name: "process_track",
        doc: "One row per XSpace plane (`/host:CPU`, `/device:GPU:0`, `/device:TPU:0`, …).",
        source: Source::Model,
        columns: &[
            col("id", Int, "The track's id within its host."),
            col("name", Text, "The plane's name."),
            col("plane_id", Int, "The plane's id in the file."),
            col("line_count", Int, "How many lines (thread tracks) it has."),
            col("event_count", Int, "How many events its lines hold."),
            RUN,
            HOST,
        ],
    },
    TableDef {
        name: "thread_track",
        doc: "One row per XSpace line: a host thread, a GPU stream, a TPU op or step line.",
        source: Source::Model,
        columns: &[
            col("id", Int, "The track's id within its host (`slice.track_id`)."),
            col("name", Text, "The line's display name (else its name)."),
            col("parent_id", Int, "Its plane's `process_track`."),
            col("line_id", Int, "The line's id in the file (a thread id, a stream id)."),
            col("display_id", Int, "The line's display id."),
            col("event_count", Int, "How many events it holds."),
            RUN,
            HOST,
        ],
    },
    TableDef {
        name: "counter",
        doc: "Counter samples: the events of lines named `_counters_` (XProf's counter \
              tracks), one row each, valued by their first numeric stat.",
        source: Source::Model,
        columns: &[
            col("id", Int, "The sample's event (`slice.id`)."),
            col("ts", Int, "Time in nanoseconds."),
            col("ts_ps", Int, "Time in picoseconds, exact."),
            col("track_id", Int, "The counter line's `thread_track`."),
            col("name", Label, "The counter's name (the event's name)."),
            opt("value", Real, "The sample's value: its first integer or floating-point stat."),
            RUN,
            HOST,
        ],
    },
    TableDef {
        name: "flow",
        doc: "Arrows between events: XProf's `flow` stats (start → end of one flow id) and, \
              as XProf adds them, host launches → device kernels sharing a `correlation_id`.",
        source: Source::Model,
        columns: &[
            col("slice_out", Int, "The event the arrow leaves."),
            col("slice_in", Int, "The event the arrow reaches."),
            col("flow_id", Int, "The flow's id (the `flow` stat's id, or the correlation id)."),
            col("kind", Text, "`flow` (a flow stat) or `correlation` (host launch → device)."),
            RUN,
            HOST,
        ],
    },
    TableDef {
        name: "args",
        doc: "Every stat of every event, one row per (event, stat), keyed by `slice.arg_set_id`.",
        source: Source::Model,
        columns: &[
            col("arg_set_id", Int, "The event's `slice.arg_set_id`."),
            col("key", Label, "The stat's name (e.g. `group_id`, `hlo_op`, `correlation_id`)."),
            col("value_type", Text, "`int`, `uint`, `real`, `string`, `bytes` or `ref`."),
            opt("int_value", Int, "Integer values (unsigned ones past 2⁶³ wrap, as in Perfetto)."),
            opt("real_value", Real, "Floating-point values."),
            opt("string_value", Text, "Text values, and referenced strings (`ref`)."),
            RUN,
            HOST,
        ],
    },
    TableDef {
        name: "runs",
        doc: "The runs found under PATH (no profile is decoded to list them).",
        source: Source::Catalog,
        columns: &[col("run", Text, "The run's name."), col("host_count", Int, "How many host files it has.")],
    },
    TableDef {
        name: "hosts",
        doc: "The host files of every run (no profile is decoded to list them).",
        source: Source::Catalog,
        columns: &[
            col("run", Text, "The run."),
            col("host", Text, "The host."),
            col("file", Text, "The file's name (never its directory)."),
            opt("bytes", Int, "The file's size."),
        ],
    },
    TableDef {
        name: "devices",
        doc: "The device planes of every host (`/device:GPU:N`, `/device:TPU:N`, custom planes).",
        source: Source::Model,
        columns: &[
            col("plane_id", Int, "The plane's id in the file."),
            col("name", Text, "The plane's name."),
            col("kind", Text, "`gpu`, `tpu` or `custom`."),
            col("track_id", Int, "Its `process_track`."),
            col("event_count", Int, "How many events it holds."),
            RUN,
            HOST,
        ],
    },
    TableDef {
        name: "steps",
        doc: "Per host and step: the step time and its breakdown into XProf's categories \
              (`input_pipeline_analyzer`'s step table of that host, in milliseconds).",
        source: Source::Tool { tool: ToolId::INPUT_PIPELINE_ANALYZER, table: "step_time" },
        columns: &[RUN, HOST],
    },
    TableDef {
        name: "op_stats",
        doc: "Per host: framework op statistics on host and device (`framework_op_stats`' table).",
        source: Source::Tool { tool: ToolId::FRAMEWORK_OP_STATS, table: "ops" },
        columns: &[RUN, HOST],
    },
    TableDef {
        name: "kernels",
        doc: "Per host: GPU kernels with launch shapes, occupancy and time (`kernel_stats`' table).",
        source: Source::Tool { tool: ToolId::KERNEL_STATS, table: "kernels" },
        columns: &[RUN, HOST],
    },
    TableDef {
        name: "hlo_ops",
        doc: "Per host: every HLO op with its time, FLOP rate, bandwidth and bound (`hlo_stats`' table).",
        source: Source::Tool { tool: ToolId::HLO_STATS, table: "hlo_ops" },
        columns: &[RUN, HOST],
    },
    TableDef {
        name: "input_pipeline",
        doc: "Per host: the input ops and their cost (`input_pipeline_analyzer`'s input op table).",
        source: Source::Tool { tool: ToolId::INPUT_PIPELINE_ANALYZER, table: "input_ops" },
        columns: &[RUN, HOST],
    },
    TableDef {
        name: "memory_events",
        doc: "Per host: every allocator event of `memory_profile` (allocations and \
              deallocations, in time order per allocator), with the allocator's state after it.",
        source: Source::Model,
        columns: &[
            col("allocator", Text, "The allocator (memory id)."),
            col("ts_offset_ps", Int, "Time since the profile's start, in picoseconds."),
            col("activity", Text, "`allocation` or `deallocation`."),
            col("requested_bytes", Int, "Bytes asked for."),
            col("allocation_bytes", Int, "Bytes given."),
            col("address", Int, "The address (as a signed integer)."),
            col("step_id", Int, "The step it happened in."),
            col("op", Text, "The TensorFlow op that asked."),
            col("region_type", Text, "Kind of memory (e.g. `output`, `temp`)."),
            col("data_type", Text, "Element type."),
            col("tensor_shape", Text, "Tensor shape."),
            col("heap_allocated_bytes", Int, "Heap bytes in use after it."),
            col("stack_reserved_bytes", Int, "Stack bytes reserved after it."),
            col("free_memory_bytes", Int, "Free bytes after it."),
            RUN,
            HOST,
        ],
    },
];

/// The table named `name` (case-insensitive, as SQL identifiers are).
pub fn table(name: &str) -> Option<&'static TableDef> {
    TABLES.iter().find(|t| t.name.eq_ignore_ascii_case(name))
}

/// The docs page of `table` (`docs/sql/<name>.md`); `columns` are a tool table's
/// columns as read from a profile (name, SQL type), after `run` and `host`.
pub fn markdown_page(table: &TableDef, tool_columns: &[(String, String)]) -> String {
    let mut out = format!("# `{}`\n\n{}\n\n", table.name, table.doc);
    out.push_str(&format!("Schema version {SCHEMA_VERSION}. "));
    match table.source {
        Source::Model => out.push_str("Built straight from the model of each host, only when a query names it.\n\n"),
        Source::Catalog => out.push_str("Read from the run catalog.\n\n"),
        Source::Tool { tool, table } => out.push_str(&format!(
            "The `{table}` table of the `{tool}` report of each host (`oxprof data {tool} PATH --host H`), \
             converted by `oxprof-arrow`; column names are the report's, in snake case. Same numbers as the tool.\n\n"
        )),
    }
    out.push_str("| column | type | meaning |\n| --- | --- | --- |\n");
    for c in table.columns {
        let null = if c.nullable { ", nullable" } else { "" };
        out.push_str(&format!("| `{}` | {}{null} | {} |\n", c.name, c.ty.sql_name(), c.doc));
    }
    for (name, ty) in tool_columns {
        out.push_str(&format!("| `{name}` | {ty}, nullable | from the report |\n"));
    }
    out
}
