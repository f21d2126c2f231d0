//! Imports through the crate root's re-exports: a path in a module other than `lib.rs`
//! that takes a name from the root (`crate::Entity`, or `super::Entity` in a top-level
//! module) where the root only re-exports it (`pub use entity::Entity;`) instead of
//! defining it. Such a path is an edge into `lib.rs` from below, and a reader has to go
//! through `lib.rs` to find where the item lives; internal code names the defining
//! module (`crate::entity::Entity`) instead.
//!
//! Fine: a name `lib.rs` defines itself (an item, a module, `pub mod prelude { .. }`; a
//! path through such a module is not followed), a whole external crate the root gives a
//! name of its own (`pub(crate) use runsync_pool as pool;`: how the crate names that
//! dependency, and no edge of the import graph either), a name the root neither defines
//! nor imports (a `#[macro_export]` macro), and everything written in `lib.rs` itself
//! (the re-exports and the prelude). Test code counts, as in any module. Doc comments do
//! not: an intra-doc link such as ``[`Output`](crate::Output)`` keeps the public path,
//! the one a reader of the docs sees.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;

use super::SourceFile;
use super::graph::{Module, absolute, extern_aliases, node_index, reach, read};
use super::parse::{Import, ParseError};

/// A path that takes a name through a re-export of the crate root.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct RootReexport {
    /// The file, relative to the source directory.
    pub path: String,
    /// The line the path starts on (1-based).
    pub line: usize,
    /// The path as written (a `use` group's leaf with its prefix: `crate::Entity`).
    pub written: String,
    /// The name it takes from the root (`Entity`).
    pub name: String,
    /// Where the item is defined, as a path to write instead: `crate::entity::Entity`,
    /// or an external crate's (`runsync_derive::Component`); two or more joined by ` or `
    /// when the root re-exports the name in several namespaces. Where the defining
    /// module is private to a module the path is not written in, the re-export of the
    /// nearest module on the way that the path's module may name
    /// (`crate::shard::checkpoint_path` for a private `shard::checkpoint`).
    pub defined: String,
}

impl fmt::Display for RootReexport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: `{}` goes through lib.rs's re-export of `{}`; name the defining module: `{}`",
            self.path, self.line, self.written, self.name, self.defined
        )
    }
}

/// Every path of the crate's source files (test code included, `lib.rs` left out) that
/// takes a name through a re-export of the crate root, sorted by file and line.
pub fn root_reexports(sources: &[SourceFile]) -> Result<Vec<RootReexport>, ParseError> {
    let (parsed, _) = read(sources, true)?;
    let (mut reached, test_files) = reach(&parsed);
    reached.extend(test_files);
    let mut order: Vec<usize> = reached.into_iter().collect();
    order.sort_by_key(|&k| &sources[k].path);
    let nodes: Vec<&Module> = order.iter().filter_map(|&k| parsed[k].as_ref()).collect();
    let paths: Vec<&str> = order.iter().map(|&k| sources[k].path.as_str()).collect();
    let node = node_index(&nodes);
    let aliases = extern_aliases(&nodes, &node);
    let Some(&(_, root)) = nodes.iter().find(|(m, _)| m.is_empty()) else {
        return Ok(Vec::new());
    };
    let defined: BTreeSet<&String> = (root.items.iter())
        .filter(|(scope, _)| scope.is_empty())
        .map(|(_, name)| name)
        .collect();
    let mut reexported: BTreeMap<&String, Vec<&Import>> = BTreeMap::new();
    for i in root.imports.iter().filter(|i| i.scope.is_empty()) {
        if !defined.contains(&i.name) && !aliases.contains(&i.name) {
            reexported.entry(&i.name).or_default().push(i);
        }
    }
    let restricted: HashMap<&[String], &[String]> = (nodes.iter())
        .flat_map(|(_, p)| &p.restricted)
        .map(|(module, within)| (&module[..], &within[..]))
        .collect();
    let ctx = Ctx {
        nodes: &nodes,
        node: &node,
        aliases: &aliases,
        restricted: &restricted,
    };
    let mut found = BTreeSet::new();
    for (n, (module, p)) in nodes.iter().enumerate() {
        if module.is_empty() {
            continue;
        }
        for r in &p.refs {
            let Some(abs) = absolute(&r.scope, &r.segs, &node, &aliases) else {
                continue;
            };
            let (name, defined) = match abs.first() {
                // `use crate::*`: every name of the root, its re-exports with them.
                None if r.glob && !reexported.is_empty() => (
                    "*".to_owned(),
                    "the defining module of each name used".to_owned(),
                ),
                Some(name) if !node.contains_key(&abs[..1]) => {
                    let Some(imports) = reexported.get(name) else {
                        continue;
                    };
                    let mut defined: Vec<String> = (imports.iter())
                        .map(|i| ctx.defining(&i.scope, &i.segs, &r.scope))
                        .collect();
                    defined.dedup();
                    (name.clone(), defined.join(" or "))
                }
                _ => continue,
            };
            let written = r.segs.join("::") + if r.glob { "::*" } else { "" };
            found.insert(RootReexport {
                path: paths[n].to_owned(),
                line: r.line,
                written,
                name,
                defined,
            });
        }
    }
    Ok(found.into_iter().collect())
}

/// The crate's modules, for following re-exports to where an item is defined.
struct Ctx<'a> {
    nodes: &'a [&'a Module],
    node: &'a HashMap<Vec<String>, usize>,
    aliases: &'a BTreeSet<&'a String>,
    /// Modules only part of the crate may name, with the module whose code may.
    restricted: &'a HashMap<&'a [String], &'a [String]>,
}

impl Ctx<'_> {
    /// The path to the item that `segs`, a `use` path written in module `scope`, names,
    /// for code in module `from`: followed through the `use` items of the modules it
    /// passes (a `mod.rs` that re-exports its child's item), up to the module that
    /// defines it or the last one on the way that `from` may name; an external crate's
    /// path as written.
    fn defining(&self, scope: &[String], segs: &[String], from: &[String]) -> String {
        let (mut scope, mut segs) = (scope.to_vec(), segs.to_vec());
        let crate_path = |abs: &[String]| format!("crate::{}", abs.join("::"));
        let mut last: Option<Vec<String>> = None;
        for _ in 0..16 {
            let Some(abs) = absolute(&scope, &segs, self.node, self.aliases) else {
                return segs.join("::");
            };
            let nameable = (1..abs.len()).all(|d| {
                (self.restricted.get(&abs[..d])).is_none_or(|within| from.starts_with(within))
            });
            match (nameable, &last) {
                (false, Some(last)) => return crate_path(last),
                _ => last = Some(abs.clone()),
            }
            let depth = (0..=abs.len())
                .take_while(|&d| self.node.contains_key(&abs[..d]))
                .last()
                .unwrap_or(0);
            let (file, rest) = abs.split_at(depth);
            let [name] = rest else {
                return crate_path(&abs);
            };
            let (_, p) = self.nodes[self.node[file]];
            if p.items.iter().any(|(s, n)| s == file && n == name) {
                return crate_path(&abs);
            }
            match p
                .imports
                .iter()
                .find(|i| i.scope == file && i.name == *name)
            {
                Some(i) => (scope, segs) = (file.to_vec(), i.segs.clone()),
                None => return crate_path(&abs),
            }
        }
        segs.join("::")
    }
}
