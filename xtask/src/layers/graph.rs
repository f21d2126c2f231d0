//! The import graph: files reached from `lib.rs` are nodes, resolved paths are edges,
//! and the strongly connected components of two or more files are the import cycles.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::SourceFile;
use super::parse::{ParseError, Parsed, RawRef, parse};

/// A file of the crate: a node of the import graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileNode {
    /// Path relative to the source directory (`world/mod.rs`).
    pub path: String,
    /// Module path from the crate root (`world::snapshot`; `crate` for `lib.rs`).
    pub module: String,
}

/// A source file that is not a node, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    /// Path relative to the source directory.
    pub path: String,
    /// Why it is not part of the graph.
    pub why: &'static str,
}

/// An edge `from -> to` between two files, with the names that create it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edge {
    /// Index of the importing file in [`Analysis::files`].
    pub from: usize,
    /// Index of the imported file.
    pub to: usize,
    /// The names `from` takes from `to` (the first segment after the module's path; a
    /// macro ends in `!`, a glob is `*`, the module itself is its own name), sorted.
    pub names: Vec<String>,
}

/// The import graph of a crate's source directory.
#[derive(Clone, Debug)]
pub struct Analysis {
    /// Every file reached from `lib.rs` through non-test `mod` declarations, by path.
    pub files: Vec<FileNode>,
    /// Source files left out of the graph.
    pub skipped: Vec<Skipped>,
    /// Every edge, sorted by `(from, to)`.
    pub edges: Vec<Edge>,
    /// Strongly connected components of two or more files (import cycles): file indices,
    /// sorted; the components largest first (ties by first file).
    pub cycles: Vec<Vec<usize>>,
}

impl Analysis {
    /// The size of the largest import cycle in files, 0 if there is none.
    pub fn largest_cycle(&self) -> usize {
        self.cycles.first().map_or(0, Vec::len)
    }

    /// The edges between files of `component`, sorted.
    pub fn edges_within(&self, component: &[usize]) -> Vec<&Edge> {
        self.edges
            .iter()
            .filter(|e| component.contains(&e.from) && component.contains(&e.to))
            .collect()
    }

    /// The index of the file with module path `module` (`crate` for the root).
    pub fn file_of(&self, module: &str) -> Option<usize> {
        self.files.iter().position(|f| f.module == module)
    }

    /// The edge `from -> to` between two modules, if any.
    pub fn edge(&self, from: &str, to: &str) -> Option<&Edge> {
        let (from, to) = (self.file_of(from)?, self.file_of(to)?);
        self.edges.iter().find(|e| e.from == from && e.to == to)
    }
}

/// The module path of a source file: `lib.rs` is `[]`, `a/mod.rs` and `a.rs` are `[a]`,
/// `a/b.rs` is `[a, b]`; `None` for `main.rs` and files under `bin/`.
pub(super) fn module_of(path: &str) -> Option<Vec<String>> {
    if path == "lib.rs" {
        return Some(Vec::new());
    }
    if path == "main.rs" || path.starts_with("bin/") {
        return None;
    }
    let mut segs: Vec<String> = path
        .strip_suffix(".rs")?
        .split('/')
        .map(str::to_owned)
        .collect();
    if segs.last().is_some_and(|s| s == "mod") {
        segs.pop();
    }
    (!segs.is_empty()).then_some(segs)
}

/// `crate` for the root, else the segments joined by `::`.
pub(super) fn module_name(m: &[String]) -> String {
    if m.is_empty() {
        "crate".to_owned()
    } else {
        m.join("::")
    }
}

/// Builds the import graph of the files of one crate's source directory (paths relative
/// to it; `lib.rs` is the root). Every file is parsed, test-only ones included, so a
/// broken one is reported.
pub fn analyze(sources: &[SourceFile]) -> Result<Analysis, ParseError> {
    let mut by_module: HashMap<Vec<String>, usize> = HashMap::new();
    let mut parsed: Vec<Option<Parsed>> = Vec::with_capacity(sources.len());
    let mut skipped = Vec::new();
    for (k, src) in sources.iter().enumerate() {
        let module = module_of(&src.path);
        let p = parse(&src.text, module.as_deref().unwrap_or_default()).map_err(
            |(line, message)| ParseError {
                path: src.path.clone(),
                line,
                message,
            },
        )?;
        let why = match module {
            None => "not a library module",
            Some(m) if by_module.contains_key(&m) => "a second file for the same module",
            Some(m) => {
                by_module.insert(m, k);
                parsed.push(Some(p));
                continue;
            }
        };
        let path = src.path.clone();
        skipped.push(Skipped { path, why });
        parsed.push(None);
    }

    // Reach files from the root through `mod` declarations.
    let (mut included, mut test_files) = (BTreeSet::new(), BTreeSet::new());
    let mut stack: Vec<(usize, bool)> = by_module
        .get(&Vec::new())
        .map(|&r| (r, false))
        .into_iter()
        .collect();
    while let Some((k, test)) = stack.pop() {
        let Some(p) = &parsed[k] else { continue };
        let test = test || p.test_only;
        if (if test { &mut test_files } else { &mut included }).insert(k) {
            let children = p
                .decls
                .iter()
                .filter_map(|d| Some((*by_module.get(&d.module)?, test || d.test)));
            stack.extend(children);
        }
    }
    for (k, src) in sources.iter().enumerate() {
        if parsed[k].is_some() && !included.contains(&k) {
            let why = if test_files.contains(&k) {
                "test-only (#[cfg(test)])"
            } else {
                "not declared by any module"
            };
            skipped.push(Skipped {
                path: src.path.clone(),
                why,
            });
        }
    }
    skipped.sort_by(|a, b| a.path.cmp(&b.path));

    // Nodes, sorted by path (as `sources` is not required to be).
    let mut order: Vec<usize> = included.into_iter().collect();
    order.sort_by(|&a, &b| sources[a].path.cmp(&sources[b].path));
    let files: Vec<FileNode> = order
        .iter()
        .map(|&k| FileNode {
            path: sources[k].path.clone(),
            module: module_name(&module_of(&sources[k].path).unwrap_or_default()),
        })
        .collect();
    let node: HashMap<Vec<String>, usize> = (order.iter().enumerate())
        .map(|(n, &k)| (module_of(&sources[k].path).unwrap_or_default(), n))
        .collect();

    // Whole external crates the root names as modules (not file modules of its own).
    let root = by_module.get(&Vec::new()).and_then(|&r| parsed[r].as_ref());
    let aliases: BTreeSet<&String> = (root.into_iter().flat_map(|p| &p.extern_aliases))
        .filter(|a| !node.contains_key(&vec![(*a).clone()]))
        .collect();

    let mut edges: BTreeMap<(usize, usize), BTreeSet<String>> = BTreeMap::new();
    for (n, &k) in order.iter().enumerate() {
        for r in parsed[k].iter().flat_map(|p| &p.refs) {
            if let Some((to, name)) = resolve(r, &node, &aliases).filter(|&(to, _)| to != n) {
                edges.entry((n, to)).or_default().insert(name);
            }
        }
    }
    let edges: Vec<Edge> = (edges.into_iter())
        .map(|((from, to), names)| Edge {
            from,
            to,
            names: names.into_iter().collect(),
        })
        .collect();
    let cycles = cycles(files.len(), &edges);
    Ok(Analysis {
        files,
        skipped,
        edges,
        cycles,
    })
}

/// The file a path names (the deepest file module on it) and the name it takes from it;
/// `None` for a path outside the crate's files.
fn resolve(
    r: &RawRef,
    node: &HashMap<Vec<String>, usize>,
    aliases: &BTreeSet<&String>,
) -> Option<(usize, String)> {
    let (base, rest) = match r.segs[0].as_str() {
        "crate" => (&[][..], &r.segs[1..]),
        first @ ("self" | "super") => {
            let skip = usize::from(first == "self");
            let up = r.segs[skip..].iter().take_while(|s| *s == "super").count();
            (
                &r.scope[..r.scope.len().checked_sub(up)?],
                &r.segs[skip + up..],
            )
        }
        // A child module of the scope, else an external crate, a type, a local name.
        first => {
            let child = [&r.scope[..], &[first.to_owned()]].concat();
            node.contains_key(&child)
                .then_some((&r.scope[..], &r.segs[..]))?
        }
    };
    let abs = [base, rest].concat();
    if abs.first().is_some_and(|m| aliases.contains(m)) {
        return None; // another crate's item, reached through the root's alias
    }
    let depth = (0..=abs.len())
        .take_while(|&d| node.contains_key(&abs[..d]))
        .last()?;
    let rest = &abs[depth..];
    let name = match rest.first() {
        Some(first) if r.mac && rest.len() == 1 => format!("{first}!"),
        Some(first) => first.clone(),
        None if r.glob => "*".to_owned(),
        None => abs.last().cloned().unwrap_or_else(|| "crate".to_owned()),
    };
    Some((node[&abs[..depth]], name))
}

/// The strongly connected components of two or more nodes of a graph of `n` nodes,
/// each sorted, largest first (ties by first node). Two nodes share a component when
/// each reaches the other: one search per node, ample for a crate's files.
fn cycles(n: usize, edges: &[Edge]) -> Vec<Vec<usize>> {
    let mut next = vec![Vec::new(); n];
    for e in edges {
        next[e.from].push(e.to);
    }
    let reach: Vec<Vec<bool>> = (0..n)
        .map(|start| {
            let (mut seen, mut stack) = (vec![false; n], vec![start]);
            while let Some(v) = stack.pop() {
                for &w in &next[v] {
                    if !std::mem::replace(&mut seen[w], true) {
                        stack.push(w);
                    }
                }
            }
            seen
        })
        .collect();
    let mut placed = vec![false; n];
    let mut out = Vec::new();
    for (a, from_a) in reach.iter().enumerate() {
        let comp: Vec<usize> = (a..n)
            .filter(|&b| !placed[b] && from_a[b] && reach[b][a])
            .collect();
        comp.iter().for_each(|&b| placed[b] = true);
        if comp.len() >= 2 {
            out.push(comp);
        }
    }
    out.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
    out
}
