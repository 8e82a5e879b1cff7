//! Why HLO bytes could not be read.

/// Bytes that should hold an `xla.HloProto` (or the part of one a tool reads) do not.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// Not a valid protobuf of the expected message.
    #[error("not a valid HLO proto ({0} bytes)")]
    NotAnHloProto(usize),
}
