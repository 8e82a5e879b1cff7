//! Files one oxprof process writes for another to read (a pod's per-host partial results):
//! a one-line header naming the artifact's kind and format version, then the value as
//! gzip'd JSON, whose floats round-trip exactly (answers computed from a decoded artifact
//! are byte-identical to answers computed from the value itself).
//!
//! ```text
//! oxprof-artifact host-partial 1\n<gzip of the JSON>
//! ```
//!
//! The header is plain text so that `head -1` says what a file is; a reader refuses
//! another kind or another version with an error that names both.

use flate2::Compression;
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::io::{Read, Write};

/// What every artifact starts with.
pub const MAGIC: &[u8] = b"oxprof-artifact ";

/// The longest header line a reader looks for (kind, version and their separators).
const MAX_HEADER: usize = 128;

/// Why bytes are not the artifact asked for.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ArtifactError {
    /// The bytes do not start with [`MAGIC`].
    #[error("not an oxprof artifact (it does not start with \"oxprof-artifact\")")]
    NotAnArtifact,
    /// An artifact of another kind.
    #[error("an oxprof {found} artifact, not a {expected} one")]
    OtherKind {
        /// The kind asked for.
        expected: String,
        /// The kind the header names.
        found: String,
    },
    /// The kind asked for, in a format version this build does not read.
    #[error("{kind} format version {found}, but this oxprof reads version {supported}; recompute it with this oxprof")]
    Version {
        /// The artifact's kind.
        kind: String,
        /// The version the header names.
        found: String,
        /// The version this build reads.
        supported: u32,
    },
    /// The header is right but the body cannot be read (cut short, damaged).
    #[error("damaged {kind} artifact: {cause}")]
    Damaged {
        /// The artifact's kind.
        kind: String,
        /// What went wrong.
        cause: String,
    },
}

/// `value` as an artifact of `kind`, format `version`.
pub fn encode<T: Serialize>(kind: &str, version: u32, value: &T) -> Result<Vec<u8>, serde_json::Error> {
    let mut out = Vec::new();
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(format!("{kind} {version}\n").as_bytes());
    // Fast compression: partials are written once per host by many executors and read
    // once per answer; the JSON shrinks ~10x even so.
    let mut gz = GzEncoder::new(out, Compression::fast());
    serde_json::to_writer(&mut gz, value)?;
    gz.flush().map_err(serde_json::Error::io)?;
    gz.finish().map_err(serde_json::Error::io)
}

/// The kind and version an artifact's header names, and where its body starts.
pub fn header(bytes: &[u8]) -> Result<(&str, &str, usize), ArtifactError> {
    let rest = bytes.strip_prefix(MAGIC).ok_or(ArtifactError::NotAnArtifact)?;
    let line_end = rest.iter().take(MAX_HEADER).position(|&b| b == b'\n').ok_or(ArtifactError::NotAnArtifact)?;
    let line = std::str::from_utf8(&rest[..line_end]).map_err(|_| ArtifactError::NotAnArtifact)?;
    let (kind, version) = line.split_once(' ').ok_or(ArtifactError::NotAnArtifact)?;
    Ok((kind, version, MAGIC.len() + line_end + 1))
}

/// The value of an artifact of `kind`, format `version`, whose JSON may take at most
/// `max_json_bytes` (a damaged or hostile body is refused before it fills memory).
pub fn decode<T: DeserializeOwned>(
    kind: &str,
    version: u32,
    bytes: &[u8],
    max_json_bytes: u64,
) -> Result<T, ArtifactError> {
    let (found_kind, found_version, body) = header(bytes)?;
    if found_kind != kind {
        return Err(ArtifactError::OtherKind { expected: kind.to_string(), found: found_kind.to_string() });
    }
    if found_version != version.to_string() {
        return Err(ArtifactError::Version {
            kind: kind.to_string(),
            found: found_version.to_string(),
            supported: version,
        });
    }
    let damaged = |cause: String| ArtifactError::Damaged { kind: kind.to_string(), cause };
    let mut json = Vec::new();
    GzDecoder::new(&bytes[body..])
        .take(max_json_bytes.saturating_add(1))
        .read_to_end(&mut json)
        .map_err(|e| damaged(e.to_string()))?;
    if json.len() as u64 > max_json_bytes {
        return Err(damaged(format!("its JSON inflates past {max_json_bytes} bytes")));
    }
    serde_json::from_slice(&json).map_err(|e| damaged(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Value {
        name: String,
        x: f64,
    }

    fn value() -> Value {
        Value { name: "h".into(), x: 0.1 + 0.2 }
    }

    #[test]
    fn a_value_round_trips_exactly() {
        let bytes = encode("thing", 3, &value()).unwrap();
        assert!(bytes.starts_with(b"oxprof-artifact thing 3\n"));
        assert_eq!(header(&bytes).unwrap().0, "thing");
        assert_eq!(decode::<Value>("thing", 3, &bytes, 1 << 20).unwrap(), value());
    }

    #[test]
    fn other_kinds_versions_and_damage_are_named() {
        let bytes = encode("thing", 3, &value()).unwrap();
        let read = |kind, version, bytes: &[u8]| decode::<Value>(kind, version, bytes, 1 << 20);
        assert_eq!(
            read("other", 3, &bytes),
            Err(ArtifactError::OtherKind { expected: "other".into(), found: "thing".into() })
        );
        let err = read("thing", 4, &bytes).unwrap_err();
        assert_eq!(
            err.to_string(),
            "thing format version 3, but this oxprof reads version 4; recompute it with this oxprof"
        );
        assert_eq!(read("thing", 3, b"\x08\x01 protobuf"), Err(ArtifactError::NotAnArtifact));
        assert_eq!(read("thing", 3, b"oxprof-artifact no newline"), Err(ArtifactError::NotAnArtifact));
        let cut = &bytes[..bytes.len() - 10];
        assert!(matches!(read("thing", 3, cut), Err(ArtifactError::Damaged { .. })));
        let mut garbled = bytes.clone();
        let n = garbled.len();
        garbled[n / 2..].iter_mut().for_each(|b| *b ^= 0x5a);
        assert!(matches!(read("thing", 3, &garbled), Err(ArtifactError::Damaged { .. })));
        let big = encode("thing", 3, &Value { name: "x".repeat(4096), x: 0.0 }).unwrap();
        let err = decode::<Value>("thing", 3, &big, 1024).unwrap_err();
        assert_eq!(err.to_string(), "damaged thing artifact: its JSON inflates past 1024 bytes");
    }
}
