//! The drill-down verbs below the tools' tables:
//!
//! * [`events`]: trace events by name (a regex) in a time window, listed or aggregated
//!   (count, total and self time, min/avg/max), over the trace model of XSpace and PyTorch
//!   runs alike;
//! * [`hlo`]: one HLO module's text, or an instruction's neighbourhood (operands and users
//!   to a depth);
//! * [`allocations`]: the allocations live at the memory peak, largest first (XProf's
//!   memory_profile; the PyTorch memory view's allocation events).
//!
//! Each reads through the session (`Session::load` for events; the one answer path for
//! the rest) and answers [`TableWindow`]s within the byte budget.

use crate::AgentError;
use crate::verbs::{heading, report_of, select, window_args};
use crate::window::{TableWindow, Windowed, fit};
use oxprof_api::data::DataRequest;
use oxprof_api::request::select_hosts;
use oxprof_api::session::Session;
use oxprof_report::{ColumnKind, NumberFormat, Table, ToolId};
use oxprof_wire::datatable::CellValue;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

/// Largest compiled regex `events` accepts (the `regex` crate's `size_limit`).
pub const MAX_REGEX_BYTES: usize = 1 << 20;
/// Longest pattern `events` accepts, in bytes.
pub const MAX_PATTERN_BYTES: usize = 4096;
/// Most matching events `events` keeps to list (the rest are counted).
pub const MAX_EVENT_ROWS: usize = 100_000;
/// Most distinct names `events --aggregate` keeps (the rest are counted).
pub const MAX_EVENT_NAMES: usize = 10_000;
/// Deepest neighbourhood `hlo --depth` walks.
pub const MAX_HLO_DEPTH: usize = 16;

/// `events`' arguments.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct EventsArgs {
    /// A regular expression (Rust `regex` syntax) matched anywhere in event names; `^name$`
    /// for one name.
    pub name: String,
    /// Run name (default: the newest run).
    pub run: Option<String>,
    /// Host name, or ALL_HOSTS (default: all hosts).
    pub host: Option<String>,
    /// Start of the window, ms from the host's first event (default: its start).
    pub start_ms: Option<f64>,
    /// End of the window, ms from the host's first event (default: its end).
    pub end_ms: Option<f64>,
    /// One row per name (count, total and self time, min/avg/max) instead of one per event.
    #[serde(default)]
    pub aggregate: bool,
    /// Rows to show (default 20).
    pub limit: Option<usize>,
    /// Rows to skip first (default 0).
    pub offset: Option<usize>,
    /// Byte budget of the answer (default 16384).
    pub budget: Option<usize>,
}

/// `events`' answer.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct EventsResult {
    /// The run.
    pub run: String,
    /// The host selection.
    pub host: String,
    /// The pattern.
    pub name: String,
    /// Events that matched in the window (all of them, listed or not).
    pub matched: u64,
    /// What the scan could not keep or read.
    pub notes: Vec<String>,
    /// The events in time order (or, aggregated, one row per name, most total time first).
    pub table: TableWindow,
}

impl Windowed for EventsResult {
    fn windows_mut(&mut self) -> Vec<&mut TableWindow> {
        vec![&mut self.table]
    }

    fn markdown(&self) -> String {
        let title = format!(
            "Events matching /{}/ in run {} ({}): {} matched",
            self.name.replace('\n', " "),
            self.run,
            self.host,
            self.matched
        );
        heading(&title, &self.notes) + &self.table.markdown()
    }
}

/// One matched event.
struct Matched {
    host: usize,
    line: String,
    name: String,
    start_ps: i64,
    duration_ps: i64,
    self_ps: i64,
}

/// Per name: count, total, self, min, max (ps).
#[derive(Default)]
struct Aggregate {
    count: u64,
    total_ps: i128,
    self_ps: i128,
    min_ps: i64,
    max_ps: i64,
}

/// Self time of each event of a line: its duration less its direct children's (events
/// nested inside it on the same line), by index.
fn self_times(starts: &[(i64, i64)]) -> Vec<i64> {
    let mut order: Vec<usize> = (0..starts.len()).collect();
    // Parents before their children: by start, the longer first.
    order.sort_by(|&a, &b| starts[a].0.cmp(&starts[b].0).then(starts[b].1.cmp(&starts[a].1)));
    let mut self_ps: Vec<i64> = starts.iter().map(|s| s.1.max(0)).collect();
    let mut open: Vec<usize> = Vec::new();
    for i in order {
        let (start, duration) = starts[i];
        while let Some(&top) = open.last() {
            if starts[top].0.saturating_add(starts[top].1) <= start {
                open.pop();
            } else {
                break;
            }
        }
        if let Some(&parent) = open.last() {
            self_ps[parent] = self_ps[parent].saturating_sub(duration.max(0));
        }
        open.push(i);
    }
    self_ps.iter().map(|s| (*s).max(0)).collect()
}

fn ms(ps: i128) -> f64 {
    ps as f64 / 1e9
}

/// Events by name (a regex) in a time window, listed or aggregated.
pub fn events(session: &Session, args: &EventsArgs) -> Result<EventsResult, AgentError> {
    let (limit, budget) = window_args(args.limit, args.budget)?;
    if args.name.len() > MAX_PATTERN_BYTES {
        return Err(AgentError::BadArgument {
            name: "name",
            reason: format!("the pattern is {} bytes, more than {MAX_PATTERN_BYTES}: shorten it", args.name.len()),
        });
    }
    let pattern = regex::RegexBuilder::new(&args.name)
        .size_limit(MAX_REGEX_BYTES)
        .dfa_size_limit(MAX_REGEX_BYTES)
        .build()
        .map_err(|e| AgentError::BadArgument {
            name: "name",
            reason: format!(
                "not a regex within {MAX_REGEX_BYTES} bytes compiled: {}",
                e.to_string().replace('\n', " ")
            ),
        })?;
    if let (Some(start), Some(end)) = (args.start_ms, args.end_ms)
        && end < start
    {
        return Err(AgentError::BadArgument { name: "end_ms", reason: format!("{end} is before start_ms {start}") });
    }
    let (run, host) = select(session, args.run.as_deref(), args.host.as_deref())?;
    let files = select_hosts(&run, Some(&host))?;
    let mut notes = Vec::new();
    let mut matched: u64 = 0;
    let mut rows: Vec<Matched> = Vec::new();
    let mut aggregates: HashMap<String, Aggregate> = HashMap::new();
    let mut names_dropped: u64 = 0;
    for (h, file) in files.iter().enumerate() {
        let space = {
            let _admission = session.admit();
            session.load(file, &|_| true)?
        };
        let first_ps = space.planes.iter().flat_map(|p| p.events()).map(|e| e.timestamp_ps()).min().unwrap_or_default();
        let to_ps = |ms: f64| first_ps.saturating_add((ms * 1e9) as i64);
        let (from, to) = (args.start_ms.map(to_ps), args.end_ms.map(to_ps));
        for plane in &space.planes {
            // Names decided once per metadata entry, not per event.
            let hits: Vec<bool> = plane
                .event_metadata()
                .iter()
                .map(|m| pattern.is_match(plane.str(m.name)) || pattern.is_match(plane.str(m.display_name)))
                .collect();
            if !hits.iter().any(|h| *h) {
                continue;
            }
            for line in &plane.lines {
                let events: Vec<_> = line.events(plane).collect();
                if !events.iter().any(|e| hits.get(e.metadata_id().index()).copied().unwrap_or(false)) {
                    continue;
                }
                let spans: Vec<(i64, i64)> = events.iter().map(|e| (e.timestamp_ps(), e.duration_ps())).collect();
                let self_ps = self_times(&spans);
                let line_name = format!("{} / {}", plane.name, line.display_name_or_name());
                for (event, own) in events.iter().zip(self_ps) {
                    if !hits.get(event.metadata_id().index()).copied().unwrap_or(false) {
                        continue;
                    }
                    let start = event.timestamp_ps();
                    // Events overlapping the window.
                    if from.is_some_and(|f| event.end_timestamp_ps() < f) || to.is_some_and(|t| start > t) {
                        continue;
                    }
                    matched += 1;
                    let name = event.name();
                    if args.aggregate {
                        if !aggregates.contains_key(name) && aggregates.len() >= MAX_EVENT_NAMES {
                            names_dropped += 1;
                            continue;
                        }
                        let slot = aggregates
                            .entry(name.to_string())
                            .or_insert(Aggregate { min_ps: i64::MAX, ..Aggregate::default() });
                        let duration = event.duration_ps();
                        slot.count += 1;
                        slot.total_ps += i128::from(duration);
                        slot.self_ps += i128::from(own);
                        slot.min_ps = slot.min_ps.min(duration);
                        slot.max_ps = slot.max_ps.max(duration);
                    } else if rows.len() < MAX_EVENT_ROWS {
                        rows.push(Matched {
                            host: h,
                            line: line_name.clone(),
                            name: name.to_string(),
                            start_ps: start - first_ps,
                            duration_ps: event.duration_ps(),
                            self_ps: own,
                        });
                    }
                }
            }
        }
    }
    let table = if args.aggregate {
        if names_dropped > 0 {
            notes.push(format!(
                "{names_dropped} matching events of names past the first {MAX_EVENT_NAMES} were not aggregated: narrow the pattern"
            ));
        }
        let mut names: Vec<(String, Aggregate)> = aggregates.into_iter().collect();
        names.sort_by(|a, b| b.1.total_ps.cmp(&a.1.total_ps).then(a.0.cmp(&b.0)));
        let mut table = Table::new("events")
            .title("Matching events by name, most total time first")
            .column("name", "Name", ColumnKind::Text, NumberFormat::Shortest)
            .column("count", "Count", ColumnKind::Integer, NumberFormat::Shortest)
            .column("total_ms", "Total (ms)", ColumnKind::Number, NumberFormat::Fixed(3))
            .column("self_ms", "Self (ms)", ColumnKind::Number, NumberFormat::Fixed(3))
            .column("min_ms", "Min (ms)", ColumnKind::Number, NumberFormat::Fixed(3))
            .column("avg_ms", "Avg (ms)", ColumnKind::Number, NumberFormat::Fixed(3))
            .column("max_ms", "Max (ms)", ColumnKind::Number, NumberFormat::Fixed(3));
        for (name, a) in names {
            table.push_row(vec![
                CellValue::Text(name),
                CellValue::Int(i64::try_from(a.count).unwrap_or(i64::MAX)),
                CellValue::Number(ms(a.total_ps)),
                CellValue::Number(ms(a.self_ps)),
                CellValue::Number(ms(i128::from(a.min_ps))),
                CellValue::Number(ms(a.total_ps) / a.count.max(1) as f64),
                CellValue::Number(ms(i128::from(a.max_ps))),
            ]);
        }
        table
    } else {
        if matched > rows.len() as u64 {
            notes.push(format!(
                "{} matching events past the first {MAX_EVENT_ROWS} were not kept: narrow the window or the pattern, or --aggregate",
                matched - rows.len() as u64
            ));
        }
        rows.sort_by(|a, b| a.start_ps.cmp(&b.start_ps).then(a.host.cmp(&b.host)).then(a.line.cmp(&b.line)));
        let mut table = Table::new("events")
            .title("Matching events, in time order (ms from the host's first event)")
            .column("host", "Host", ColumnKind::Text, NumberFormat::Shortest)
            .column("line", "Line", ColumnKind::Text, NumberFormat::Shortest)
            .column("name", "Name", ColumnKind::Text, NumberFormat::Shortest)
            .column("start_ms", "Start (ms)", ColumnKind::Number, NumberFormat::Fixed(3))
            .column("duration_ms", "Duration (ms)", ColumnKind::Number, NumberFormat::Fixed(3))
            .column("self_ms", "Self (ms)", ColumnKind::Number, NumberFormat::Fixed(3));
        for row in rows {
            table.push_row(vec![
                CellValue::Text(files.get(row.host).map(|f| f.host.clone()).unwrap_or_default()),
                CellValue::Text(row.line),
                CellValue::Text(row.name),
                CellValue::Number(ms(i128::from(row.start_ps))),
                CellValue::Number(ms(i128::from(row.duration_ps))),
                CellValue::Number(ms(i128::from(row.self_ps))),
            ]);
        }
        table
    };
    let mut result = EventsResult {
        run: run.name.clone(),
        host,
        name: args.name.clone(),
        matched,
        notes,
        table: TableWindow::of(&table, None, args.offset.unwrap_or(0), limit),
    };
    fit(&mut result, budget);
    Ok(result)
}

/// `hlo`'s arguments.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct HloArgs {
    /// The HLO module, as `module_list` names it (`jit_step(12)`); without it, the list of
    /// modules.
    pub module: Option<String>,
    /// An instruction of the module: its neighbourhood instead of the whole text.
    pub instruction: Option<String>,
    /// How far the neighbourhood reaches through operands and users (default 1, at most 16).
    pub depth: Option<usize>,
    /// Run name (default: the newest run).
    pub run: Option<String>,
    /// Rows (text lines, instructions or modules) to show (default 20).
    pub limit: Option<usize>,
    /// Rows to skip first (default 0).
    pub offset: Option<usize>,
    /// Byte budget of the answer (default 16384).
    pub budget: Option<usize>,
}

/// `hlo`'s answer.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct HloResult {
    /// The run.
    pub run: String,
    /// The module (`None`: the answer lists the modules).
    pub module: Option<String>,
    /// The instruction whose neighbourhood this is.
    pub instruction: Option<String>,
    /// The module's modules, its text lines, or the neighbourhood's instructions.
    pub table: TableWindow,
}

impl Windowed for HloResult {
    fn windows_mut(&mut self) -> Vec<&mut TableWindow> {
        vec![&mut self.table]
    }

    fn markdown(&self) -> String {
        let title = match (&self.module, &self.instruction) {
            (None, _) => format!("HLO modules of run {}", self.run),
            (Some(m), None) => format!("HLO module {m} of run {}", self.run),
            (Some(m), Some(i)) => format!("The neighbourhood of {i} in HLO module {m} of run {}", self.run),
        };
        heading(&title, &[]) + &self.table.markdown()
    }
}

fn graph_request(run: &str, module: &str, kind: &str) -> DataRequest {
    let mut request = DataRequest { run: Some(run.to_string()), ..DataRequest::new(ToolId::GRAPH_VIEWER) };
    request.params.insert("module_name".into(), module.to_string());
    request.params.insert("type".into(), kind.to_string());
    request
}

/// One HLO module's text, or an instruction's neighbourhood, or the list of modules.
pub fn hlo(session: &Session, args: &HloArgs) -> Result<HloResult, AgentError> {
    let (limit, budget) = window_args(args.limit, args.budget)?;
    let depth = args.depth.unwrap_or(1);
    if depth > MAX_HLO_DEPTH {
        return Err(AgentError::BadArgument {
            name: "depth",
            reason: format!("{depth} is outside 0..={MAX_HLO_DEPTH}"),
        });
    }
    let run = session.run(args.run.as_deref())?;
    let offset = args.offset.unwrap_or(0);
    let Some(module) = args.module.clone() else {
        let report = report_of(session, &run, oxprof_api::data::ALL_HOSTS, ToolId::MODULE_LIST)?;
        let mut table = Table::new("modules").title("HLO modules (name(program id))").column(
            "module",
            "Module",
            ColumnKind::Text,
            NumberFormat::Shortest,
        );
        for name in report.xprof_body().text.split(',').filter(|n| !n.is_empty()) {
            table.push_row(vec![CellValue::Text(name.to_string())]);
        }
        let mut result = HloResult {
            run: run.name.clone(),
            module: None,
            instruction: None,
            table: TableWindow::of(&table, None, offset, limit),
        };
        fit(&mut result, budget);
        return Ok(result);
    };
    let table = match &args.instruction {
        None => {
            let request = graph_request(&run.name, &module, "short_txt");
            let report = oxprof_api::answer::answer(session, &run, &request, false)?.into_report()?;
            let mut table = Table::new("text")
                .title("The module's text, one line per row")
                .column("line", "Line", ColumnKind::Integer, NumberFormat::Shortest)
                .column("text", "Text", ColumnKind::Text, NumberFormat::Shortest);
            for (i, line) in report.xprof_body().text.lines().enumerate() {
                table.push_row(vec![CellValue::Int(i as i64 + 1), CellValue::Text(line.to_string())]);
            }
            table
        }
        Some(instruction) => neighbourhood(session, &run, &module, instruction, depth)?,
    };
    let mut result = HloResult {
        run: run.name.clone(),
        module: Some(module),
        instruction: args.instruction.clone(),
        table: TableWindow::of(&table, None, offset, limit),
    };
    fit(&mut result, budget);
    Ok(result)
}

/// The instructions within `depth` steps of `name` through operands and users, in the
/// computation that holds it: the instruction first, then operands, then users, nearest
/// first.
fn neighbourhood(
    session: &Session,
    run: &oxprof_api::catalog::ServedRun,
    module: &str,
    name: &str,
    depth: usize,
) -> Result<Table, AgentError> {
    let request = graph_request(&run.name, module, "pb");
    let bytes = match oxprof_api::answer::answer(session, run, &request, false)? {
        oxprof_api::answer::Answer::Body { body: oxprof_report::Body::Bytes { bytes, .. }, .. } => bytes,
        oxprof_api::answer::Answer::Body { body: oxprof_report::Body::Text { text, .. }, .. } => text.into_bytes(),
        other => other.into_report()?.xprof_body().text.into_bytes(),
    };
    let bad = |reason: String| AgentError::BadArgument { name: "module", reason };
    let decoded = oxprof_hlo::decode_hlo_proto(&bytes).map_err(|e| bad(format!("{module} does not decode: {e}")))?;
    let graph = oxprof_hlo::HloGraph::build(decoded).ok_or_else(|| bad(format!("{module} is malformed")))?;
    let start = graph.nodes.iter().position(|n| n.hlo.name == name).ok_or_else(|| AgentError::BadArgument {
        name: "instruction",
        reason: format!("no instruction {name:?} in {module}: `oxprof hlo PATH --module {module}` lists its text"),
    })?;
    let mut table = Table::new("neighbourhood")
        .title("The instruction, its operands and its users (distance 0 is the instruction)")
        .column("relation", "Relation", ColumnKind::Text, NumberFormat::Shortest)
        .column("distance", "Distance", ColumnKind::Integer, NumberFormat::Shortest)
        .column("name", "Name", ColumnKind::Text, NumberFormat::Shortest)
        .column("opcode", "Opcode", ColumnKind::Text, NumberFormat::Shortest)
        .column("text", "Text", ColumnKind::Text, NumberFormat::Shortest);
    let mut push = |relation: &str, distance: usize, node: usize| {
        let Some(n) = graph.node(node) else { return };
        let mut text = String::new();
        oxprof_hlo::print_instruction(&graph, n, oxprof_hlo::PrintOptions::XPROF_EXPRESSION, &mut text);
        table.push_row(vec![
            CellValue::Text(relation.to_string()),
            CellValue::Int(distance as i64),
            CellValue::Text(n.hlo.name.clone()),
            CellValue::Text(n.hlo.opcode.clone()),
            CellValue::Text(text),
        ]);
    };
    push("instruction", 0, start);
    for (relation, users) in [("operand", false), ("user", true)] {
        let mut seen: HashSet<usize> = HashSet::from([start]);
        let mut queue: VecDeque<(usize, usize)> = VecDeque::from([(start, 0)]);
        while let Some((node, distance)) = queue.pop_front() {
            if distance >= depth {
                continue;
            }
            let Some(n) = graph.node(node) else { continue };
            let next = if users { &n.users } else { &n.operands };
            for &m in next {
                if seen.insert(m) {
                    push(relation, distance + 1, m);
                    queue.push_back((m, distance + 1));
                }
            }
        }
    }
    Ok(table)
}

/// `allocations`' arguments.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct AllocationsArgs {
    /// Run name (default: the newest run).
    pub run: Option<String>,
    /// Host name, or ALL_HOSTS (default: all hosts).
    pub host: Option<String>,
    /// Allocations to show of each allocator or device (default 20).
    pub limit: Option<usize>,
    /// Allocations to skip first (default 0).
    pub offset: Option<usize>,
    /// Byte budget of the answer (default 16384).
    pub budget: Option<usize>,
}

/// `allocations`' answer.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct AllocationsResult {
    /// The run.
    pub run: String,
    /// The host selection.
    pub host: String,
    /// The tool the allocations come from (memory_profile; pytorch_memory for a PyTorch
    /// trace).
    pub tool: String,
    /// oxprof's notes.
    pub notes: Vec<String>,
    /// One table per allocator or device: its peak in the facts, the allocations live at
    /// the peak, largest first.
    pub tables: Vec<TableWindow>,
}

impl Windowed for AllocationsResult {
    fn windows_mut(&mut self) -> Vec<&mut TableWindow> {
        self.tables.iter_mut().collect()
    }

    fn markdown(&self) -> String {
        let mut out = heading(
            &format!("Allocations live at the memory peak, run {} ({}), from {}", self.run, self.host, self.tool),
            &self.notes,
        );
        for table in &self.tables {
            out.push_str(&table.markdown());
            out.push('\n');
        }
        // The whole answer ends with what it left out, as every verb's does.
        let left_out: Vec<String> =
            self.tables.iter().filter_map(|t| Some(format!("{}: {}", t.table, t.left_out.as_ref()?))).collect();
        match (self.tables.len(), left_out.is_empty()) {
            (0, _) => out.push_str("No tables: no allocator or device memory in this profile.\n"),
            (n, true) => out.push_str(&format!("All rows of the {n} tables shown.\n")),
            (_, false) => out.push_str(&format!("Left out: {}.\n", left_out.join("; "))),
        }
        out
    }
}

/// The allocations live at each allocator's (device's) memory peak, largest first.
pub fn allocations(session: &Session, args: &AllocationsArgs) -> Result<AllocationsResult, AgentError> {
    let (limit, budget) = window_args(args.limit, args.budget)?;
    let (run, host) = select(session, args.run.as_deref(), args.host.as_deref())?;
    let offset = args.offset.unwrap_or(0);
    let pytorch = crate::verbs::is_pytorch(session, &run)?;
    let tool = if pytorch { ToolId::PYTORCH_MEMORY } else { ToolId::MEMORY_PROFILE };
    let report = report_of(session, &run, &host, tool)?;
    let tables: Vec<Table> = if pytorch {
        pytorch_live_at_peak(&report.tables())
    } else {
        // memory_profile's allocator tables are already the allocations live at the peak.
        report.tables().into_iter().filter(|t| t.name.starts_with("allocator_")).collect()
    };
    let mut result = AllocationsResult {
        run: run.name.clone(),
        host,
        tool: tool.name().to_string(),
        notes: report.notes(),
        tables: tables.iter().map(|t| TableWindow::of(t, None, offset, limit)).collect(),
    };
    fit(&mut result, budget);
    Ok(result)
}

fn number(cell: Option<&CellValue>) -> Option<f64> {
    match cell? {
        CellValue::Number(v) if v.is_finite() => Some(*v),
        CellValue::Int(n) => Some(*n as f64),
        _ => None,
    }
}

fn text(cell: Option<&CellValue>) -> String {
    match cell {
        Some(CellValue::Text(t)) => t.clone(),
        _ => String::new(),
    }
}

/// From the PyTorch memory view's tables: per device, the time allocated memory peaks
/// (`curve`) and the allocations (`events`) live then, largest first.
fn pytorch_live_at_peak(tables: &[Table]) -> Vec<Table> {
    const MIB: f64 = 1024.0 * 1024.0;
    let find = |name: &str| tables.iter().find(|t| t.name == name);
    let (Some(curve), Some(events)) = (find("curve"), find("events")) else { return Vec::new() };
    let col = |t: &Table, name: &str| t.columns.iter().position(|c| c.name == name);
    let (Some(c_dev), Some(c_time), Some(c_alloc)) =
        (col(curve, "device"), col(curve, "time_us"), col(curve, "allocated_bytes"))
    else {
        return Vec::new();
    };
    // Device → (time, bytes) of its peak (the first time it is reached).
    let mut peaks: BTreeMap<String, (f64, f64)> = BTreeMap::new();
    for row in &curve.rows {
        let (device, Some(time), Some(bytes)) =
            (text(row.get(c_dev)), number(row.get(c_time)), number(row.get(c_alloc)))
        else {
            continue;
        };
        let peak = peaks.entry(device).or_insert((time, bytes));
        if bytes > peak.1 {
            *peak = (time, bytes);
        }
    }
    let (Some(e_dev), Some(e_op), Some(e_size), Some(e_alloc), Some(e_release)) = (
        col(events, "device"),
        col(events, "operator"),
        col(events, "size_bytes"),
        col(events, "allocation_us"),
        col(events, "release_us"),
    ) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (device, (time, bytes)) in peaks {
        let mut live: Vec<(String, f64, Option<f64>, Option<f64>)> = events
            .rows
            .iter()
            .filter(|row| text(row.get(e_dev)) == device)
            .filter_map(|row| {
                let size = number(row.get(e_size))?;
                let allocated = number(row.get(e_alloc));
                let released = number(row.get(e_release));
                // Live at the peak: allocated by then (or before the trace), not yet released.
                let live = allocated.is_none_or(|a| a <= time) && released.is_none_or(|r| r > time);
                live.then(|| (text(row.get(e_op)), size, allocated, released))
            })
            .collect();
        live.sort_by(|a, b| b.1.total_cmp(&a.1));
        let mut table = Table::new(&format!("device_{device}"))
            .title(&device)
            .fact("peak_time_ms", format!("{:.3}", time / 1000.0))
            .fact("peak_allocated_mib", format!("{:.2}", bytes / MIB))
            .rows_described("allocations live at the peak, largest first", None)
            .column("operator", "Operator", ColumnKind::Text, NumberFormat::Shortest)
            .column("size_mib", "Size (MiB)", ColumnKind::Number, NumberFormat::Fixed(3))
            .column("allocation_ms", "Allocated at (ms)", ColumnKind::Number, NumberFormat::Fixed(3))
            .column("release_ms", "Released at (ms)", ColumnKind::Number, NumberFormat::Fixed(3));
        let opt_ms = |v: Option<f64>| v.map_or(CellValue::Null, |us| CellValue::Number(us / 1000.0));
        for (op, size, allocated, released) in live {
            table.push_row(vec![
                CellValue::Text(op),
                CellValue::Number(size / MIB),
                opt_ms(allocated),
                opt_ms(released),
            ]);
        }
        out.push(table);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn self_time_is_the_duration_less_direct_children() {
        // 0         10        20        30
        // [a: 0..30                      ]
        //   [b: 2..12  ]  [d: 15..25 ]
        //     [c: 4..8]
        //                                  [e: 31..33]
        let spans = [(0, 30), (2, 10), (4, 4), (15, 10), (31, 2)];
        assert_eq!(self_times(&spans), vec![10, 6, 4, 10, 2]);
    }

    #[test]
    fn live_at_peak_keeps_what_is_allocated_and_not_released_then() {
        let mut curve = Table::new("curve")
            .column("device", "Device", ColumnKind::Text, NumberFormat::Shortest)
            .column("time_us", "Time", ColumnKind::Number, NumberFormat::Shortest)
            .column("allocated_bytes", "Allocated", ColumnKind::Number, NumberFormat::Shortest);
        for (t, b) in [(0.0, 0.0), (10.0, 3.0 * 1048576.0), (20.0, 1048576.0)] {
            curve.push_row(vec![CellValue::Text("GPU0".into()), CellValue::Number(t), CellValue::Number(b)]);
        }
        let mut events = Table::new("events")
            .column("device", "Device", ColumnKind::Text, NumberFormat::Shortest)
            .column("operator", "Operator", ColumnKind::Text, NumberFormat::Shortest)
            .column("size_bytes", "Size", ColumnKind::Number, NumberFormat::Shortest)
            .column("allocation_us", "At", ColumnKind::Number, NumberFormat::Shortest)
            .column("release_us", "Released", ColumnKind::Number, NumberFormat::Shortest);
        let at = |v: Option<f64>| v.map_or(CellValue::Null, CellValue::Number);
        for (op, size, a, r) in [
            ("small", 1.0, Some(5.0), None),
            ("large", 2.0, Some(10.0), Some(15.0)),
            ("gone", 4.0, Some(1.0), Some(9.0)),
            ("later", 8.0, Some(11.0), None),
        ] {
            events.push_row(vec![
                CellValue::Text("GPU0".into()),
                CellValue::Text(op.into()),
                CellValue::Number(size * 1048576.0),
                at(a),
                at(r),
            ]);
        }
        let tables = pytorch_live_at_peak(&[curve, events]);
        assert_eq!(tables.len(), 1);
        let ops: Vec<String> = tables[0].rows.iter().map(|r| text(r.first())).collect();
        assert_eq!(ops, ["large", "small"]);
    }
}
