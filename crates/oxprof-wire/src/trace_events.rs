//! XProf's trace-event JSON, byte for byte: the streaming trace viewer's body
//! (`trace_viewer@`: `trace_events_to_json.h`'s `JsonEventWriter` and `TraceEventsToJson`)
//! and the legacy trace viewer's (`trace_viewer`: `xplane_to_trace_events.cc` through
//! Python's `TraceEventsJsonStream`, `json.dumps` spacing).
//!
//! Callers (`oxprof-trace`) choose the events and their order and hand them over typed
//! ([`Event`], [`Arg`]); the writers here write the bytes into a sink in pieces of about a
//! megabyte ([`CHUNK_BYTES`]), so a large body is never held whole in memory. Strings are
//! escaped as XProf's `JsonEscape` does ([`write_string`]); times are picoseconds written
//! as XProf's microsecond doubles ([`write_micros`]).

use crate::cxx_printf::six_digits;
use crate::json_string::{is_control, write_escaped};
use std::fmt::Write as _;
use std::io;

/// Text is handed to the sink in pieces of about this size.
pub const CHUNK_BYTES: usize = 1 << 20;

/// One argument of an event (`TraceEventArguments.Argument`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Arg<'a> {
    /// A signed integer.
    Int(i64),
    /// An unsigned integer.
    Uint(u64),
    /// A double.
    Double(f64),
    /// Text.
    Str(&'a str),
}

/// Where an event stands in its flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowEntry {
    /// The flow starts here.
    Start,
    /// The flow passes through.
    Mid,
    /// The flow ends here.
    End,
}

/// An event's flow (`bind_id`, or an async pair when `is_async`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flow<'a> {
    /// Flow id.
    pub id: u64,
    /// Category (XProf's context type name; may be empty).
    pub category: &'a str,
    /// Where the event stands in the flow.
    pub entry: FlowEntry,
    /// Written as an async `b`/`e` pair instead of a complete event with `bind_id`.
    pub is_async: bool,
}

/// One complete event of `trace_viewer@`.
#[derive(Debug, Clone, Copy)]
pub struct Event<'a> {
    /// Process id (device, offset per host).
    pub pid: u32,
    /// Thread id (resource); not written for async flow events.
    pub tid: u32,
    /// Name.
    pub name: &'a str,
    /// Start (ps).
    pub ts_ps: u64,
    /// Duration (ps; written as at least 1).
    pub dur_ps: u64,
    /// Its flow, if any.
    pub flow: Option<Flow<'a>>,
    /// Its step group, written first among its arguments.
    pub group_id: Option<i64>,
    /// Its arguments (event details), or `None`: only `uid`, the serial (windows, search).
    pub args: Option<&'a [(&'a str, Arg<'a>)]>,
    /// Id of its stack frame in `stackFrames`.
    pub stack_frame: Option<u64>,
    /// XProf's serial (`uid`, `z`); 0 is not written as `z`.
    pub serial: u64,
}

/// The head of a `trace_viewer@` body.
#[derive(Debug, Clone, Copy)]
pub struct Header<'a> {
    /// The `mpmd_pipeline_view` option.
    pub mpmd_pipeline_view: bool,
    /// The `full_dma` option, listed only for TPU traces (`None` otherwise).
    pub full_dma: Option<bool>,
    /// Number of events the body carries.
    pub returned_events: usize,
    /// The whole trace's span (ps).
    pub full_span_ps: (u64, u64),
    /// `stackFrames`: (id, name) in id order.
    pub stack_frames: &'a [(u64, &'a str)],
}

/// Appends `raw` as a JSON string, escaped as XProf's `JsonEscape` does: the short escapes,
/// other control characters, `<`, `>`, `&`, U+2028 and U+2029 as `\uXXXX`.
pub fn write_string(out: &mut String, raw: &str) {
    write_escaped(out, raw, |c| is_control(c) || matches!(c, '<' | '>' | '&' | '\u{2028}' | '\u{2029}'));
}

/// Picoseconds as XProf's microsecond doubles (`ps / 1e6`; shortest round-trip digits).
///
/// Below 10^15 ps the exact quotient has at most 15 significant digits; every such decimal
/// round-trips through a double and no shorter decimal maps to the same double (distinct
/// ≤15-digit decimals give distinct doubles), so the shortest digits are the exact
/// quotient's: integer part, then the six fraction digits without trailing zeros. That is
/// written with integer arithmetic; larger values take the float formatter.
pub fn write_micros(out: &mut String, ps: u64) {
    const EXACT_LIMIT: u64 = 1_000_000_000_000_000;
    if ps < EXACT_LIMIT {
        let (whole, frac) = (ps / 1_000_000, ps % 1_000_000);
        let _ = write!(out, "{whole}");
        if frac != 0 {
            let mut digits = *b".000000";
            let mut rest = frac;
            for slot in digits[1..].iter_mut().rev() {
                *slot = b'0' + (rest % 10) as u8;
                rest /= 10;
            }
            let len = digits.iter().rposition(|&d| d != b'0').map_or(1, |i| i + 1);
            out.push_str(std::str::from_utf8(&digits[..len]).unwrap_or_default());
        }
        return;
    }
    let v = ps as f64 / 1e6;
    let _ = write!(out, "{v}");
}

/// `IsPerfCounterBasedStats`: doubles of these are written with two decimals.
fn is_perf_counter_stat(name: &str) -> bool {
    name.ends_with("(util %)") || name.ends_with(" (MB/sec)")
}

/// Integers beyond what a double holds exactly are written as strings.
const IEEE_LIMIT: u64 = 1 << 53;

/// An event argument's value.
fn write_arg(out: &mut String, name: &str, value: Arg<'_>) {
    match value {
        Arg::Int(v) if v.unsigned_abs() > IEEE_LIMIT => {
            let _ = write!(out, "\"{v}\"");
        }
        Arg::Int(v) => {
            let _ = write!(out, "{v}");
        }
        Arg::Uint(v) if v > IEEE_LIMIT => {
            let _ = write!(out, "\"{v}\"");
        }
        Arg::Uint(v) => {
            let _ = write!(out, "{v}");
        }
        Arg::Double(v) if v.is_finite() && is_perf_counter_stat(name) => {
            let _ = write!(out, "{v:.2}");
        }
        Arg::Double(v) if v.is_finite() => {
            let _ = write!(out, "{v}");
        }
        Arg::Double(v) if v.is_nan() => out.push_str("\"NaN\""),
        Arg::Double(v) if v > 0.0 => out.push_str("\"Infinity\""),
        Arg::Double(_) => out.push_str("\"-Infinity\""),
        Arg::Str(s) => write_string(out, s),
    }
}

/// A counter sample's value (written without the integer and non-finite rules of event
/// arguments).
fn write_counter_value(out: &mut String, name: &str, value: Arg<'_>) {
    match value {
        Arg::Int(v) => {
            let _ = write!(out, "{v}");
        }
        Arg::Uint(v) => {
            let _ = write!(out, "{v}");
        }
        Arg::Double(v) if is_perf_counter_stat(name) => {
            let _ = write!(out, "{v:.2}");
        }
        Arg::Double(v) => {
            let _ = write!(out, "{v}");
        }
        Arg::Str(s) => write_string(out, s),
    }
}

/// Text built in a buffer and handed to a sink in pieces ([`CHUNK_BYTES`]); after a failure
/// (the client went away) the text is dropped and the error kept for the end.
struct Chunked<'s> {
    out: String,
    sink: &'s mut dyn io::Write,
    error: Option<io::Error>,
}

impl<'s> Chunked<'s> {
    fn new(sink: &'s mut dyn io::Write, capacity: usize) -> Chunked<'s> {
        Chunked { out: String::with_capacity(capacity.min(2 * CHUNK_BYTES)), sink, error: None }
    }

    /// Hands the buffer to the sink once it is large (everything when `all`).
    fn spill(&mut self, all: bool) {
        if self.out.len() < CHUNK_BYTES && !all {
            return;
        }
        if self.error.is_none()
            && let Err(e) = self.sink.write_all(self.out.as_bytes())
        {
            self.error = Some(e);
        }
        self.out.clear();
    }

    fn finish(mut self) -> io::Result<()> {
        self.spill(true);
        match self.error {
            Some(e) => Err(e),
            None => self.sink.flush(),
        }
    }
}

/// Writes a `trace_viewer@` body: [`TraceViewerWriter::new`] (the head), the processes and
/// threads, the events and counters in XProf's order, then [`TraceViewerWriter::finish`].
pub struct TraceViewerWriter<'s> {
    text: Chunked<'s>,
    /// No item written yet into `traceEvents`.
    first: bool,
    /// Counter samples written.
    counter_events: usize,
    /// Within a counter: no sample written yet.
    first_sample: bool,
}

impl<'s> TraceViewerWriter<'s> {
    /// Writes the head (options, span, stack frames) up to the opening of `traceEvents`.
    /// `capacity` is a hint of the body's size.
    pub fn new(sink: &'s mut dyn io::Write, header: &Header<'_>, capacity: usize) -> TraceViewerWriter<'s> {
        let mut text = Chunked::new(sink, capacity);
        let out = &mut text.out;
        out.push_str("{\"displayTimeUnit\":\"ns\",\"metadata\":{\"highres-ticks\":true}, \"codeLink\":\"\",");
        out.push_str("\"useNewBackend\": false,");
        if header.mpmd_pipeline_view {
            out.push_str("\"mpmdPipelineView\": true,");
        }
        let _ = write!(out, "\"details\":[{{\"name\":\"mpmd_pipeline_view\",\"value\":{}}}", header.mpmd_pipeline_view);
        if let Some(full_dma) = header.full_dma {
            let _ = write!(out, ",{{\"name\":\"full_dma\",\"value\":{full_dma}}}");
        }
        out.push_str("],");
        let _ = write!(out, "\"returnedEventsSize\":{},\"filteredByVisibility\":true,", header.returned_events);
        let (min_ps, max_ps) = header.full_span_ps;
        let _ =
            write!(out, "\"fullTimespan\":[{},{}],", six_digits(min_ps as f64 / 1e9), six_digits(max_ps as f64 / 1e9));
        out.push_str("\"stackFrames\":{");
        for (i, (id, name)) in header.stack_frames.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let _ = write!(out, "\"{id}\":{{\"name\":");
            write_string(out, name);
            out.push('}');
        }
        out.push_str("},");
        out.push_str("\"traceEvents\":[");
        TraceViewerWriter { text, first: true, counter_events: 0, first_sample: true }
    }

    fn separator(&mut self) {
        if !self.first {
            self.text.out.push(',');
        }
        self.first = false;
    }

    /// A process (`process_name` with its thread count, `process_sort_index`).
    pub fn process(&mut self, pid: u32, name: &str, thread_count: usize) {
        self.separator();
        let out = &mut self.text.out;
        out.push_str("{\"args\":{\"name\":");
        write_string(out, name);
        let _ =
            write!(out, "}},\"name\":\"process_name\",\"ph\":\"M\",\"pid\":{pid},\"thread_count\":{thread_count}}}");
        let _ = write!(
            out,
            ",{{\"args\":{{\"sort_index\":{pid}}},\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":{pid}}}"
        );
    }

    /// A thread of the last process (`thread_name`, `thread_sort_index`).
    pub fn thread(&mut self, pid: u32, tid: u32, name: &str) {
        let out = &mut self.text.out;
        out.push_str(",{\"args\":{\"name\":");
        write_string(out, name);
        let _ = write!(out, "}},\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":{pid},\"tid\":{tid}}}");
        let _ = write!(
            out,
            ",{{\"args\":{{\"sort_index\":{tid}}},\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":{pid},\"tid\":{tid}}}"
        );
    }

    /// One event (and, for an async flow passing through, its closing `e`).
    pub fn event(&mut self, e: &Event<'_>) {
        self.separator();
        let out = &mut self.text.out;
        let async_flow = e.flow.filter(|f| f.is_async);
        let _ = write!(out, "{{\"pid\":{}", e.pid);
        if async_flow.is_none() {
            let _ = write!(out, ",\"tid\":{}", e.tid);
        }
        out.push_str(",\"name\":");
        write_string(out, e.name);
        out.push_str(",\"ts\":");
        write_micros(out, e.ts_ps);
        if let Some(f) = async_flow {
            let _ = write!(out, ",\"id\":{},\"cat\":\"{}\"", f.id, f.category);
            out.push_str(if f.entry == FlowEntry::End { ",\"ph\":\"e\"" } else { ",\"ph\":\"b\"" });
        } else {
            out.push_str(",\"dur\":");
            write_micros(out, e.dur_ps.max(1));
            if let Some(f) = e.flow {
                let _ = write!(out, ",\"bind_id\":{}", f.id);
                if !f.category.is_empty() {
                    let _ = write!(out, ",\"cat\":\"{}\"", f.category);
                }
                out.push_str(match f.entry {
                    FlowEntry::Start => ",\"flow_out\":true",
                    FlowEntry::Mid => ",\"flow_in\":true,\"flow_out\":true",
                    FlowEntry::End => ",\"flow_in\":true",
                });
            }
            out.push_str(",\"ph\":\"X\"");
        }
        let mut sep = "";
        out.push_str(",\"args\":{");
        if let Some(g) = e.group_id {
            let _ = write!(out, "\"group_id\":{g}");
            sep = ",";
        }
        match e.args {
            Some(args) => {
                for &(name, value) in args {
                    out.push_str(sep);
                    sep = ",";
                    write_string(out, name);
                    out.push(':');
                    write_arg(out, name, value);
                }
            }
            None => {
                let _ = write!(out, "{sep}\"uid\":{}", e.serial);
            }
        }
        out.push('}');
        if let Some(sf) = e.stack_frame {
            let _ = write!(out, ",\"sf\":{sf}");
        }
        if e.serial > 0 {
            let _ = write!(out, ",\"z\":{}", e.serial);
        }
        out.push('}');
        if let Some(f) = async_flow
            && f.entry == FlowEntry::Mid
        {
            let _ = write!(out, ",{{\"pid\":{},\"name\":", e.pid);
            write_string(out, e.name);
            out.push_str(",\"ts\":");
            write_micros(out, e.ts_ps.wrapping_add(e.dur_ps));
            let _ = write!(out, ",\"id\":{},\"cat\":\"{}\",\"ph\":\"e\"", f.id, f.category);
            if e.serial > 0 {
                let _ = write!(out, ",\"z\":{}", e.serial);
            }
            out.push('}');
        }
        self.text.spill(false);
    }

    /// Opens a counter series (`AddCounterEvent`): its samples follow
    /// ([`TraceViewerWriter::counter_sample`]), then [`TraceViewerWriter::end_counter`].
    /// `name` and `event_stats` are written as they are, as XProf does.
    pub fn begin_counter(&mut self, pid: u32, name: &str, event_stats: Option<&str>) {
        self.separator();
        let out = &mut self.text.out;
        let _ = write!(out, "{{\"pid\":{pid},\"name\":\"{name}\",\"ph\":\"C\"");
        if let Some(arg) = event_stats {
            let _ = write!(out, ",\"event_stats\":\"{arg}\"");
        }
        out.push_str(",\"entries\":[");
        self.first_sample = true;
    }

    /// One sample of the open counter: its time and values.
    pub fn counter_sample(&mut self, ts_ps: u64, values: &[(&str, Arg<'_>)]) {
        let out = &mut self.text.out;
        if !self.first_sample {
            out.push(',');
        }
        self.first_sample = false;
        out.push('[');
        write_micros(out, ts_ps);
        for &(name, value) in values {
            out.push(',');
            write_counter_value(out, name, value);
        }
        out.push(']');
    }

    /// Closes the open counter, counting `events` toward `totalCounterEvents`.
    pub fn end_counter(&mut self, events: usize) {
        self.text.out.push_str("]}");
        self.counter_events += events;
        self.text.spill(false);
    }

    /// Writes the tail and hands the rest to the sink.
    pub fn finish(mut self) -> io::Result<()> {
        let _ =
            write!(self.text.out, "], \"showCounterMessage\": \"\" ,\"totalCounterEvents\":{}}}", self.counter_events);
        self.text.finish()
    }
}

/// One event of the legacy `trace_viewer` body (arguments as strings, sorted by name).
#[derive(Debug, Clone, Copy)]
pub struct LegacyEvent<'a> {
    /// Process id (the device).
    pub pid: u32,
    /// Thread id (the resource).
    pub tid: u32,
    /// Name.
    pub name: &'a str,
    /// Start (ps).
    pub ts_ps: u64,
    /// Duration (ps); 0 is an instant event.
    pub dur_ps: u64,
    /// Arguments in the order written (the caller sorts them by name).
    pub args: &'a [(&'a str, Arg<'a>)],
}

/// Writes a legacy `trace_viewer` body (Python's `json.dumps(sort_keys=True)` spacing, one
/// event per line): [`LegacyTraceWriter::new`], processes and threads, events, then
/// [`LegacyTraceWriter::finish`].
pub struct LegacyTraceWriter<'s> {
    text: Chunked<'s>,
}

impl<'s> LegacyTraceWriter<'s> {
    /// Writes the head up to the opening of `traceEvents`.
    pub fn new(sink: &'s mut dyn io::Write) -> LegacyTraceWriter<'s> {
        let mut text = Chunked::new(sink, CHUNK_BYTES);
        text.out.push_str("{\"displayTimeUnit\":\"ns\",\"metadata\":{\"highres-ticks\":true},\n\"traceEvents\":[\n");
        LegacyTraceWriter { text }
    }

    /// A process (`process_name`, `process_sort_index`).
    pub fn process(&mut self, pid: u32, name: &str) {
        let out = &mut self.text.out;
        out.push_str("{\"args\": {\"name\": ");
        write_string(out, name);
        let _ = writeln!(out, "}}, \"name\": \"process_name\", \"ph\": \"M\", \"pid\": {pid}}},");
        let _ = writeln!(
            out,
            "{{\"args\": {{\"sort_index\": {pid}}}, \"name\": \"process_sort_index\", \"ph\": \"M\", \"pid\": {pid}}},"
        );
    }

    /// A thread (`thread_name`, `thread_sort_index`).
    pub fn thread(&mut self, pid: u32, tid: u32, name: &str) {
        let out = &mut self.text.out;
        out.push_str("{\"args\": {\"name\": ");
        write_string(out, name);
        let _ = writeln!(out, "}}, \"name\": \"thread_name\", \"ph\": \"M\", \"pid\": {pid}, \"tid\": {tid}}},");
        let _ = writeln!(
            out,
            "{{\"args\": {{\"sort_index\": {tid}}}, \"name\": \"thread_sort_index\", \"ph\": \"M\", \"pid\": {pid}, \"tid\": {tid}}},"
        );
    }

    /// One event, its arguments written as strings (doubles as `absl::StrCat` prints them).
    pub fn event(&mut self, e: &LegacyEvent<'_>) {
        let out = &mut self.text.out;
        out.push('{');
        if !e.args.is_empty() {
            out.push_str("\"args\": {");
            for (i, &(k, value)) in e.args.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_string(out, k);
                out.push_str(": ");
                match value {
                    Arg::Int(x) => {
                        let _ = write!(out, "\"{x}\"");
                    }
                    Arg::Uint(x) => {
                        let _ = write!(out, "\"{x}\"");
                    }
                    Arg::Double(x) => write_string(out, &six_digits(x)),
                    Arg::Str(s) => write_string(out, s),
                }
            }
            out.push_str("}, ");
        }
        if e.dur_ps > 0 {
            out.push_str("\"dur\": ");
            write_micros(out, e.dur_ps);
            out.push_str(", ");
        }
        out.push_str("\"name\": ");
        write_string(out, e.name);
        out.push_str(if e.dur_ps > 0 { ", \"ph\": \"X\"" } else { ", \"ph\": \"i\"" });
        let _ = write!(out, ", \"pid\": {}", e.pid);
        if e.dur_ps == 0 {
            out.push_str(", \"s\": \"t\"");
        }
        let _ = write!(out, ", \"tid\": {}, \"ts\": ", e.tid);
        write_micros(out, e.ts_ps);
        out.push_str("},\n");
        self.text.spill(false);
    }

    /// Writes the tail and hands the rest to the sink.
    pub fn finish(mut self) -> io::Result<()> {
        self.text.out.push_str("{}]}\n");
        self.text.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The integer fast path writes the same digits as the float formatter.
    #[test]
    fn micros_match_float_display() {
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut samples = vec![0, 1, 10, 999_999, 1_000_000, 1_000_001, 123_456_789, 999_999_999_999_999];
        for _ in 0..200_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            samples.push((seed % 1_000_000_000_000_000) >> (seed % 40));
        }
        for ps in samples {
            let mut fast = String::new();
            write_micros(&mut fast, ps);
            assert_eq!(fast, format!("{}", ps as f64 / 1e6), "ps = {ps}");
        }
    }

    #[test]
    fn strings_escape_as_json_escape() {
        let mut out = String::new();
        write_string(&mut out, "a<b>&\"\\\n\u{1}\u{2028}\u{2029}é\u{7f}");
        assert_eq!(out, "\"a\\u003cb\\u003e\\u0026\\\"\\\\\\n\\u0001\\u2028\\u2029é\u{7f}\"");
    }

    #[test]
    fn a_body_of_one_process_thread_event_and_counter() {
        let mut body = Vec::new();
        let frames = [(1, "f")];
        let header = Header {
            mpmd_pipeline_view: false,
            full_dma: None,
            returned_events: 2,
            full_span_ps: (0, 2_000_000_000),
            stack_frames: &frames,
        };
        let mut w = TraceViewerWriter::new(&mut body, &header, 0);
        w.process(1001, "/host:CPU", 1);
        w.thread(1001, 7, "python");
        w.begin_counter(1001, "mem", Some("bytes"));
        w.counter_sample(1_000_000, &[("bytes", Arg::Int(5))]);
        w.end_counter(1);
        let args = [("hlo_op", Arg::Str("x<y")), ("util (util %)", Arg::Double(1.0 / 3.0))];
        w.event(&Event {
            pid: 1001,
            tid: 7,
            name: "op",
            ts_ps: 1_500_000,
            dur_ps: 0,
            flow: Some(Flow { id: 9, category: "", entry: FlowEntry::Start, is_async: false }),
            group_id: Some(3),
            args: Some(&args),
            stack_frame: Some(1),
            serial: 2,
        });
        w.finish().unwrap();
        assert_eq!(
            String::from_utf8(body).unwrap(),
            concat!(
                "{\"displayTimeUnit\":\"ns\",\"metadata\":{\"highres-ticks\":true}, \"codeLink\":\"\",",
                "\"useNewBackend\": false,\"details\":[{\"name\":\"mpmd_pipeline_view\",\"value\":false}],",
                "\"returnedEventsSize\":2,\"filteredByVisibility\":true,\"fullTimespan\":[0,2],",
                "\"stackFrames\":{\"1\":{\"name\":\"f\"}},\"traceEvents\":[",
                "{\"args\":{\"name\":\"/host:CPU\"},\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1001,\"thread_count\":1},",
                "{\"args\":{\"sort_index\":1001},\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":1001},",
                "{\"args\":{\"name\":\"python\"},\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1001,\"tid\":7},",
                "{\"args\":{\"sort_index\":7},\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":1001,\"tid\":7},",
                "{\"pid\":1001,\"name\":\"mem\",\"ph\":\"C\",\"event_stats\":\"bytes\",\"entries\":[[1,5]]},",
                "{\"pid\":1001,\"tid\":7,\"name\":\"op\",\"ts\":1.5,\"dur\":0.000001,\"bind_id\":9,\"flow_out\":true,",
                "\"ph\":\"X\",\"args\":{\"group_id\":3,\"hlo_op\":\"x\\u003cy\",\"util (util %)\":0.33},\"sf\":1,\"z\":2}",
                "], \"showCounterMessage\": \"\" ,\"totalCounterEvents\":1}"
            )
        );
    }

    #[test]
    fn a_legacy_body() {
        let mut body = Vec::new();
        let mut w = LegacyTraceWriter::new(&mut body);
        w.process(1, "/host:CPU");
        let args = [("a", Arg::Double(0.1)), ("b", Arg::Uint(7))];
        w.event(&LegacyEvent { pid: 1, tid: 2, name: "n", ts_ps: 3_000_000, dur_ps: 0, args: &args });
        w.finish().unwrap();
        assert_eq!(
            String::from_utf8(body).unwrap(),
            concat!(
                "{\"displayTimeUnit\":\"ns\",\"metadata\":{\"highres-ticks\":true},\n\"traceEvents\":[\n",
                "{\"args\": {\"name\": \"/host:CPU\"}, \"name\": \"process_name\", \"ph\": \"M\", \"pid\": 1},\n",
                "{\"args\": {\"sort_index\": 1}, \"name\": \"process_sort_index\", \"ph\": \"M\", \"pid\": 1},\n",
                "{\"args\": {\"a\": \"0.1\", \"b\": \"7\"}, \"name\": \"n\", \"ph\": \"i\", \"pid\": 1, \"s\": \"t\", \"tid\": 2, \"ts\": 3},\n",
                "{}]}\n"
            )
        );
    }
}
