//! XProf 2.24.2's DCN collective slack analysis (`ConvertXSpaceToDcnSlackAnalysis` and
//! `DcnSlackAnalysisCombiner`, `xprof/convert/xspace_to_dcn_slack_analysis.cc`): from the
//! host send/recv ops of `/device:TPU:0`'s `XLA Ops` line and their HLO instructions, one
//! [`DcnSlackSummary`] per rendezvous for one host, and the occurrence-weighted combination
//! of several hosts for `ALL_HOSTS`.
//!
//! XProf stores every time as a whole `uint64` of microseconds (`dcn_slack_analysis.proto`),
//! so each step truncates where XProf's does, and differences of unsigned times wrap as they
//! do in C++. Two quirks are kept because the numbers must be XProf's: the recv duration is
//! divided by 1e6 once more than the others (so it is almost always 0), and the host stall is
//! never measured (`megascale_stats` passes no DCN host plane, so no host events match).
//!
//! ```text
//! XLA Modules |jit_step(1)..........................................................|
//! XLA Ops        |send.1|      |send-done.2|   |recv.3|     |recv-done.4|
//!                ^ send start                               ^ recv-done start
//! slack = recv-done start - send start - (durations of every host send/recv op seen since
//!         the send, this rendezvous' and others', the send included)
//! ```

use crate::tools::megascale::DcnSlackSummary;
use oxprof_hlo::{HloInstruction, HloModule, Shape, hlo_modules, primitive};
use oxprof_model::schema::{StatType, TPU_PLANE_PREFIX, XLA_MODULE_LINE_NAME};
use oxprof_model::{Event, XLine, XPlane, XSpace};
use prost::Message;
use rustc_hash::FxHashMap;

/// The op line of a TPU TensorCore plane (`kXlaOpLineName`).
const XLA_OP_LINE_NAME: &str = "XLA Ops";
/// The stat of a send's event metadata holding its `DcnCollectiveInfoProto`.
const DCN_COLLECTIVE_INFO_STAT: &str = "dcn_collective_info";
/// `xla::kXlaHostTransferRendezvousNameAttr`.
const RENDEZVOUS_ATTRIBUTE: &str = "_xla_host_transfer_rendezvous";
/// The frontend attribute naming a collective's transfer type.
const TRANSFER_TYPE_ATTRIBUTE: &str = "_xla_megascale_transfer_type";

/// `tensorflow.profiler.DcnCollectiveInfoProto`: only the group counts matter here.
#[derive(Clone, PartialEq, Message)]
struct DcnCollectiveInfoProto {
    #[prost(int32, tag = "1")]
    transfer_type: i32,
    #[prost(message, repeated, tag = "2")]
    endpoint_groups: Vec<EndpointGroup>,
    #[prost(message, repeated, tag = "3")]
    one_to_one_groups: Vec<OneToOneGroup>,
}

#[derive(Clone, PartialEq, Message)]
struct Endpoint {
    #[prost(int32, tag = "1")]
    slice_id: i32,
    #[prost(int32, tag = "2")]
    device_id: i32,
}

#[derive(Clone, PartialEq, Message)]
struct EndpointGroup {
    #[prost(message, repeated, tag = "1")]
    endpoints: Vec<Endpoint>,
}

#[derive(Clone, PartialEq, Message)]
struct OneToOneGroup {
    #[prost(message, optional, tag = "1")]
    source: Option<Endpoint>,
    #[prost(message, optional, tag = "2")]
    destination: Option<Endpoint>,
}

/// The four HLO opcodes of a DCN transfer; anything else is counted but never starts or
/// ends one (XProf logs "Received unexpected op").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TransferOp {
    Send,
    Recv,
    SendDone,
    RecvDone,
    Other,
}

/// What XProf reads of an HLO instruction (`InstrMetadata`).
#[derive(Debug, Clone)]
struct InstrMetadata {
    op: TransferOp,
    channel_id: u64,
    rendezvous: Option<String>,
    transfer_type: Option<String>,
    /// Bytes of the result (`ByteSizeOfElements`, summed over tuple elements).
    size: i64,
}

/// One op occurrence (`OpInstance`); its start only matters for host events.
#[derive(Debug, Clone, Copy, Default)]
struct OpInstance {
    duration_ps: u64,
}

/// A rendezvous between its send and its recv-done (`DcnOpState`).
#[derive(Debug, Clone, Default)]
struct OpState {
    start_ns: u64,
    overlapping_ns: u64,
    transfer_type: String,
    stall_ns: u64,
    send_op_name: String,
    replica_group_size: i64,
    send: OpInstance,
    send_done: OpInstance,
    recv: OpInstance,
    recv_done: OpInstance,
}

/// One completed transfer (`DcnSlack`), times in whole µs.
#[derive(Debug, Clone)]
struct DcnSlack {
    rendezvous: String,
    transfer_type: String,
    send_start_us: u64,
    recv_done_end_us: u64,
    slack_us: u64,
    bytes: u64,
    stall_us: u64,
    recv_op_name: String,
    send_op_name: String,
    send: OpInstance,
    send_done: OpInstance,
    recv: OpInstance,
    recv_done: OpInstance,
}

/// What one host's analysis read and dropped, for notes.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct DcnSlackCounts {
    /// Host send/recv ops visited.
    pub transfer_ops: usize,
    /// Host send/recv ops outside any `XLA Modules` event (XProf skips them).
    pub ops_outside_modules: usize,
    /// Host send/recv ops whose module or instruction is not in the profile's HLO.
    pub ops_without_hlo: usize,
}

/// One host's analysis: the summaries in the order their rendezvous first completed.
#[derive(Debug, Clone, Default)]
pub struct HostDcnSlack {
    /// One per rendezvous.
    pub summaries: Vec<DcnSlackSummary>,
    /// What was read and skipped.
    pub counts: DcnSlackCounts,
}

/// `ns / 1e3` stored in a `uint64` field: truncated toward zero.
fn nano_to_micro(ns: u64) -> u64 {
    (ns as f64 / 1e3) as u64
}

/// `SafeDivide(a, b)` stored in a `uint64` field.
fn safe_divide_u64(dividend: u64, divisor: u64) -> u64 {
    safe_divide(dividend as f64, divisor as f64) as u64
}

/// tsl's `SafeDivide`: 0 when the divisor is (nearly) 0.
fn safe_divide(dividend: f64, divisor: f64) -> f64 {
    if divisor.abs() < 1e-10 { 0.0 } else { dividend / divisor }
}

/// `ShapeUtil::ByteSizeOfElements` of an array shape (sub-byte element sizes packed).
fn byte_size_of_elements(shape: &Shape) -> i64 {
    let elements = shape.elements();
    match shape.layout.as_ref().map_or(0, |l| l.element_size_in_bits) {
        0 => elements.wrapping_mul(primitive::byte_size(shape.element_type)),
        bits => elements.wrapping_mul(bits).wrapping_add(7) / 8,
    }
}

/// XProf's instruction size: an array's bytes, or the sum of a tuple's array elements
/// (tokens count 0; a nested tuple, which XProf cannot size, counts 0 too).
fn instruction_size(shape: &Shape) -> i64 {
    if shape.is_array() {
        byte_size_of_elements(shape)
    } else if shape.is_tuple() {
        shape.tuple_shapes.iter().filter(|s| s.is_array()).map(byte_size_of_elements).fold(0, i64::wrapping_add)
    } else {
        0
    }
}

fn transfer_op(opcode: &str) -> TransferOp {
    match opcode {
        "send" => TransferOp::Send,
        "recv" => TransferOp::Recv,
        "send-done" => TransferOp::SendDone,
        "recv-done" => TransferOp::RecvDone,
        _ => TransferOp::Other,
    }
}

fn attribute(instr: &HloInstruction, name: &str) -> Option<String> {
    instr.frontend_attributes.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
}

/// `ComputeTransmittedDataSize` of a recv-done's buffer.
fn transmitted_bytes(recv_buffer_size: i64, group_size: i64, transfer_type: &str) -> u64 {
    if group_size == 0 {
        return 0;
    }
    let (size, group) = (recv_buffer_size, group_size);
    match transfer_type {
        "ONE_TO_ONE" => group.wrapping_mul(size) as u64,
        "ALL_GATHER" => safe_divide(((group - 1).wrapping_mul(size)) as f64, group as f64) as u64,
        "ALL_REDUCE" => (2.0 * safe_divide((group - 1) as f64, group as f64) * size as f64) as u64,
        "ALL_TO_ALL" => (safe_divide((group - 1) as f64, group as f64) * size as f64) as u64,
        "REDUCE_SCATTER" => size.wrapping_mul(group - 1) as u64,
        _ => 0,
    }
}

/// XProf's `XEventContextTracker::GetContainingEvent` over a sorted module line: the module
/// event containing a span, scanning forward only.
struct ContainingEvent<'a> {
    plane: &'a XPlane,
    line: Option<&'a XLine>,
    current: Option<usize>,
}

/// A span as XProf's `Timespan`: unsigned picoseconds (epoch times wrap modulo 2^64).
#[derive(Debug, Clone, Copy)]
struct Span {
    begin: u64,
    end: u64,
}

impl Span {
    fn of(e: &Event<'_>) -> Span {
        let begin = e.timestamp_ps() as u64;
        Span { begin, end: begin.wrapping_add(e.duration_ps() as u64) }
    }

    fn includes(&self, other: &Span) -> bool {
        self.begin <= other.begin && other.end <= self.end
    }
}

impl<'a> ContainingEvent<'a> {
    fn get(&mut self, span: &Span) -> Option<Event<'a>> {
        let line = self.line?;
        if let Some(i) = self.current {
            let e = line.event(self.plane, i);
            if Span::of(&e).includes(span) {
                return Some(e);
            }
        }
        let start = self.current.map_or(0, |i| i + 1);
        for i in start..line.event_count() {
            let e = line.event(self.plane, i);
            let candidate = Span::of(&e);
            if candidate.begin > span.end {
                break;
            }
            if candidate.end < span.begin {
                continue;
            }
            self.current = Some(i);
            return candidate.includes(span).then_some(e);
        }
        None
    }
}

/// `DcnTracker`: the state of one host's walk over its ops.
#[derive(Default)]
struct Tracker {
    slacks: Vec<DcnSlack>,
    /// Rendezvous in first-seen order with their state (XProf's map; order only matters
    /// for the overlap sums, which touch every entry).
    states: Vec<(String, OpState)>,
    channel_rendezvous: FxHashMap<u64, String>,
    group_sizes: FxHashMap<String, i64>,
}

impl Tracker {
    fn state(&mut self, rendezvous: &str) -> &mut OpState {
        let i = match self.states.iter().position(|(r, _)| r == rendezvous) {
            Some(i) => i,
            None => {
                self.states.push((rendezvous.to_string(), OpState::default()));
                self.states.len() - 1
            }
        };
        &mut self.states[i].1
    }

    /// `GetReplicaGroupSize`: from the send's `dcn_collective_info`, once per rendezvous.
    fn group_size(&mut self, rendezvous: &str, e: &Event<'_>) -> i64 {
        if let Some(&n) = self.group_sizes.get(rendezvous) {
            return n;
        }
        let plane = e.plane();
        let info = plane
            .stat_metadata_named(DCN_COLLECTIVE_INFO_STAT)
            .and_then(|id| e.metadata_stats().find(|s| s.metadata_id() == id))
            .and_then(|s| s.as_bytes().map(|b| DcnCollectiveInfoProto::decode(b).unwrap_or_default()))
            .unwrap_or_default();
        let n = if !info.one_to_one_groups.is_empty() {
            1
        } else {
            info.endpoint_groups.first().map_or(0, |g| g.endpoints.len() as i64)
        };
        self.group_sizes.insert(rendezvous.to_string(), n);
        n
    }

    /// `DcnTracker::VisitOp`.
    fn visit(&mut self, instr: &InstrMetadata, e: &Event<'_>) {
        let rendezvous = match &instr.rendezvous {
            Some(r) => {
                self.channel_rendezvous.insert(instr.channel_id, r.clone());
                r.clone()
            }
            None => match self.channel_rendezvous.get(&instr.channel_id) {
                Some(r) => r.clone(),
                // A done op before its send/recv: XProf ignores it.
                None => return,
            },
        };
        // XProf's `XEventVisitor` times in ns are doubles (`PicoToNano`): epoch timestamps
        // round to what a double holds (256 ns steps today) before being truncated.
        let duration_ns = e.duration_ps() as f64 / 1e3;
        let timestamp_ns = (e.line().timestamp_ns as f64 + e.offset_ps() as f64 / 1e3) as i64 as u64;
        let op = OpInstance { duration_ps: e.duration_ps() as u64 };
        let group_size = if instr.op == TransferOp::Send { self.group_size(&rendezvous, e) } else { 0 };
        let state = self.state(&rendezvous);
        state.stall_ns = (state.stall_ns as f64 + duration_ns) as u64;
        match instr.op {
            TransferOp::Send => {
                state.start_ns = timestamp_ns;
                state.transfer_type = instr.transfer_type.clone().unwrap_or_default();
                state.overlapping_ns = 0;
                state.stall_ns = duration_ns as u64;
                state.send_op_name = e.display_name().to_string();
                state.send = op;
                state.replica_group_size = group_size;
            }
            TransferOp::Recv => state.recv = op,
            TransferOp::SendDone => state.send_done = op,
            TransferOp::RecvDone => {
                state.recv_done = op;
                if state.start_ns != 0 {
                    let end_ns = (timestamp_ns as i64 as f64 + duration_ns) as i64 as u64;
                    let slack = DcnSlack {
                        rendezvous: rendezvous.clone(),
                        transfer_type: state.transfer_type.clone(),
                        send_start_us: nano_to_micro(state.start_ns),
                        recv_done_end_us: nano_to_micro(end_ns),
                        slack_us: nano_to_micro(
                            timestamp_ns.wrapping_sub(state.start_ns).wrapping_sub(state.overlapping_ns),
                        ),
                        bytes: transmitted_bytes(instr.size, state.replica_group_size, &state.transfer_type),
                        stall_us: nano_to_micro(state.stall_ns),
                        recv_op_name: e.display_name().to_string(),
                        send_op_name: state.send_op_name.clone(),
                        send: state.send,
                        send_done: state.send_done,
                        recv: state.recv,
                        recv_done: state.recv_done,
                    };
                    self.slacks.push(slack);
                }
            }
            TransferOp::Other => {}
        }
        // Every rendezvous in flight overlaps this op (`UpdateActiveOps` takes whole ns).
        for (_, s) in &mut self.states {
            s.overlapping_ns = s.overlapping_ns.wrapping_add(duration_ns as u64);
        }
    }

    /// `SummarizeDcnSlackAnalysis`: sums per rendezvous, then averages, as whole µs.
    fn summarize(self) -> Vec<DcnSlackSummary> {
        let mut sums: Vec<Sums> = Vec::new();
        for a in &self.slacks {
            let i = match sums.iter().position(|s| s.rendezvous == a.rendezvous) {
                Some(i) => i,
                None => {
                    sums.push(Sums { rendezvous: a.rendezvous.clone(), ..Sums::default() });
                    sums.len() - 1
                }
            };
            let s = &mut sums[i];
            s.slack_us = s.slack_us.wrapping_add(a.slack_us);
            s.occurrences += 1;
            s.transfer_type.clone_from(&a.transfer_type);
            s.bytes = a.bytes;
            s.stall_us = s.stall_us.wrapping_add(a.stall_us);
            s.observed_us = s.observed_us.wrapping_add(a.recv_done_end_us).wrapping_sub(a.send_start_us);
            s.recv_op_name.clone_from(&a.recv_op_name);
            s.send_op_name.clone_from(&a.send_op_name);
            // `uint64 + double` stored back in a `uint64`.
            let add = |acc: u64, us: f64| (acc as f64 + us) as u64;
            s.send_us = add(s.send_us, a.send.duration_ps as f64 / 1e6);
            // XProf divides the recv duration by 1e6 twice.
            s.recv_us = add(s.recv_us, a.recv.duration_ps as f64 / 1e6 / 1e6);
            s.send_done_us = add(s.send_done_us, a.send_done.duration_ps as f64 / 1e6);
            s.recv_done_us = add(s.recv_done_us, a.recv_done.duration_ps as f64 / 1e6);
        }
        sums.into_iter().map(Sums::average).collect()
    }
}

/// A rendezvous' totals before averaging (whole µs, as XProf's proto holds them).
#[derive(Debug, Clone, Default)]
struct Sums {
    rendezvous: String,
    transfer_type: String,
    recv_op_name: String,
    send_op_name: String,
    slack_us: u64,
    occurrences: u64,
    bytes: u64,
    stall_us: u64,
    observed_us: u64,
    send_us: u64,
    recv_us: u64,
    send_done_us: u64,
    recv_done_us: u64,
    host_stall_us: i64,
    host_events_count: u64,
}

impl Sums {
    fn average(self) -> DcnSlackSummary {
        let n = self.occurrences;
        let avg = |total: u64| safe_divide_u64(total, n) as f64;
        DcnSlackSummary {
            rendezvous: self.rendezvous,
            recv_op_name: self.recv_op_name,
            send_op_name: self.send_op_name,
            transfer_type: self.transfer_type,
            slack_us: avg(self.slack_us),
            host_stall_us: safe_divide(self.host_stall_us as f64, self.host_events_count as f64).trunc(),
            host_events_count: self.host_events_count,
            observed_duration_us: avg(self.observed_us),
            send_duration_us: avg(self.send_us),
            send_done_duration_us: avg(self.send_done_us),
            recv_duration_us: avg(self.recv_us),
            recv_done_duration_us: avg(self.recv_done_us),
            stall_duration_us: avg(self.stall_us),
            occurrences: n,
            bytes_transmitted_over_network: self.bytes,
        }
    }
}

/// XProf's `FindTensorCorePlanes` test: `/device:TPU:<digits>` exactly.
fn is_tensor_core_plane(name: &str) -> bool {
    name.strip_prefix(TPU_PLANE_PREFIX).is_some_and(|rest| rest.bytes().all(|b| b.is_ascii_digit()))
}

/// `ConvertXSpaceToDcnSlackAnalysis` of one host (without a DCN host plane, as
/// `megascale_stats` calls it): needs `/device:TPU:0`'s lines and `/host:metadata`'s HLO.
pub fn host_dcn_slack(space: &XSpace) -> HostDcnSlack {
    let mut out = HostDcnSlack::default();
    if !space.planes.iter().any(|p| is_tensor_core_plane(&p.name)) {
        return out;
    }
    let Some(plane) = space.plane(&format!("{TPU_PLANE_PREFIX}0")) else { return out };
    let mut modules_by_name: Option<FxHashMap<String, HloModule>> = None;
    let mut instructions: FxHashMap<(String, String), Option<InstrMetadata>> = FxHashMap::default();
    let mut tracker = Tracker::default();
    let mut context =
        ContainingEvent { plane, line: plane.lines.iter().find(|l| l.name == XLA_MODULE_LINE_NAME), current: None };
    let category_id = plane.stat_metadata_of_type(StatType::HloCategory);
    for line in plane.lines.iter().filter(|l| l.name == XLA_OP_LINE_NAME) {
        for e in line.events(plane) {
            let category = category_id
                .and_then(|id| e.metadata_stats().find(|s| s.metadata_id() == id))
                .and_then(|s| s.as_str())
                .unwrap_or("");
            let Some(module) = context.get(&Span::of(&e)) else {
                if category.contains("host send") || category.contains("host recv") {
                    out.counts.ops_outside_modules += 1;
                }
                continue;
            };
            if !(category.contains("host send") || category.contains("host recv")) {
                continue;
            }
            out.counts.transfer_ops += 1;
            let modules = modules_by_name.get_or_insert_with(|| {
                hlo_modules(space).0.into_iter().map(|(id, m)| (format!("{}({id})", m.name), m)).collect()
            });
            let key = (module.name().to_string(), e.display_name().to_string());
            let instr = instructions
                .entry(key)
                .or_insert_with_key(|(module, instr)| instruction_metadata(modules.get(module)?, instr));
            match instr {
                Some(instr) => tracker.visit(instr, &e),
                None => out.counts.ops_without_hlo += 1,
            }
        }
    }
    out.summaries = tracker.summarize();
    out
}

/// `GetInstrMetadataFromHloModule`: the first instruction of that name in any computation.
fn instruction_metadata(module: &HloModule, name: &str) -> Option<InstrMetadata> {
    let instr = module.computations.iter().flat_map(|c| &c.instructions).find(|i| i.name == name)?;
    Some(InstrMetadata {
        op: transfer_op(&instr.opcode),
        channel_id: instr.channel_id as u64,
        rendezvous: attribute(instr, RENDEZVOUS_ATTRIBUTE),
        transfer_type: attribute(instr, TRANSFER_TYPE_ATTRIBUTE),
        size: instruction_size(&instr.shape),
    })
}

/// `DcnSlackAnalysisCombiner`: hosts' summaries weighted by their occurrences (whole µs
/// again), rendezvous in first-seen order.
#[derive(Debug, Clone, Default)]
pub struct DcnSlackCombiner {
    sums: Vec<Sums>,
}

impl DcnSlackCombiner {
    /// `Combine`: adds one host's summaries.
    pub fn combine(&mut self, summaries: &[DcnSlackSummary]) {
        for s in summaries {
            let i = match self.sums.iter().position(|t| t.rendezvous == s.rendezvous) {
                Some(i) => i,
                None => {
                    self.sums.push(Sums { rendezvous: s.rendezvous.clone(), ..Sums::default() });
                    self.sums.len() - 1
                }
            };
            let t = &mut self.sums[i];
            let n = s.occurrences;
            let weighted = |us: f64| (us as u64).wrapping_mul(n);
            t.slack_us = t.slack_us.wrapping_add(weighted(s.slack_us));
            t.observed_us = t.observed_us.wrapping_add(weighted(s.observed_duration_us));
            t.stall_us = t.stall_us.wrapping_add(weighted(s.stall_duration_us));
            t.send_done_us = t.send_done_us.wrapping_add(weighted(s.send_done_duration_us));
            t.recv_done_us = t.recv_done_us.wrapping_add(weighted(s.recv_done_duration_us));
            t.send_us = t.send_us.wrapping_add(weighted(s.send_duration_us));
            t.recv_us = t.recv_us.wrapping_add(weighted(s.recv_duration_us));
            t.host_stall_us = t.host_stall_us.wrapping_add((s.host_stall_us as i64).wrapping_mul(n as i64));
            t.occurrences += n;
            t.bytes = s.bytes_transmitted_over_network;
            t.recv_op_name.clone_from(&s.recv_op_name);
            t.send_op_name.clone_from(&s.send_op_name);
            t.transfer_type.clone_from(&s.transfer_type);
            t.host_events_count = t.host_events_count.wrapping_add(s.host_events_count.wrapping_mul(n));
        }
    }

    /// `Finalize`: the averages (the host stall over occurrences, as XProf divides it).
    pub fn finish(self) -> Vec<DcnSlackSummary> {
        self.sums
            .into_iter()
            .map(|t| {
                let n = t.occurrences;
                let host_stall = safe_divide(t.host_stall_us as f64, n as f64).trunc();
                let host_events_count = t.host_events_count;
                let mut s = Sums { host_events_count: n, ..t }.average();
                s.host_stall_us = host_stall;
                s.host_events_count = host_events_count;
                s
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transmitted_bytes_follow_the_transfer_type() {
        assert_eq!(transmitted_bytes(1000, 4, "ALL_REDUCE"), 1500);
        assert_eq!(transmitted_bytes(1000, 3, "ALL_GATHER"), 666);
        assert_eq!(transmitted_bytes(1000, 1, "ONE_TO_ONE"), 1000);
        assert_eq!(transmitted_bytes(1000, 4, "REDUCE_SCATTER"), 3000);
        assert_eq!(transmitted_bytes(1000, 0, "ALL_REDUCE"), 0);
        assert_eq!(transmitted_bytes(1000, 4, "RAGGED_ALL_TO_ALL"), 0);
    }

    /// Hosts weigh by occurrences, and the averages are whole µs again.
    #[test]
    fn combiner_weighs_hosts_by_occurrences_and_truncates() {
        let host = |slack_us: f64, occurrences: u64| DcnSlackSummary {
            rendezvous: "r".into(),
            slack_us,
            occurrences,
            bytes_transmitted_over_network: 8,
            ..DcnSlackSummary::default()
        };
        let mut combiner = DcnSlackCombiner::default();
        combiner.combine(&[host(10.0, 1)]);
        combiner.combine(&[host(15.0, 2)]);
        let rows = combiner.finish();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].occurrences, 3);
        // (10 + 2 * 15) / 3 = 13.33 → 13.
        assert_eq!(rows[0].slack_us, 13.0);
        assert_eq!(rows[0].bytes_transmitted_over_network, 8);
    }

    #[test]
    fn a_space_without_tensor_cores_has_no_collectives() {
        assert!(host_dcn_slack(&XSpace::default()).summaries.is_empty());
        assert!(!is_tensor_core_plane("/device:TPU:0 SparseCore"));
        assert!(is_tensor_core_plane("/device:TPU:12"));
    }
}
