//! Perfetto's trace format as XProf writes it (`xprof/convert/megascale_perfetto/`'s
//! `PerfettoWriter`): the subset of Perfetto's trace protos XProf fills (messages and
//! fields named as Perfetto's `protos/perfetto/trace/` name them, which document them),
//! serialized with prost and gzipped as XProf's `GzipOutputStream` does ([`gzipped`]).
//!
//! Tools build the messages; the bytes are written here.

#![allow(missing_docs)]

use prost::Message;

/// `perfetto.protos.Trace`.
#[derive(Clone, PartialEq, Message)]
pub struct Trace {
    #[prost(message, repeated, tag = "1")]
    pub packet: Vec<TracePacket>,
}

/// `perfetto.protos.TracePacket`.
#[derive(Clone, PartialEq, Message)]
pub struct TracePacket {
    #[prost(uint64, optional, tag = "8")]
    pub timestamp: Option<u64>,
    #[prost(uint32, optional, tag = "10")]
    pub trusted_packet_sequence_id: Option<u32>,
    #[prost(message, optional, tag = "11")]
    pub track_event: Option<TrackEvent>,
    #[prost(message, optional, tag = "12")]
    pub interned_data: Option<InternedData>,
    #[prost(uint32, optional, tag = "13")]
    pub sequence_flags: Option<u32>,
    #[prost(message, optional, tag = "60")]
    pub track_descriptor: Option<TrackDescriptor>,
}

/// `perfetto.protos.TrackEvent.Type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum TrackEventType {
    Unspecified = 0,
    SliceBegin = 1,
    SliceEnd = 2,
    Instant = 3,
    Counter = 4,
}

/// `perfetto.protos.TrackEvent`.
#[derive(Clone, PartialEq, Message)]
pub struct TrackEvent {
    #[prost(message, repeated, tag = "4")]
    pub debug_annotations: Vec<DebugAnnotation>,
    #[prost(enumeration = "TrackEventType", optional, tag = "9")]
    pub r#type: Option<i32>,
    #[prost(uint64, optional, tag = "10")]
    pub name_iid: Option<u64>,
    #[prost(uint64, optional, tag = "11")]
    pub track_uuid: Option<u64>,
    #[prost(int64, optional, tag = "30")]
    pub counter_value: Option<i64>,
    #[prost(double, optional, tag = "44")]
    pub double_counter_value: Option<f64>,
    #[prost(fixed64, repeated, packed = "false", tag = "47")]
    pub flow_ids: Vec<u64>,
    #[prost(fixed64, repeated, packed = "false", tag = "48")]
    pub terminating_flow_ids: Vec<u64>,
}

/// `perfetto.protos.DebugAnnotation` (the value kinds XProf sets).
#[derive(Clone, PartialEq, Message)]
pub struct DebugAnnotation {
    #[prost(uint64, optional, tag = "1")]
    pub name_iid: Option<u64>,
    #[prost(uint64, optional, tag = "3")]
    pub uint_value: Option<u64>,
    #[prost(int64, optional, tag = "4")]
    pub int_value: Option<i64>,
    #[prost(double, optional, tag = "5")]
    pub double_value: Option<f64>,
    #[prost(message, repeated, tag = "12")]
    pub array_values: Vec<DebugAnnotation>,
    #[prost(uint64, optional, tag = "17")]
    pub string_value_iid: Option<u64>,
}

/// `perfetto.protos.InternedData`.
#[derive(Clone, PartialEq, Message)]
pub struct InternedData {
    #[prost(message, repeated, tag = "2")]
    pub event_names: Vec<InternedName>,
    #[prost(message, repeated, tag = "3")]
    pub debug_annotation_names: Vec<InternedName>,
    #[prost(message, repeated, tag = "29")]
    pub debug_annotation_string_values: Vec<InternedString>,
}

/// `perfetto.protos.EventName` and `DebugAnnotationName` (the same two fields).
#[derive(Clone, PartialEq, Message)]
pub struct InternedName {
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
}

/// `perfetto.protos.InternedString`.
#[derive(Clone, PartialEq, Message)]
pub struct InternedString {
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    #[prost(bytes = "vec", optional, tag = "2")]
    pub str: Option<Vec<u8>>,
}

/// `perfetto.protos.TrackDescriptor`.
#[derive(Clone, PartialEq, Message)]
pub struct TrackDescriptor {
    #[prost(uint64, optional, tag = "1")]
    pub uuid: Option<u64>,
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
    #[prost(uint64, optional, tag = "5")]
    pub parent_uuid: Option<u64>,
    #[prost(message, optional, tag = "8")]
    pub counter: Option<CounterDescriptor>,
}

/// `perfetto.protos.CounterDescriptor`.
#[derive(Clone, PartialEq, Message)]
pub struct CounterDescriptor {
    #[prost(string, optional, tag = "6")]
    pub unit_name: Option<String>,
    #[prost(string, optional, tag = "7")]
    pub y_axis_share_key: Option<String>,
}

/// The bytes XProf sends: the serialized trace gzipped at level 1 (`GzipOutputStream`
/// with `compression_level = 1`: no name, mtime 0, Unix).
pub fn gzipped(trace: &Trace) -> Vec<u8> {
    use flate2::{Compression, GzBuilder};
    use std::io::Write;
    let bytes = trace.encode_to_vec();
    let mut encoder = GzBuilder::new().operating_system(3).write(Vec::new(), Compression::fast());
    // Writing into a Vec cannot fail.
    let _ = encoder.write_all(&bytes);
    encoder.finish().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gzipped_as_gzip_output_stream_writes_it() {
        let trace = Trace { packet: vec![TracePacket { timestamp: Some(5), ..TracePacket::default() }] };
        let gz = gzipped(&trace);
        // Magic, deflate, no flags, mtime 0, level-1 marker (fastest), Unix.
        assert_eq!(&gz[..10], &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 4, 3]);
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz[..]), &mut bytes).unwrap();
        assert_eq!(Trace::decode(&bytes[..]).unwrap(), trace);
    }
}
