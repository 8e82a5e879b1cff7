//! Op and kernel names as they are matched between two runs: what changes from one
//! compilation to the next is taken out.
//!
//! * XLA numbers its instructions (`fusion.123`, `copy.4`, `all-reduce-start.2`): a number
//!   after a `.` that ends a name part becomes `N` (`fusion.N`), in every kind of name.
//! * GPU kernels generated for XLA fusions carry the number after `_` at the end of the
//!   identifier (`loop_add_fusion_12`, `input_transpose_fusion_1.kd`, `triton_gemm_dot_1_0`):
//!   in kernel names the `_`-separated numbers that end an identifier (followed by the end,
//!   or a character other than a letter, digit or `_`) become `N` too. Numbers inside an
//!   identifier stay: rocBLAS/Tensile's `…_TT4_224_TLDS1_…_WG64_4_1_WGM1` and CUTLASS's
//!   `cutlass_80_tensorop_…` are tile sizes and architectures, not numbering. Framework op
//!   names keep theirs: TensorFlow's `MatMul_3` or `dense_2/BiasAdd` name distinct ops, the
//!   same in two runs of one program.
//! * A number that does not end a name part stays: `MT256x224x64`, `_1LDSB1`, `sm80`,
//!   `AvgPool2D` (only digits between a separator and a non-alphanumeric character, or the
//!   end, are numbering).
//! * With `strip_templates` (`oxprof diff --strip-templates`), template arguments of kernel
//!   names are dropped: `void gemm<float, 128>(…)` → `void gemm<>(…)`, so the kernels of
//!   one template launched with other tile sizes are compared as one.
//!
//! Rows whose names become equal are added up (their counts and times).

/// Which numbers are numbering.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameKind {
    /// Framework (TensorFlow/JAX/PyTorch) op names and HLO op names: numbers after `.`.
    Op,
    /// Kernel names: numbers after `.` or `_`, and template arguments when asked.
    Kernel,
}

/// `name` with its numbering replaced by `N` (see the module docs).
pub fn normalize(name: &str, kind: NameKind, strip_templates: bool) -> String {
    let name = if strip_templates && kind == NameKind::Kernel { strip_template_args(name) } else { name.to_string() };
    let separators: &[char] = match kind {
        NameKind::Op => &['.'],
        NameKind::Kernel => &['.', '_'],
    };
    let chars: Vec<char> = name.chars().collect();
    let mut out = String::with_capacity(name.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        out.push(c);
        i += 1;
        if !separators.contains(&c) || i == 1 {
            continue;
        }
        let digits_end = digits_from(&chars, i);
        let ends_part = if c == '_' {
            // Only `_`-numbers that end the identifier: `_1_0` then the end, `.`, `(`, `<`…
            let mut end = digits_end;
            while chars.get(end) == Some(&'_') && digits_from(&chars, end + 1) > end + 1 {
                end = digits_from(&chars, end + 1);
            }
            chars.get(end).is_none_or(|next| !next.is_alphanumeric() && *next != '_')
        } else {
            chars.get(digits_end).is_none_or(|next| !next.is_alphanumeric())
        };
        if digits_end > i && ends_part {
            out.push('N');
            i = digits_end;
        }
    }
    out
}

/// Where the run of ASCII digits starting at `from` ends (`from` when there is none).
fn digits_from(chars: &[char], from: usize) -> usize {
    chars
        .get(from..)
        .map_or(from, |rest| rest.iter().position(|d| !d.is_ascii_digit()).map_or(chars.len(), |n| from + n))
}

/// `name` with the text inside each outermost `<…>` removed. `operator<`, `operator<<`,
/// `->` and unbalanced brackets are left as they are.
pub fn strip_template_args(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut depth = 0usize;
    let mut chars = name.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        match c {
            '<' if depth == 0 && name[..at].ends_with("operator") => {
                out.push(c);
                // `operator<<` and `operator<=`: the second character is part of the name.
                if let Some(&(_, next)) = chars.peek()
                    && (next == '<' || next == '=')
                {
                    out.push(next);
                    chars.next();
                }
            }
            '<' => {
                if depth == 0 {
                    if !balanced_from(&name[at..]) {
                        out.push_str(&name[at..]);
                        return out;
                    }
                    out.push('<');
                }
                depth += 1;
            }
            '>' if depth > 0 && !name[..at].ends_with('-') => {
                depth -= 1;
                if depth == 0 {
                    out.push('>');
                }
            }
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

/// Whether the `<` opening `text` is closed.
fn balanced_from(text: &str) -> bool {
    let mut depth = 0i32;
    let mut previous = '\0';
    for c in text.chars() {
        match c {
            '<' => depth += 1,
            '>' if previous != '-' => {
                depth -= 1;
                if depth == 0 {
                    return true;
                }
            }
            _ => {}
        }
        previous = c;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xla_numbering_becomes_n() {
        let op = |s| normalize(s, NameKind::Op, false);
        assert_eq!(op("fusion.123"), "fusion.N");
        assert_eq!(op("%custom-call.1"), "%custom-call.N");
        assert_eq!(op("all-reduce-start.2.remat"), "all-reduce-start.N.remat");
        assert_eq!(op("fusion.1.2"), "fusion.N.N");
        assert_eq!(op("loop_convert_fusion"), "loop_convert_fusion");
    }

    #[test]
    fn framework_names_keep_their_suffixes() {
        let op = |s| normalize(s, NameKind::Op, false);
        assert_eq!(op("MatMul_3"), "MatMul_3");
        assert_eq!(op("sequential_1/dense_2/BiasAdd"), "sequential_1/dense_2/BiasAdd");
        assert_eq!(op("Iterator::Root::Prefetch::ForeverRepeat[0]"), "Iterator::Root::Prefetch::ForeverRepeat[0]");
        assert_eq!(op("jit(train_step)/jit(main)/dot_general"), "jit(train_step)/jit(main)/dot_general");
        assert_eq!(op("1.5"), "1.N");
    }

    #[test]
    fn kernel_numbering_becomes_n_and_shapes_stay() {
        let kernel = |s| normalize(s, NameKind::Kernel, false);
        assert_eq!(kernel("input_transpose_fusion_1.kd"), "input_transpose_fusion_N.kd");
        assert_eq!(kernel("loop_add_fusion_12"), "loop_add_fusion_N");
        assert_eq!(kernel("triton_gemm_dot_1_0"), "triton_gemm_dot_N_N");
        assert_eq!(
            kernel("Cijk_Ailk_Bljk_BBS_BH_MT256x224x64_MI16x16x16x1_SN_1LDSB1_APM1_ABV0_ACED0_AF0EM1"),
            "Cijk_Ailk_Bljk_BBS_BH_MT256x224x64_MI16x16x16x1_SN_1LDSB1_APM1_ABV0_ACED0_AF0EM1"
        );
        assert_eq!(kernel("sm80_xmma_gemm_f16f16_128x128"), "sm80_xmma_gemm_f16f16_128x128");
        assert_eq!(kernel("_5"), "_5", "a leading separator starts no numbering");
        assert_eq!(kernel("void fused_kernel_3<float>(float*)"), "void fused_kernel_N<float>(float*)");
        // Tensile's tile parameters inside the identifier are not numbering.
        let tensile = "Cijk_Ailk_Bljk_BBS_BH_MT256x224x64_SN_1LDSB1_TT4_224_TLDS1_WS64_WG64_4_1_WGM1.kd";
        assert_eq!(kernel(tensile), tensile);
        assert_eq!(kernel("cutlass_80_tensorop_s1688gemm"), "cutlass_80_tensorop_s1688gemm");
        assert_eq!(kernel("gemm_2_x"), "gemm_2_x");
    }

    #[test]
    fn templates_are_stripped_when_asked() {
        let name = "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4<float>>(Params<3>)";
        assert_eq!(normalize(name, NameKind::Kernel, true), "void cutlass::Kernel<>(Params<>)");
        assert_eq!(normalize(name, NameKind::Kernel, false), name);
        assert_eq!(strip_template_args("bool operator<(A<int>, B)"), "bool operator<(A<>, B)");
        assert_eq!(strip_template_args("x operator<<(S<T>)"), "x operator<<(S<>)");
        assert_eq!(strip_template_args("f<a->b>(x)"), "f<>(x)");
        assert_eq!(strip_template_args("unbalanced<open"), "unbalanced<open");
        assert_eq!(normalize("fusion.3<x>", NameKind::Op, true), "fusion.N<x>", "ops keep their brackets");
    }
}
