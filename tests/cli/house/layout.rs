//! The house keeps its shape: dependencies between the modules of `src/` point one way (no module imports,
//! through others, a module that imports it), and docs/ARCHITECTURE.md names only paths that exist.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file under `src/`: `grade/mod.rs` → `grade`, `grade/runner.rs` → `grade::runner`.
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if parts
        .last()
        .is_some_and(|p| p == "mod" || p == "main" || p == "lib")
    {
        parts.pop();
    }
    parts.join("::")
}

/// The code of a file without its unit tests (`#[cfg(test)]` to the end, by this house's habit) and
/// without comments.
fn code_of(text: &str) -> String {
    let text = match text.find("#[cfg(test)]") {
        Some(at) => &text[..at],
        None => text,
    };
    text.lines()
        .map(|l| match l.find("//") {
            Some(at) => &l[..at],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The modules a file's code names through `crate::` and `super::` paths, resolved to the longest
/// module that exists.
fn imports(module: &str, code: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let parent: Vec<&str> = module.split("::").filter(|p| !p.is_empty()).collect();
    for (at, _) in code
        .match_indices("crate::")
        .chain(code.match_indices("super::"))
    {
        let rest = &code[at..];
        let path: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':' || *c == '{')
            .collect();
        let path = path.trim_end_matches(['{', ':']);
        let mut parts: Vec<String> = path.split("::").map(str::to_string).collect();
        let base: Vec<String> = match parts.first().map(String::as_str) {
            Some("crate") => Vec::new(),
            Some("super") => {
                // `super` of a file module is its parent folder's module; of `mod.rs`, the folder's parent.
                let mut base: Vec<String> = parent.iter().map(|s| s.to_string()).collect();
                let mut supers = 0;
                while parts.first().is_some_and(|p| p == "super") {
                    parts.remove(0);
                    supers += 1;
                }
                for _ in 0..supers {
                    base.pop();
                }
                parts.insert(0, "crate".into());
                base
            }
            _ => continue,
        };
        let tail: Vec<String> = parts.into_iter().skip(1).collect();
        // The longest prefix that names a module of the house.
        for len in (1..=tail.len()).rev() {
            let candidate = base
                .iter()
                .chain(&tail[..len])
                .cloned()
                .collect::<Vec<_>>()
                .join("::");
            if modules.contains(&candidate) {
                if candidate != module {
                    found.insert(candidate);
                }
                break;
            }
        }
    }
    found
}

/// The strongly connected groups of more than one module (Tarjan).
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        next: usize,
        found: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on_stack.insert(v);
        let graph = s.graph;
        for w in graph.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut group = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                group.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if group.len() > 1 {
                group.sort();
                s.found.push(group);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.found
}

#[test]
fn no_module_of_src_imports_its_way_back_to_itself() {
    let src = repo().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let modules: BTreeSet<String> = files.iter().map(|f| module_of(&src, f)).collect();
    let mut graph = BTreeMap::new();
    for file in &files {
        let module = module_of(&src, file);
        let code = code_of(&std::fs::read_to_string(file).unwrap());
        graph.insert(module.clone(), imports(&module, &code, &modules));
    }
    let found = cycles(&graph);
    let shown: Vec<String> = found
        .iter()
        .map(|group| {
            let ties: Vec<String> = group
                .iter()
                .flat_map(|a| {
                    graph[a]
                        .iter()
                        .filter(|b| group.contains(b))
                        .map(move |b| format!("{a} -> {b}"))
                })
                .collect();
            format!("{}: {}", group.join(", "), ties.join("; "))
        })
        .collect();
    assert!(
        found.is_empty(),
        "import cycles in src/:\n  {}",
        shown.join("\n  ")
    );
}

#[test]
fn the_cycle_finder_finds_a_cycle_and_names_nothing_else() {
    let modules: BTreeSet<String> = ["a", "b", "c", "d::e"].map(String::from).into();
    let edges = |m: &str, code: &str| imports(m, &code_of(code), &modules);
    assert_eq!(edges("a", "use crate::b::Thing;"), ["b".to_string()].into());
    assert_eq!(
        edges("d::e", "use super::super::c;"),
        ["c".to_string()].into()
    );
    assert_eq!(edges("a", "// use crate::b;"), BTreeSet::new());
    let mut graph = BTreeMap::new();
    graph.insert("a".to_string(), edges("a", &code_of("use crate::b::X;")));
    graph.insert("b".to_string(), edges("b", &code_of("use crate::a::Y;")));
    graph.insert(
        "c".to_string(),
        edges("c", &code_of("use crate::a;\n#[cfg(test)]\nuse crate::c;")),
    );
    assert_eq!(cycles(&graph), vec![vec!["a".to_string(), "b".to_string()]]);
}

/// The files of a practice directory's `src/` that docs/ARCHITECTURE.md names in its practice maps.
const PRACTICE_FILES: &[&str] = &["src/lib.rs", "src/agent_loop.rs", "src/agent-loop.ts"];

/// The top folders of this repository; a path a document names starts with one of them.
const TOP: &[&str] = &[
    "src/",
    "tests/",
    "harness/",
    "harness-node/",
    "chapters/",
    "docs/",
    "scripts/",
    "benches/",
    "templates/",
    "snapshots/",
    ".ci/",
];

/// Where a practice directory's given files come from: a path a document names may be one of those
/// (`tests/ch07.rs`, `harness/run.mjs`), as a learner sees it.
fn practice_roots() -> Vec<PathBuf> {
    let mut roots = vec![repo().join("harness-node")];
    for chapter in std::fs::read_dir(repo().join("chapters")).unwrap() {
        let chapter = chapter.unwrap().path();
        roots.extend([chapter.join("files"), chapter.join("typescript/files")]);
    }
    for snapshot in std::fs::read_dir(repo().join("snapshots")).unwrap() {
        roots.push(snapshot.unwrap().path());
    }
    roots
}

/// Every path under one of the [`TOP`] folders that `text` names: at the start of a word, up to the
/// first character a path does not hold; patterns (`*`, `<n>`, `{chapter}`) are left out.
fn paths_named(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for top in TOP {
        for (at, _) in text.match_indices(top) {
            if at > 0
                && text[..at]
                    .chars()
                    .last()
                    .is_some_and(|c| c.is_alphanumeric() || matches!(c, '/' | '-' | '_' | '.'))
            {
                continue;
            }
            let path: String = text[at..]
                .chars()
                .take_while(|c| {
                    c.is_alphanumeric() || matches!(c, '/' | '_' | '.' | '-' | '*' | '<' | '{')
                })
                .collect();
            let path = path.trim_end_matches(['.', '-']);
            if path.len() <= top.len() || path.contains(['*', '<', '{']) {
                continue;
            }
            out.push(path.to_string());
        }
    }
    out
}

/// Every document of the house (docs/, the README, CONTRIBUTING.md) names only paths that exist: in this
/// repository, or in a practice directory as a learner gets it.
#[test]
fn every_path_a_document_names_exists() {
    let mut documents = vec![repo().join("README.md"), repo().join("CONTRIBUTING.md")];
    for entry in std::fs::read_dir(repo().join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            documents.push(path);
        }
    }
    let roots = practice_roots();
    let mut missing = Vec::new();
    let mut named = 0;
    for document in &documents {
        let text = std::fs::read_to_string(document)
            .unwrap_or_else(|e| panic!("{}: {e}", document.display()));
        for path in paths_named(&text) {
            named += 1;
            let exists = repo().join(&path).exists()
                || PRACTICE_FILES.contains(&path.as_str())
                || roots.iter().any(|r| r.join(&path).exists());
            if !exists {
                missing.push(format!(
                    "{}: {path}",
                    document.strip_prefix(repo()).unwrap().display()
                ));
            }
        }
    }
    assert!(named > 50, "the documents name {named} paths");
    assert!(
        missing.is_empty(),
        "documents name paths that do not exist:\n{}",
        missing.join("\n")
    );
}

/// The finder of named paths sees a path at a word's start, and nothing inside another word or a pattern.
#[test]
fn the_path_finder_takes_paths_and_leaves_patterns() {
    let text = "see `src/grade/runner.rs`, docs/JUDGE.md. and my-src/x.rs, \
                chapters/<n>/files and test/07-*.test.ts";
    assert_eq!(paths_named(text), ["src/grade/runner.rs", "docs/JUDGE.md"]);
}
