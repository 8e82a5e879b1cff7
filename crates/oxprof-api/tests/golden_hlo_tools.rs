//! Parity of the HLO-module tools with XProf 2.24.2: `memory_viewer` (every module XProf's
//! reference run recorded) and the `graph_viewer` views (text, `pbtxt`, `pb`, and the
//! Graphviz `graph` page), for the committed refkit profiles and the third-party profiles
//! (read in place, skipped when absent); plus `module_list` and the guards on module names.
//!
//! `OXPROF_GOLDEN_FILTER=substring` limits the cases; `OXPROF_GOLDEN_SHOW=n` prints more
//! differences per failing case.

use common::{external_dir, external_outputs_dir, repo_root};
use oxprof_api::data::{DataRequest, data};
use oxprof_api::hlo_tools::graph_viewer_proto_bytes;
use oxprof_testkit::jsoncmp::{CmpOptions, compare};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use oxprof_api::registry::ToolId;
use oxprof_testkit::golden as common;

/// Cases that do not match XProf yet, as `(variant, case prefix)` where the variant is
/// `memory_viewer` or the graph viewer type; each with its reason. The test fails if one
/// of them starts matching, so this list only shrinks.
const KNOWN_GAPS: &[(&str, &str)] = &[];

fn is_known_gap(variant: &str, case: &str) -> bool {
    KNOWN_GAPS.iter().any(|&(v, prefix)| v == variant && case.starts_with(prefix))
}

/// One run and the folder of XProf's outputs for it.
struct Case {
    name: String,
    input: PathBuf,
    expected: PathBuf,
}

fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    for name in ["tf_keras_fit", "tf_custom_loop", "jax_train", "tf_memory", "tf_memory_nobfc"] {
        let dir = repo_root().join("testdata/profiles").join(name);
        cases.push(Case { name: name.into(), input: dir.clone(), expected: dir.join("xprof_out") });
    }
    let (Some(ext), Some(out)) = (external_dir(), external_outputs_dir()) else {
        eprintln!("SKIP: ../shared/testdata/external(-xprof-out) absent; third-party profiles not checked");
        return cases;
    };
    let amd = ext.join("AMD-AGI-TraceLens/tests");
    let singles: Vec<(&str, PathBuf)> = vec![
        (
            "AMD-AGI-TraceLens/934987a2fc2f",
            amd.join("test_data_jax_te_fused_attn_categorization/934987a2fc2f.xplane.pb"),
        ),
        ("AMD-AGI-TraceLens/jax08_attention__tw003", amd.join("traces/mi300/jax08_attention/tw003.xplane.pb")),
        ("AMD-AGI-TraceLens/jax08_conv__tw003", amd.join("traces/mi300/jax08_conv/tw003.xplane.pb")),
        ("AMD-AGI-TraceLens/jax08_elementwise__tw003", amd.join("traces/mi300/jax08_elementwise/tw003.xplane.pb")),
        ("AMD-AGI-TraceLens/jax08_gemm__tw003", amd.join("traces/mi300/jax08_gemm/tw003.xplane.pb")),
        ("AMD-AGI-TraceLens/chi-mi300x-013.ord.vultr.cpe.ice.amd.com", amd.join("traces/mi300/jax_conv_minimal")),
        (
            "openxla-xprof/34.83.195.179_6003",
            ext.join("openxla-xprof/demo/plugins/profile/GPU-multi-worker/34.83.195.179_6003.xplane.pb"),
        ),
        (
            "openxla-xprof/tpu_inference_2",
            ext.join("openxla-xprof/xprof/convert/test_xplanes/tpu_inference_2.xplane.pb"),
        ),
    ];
    for (name, input) in singles {
        cases.push(Case { name: name.into(), input, expected: out.join(name).join("xprof_out") });
    }
    cases.push(Case {
        name: "GPU-multi-worker_two_hosts".into(),
        input: ext.join("openxla-xprof/demo/plugins/profile/GPU-multi-worker"),
        expected: out.join("openxla-xprof/GPU-multi-worker_two_hosts/xprof_out/ALL_HOSTS"),
    });
    cases
}

fn read_text(path: &Path) -> Option<String> {
    if path.extension().is_some_and(|e| e == "gz") {
        let mut t = String::new();
        flate2::read::GzDecoder::new(std::fs::File::open(path).ok()?).read_to_string(&mut t).ok()?;
        Some(t)
    } else {
        std::fs::read_to_string(path).ok()
    }
}

/// XProf's recorded outputs of one tool in a folder: `(variant, file)`, where the variant
/// is the part between `<tool>.` and the extension.
fn recorded(dir: &Path, tool: &str, extensions: &[&str]) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return out };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        let Some(rest) = name.strip_prefix(&format!("{tool}.")) else { continue };
        for ext in extensions {
            if let Some(variant) = rest.strip_suffix(ext) {
                out.push((variant.to_string(), entry.path()));
            }
        }
    }
    out.sort();
    out
}

fn request(tool: &str, module: &str, extra: &[(&str, &str)]) -> DataRequest {
    let mut params: BTreeMap<String, String> = BTreeMap::new();
    params.insert("module_name".into(), module.into());
    for (k, v) in extra {
        params.insert((*k).into(), (*v).into());
    }
    DataRequest { host: Some(module.into()), params, ..oxprof_api::registry::request(tool).unwrap() }
}

struct Tally {
    passed: usize,
    gaps: usize,
    failures: Vec<String>,
}

impl Tally {
    fn record(&mut self, variant: &str, case: &str, label: String, matched: bool, detail: impl FnOnce() -> String) {
        match (matched, is_known_gap(variant, case)) {
            (true, false) => self.passed += 1,
            (true, true) => self.failures.push(format!("{label}: matches XProf now; remove it from KNOWN_GAPS")),
            (false, true) => {
                eprintln!("KNOWN GAP {label}");
                self.gaps += 1;
            }
            (false, false) => self.failures.push(format!("{label}:\n{}", detail())),
        }
    }
}

#[test]
fn memory_viewer_equals_xprof() {
    let filter = std::env::var("OXPROF_GOLDEN_FILTER").unwrap_or_default();
    let show: usize = std::env::var("OXPROF_GOLDEN_SHOW").ok().and_then(|s| s.parse().ok()).unwrap_or(5);
    let mut tally = Tally { passed: 0, gaps: 0, failures: Vec::new() };
    for case in cases() {
        for (module, file) in recorded(&case.expected, "memory_viewer", &[".json", ".json.gz"]) {
            let label = format!("memory_viewer {} {module}", case.name);
            if !label.contains(&filter) {
                continue;
            }
            let Some(expected) = read_text(&file).and_then(|t| serde_json::from_str::<Value>(&t).ok()) else {
                tally.failures.push(format!("{label}: unreadable {}", file.display()));
                continue;
            };
            let actual = match data(&case.input, &request("memory_viewer", &module, &[("memory_space", "0")])) {
                Ok(r) => r.json.unwrap_or(Value::Null),
                Err(e) => {
                    tally.failures.push(format!("{label}: {e}"));
                    continue;
                }
            };
            let report = compare(&expected, &actual, CmpOptions::default());
            tally.record("memory_viewer", &case.name, label, report.is_match(), || report.summary(show));
        }
    }
    eprintln!(
        "memory_viewer golden: {} passed, {} failed, {} known gaps",
        tally.passed,
        tally.failures.len(),
        tally.gaps
    );
    assert!(
        tally.failures.is_empty(),
        "{} cases differ from XProf:\n{}",
        tally.failures.len(),
        tally.failures.join("\n")
    );
}

/// The allocation timeline page (`view_memory_allocation_timeline=1`), byte for byte.
#[test]
fn memory_viewer_timeline_equals_xprof() {
    let mut tally = Tally { passed: 0, gaps: 0, failures: Vec::new() };
    for case in cases() {
        for (module, file) in recorded(&case.expected, "memory_viewer", &[".timeline.html"]) {
            let label = format!("memory_viewer timeline {} {module}", case.name);
            let Some(expected) = read_text(&file) else { continue };
            let extra = [("memory_space", "0"), ("view_memory_allocation_timeline", "1")];
            let actual = match data(&case.input, &request("memory_viewer", &module, &extra)) {
                Ok(r) => {
                    assert_eq!(r.content_type, "text/html");
                    r.body
                }
                Err(e) => {
                    tally.failures.push(format!("{label}: {e}"));
                    continue;
                }
            };
            tally.record("timeline", &case.name, label, expected == actual, || first_difference(&expected, &actual));
        }
    }
    eprintln!("timeline golden: {} passed, {} failed", tally.passed, tally.failures.len());
    assert!(tally.passed > 0, "no timeline references found");
    assert!(tally.failures.is_empty(), "{}", tally.failures.join("\n"));
}

/// First differing line of two texts, for failure messages.
fn first_difference(expected: &str, actual: &str) -> String {
    let (e, a): (Vec<&str>, Vec<&str>) = (expected.lines().collect(), actual.lines().collect());
    for i in 0..e.len().max(a.len()) {
        let (x, y) = (e.get(i).copied().unwrap_or("<end>"), a.get(i).copied().unwrap_or("<end>"));
        if x != y {
            return format!("line {}:\n  expected {x}\n  actual   {y}", i + 1);
        }
    }
    format!("same lines; lengths {} vs {} bytes", expected.len(), actual.len())
}

#[test]
fn graph_viewer_text_equals_xprof() {
    let filter = std::env::var("OXPROF_GOLDEN_FILTER").unwrap_or_default();
    let mut tally = Tally { passed: 0, gaps: 0, failures: Vec::new() };
    for case in cases() {
        for (variant, file) in recorded(&case.expected, "graph_viewer", &[".txt", ".txt.gz"]) {
            let Some((module, kind)) = variant.rsplit_once('.') else { continue };
            if !["short_txt", "long_txt", "me_graph"].contains(&kind) {
                continue;
            }
            let label = format!("graph_viewer {} {module} {kind}", case.name);
            if !label.contains(&filter) {
                continue;
            }
            let Some(expected) = read_text(&file) else {
                tally.failures.push(format!("{label}: unreadable {}", file.display()));
                continue;
            };
            let node = if kind == "me_graph" { "" } else { "none" };
            let extra: Vec<(&str, &str)> =
                if node.is_empty() { vec![("type", kind), ("node_name", "")] } else { vec![("type", kind)] };
            let actual = match data(&case.input, &request("graph_viewer", module, &extra)) {
                Ok(r) => r.body,
                Err(e) => {
                    tally.failures.push(format!("{label}: {e}"));
                    continue;
                }
            };
            let matched = expected == actual;
            tally.record(kind, &case.name, label, matched, || first_difference(&expected, &actual));
        }
    }
    eprintln!(
        "graph_viewer golden: {} passed, {} failed, {} known gaps",
        tally.passed,
        tally.failures.len(),
        tally.gaps
    );
    assert!(
        tally.failures.is_empty(),
        "{} cases differ from XProf:\n{}",
        tally.failures.len(),
        tally.failures.join("\n")
    );
}

/// `type=pbtxt`: the `HloProto` in protobuf text format, byte for byte.
#[test]
fn graph_viewer_pbtxt_equals_xprof() {
    let filter = std::env::var("OXPROF_GOLDEN_FILTER").unwrap_or_default();
    let mut tally = Tally { passed: 0, gaps: 0, failures: Vec::new() };
    for case in cases() {
        for (variant, file) in recorded(&case.expected, "graph_viewer", &[".txt", ".txt.gz"]) {
            let Some(module) = variant.strip_suffix(".pbtxt") else { continue };
            let label = format!("graph_viewer {} {module} pbtxt", case.name);
            if !label.contains(&filter) {
                continue;
            }
            let Some(expected) = read_text(&file) else {
                tally.failures.push(format!("{label}: unreadable {}", file.display()));
                continue;
            };
            let actual = match data(&case.input, &request("graph_viewer", module, &[("type", "pbtxt")])) {
                Ok(r) => {
                    assert_eq!(r.content_type, "application/octet-stream");
                    r.body
                }
                Err(e) => {
                    tally.failures.push(format!("{label}: {e}"));
                    continue;
                }
            };
            tally.record("pbtxt", &case.name, label, expected == actual, || first_difference(&expected, &actual));
        }
    }
    eprintln!("graph_viewer pbtxt golden: {} passed, {} failed", tally.passed, tally.failures.len());
    assert!(tally.passed >= 4, "no pbtxt references found");
    assert!(tally.failures.is_empty(), "{}", tally.failures.join("\n"));
}

/// `type=pb`: the proto's bytes. XProf re-serializes the parsed proto, which writes map
/// entries (the schedule's sequences) in hash order: equal bytes, or equal length and equal
/// content (the text format sorts map entries).
#[test]
fn graph_viewer_pb_equals_xprof() {
    let mut tally = Tally { passed: 0, gaps: 0, failures: Vec::new() };
    let mut byte_equal = 0;
    for case in cases() {
        for (variant, file) in recorded(&case.expected, "graph_viewer", &[".bin", ".txt"]) {
            let Some(module) = variant.strip_suffix(".pb") else { continue };
            let label = format!("graph_viewer {} {module} pb", case.name);
            let Ok(expected) = std::fs::read(&file) else {
                tally.failures.push(format!("{label}: unreadable {}", file.display()));
                continue;
            };
            let req = request("graph_viewer", module, &[("type", "pb")]);
            let session = oxprof_api::data::one_shot_session(&case.input).unwrap();
            let run = session.run(req.run.as_deref()).unwrap();
            let actual = match graph_viewer_proto_bytes(&session, &run, &req) {
                Ok(bytes) => bytes,
                Err(e) => {
                    tally.failures.push(format!("{label}: {e}"));
                    continue;
                }
            };
            let text = |b: &[u8]| oxprof_xprof::tools::graph_viewer::proto_text(b).unwrap_or_default();
            let same = expected == actual;
            byte_equal += usize::from(same);
            let matched = same || (expected.len() == actual.len() && text(&expected) == text(&actual));
            tally.record("pb", &case.name, label, matched, || {
                format!(
                    "{} vs {} bytes; {}",
                    expected.len(),
                    actual.len(),
                    first_difference(&text(&expected), &text(&actual))
                )
            });
            // Through `data`, a text body: the empty proto only.
            if expected.is_empty() {
                assert_eq!(data(&case.input, &req).map(|r| r.body).ok(), Some(String::new()), "{module}");
            }
        }
    }
    eprintln!(
        "graph_viewer pb golden: {} passed ({byte_equal} byte for byte), {} failed",
        tally.passed,
        tally.failures.len()
    );
    assert!(tally.passed >= 4, "no pb references found");
    assert!(tally.failures.is_empty(), "{}", tally.failures.join("\n"));
}

/// A DOT graph with what XProf randomizes made comparable: node and cluster ids (XLA's
/// memory addresses) renamed by first appearance, and the stylesheet's hover rules (in
/// XLA's hash-map order) sorted.
fn normalized_dot(dot: &str) -> (String, Vec<String>) {
    let (dot, rules) = match (dot.find("stylesheet=<\n"), dot.find("\n>\n")) {
        (Some(start), Some(end)) if start < end => {
            let css = &dot[start + "stylesheet=<\n".len()..end];
            let (head, rest) = css.split_once("  }\n\n").unwrap_or((css, ""));
            let mut rules: Vec<String> =
                rest.split("\n\n").map(|r| r.trim().to_string()).filter(|r| !r.is_empty()).collect();
            rules.sort();
            (format!("{}{head}  }}\n\n<RULES>{}", &dot[..start + "stylesheet=<\n".len()], &dot[end..]), rules)
        }
        _ => (dot.to_string(), Vec::new()),
    };
    let mut ids: BTreeMap<(char, String), String> = BTreeMap::new();
    let mut counts = [0usize; 2];
    let mut rename = |kind: char, id: &str| -> String {
        let slot = usize::from(kind == 'C');
        ids.entry((kind, id.to_string()))
            .or_insert_with(|| {
                counts[slot] += 1;
                format!("{kind}{}", counts[slot])
            })
            .clone()
    };
    let mut out = Vec::new();
    for line in dot.split('\n') {
        // `cluster_<id>` anywhere (subgraphs, ltail, the root tag).
        let mut text = String::new();
        let mut rest = line;
        while let Some(at) = rest.find("cluster_") {
            text.push_str(&rest[..at + "cluster_".len()]);
            rest = &rest[at + "cluster_".len()..];
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            if digits > 0 {
                text.push_str(&rename('C', &rest[..digits]));
                rest = &rest[digits..];
            }
        }
        text.push_str(rest);
        // `<id> [label=` and `<id> -> <id> [`.
        let mut words: Vec<String> = text.splitn(4, ' ').map(str::to_string).collect();
        let numeric = |w: &str| !w.is_empty() && w.bytes().all(|b| b.is_ascii_digit());
        if words.len() >= 2 && numeric(&words[0]) && words[1].starts_with("[label=") {
            words[0] = rename('N', &words[0]);
        } else if words.len() >= 3 && words[1] == "->" {
            for i in [0, 2] {
                if numeric(&words[i]) {
                    words[i] = rename('N', &words[i]);
                }
            }
        }
        out.push(words.join(" "));
    }
    (out.join("\n"), rules)
}

/// The DOT inside XProf's graph page, and the page around it.
fn split_graph_page(html: &str) -> Option<(String, &str)> {
    const OPEN: &str = "const data = `";
    const CLOSE: &str = "`;\n    const results";
    let start = html.find(OPEN)? + OPEN.len();
    let end = html.find(CLOSE)?;
    (start <= end).then(|| (format!("{}{}", &html[..start], &html[end..]), &html[start..end]))
}

/// The ROOT instruction of the ENTRY computation in HLO text (the node refkit asks for).
fn entry_root(hlo_text: &str) -> Option<String> {
    let mut in_entry = false;
    for line in hlo_text.lines() {
        if line.starts_with("ENTRY ") {
            in_entry = true;
        } else if in_entry && line.trim().starts_with("ROOT ") {
            return line.split_whitespace().nth(1).map(str::to_string);
        } else if in_entry && line.starts_with('}') {
            break;
        }
    }
    None
}

/// `type=graph&format=html` (XProf's Graphviz page of the neighbourhood of the entry's
/// root, `graph_width=3`): the page byte for byte, the DOT modulo what XProf randomizes
/// (see [`normalized_dot`]); `type=dot` is the same DOT. Also the references of a full
/// refkit run (`../refdata/<profile>/xprof_out`) when present.
#[test]
fn graph_viewer_graph_equals_xprof() {
    let filter = std::env::var("OXPROF_GOLDEN_FILTER").unwrap_or_default();
    let mut tally = Tally { passed: 0, gaps: 0, failures: Vec::new() };
    let mut all = cases();
    let refdata = repo_root().join("../refdata/tpu_inference_2/xprof_out");
    if let Some(tpu) = all.iter().find(|c| c.name == "openxla-xprof/tpu_inference_2").map(|c| c.input.clone())
        && refdata.is_dir()
    {
        all.push(Case { name: "refdata/tpu_inference_2".into(), input: tpu, expected: refdata });
    }
    for case in all {
        for (variant, file) in recorded(&case.expected, "graph_viewer", &[".html", ".html.gz"]) {
            let Some(module) = variant.strip_suffix(".graph") else { continue };
            let label = format!("graph_viewer {} {module} graph", case.name);
            if !label.contains(&filter) {
                continue;
            }
            let Some(expected) = read_text(&file) else {
                tally.failures.push(format!("{label}: unreadable {}", file.display()));
                continue;
            };
            let short = data(&case.input, &request("graph_viewer", module, &[("type", "short_txt")]));
            let Some(node) = short.ok().and_then(|r| entry_root(&r.body)) else {
                tally.failures.push(format!("{label}: no entry root"));
                continue;
            };
            let extra = [("type", "graph"), ("node_name", node.as_str()), ("format", "html"), ("graph_width", "3")];
            let page = match data(&case.input, &request("graph_viewer", module, &extra)) {
                Ok(r) => {
                    assert_eq!(r.content_type, "text/html");
                    r.body
                }
                Err(e) => {
                    tally.failures.push(format!("{label}: {e}"));
                    continue;
                }
            };
            let dot = data(&case.input, &request("graph_viewer", module, &[("type", "dot"), ("node_name", &node)]))
                .map(|r| r.body)
                .unwrap_or_default();
            let (Some((expected_frame, expected_dot)), Some((frame, actual_dot))) =
                (split_graph_page(&expected), split_graph_page(&page))
            else {
                tally.failures.push(format!("{label}: no DOT in the page"));
                continue;
            };
            let (e, a) = (normalized_dot(expected_dot), normalized_dot(actual_dot));
            let matched = expected_frame == frame && e == a && dot == actual_dot;
            tally.record("graph", &case.name, label, matched, || {
                if expected_frame != frame {
                    format!("page: {}", first_difference(&expected_frame, &frame))
                } else if e.0 != a.0 {
                    format!("dot: {}", first_difference(&e.0, &a.0))
                } else if e.1 != a.1 {
                    format!("stylesheet rules differ ({} vs {})", e.1.len(), a.1.len())
                } else {
                    "type=dot differs from the page's DOT".into()
                }
            });
        }
    }
    eprintln!("graph_viewer graph golden: {} passed, {} failed", tally.passed, tally.failures.len());
    assert!(tally.passed >= 3, "no graph references found");
    assert!(tally.failures.is_empty(), "{}", tally.failures.join("\n"));
}

/// The graph view's parameters and errors: XProf's message for unknown nodes, a
/// computation's name draws the whole computation, and hostile module names are refused.
#[test]
fn graph_viewer_graph_parameters_and_errors() {
    let dir = repo_root().join("testdata/profiles/jax_train");
    let module = "jit_train_step(26)";
    let err =
        data(&dir, &request("graph_viewer", module, &[("type", "dot"), ("node_name", "no_such_node")])).unwrap_err();
    assert!(err.to_string().contains("Couldn't find HloInstruction or HloComputation named no_such_node."), "{err}");
    assert_eq!(err.http_status(), 400);
    let err = data(&dir, &request("graph_viewer", module, &[("type", "graph")])).unwrap_err();
    assert!(err.to_string().contains("node_name should not be empty"), "{err}");
    let err =
        data(&dir, &request("graph_viewer", module, &[("type", "graph"), ("node_name", "tuple.5"), ("format", "url")]))
            .unwrap_err();
    assert_eq!(err.http_status(), 400);
    for hostile in ["../secret", "/etc/passwd", ".."] {
        let err =
            data(&dir, &request("graph_viewer", hostile, &[("type", "dot"), ("node_name", "tuple.5")])).unwrap_err();
        assert!(err.to_string().contains("no HLO module"), "{hostile}: {err}");
    }
    // Names match case-insensitively and with a leading `%`, as in XProf.
    let a = data(&dir, &request("graph_viewer", module, &[("type", "dot"), ("node_name", "tuple.5")])).unwrap();
    let b = data(&dir, &request("graph_viewer", module, &[("type", "dot"), ("node_name", "%TUPLE.5")])).unwrap();
    assert_eq!(a.content_type, "text/plain");
    assert_eq!(a.body, b.body);
    assert!(a.body.starts_with("digraph G {\n"), "{}", a.body);
    assert!(a.body.contains("label = <<b>Neighborhood of 3 nodes around tuple.5<br/>Computation "), "{}", a.body);
    // A wider neighbourhood draws more; merged fusions draw no fused clusters.
    let wide = data(
        &dir,
        &request("graph_viewer", module, &[("type", "dot"), ("node_name", "tuple.5"), ("graph_width", "6")]),
    )
    .unwrap();
    assert!(wide.body.len() > a.body.len());
    let merged = data(
        &dir,
        &request("graph_viewer", module, &[("type", "dot"), ("node_name", "tuple.5"), ("merge_fusion", "true")]),
    )
    .unwrap();
    assert!(!merged.body.contains("Fused expression for"), "{}", merged.body);
    // A computation's name draws the computation whole, with an empty label.
    let entry = data(&dir, &request("graph_viewer", module, &[("type", "short_txt")])).unwrap();
    let entry_name = entry
        .body
        .lines()
        .find_map(|l| l.strip_prefix("ENTRY "))
        .and_then(|l| l.split_whitespace().next())
        .unwrap()
        .to_string();
    let whole = data(&dir, &request("graph_viewer", module, &[("type", "dot"), ("node_name", &entry_name)])).unwrap();
    assert!(
        whole.body.contains(&format!("label = <<b><br/>Computation {entry_name}<br/>ENTRY computation</b>>;")),
        "{}",
        whole.body
    );
}

/// `type=adj_nodes`, compared with XProf 2.24.2's answers recorded with the refkit
/// (`raw_to_tool_data.xspace_to_tool_data(.., "graph_viewer", {type: adj_nodes, ..})`).
#[test]
fn adjacent_nodes_equal_xprof() {
    let dir = repo_root().join("testdata/profiles/jax_train");
    let recorded = [
        (
            "broadcast_maximum_fusion",
            r#"{"consumer_names":["ynn_fusion.5","dot.1"],"operand_names":["ynn_fusion.6","p__b1__.1"]}"#,
        ),
        (
            "add_maximum_fusion",
            r#"{"consumer_names":["ynn_fusion.4","dot.2"],"operand_names":["ynn_fusion.5","p__b2__.1"]}"#,
        ),
        (
            "tuple.5",
            r#"{"consumer_names":[],"operand_names":["multiply_subtract_fusion.5","multiply_subtract_fusion.4","multiply_subtract_fusion.3","multiply_subtract_fusion.2","multiply_subtract_fusion.1","multiply_subtract_fusion","multiply_negate_fusion"]}"#,
        ),
    ];
    for (node, expected) in recorded {
        let r =
            data(&dir, &request("graph_viewer", "jit_train_step(26)", &[("type", "adj_nodes"), ("node_name", node)]))
                .unwrap();
        assert_eq!((r.content_type, r.body.as_str()), ("text/plain", expected), "{node}");
    }
}

#[test]
fn runs_without_hlo_list_no_module_like_xprof() {
    let dir = repo_root().join("testdata/profiles/tf_custom_loop");
    let list = data(&dir, &DataRequest::new(ToolId::MODULE_LIST)).unwrap();
    assert_eq!((list.content_type, list.body.as_str()), ("text/plain", "NO_MODULE"));
    // XProf's memory viewer on its empty `NO_MODULE` proto answers `{}`.
    let mv = data(&dir, &request("memory_viewer", "NO_MODULE", &[])).unwrap();
    assert_eq!(mv.body, "{}");
    assert!(!mv.notes.is_empty());
    // pbtxt/pb of the empty proto are empty; the text views fail like XProf's.
    let pbtxt = data(&dir, &request("graph_viewer", "NO_MODULE", &[("type", "pbtxt")])).unwrap();
    assert_eq!(pbtxt.body, "");
    let err = data(&dir, &request("graph_viewer", "NO_MODULE", &[("type", "short_txt")])).unwrap_err();
    assert!(err.to_string().contains("No HLO module found in the HLO proto"), "{err}");
}

#[test]
fn module_list_names_modules_with_program_ids() {
    let dir = repo_root().join("testdata/profiles/jax_train");
    let list = data(&dir, &DataRequest::new(ToolId::MODULE_LIST)).unwrap();
    let names: Vec<&str> = list.body.split(',').collect();
    // XProf's tool_names step writes 16 module files for this run (xprof_out/index.json).
    assert_eq!(names.len(), 16, "{}", list.body);
    assert!(names.contains(&"jit_train_step(26)"));
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
}

/// Module names that are not modules of the run are refused before any file is read:
/// path separators, `..`, absolute paths, and names of files that exist elsewhere.
#[test]
fn hostile_module_names_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("plugins/profile/run1");
    std::fs::create_dir_all(&run).unwrap();
    let source = repo_root().join("testdata/profiles/tf_custom_loop");
    let xplane = walk(&source).into_iter().find(|p| p.to_string_lossy().ends_with(".xplane.pb.gz")).unwrap();
    std::fs::copy(&xplane, run.join("vm.xplane.pb.gz")).unwrap();
    // A module file outside the run directory that a traversal would reach.
    std::fs::write(tmp.path().join("plugins/profile/secret.hlo_proto.pb"), b"not yours").unwrap();
    std::fs::write(run.join("m1.hlo_proto.pb"), b"").unwrap();
    for hostile in
        ["../secret", "../../profile/secret", "/etc/passwd", "..", "/", "m1/../m1", "m1.hlo_proto.pb", "secret"]
    {
        for tool in ["memory_viewer", "graph_viewer"] {
            let r = data(tmp.path(), &request(tool, hostile, &[("type", "short_txt")]));
            let err = r.err().unwrap_or_else(|| panic!("{tool} accepted module name {hostile:?}"));
            assert!(err.to_string().contains("no HLO module"), "{tool} {hostile:?}: {err}");
            assert_eq!(err.http_status(), 400);
        }
    }
    // The side-car module itself is served (an empty proto: `{}` like XProf).
    let ok = data(tmp.path(), &request("memory_viewer", "m1", &[])).unwrap();
    assert_eq!(ok.body, "{}");
    let list = data(tmp.path(), &DataRequest::new(ToolId::MODULE_LIST)).unwrap();
    assert_eq!(list.body, "m1");
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}
