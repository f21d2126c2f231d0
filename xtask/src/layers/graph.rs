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
/// to it; `lib.rs` is the root): `read` every file, `reach` the modules from the
/// root, the `edges` between them, their `cycles`.
pub fn analyze(sources: &[SourceFile]) -> Result<Analysis, ParseError> {
    let (parsed, mut skipped) = read(sources, false)?;
    let (included, test_files) = reach(&parsed);
    for k in (0..sources.len()).filter(|k| parsed[*k].is_some() && !included.contains(k)) {
        let why = if test_files.contains(&k) {
            "test-only (#[cfg(test)])"
        } else {
            "not declared by any module"
        };
        skipped.push(Skipped {
            path: sources[k].path.clone(),
            why,
        });
    }
    skipped.sort_by(|a, b| a.path.cmp(&b.path));
    let mut order: Vec<usize> = included.into_iter().collect();
    order.sort_by_key(|&k| &sources[k].path);
    let nodes: Vec<&Module> = order.iter().filter_map(|&k| parsed[k].as_ref()).collect();
    let files: Vec<FileNode> = (order.iter().zip(&nodes))
        .map(|(&k, (m, _))| FileNode {
            path: sources[k].path.clone(),
            module: module_name(m),
        })
        .collect();
    let edges = edges(&nodes);
    let cycles = cycles(files.len(), &edges);
    Ok(Analysis {
        files,
        skipped,
        edges,
        cycles,
    })
}

/// A file module: its path from the root and what its file declares and names.
pub(super) type Module = (Vec<String>, Parsed);

/// Parses every file, test-only ones included (so a broken one is reported; their code
/// is read only if `with_tests`): a [`Module`] per source file, `None` for those that
/// are no (first) file of a module, which are skipped.
pub(super) fn read(
    sources: &[SourceFile],
    with_tests: bool,
) -> Result<(Vec<Option<Module>>, Vec<Skipped>), ParseError> {
    let (mut parsed, mut skipped, mut seen) = (Vec::new(), Vec::new(), BTreeSet::new());
    for src in sources {
        let module = module_of(&src.path);
        let p = parse(&src.text, module.as_deref().unwrap_or_default(), with_tests).map_err(
            |(line, message)| ParseError {
                path: src.path.clone(),
                line,
                message,
            },
        )?;
        let why = match module {
            None => "not a library module",
            Some(m) if seen.contains(&m) => "a second file for the same module",
            Some(m) => {
                seen.insert(m.clone());
                parsed.push(Some((m, p)));
                continue;
            }
        };
        skipped.push(Skipped {
            path: src.path.clone(),
            why,
        });
        parsed.push(None);
    }
    Ok((parsed, skipped))
}

/// The modules reached from the root through `mod` declarations (indices into
/// `parsed`), and those reached only through test-only ones.
pub(super) fn reach(parsed: &[Option<Module>]) -> (BTreeSet<usize>, BTreeSet<usize>) {
    let by_module: HashMap<&[String], usize> = (parsed.iter().enumerate())
        .filter_map(|(k, p)| Some((&p.as_ref()?.0[..], k)))
        .collect();
    let (mut included, mut test_files) = (BTreeSet::new(), BTreeSet::new());
    let mut stack: Vec<(usize, bool)> = by_module
        .get(&[][..])
        .map(|&r| (r, false))
        .into_iter()
        .collect();
    while let Some((k, test)) = stack.pop() {
        let Some((_, p)) = &parsed[k] else { continue };
        let test = test || p.test_only;
        if (if test { &mut test_files } else { &mut included }).insert(k) {
            let children = (p.decls.iter())
                .filter_map(|d| Some((*by_module.get(&d.module[..])?, test || d.test)));
            stack.extend(children);
        }
    }
    (included, test_files)
}

/// The node index of each module of `nodes`.
pub(super) fn node_index(nodes: &[&Module]) -> HashMap<Vec<String>, usize> {
    (nodes.iter().enumerate())
        .map(|(n, (m, _))| (m.clone(), n))
        .collect()
}

/// The names the root gives whole external crates (`use runsync_pool as pool;`), which
/// are no file modules of the crate.
pub(super) fn extern_aliases<'a>(
    nodes: &[&'a Module],
    node: &HashMap<Vec<String>, usize>,
) -> BTreeSet<&'a String> {
    let root = nodes.iter().find(|(m, _)| m.is_empty());
    (root.into_iter().flat_map(|(_, p)| &p.extern_aliases))
        .filter(|a| !node.contains_key(std::slice::from_ref(*a)))
        .collect()
}

/// The edges between `nodes` (the modules in the graph, by node index), sorted.
fn edges(nodes: &[&Module]) -> Vec<Edge> {
    let node = node_index(nodes);
    let aliases = extern_aliases(nodes, &node);
    let mut edges: BTreeMap<(usize, usize), BTreeSet<String>> = BTreeMap::new();
    for (n, (_, p)) in nodes.iter().enumerate() {
        for r in &p.refs {
            if let Some((to, name)) = resolve(r, &node, &aliases).filter(|&(to, _)| to != n) {
                edges.entry((n, to)).or_default().insert(name);
            }
        }
    }
    (edges.into_iter())
        .map(|((from, to), names)| Edge {
            from,
            to,
            names: names.into_iter().collect(),
        })
        .collect()
}

/// The file a path names (the deepest file module on it) and the name it takes from it;
/// `None` for a path outside the crate's files.
fn resolve(
    r: &RawRef,
    node: &HashMap<Vec<String>, usize>,
    aliases: &BTreeSet<&String>,
) -> Option<(usize, String)> {
    let abs = absolute(&r.scope, &r.segs, node, aliases)?;
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

/// The path from the crate root that `segs`, written in module `scope`, names; `None`
/// for a path outside the crate's files (an external crate, a type, a local name, or
/// another crate reached through the root's alias `aliases`).
pub(super) fn absolute(
    scope: &[String],
    segs: &[String],
    node: &HashMap<Vec<String>, usize>,
    aliases: &BTreeSet<&String>,
) -> Option<Vec<String>> {
    let (base, rest) = match segs[0].as_str() {
        "crate" => (&[][..], &segs[1..]),
        first @ ("self" | "super") => {
            let skip = usize::from(first == "self");
            let up = segs[skip..].iter().take_while(|s| *s == "super").count();
            (&scope[..scope.len().checked_sub(up)?], &segs[skip + up..])
        }
        // A child module of the scope, else an external crate, a type, a local name.
        first => {
            let child = [scope, &[first.to_owned()]].concat();
            node.contains_key(&child).then_some((scope, segs))?
        }
    };
    let abs = [base, rest].concat();
    if abs.first().is_some_and(|m| aliases.contains(m)) {
        return None; // another crate's item, reached through the root's alias
    }
    Some(abs)
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
