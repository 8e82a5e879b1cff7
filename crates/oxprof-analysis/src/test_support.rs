//! Helpers shared by the tests that compare oxprof with XProf's references: where the
//! repository and the third-party profiles are, reading (gzipped) profiles and JSON
//! references.

use crate::op_stats::OpStats;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The repository root.
pub(crate) fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `../shared/testdata/external` (or `OXPROF_EXTERNAL_TESTDATA`), whether present or not.
pub(crate) fn external_path() -> PathBuf {
    std::env::var_os("OXPROF_EXTERNAL_TESTDATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("../shared/testdata/external"))
}

/// The third-party profiles folder, or `None` with a SKIP note when it is absent.
pub(crate) fn external_root() -> Option<PathBuf> {
    let dir = external_path();
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!("SKIP: {} is absent; third-party profiles not checked", dir.display());
        None
    }
}

/// Text of `path`, gunzipped when it ends in `.gz`, else of `path` or `path.gz`.
pub(crate) fn read_text(path: &Path) -> String {
    if path.extension().is_none_or(|e| e != "gz")
        && let Ok(text) = std::fs::read_to_string(path)
    {
        return text;
    }
    let gz = if path.extension().is_some_and(|e| e == "gz") {
        path.to_path_buf()
    } else {
        PathBuf::from(format!("{}.gz", path.display()))
    };
    let file = std::fs::File::open(&gz).unwrap_or_else(|e| panic!("{}: {e}", gz.display()));
    let mut text = String::new();
    flate2::read::GzDecoder::new(file).read_to_string(&mut text).unwrap_or_else(|e| panic!("{}: {e}", gz.display()));
    text
}

/// Decodes a profile file (`.xplane.pb`, gzip-compressed or not) for a test: analyses do no
/// IO, so their tests read files here rather than through `oxprof-format`.
pub(crate) fn load_xspace(path: &Path) -> Result<oxprof_model::XSpace, oxprof_xspace::DecodeError> {
    let raw = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if !raw.starts_with(&[0x1f, 0x8b]) {
        return oxprof_xspace::decode_xspace(&raw);
    }
    let mut bytes = Vec::new();
    flate2::read::MultiGzDecoder::new(&raw[..])
        .read_to_end(&mut bytes)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    oxprof_xspace::decode_xspace(&bytes)
}

/// A JSON reference.
pub(crate) fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&read_text(path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// XProf's OpStats (through oxprof's types, so fields oxprof does not model are dropped).
pub(crate) fn load_op_stats(path: &Path) -> OpStats {
    serde_json::from_str(&read_text(path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// An f32 array shape with the default (major-to-minor) layout, for hand-built HLO.
pub(crate) fn f32_shape(dims: &[i64]) -> oxprof_hlo::Shape {
    let layout = oxprof_hlo::Layout { minor_to_major: (0..dims.len() as i64).rev().collect(), ..Default::default() };
    oxprof_hlo::Shape {
        element_type: oxprof_hlo::primitive::F32,
        dimensions: dims.to_vec(),
        layout: Some(layout),
        ..Default::default()
    }
}

/// A hand-built HLO instruction.
pub(crate) fn hlo_instr(
    name: &str,
    opcode: &str,
    id: i64,
    operands: &[i64],
    shape: oxprof_hlo::Shape,
) -> oxprof_hlo::HloInstruction {
    oxprof_hlo::HloInstruction {
        name: name.into(),
        opcode: opcode.into(),
        id,
        operand_ids: operands.to_vec(),
        shape,
        ..Default::default()
    }
}
