//! The API's modules use each other one way: no import circle. Each top-level module's
//! code (comments left out) names the modules it uses as `crate::<module>`; the graph
//! they form must be acyclic, so a module can be read (and tested) above the ones it uses.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Each top-level module of `src/` with the text of its code (a directory module's files
/// together), comment lines left out.
fn modules() -> BTreeMap<String, String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = BTreeMap::new();
    let code = |path: &Path| {
        let text = std::fs::read_to_string(path).unwrap();
        text.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n")
    };
    for entry in std::fs::read_dir(&src).unwrap().flatten() {
        let path = entry.path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            let mut text = String::new();
            let mut files: Vec<_> = std::fs::read_dir(&path).unwrap().flatten().map(|e| e.path()).collect();
            files.sort();
            for file in files.iter().filter(|f| f.extension().is_some_and(|e| e == "rs")) {
                text.push_str(&code(file));
            }
            out.entry(name).or_insert_with(String::new).push_str(&text);
        } else if path.extension().is_some_and(|e| e == "rs") && name != "lib" {
            out.entry(name).or_insert_with(String::new).push_str(&code(&path));
        }
    }
    out
}

fn uses(text: &str, modules: &BTreeSet<String>, own: &str) -> BTreeSet<String> {
    text.match_indices("crate::")
        .map(|(i, _)| {
            text[i + "crate::".len()..].chars().take_while(|c| c.is_ascii_lowercase() || *c == '_').collect::<String>()
        })
        .filter(|m| modules.contains(m) && m != own)
        .collect()
}

/// A circle in `graph`, if there is one (its modules in order).
fn circle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        done: &mut BTreeSet<String>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut found = path[at..].to_vec();
            found.push(node.to_string());
            return Some(found);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(found) = visit(next, graph, done, path) {
                return Some(found);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph.keys().find_map(|node| visit(node, graph, &mut done, &mut Vec::new()))
}

#[test]
fn modules_use_each_other_one_way() {
    let modules = modules();
    let names: BTreeSet<String> = modules.keys().cloned().collect();
    let graph: BTreeMap<String, BTreeSet<String>> =
        modules.iter().map(|(name, text)| (name.clone(), uses(text, &names, name))).collect();
    assert!(graph.len() > 10, "{graph:?}");
    // The request vocabulary and the catalog are leaves every layer may use.
    assert!(graph["request"].iter().all(|m| m == "catalog"), "{:?}", graph["request"]);
    assert!(graph["catalog"].is_empty(), "{:?}", graph["catalog"]);
    assert_eq!(circle(&graph), None, "an import circle among oxprof-api's modules");
}

#[test]
fn a_circle_is_found() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a".to_string(), BTreeSet::from(["b".to_string()])),
        ("b".to_string(), BTreeSet::from(["c".to_string()])),
        ("c".to_string(), BTreeSet::from(["a".to_string()])),
    ]
    .into_iter()
    .collect();
    assert_eq!(circle(&graph), Some(vec!["a".into(), "b".into(), "c".into(), "a".into()]));
}
