//! Any model (an XSpace or an imported PyTorch trace) out as Chrome trace JSON, the format
//! Perfetto's importer and `chrome://tracing` read, written as it goes (no document in
//! memory):
//!
//! * each plane is a process (`pid` = its position), named by `process_name` metadata
//!   with the plane's name; each line a thread (`tid` = its position in the plane), named
//!   by `thread_name` with the line's name;
//! * each event one trace event: `X` with its duration, `i` for instants and `C` for
//!   counters (as the importer marks them in their metadata, or events of `_counters_`
//!   lines); name, category (`category` stat) and every other stat as `args`;
//! * each `flow` stat a flow endpoint (`s`, `t`, `f` binding to the enclosing slice) with
//!   the flow's id, so launches stay linked to their kernels;
//! * times in microseconds with six decimals (picoseconds exact) from
//!   `baseTimeNanoseconds`, the start of the earliest line rounded down to a second, as
//!   Kineto writes them (a double holds these; epoch microseconds with decimals it would not),
//!   plus the shift an import took off epoch-based times (`oxprof_time_shift_ns`).

use oxprof_model::{Event, Stat, StatValue, XLine, XPlane, XSpace};
use std::io::{self, Write};

/// What the exporter wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExportSummary {
    /// Trace events for model events (`X`, `i`, `C`).
    pub events: u64,
    /// Flow endpoints (`s`, `t`, `f`).
    pub flows: u64,
}

/// Writes `space` as Chrome trace JSON to `out`.
pub fn export_chrome_json(space: &XSpace, out: &mut dyn Write) -> io::Result<ExportSummary> {
    let base_ns = space
        .planes
        .iter()
        .flat_map(|p| p.lines.iter().filter(|l| l.event_count() > 0).map(|l| l.timestamp_ns))
        .min()
        .unwrap_or(0)
        .div_euclid(1_000_000_000)
        * 1_000_000_000;
    let mut w = Writer { out, first: true, summary: ExportSummary::default(), base_ps: i128::from(base_ns) * 1000 };
    w.out.write_all(b"{\n  \"schemaVersion\": 1,\n  \"displayTimeUnit\": \"ns\",\n")?;
    // An import shifted epoch-based times to start near zero: the export restores them.
    let shift_ns = space
        .planes
        .iter()
        .flat_map(|p| p.stats())
        .find(|s| s.name() == crate::TIME_SHIFT_STAT)
        .and_then(|s| s.as_i64())
        .unwrap_or(0);
    let written_base_ns = i128::from(base_ns) + i128::from(shift_ns);
    write!(
        w.out,
        "  \"baseTimeNanoseconds\": {written_base_ns},\n  \"otherData\": {{\"exported_by\": \"oxprof\"}},\n"
    )?;
    w.out.write_all(b"  \"traceEvents\": [")?;
    for (pid, plane) in space.planes.iter().enumerate() {
        w.plane(pid, plane)?;
    }
    w.out.write_all(b"\n  ]\n}\n")?;
    Ok(w.summary)
}

struct Writer<'w> {
    out: &'w mut dyn Write,
    first: bool,
    summary: ExportSummary,
    /// The time origin, ps since the epoch.
    base_ps: i128,
}

/// How an event is written.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    Complete,
    Instant,
    Counter,
}

impl Writer<'_> {
    fn begin(&mut self) -> io::Result<()> {
        self.out.write_all(if self.first { b"\n    {" } else { b",\n    {" })?;
        self.first = false;
        Ok(())
    }

    fn plane(&mut self, pid: usize, plane: &XPlane) -> io::Result<()> {
        self.begin()?;
        write!(
            self.out,
            "\"name\": \"process_name\", \"ph\": \"M\", \"pid\": {pid}, \"tid\": 0, \"args\": {{\"name\": "
        )?;
        string(self.out, &plane.name)?;
        self.out.write_all(b"}}")?;
        self.begin()?;
        write!(
            self.out,
            "\"name\": \"process_sort_index\", \"ph\": \"M\", \"pid\": {pid}, \"tid\": 0, \"args\": {{\"sort_index\": {pid}}}}}"
        )?;
        if !plane.stats().is_empty() {
            // Plane stats (device properties, trace metadata) as a process label's args.
            self.begin()?;
            write!(self.out, "\"name\": \"process_labels\", \"ph\": \"M\", \"pid\": {pid}, \"tid\": 0, \"args\": {{")?;
            args(self.out, plane.stats(), true)?;
            self.out.write_all(b"}}")?;
        }
        for (tid, line) in plane.lines.iter().enumerate() {
            self.line(pid, tid, plane, line)?;
        }
        Ok(())
    }

    fn line(&mut self, pid: usize, tid: usize, plane: &XPlane, line: &XLine) -> io::Result<()> {
        self.begin()?;
        write!(
            self.out,
            "\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": {pid}, \"tid\": {tid}, \"args\": {{\"name\": "
        )?;
        string(self.out, line.display_name_or_name())?;
        self.out.write_all(b"}}")?;
        self.begin()?;
        write!(
            self.out,
            "\"name\": \"thread_sort_index\", \"ph\": \"M\", \"pid\": {pid}, \"tid\": {tid}, \"args\": {{\"sort_index\": {tid}}}}}"
        )?;
        let counters = line.name == "_counters_";
        for e in line.events(plane) {
            self.event(pid, tid, line, &e, counters)?;
        }
        Ok(())
    }

    fn event(&mut self, pid: usize, tid: usize, line: &XLine, e: &Event<'_>, counter_line: bool) -> io::Result<()> {
        let mut shape = if counter_line { Shape::Counter } else { Shape::Complete };
        let mut category = None;
        for s in e.metadata_stats() {
            match (s.name(), s.as_str()) {
                ("ph", Some("i")) => shape = Shape::Instant,
                ("ph", Some("C")) => shape = Shape::Counter,
                ("category", Some(c)) => category = Some(c),
                _ => {}
            }
        }
        let ts = i128::from(line.timestamp_ns) * 1000 + i128::from(e.offset_ps()) - self.base_ps;
        let name = if e.display_name().is_empty() { e.name() } else { e.display_name() };
        self.begin()?;
        let ph = match shape {
            Shape::Complete => "X",
            Shape::Instant => "i",
            Shape::Counter => "C",
        };
        write!(self.out, "\"ph\": \"{ph}\", ")?;
        if let Some(c) = category {
            self.out.write_all(b"\"cat\": ")?;
            string(self.out, c)?;
            self.out.write_all(b", ")?;
        }
        self.out.write_all(b"\"name\": ")?;
        string(self.out, name)?;
        write!(self.out, ", \"pid\": {pid}, \"tid\": {tid}, \"ts\": {}", Micros(ts))?;
        match shape {
            Shape::Complete => write!(self.out, ", \"dur\": {}", Micros(i128::from(e.duration_ps())))?,
            Shape::Instant => self.out.write_all(b", \"s\": \"t\"")?,
            Shape::Counter => {}
        }
        self.out.write_all(b", \"args\": {")?;
        if shape == Shape::Counter {
            // A counter's value is its `counter_value` (else its first numeric stat).
            let value = e
                .stats()
                .find(|s| s.name() == "counter_value")
                .or_else(|| e.stats().find(|s| s.as_f64().is_some()))
                .and_then(|s| s.as_f64())
                .unwrap_or(0.0);
            self.out.write_all(b"\"value\": ")?;
            number(self.out, value)?;
        } else {
            let any = args(self.out, e.metadata_stats().filter(|s| !matches!(s.name(), "ph" | "category")), true)?;
            args(self.out, e.stats().filter(|s| s.name() != "flow"), !any)?;
        }
        self.out.write_all(b"}}")?;
        self.summary.events += 1;
        for s in e.stats().filter(|s| s.name() == "flow") {
            let Some(encoded) = s.as_u64() else { continue };
            let (ph, bind) = match encoded & 3 {
                2 => ("s", ""),
                3 => ("t", ", \"bp\": \"e\""),
                1 => ("f", ", \"bp\": \"e\""),
                _ => continue,
            };
            let id = (encoded >> 2) & ((1 << 56) - 1);
            let cat = if encoded >> 58 == 9 { "ac2g" } else { "flow" };
            self.begin()?;
            write!(
                self.out,
                "\"ph\": \"{ph}\", \"id\": {id}, \"pid\": {pid}, \"tid\": {tid}, \"ts\": {}, \"cat\": \"{cat}\", \"name\": \"{cat}\"{bind}}}",
                Micros(ts)
            )?;
            self.summary.flows += 1;
        }
        Ok(())
    }
}

/// Writes stats as `"name": value` members; returns whether any was written.
fn args<'a>(out: &mut dyn Write, stats: impl Iterator<Item = Stat<'a>>, mut first: bool) -> io::Result<bool> {
    let mut any = false;
    for s in stats {
        if !first {
            out.write_all(b", ")?;
        }
        first = false;
        any = true;
        string(out, s.name())?;
        out.write_all(b": ")?;
        match s.value {
            StatValue::Unset => out.write_all(b"null")?,
            StatValue::Int64(x) => write!(out, "{x}")?,
            StatValue::Uint64(x) => write!(out, "{x}")?,
            StatValue::Double(x) => number(out, x)?,
            StatValue::Str(t) | StatValue::Ref(t) => string(out, t)?,
            StatValue::Bytes(b) => {
                let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
                string(out, &hex)?;
            }
        }
    }
    Ok(any)
}

/// A double as JSON (which has no NaN or infinities: those become strings).
fn number(out: &mut dyn Write, x: f64) -> io::Result<()> {
    if x.is_finite() { write!(out, "{x}") } else { string(out, &x.to_string()) }
}

/// A JSON string.
fn string(out: &mut dyn Write, s: &str) -> io::Result<()> {
    serde_json::to_writer(&mut *out, s).map_err(io::Error::other)
}

/// Picoseconds written as microseconds with six decimals.
struct Micros(i128);

impl std::fmt::Display for Micros {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sign = if self.0 < 0 { "-" } else { "" };
        let abs = self.0.unsigned_abs();
        write!(f, "{sign}{}.{:06}", abs / 1_000_000, abs % 1_000_000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn micros_are_exact() {
        assert_eq!(Micros(1_500).to_string(), "0.001500");
        assert_eq!(Micros(-2_000_001).to_string(), "-2.000001");
        assert_eq!(Micros(123_456_789_012_345).to_string(), "123456789.012345");
    }
}
