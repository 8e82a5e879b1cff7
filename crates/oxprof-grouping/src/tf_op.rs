//! Framework op names: parsing `name:Type` strings into a category (TensorFlow, JAX,
//! tf.data, memcpy) as XProf does (`tsl/profiler/utils/tf_op_utils.cc`).

/// Kind of framework op.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TfOpCategory {
    /// Not a framework op.
    Unknown,
    /// A TensorFlow op (`scope/name:Type`).
    TensorFlow,
    /// A JAX op (`jit(f)/jit(main)/dot_general:dot_general`).
    Jax,
    /// A tf.data iterator (`Iterator::…`).
    TfData,
    /// GPU host-to-device copy.
    MemcpyHToD,
    /// GPU device-to-host copy.
    MemcpyDToH,
    /// GPU device-to-device copy.
    MemcpyDToD,
    /// GPU host-to-host copy.
    MemcpyHToH,
}

/// A parsed framework op name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TfOp<'a> {
    /// Category.
    pub category: TfOpCategory,
    /// Op name (the part before `:`, or the whole input when not parsed).
    pub name: &'a str,
    /// Op type (empty when unknown).
    pub op_type: &'a str,
}

/// Op type of tf.data iterator ops.
pub const DATASET_OP: &str = "Dataset";
/// Op type of host-to-device copies.
pub const MEMCPY_H_TO_D_OP: &str = "MemcpyHToD";
/// Op type of device-to-host copies.
pub const MEMCPY_D_TO_H_OP: &str = "MemcpyDToH";
/// Op type of device-to-device copies.
pub const MEMCPY_D_TO_D_OP: &str = "MemcpyDToD";
/// Op type of host-to-host copies.
pub const MEMCPY_H_TO_H_OP: &str = "MemcpyHToH";

fn starts_with_ignore_case(s: &str, prefix: &str) -> bool {
    s.len() >= prefix.len() && s.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
}

fn memcpy_op(name: &str) -> Option<TfOp<'_>> {
    let (category, op_type) = if starts_with_ignore_case(name, "MEMCPYHToD") {
        (TfOpCategory::MemcpyHToD, MEMCPY_H_TO_D_OP)
    } else if starts_with_ignore_case(name, "MEMCPYDToH") {
        (TfOpCategory::MemcpyDToH, MEMCPY_D_TO_H_OP)
    } else if starts_with_ignore_case(name, "MEMCPYDToD") {
        (TfOpCategory::MemcpyDToD, MEMCPY_D_TO_D_OP)
    } else if starts_with_ignore_case(name, "MEMCPYHToH") {
        (TfOpCategory::MemcpyHToH, MEMCPY_H_TO_H_OP)
    } else {
        return None;
    };
    Some(TfOp { category, name, op_type })
}

/// `[A-Za-z0-9.][A-Za-z0-9_.\/>-]*`
pub fn is_tf_op_name(name: &str) -> bool {
    let mut chars = name.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphanumeric() || c == '.' => {}
        _ => return false,
    }
    chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '\\' | '/' | '>' | '-'))
}

/// `[A-Z_][a-zA-Z0-9_]*`
pub fn is_tf_op_type(op_type: &str) -> bool {
    let mut chars = op_type.chars();
    match chars.next() {
        Some(c) if c.is_ascii_uppercase() || c == '_' => {}
        _ => return false,
    }
    chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `[a-z_][a-z0-9_]*(\[.*\])?`
pub fn is_jax_op_type(op_type: &str) -> bool {
    let head_end = op_type.find('[').unwrap_or(op_type.len());
    let (head, rest) = op_type.split_at(head_end);
    let mut chars = head.chars();
    match chars.next() {
        Some(c) if c.is_ascii_lowercase() || c == '_' => {}
        _ => return false,
    }
    if !chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_') {
        return false;
    }
    rest.is_empty() || (rest.starts_with('[') && rest.ends_with(']') && rest.len() >= 2)
}

/// Op type derived from an op name: last `/` component without a numeric `_N` suffix.
fn derive_op_type(full_op_name: &str) -> &str {
    let op_name = full_op_name.rsplit('/').next().unwrap_or(full_op_name);
    let maybe_suffix = op_name.rsplit('_').next().unwrap_or(op_name);
    if maybe_suffix != op_name && is_integer(maybe_suffix) {
        &op_name[..op_name.len() - maybe_suffix.len() - 1]
    } else if maybe_suffix == op_name && is_integer(op_name) {
        // absl: the whole name is the "suffix"; substr(0, -1) clamps to empty.
        ""
    } else {
        op_name
    }
}

/// absl::SimpleAtoi for int64: optional sign, digits, surrounding whitespace allowed.
fn is_integer(s: &str) -> bool {
    let t = s.trim_matches(|c: char| c.is_ascii_whitespace());
    let digits = t.strip_prefix(['+', '-']).unwrap_or(t);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) && t.parse::<i64>().is_ok()
}

/// Parses a framework op full name (`name:Type`, `Iterator::…`, `MEMCPYHToD…`).
pub fn parse_tf_op_fullname(fullname: &str) -> TfOp<'_> {
    let unknown = TfOp { category: TfOpCategory::Unknown, name: fullname, op_type: "" };
    let Some((name, op_type)) = fullname.split_once(':') else {
        return memcpy_op(fullname).unwrap_or(unknown);
    };
    if name == "Iterator" {
        return TfOp { category: TfOpCategory::TfData, name: fullname, op_type: DATASET_OP };
    }
    if is_tf_op_name(name) && is_tf_op_type(op_type) {
        return TfOp { category: TfOpCategory::TensorFlow, name, op_type };
    }
    let jax_type = if op_type.is_empty() { derive_op_type(name) } else { op_type };
    if is_jax_op_type(jax_type) {
        let cut = jax_type.find('[').unwrap_or(jax_type.len());
        return TfOp { category: TfOpCategory::Jax, name, op_type: &jax_type[..cut] };
    }
    if op_type.is_empty() {
        return TfOp { category: TfOpCategory::TensorFlow, name, op_type: jax_type };
    }
    unknown
}

/// Name scopes of an op name (all `/` components but the last).
pub fn parse_tf_name_scopes(op_name: &str) -> Vec<&str> {
    let mut scopes: Vec<&str> = op_name.split('/').collect();
    scopes.pop();
    scopes
}

/// `Iterator::<last component>` for a tf.data iterator's full name.
pub fn dataset_op_event_name(full_name: &str) -> String {
    format!("Iterator::{}", iterator_name(full_name))
}

/// The last `::` component of an iterator name.
pub fn iterator_name(full_name: &str) -> &str {
    full_name.rsplit("::").next().unwrap_or(full_name)
}

/// The event name XProf shows for a framework op: its type, or for tf.data the iterator
/// name, or for unknown ops the name without trailing whitespace.
pub fn tf_op_event_name(op: &TfOp<'_>) -> String {
    match op.category {
        TfOpCategory::Unknown => op.name.trim_end_matches(|c: char| c.is_ascii_whitespace()).to_string(),
        TfOpCategory::TfData => dataset_op_event_name(op.name),
        _ => op.op_type.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(s: &str) -> (TfOpCategory, &str, &str) {
        let op = parse_tf_op_fullname(s);
        (op.category, op.name, op.op_type)
    }

    #[test]
    fn parses_like_xprof() {
        use TfOpCategory::*;
        assert_eq!(parsed("OpName:OpType"), (TensorFlow, "OpName", "OpType"));
        assert_eq!(parsed("Name/Scope/OpName:OpType"), (TensorFlow, "Name/Scope/OpName", "OpType"));
        assert_eq!(parsed("Iterator::Batch::Map"), (TfData, "Iterator::Batch::Map", DATASET_OP));
        assert_eq!(parsed("MemcpyHToD"), (MemcpyHToD, "MemcpyHToD", MEMCPY_H_TO_D_OP));
        // With a colon the memcpy rule does not apply; the empty type derives a JAX type.
        assert_eq!(parsed("memcpydtoh:"), (Jax, "memcpydtoh", "memcpydtoh"));
        assert_eq!(
            parsed("jit(f)/jit(main)/dot_general:dot_general"),
            (Jax, "jit(f)/jit(main)/dot_general", "dot_general")
        );
        assert_eq!(
            parsed("jit(f)/transpose[permutation=(0, 3, 1, 2)]:transpose[permutation=(0, 3, 1, 2)]"),
            (Jax, "jit(f)/transpose[permutation=(0, 3, 1, 2)]", "transpose")
        );
        assert_eq!(parsed("model/layer/MatMul_1:"), (TensorFlow, "model/layer/MatMul_1", "MatMul"));
        assert_eq!(parsed("jit(f)/add_3:"), (Jax, "jit(f)/add_3", "add"));
        assert_eq!(parsed("no colon here"), (Unknown, "no colon here", ""));
        assert_eq!(parsed("Weird Name:Also Weird"), (Unknown, "Weird Name:Also Weird", ""));
    }

    #[test]
    fn name_scopes_and_event_names() {
        assert_eq!(parse_tf_name_scopes("a/b/c"), ["a", "b"]);
        assert_eq!(tf_op_event_name(&parse_tf_op_fullname("a/b/MatMul:MatMul")), "MatMul");
        assert_eq!(tf_op_event_name(&parse_tf_op_fullname("Iterator::Root::Map")), "Iterator::Map");
        assert_eq!(tf_op_event_name(&parse_tf_op_fullname("train  ")), "train");
    }
}
