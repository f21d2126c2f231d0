//! Module import graph of a crate's `src/`: which file uses which, the import cycles
//! (strongly connected components), a check against the layer list written in the
//! crate root's docs, and the paths that take a name through the crate root's
//! re-exports instead of from its defining module. Used by `cargo xtask layers`:
//!
//! ```sh
//! cargo xtask layers [--src DIR] [--max-cycle N] [--edges]
//! ```
//!
//! It reads Rust source with `syn` (no compiler); one file per step:
//! `parse` (one file: its `mod` declarations and the paths it names), `macros` (the
//! same in a macro's unparsed tokens), `graph` (files, edges, cycles), `list` (the layer
//! list and its check), `reexports` (paths through the root's re-exports), `report`
//! (the text).
//!
//! - **Nodes** are files: `lib.rs` is the crate root, `world.rs` or `world/mod.rs` the
//!   module `world`, `world/snapshot.rs` the module `world::snapshot`. Only files reached
//!   from `lib.rs` through `mod name;` declarations count; a module declared under
//!   `#[cfg(test)]` (or `#[cfg(all(test, ..))]`), and everything below it, is skipped.
//!   Inline `mod name { .. }` blocks are part of their file.
//! - **Edges**: `A -> B` when file `A` names an item of file `B`: in a `use` (groups,
//!   `self`, renames, globs; paths from `crate`, `super`, `self`, or a child module), and
//!   in paths written inline anywhere in code (`crate::sync::SyncReport::default()`,
//!   `super::FoldCounts`, `crate::profile::zone!(..)`, and inside macro token streams,
//!   `$crate::profile::Zone` in macros). A path resolves to the deepest file module it
//!   names (`crate::output::buffer::OutBuf` is `output/buffer.rs` if that file exists,
//!   else `output/buffer/mod.rs`, else `output/mod.rs`); paths through the crate root's
//!   re-exports (`crate::World`, `crate::prelude`) are edges to `lib.rs`. Declaring
//!   `mod child;` is not an edge; `pub use child::X` is. Self-edges are dropped. A whole
//!   external crate that the root names as a module
//!   (`pub(crate) use runsync_pool as pool;` in `lib.rs`) is outside the graph:
//!   `crate::pool::Pool` is no edge, as `runsync_pool::Pool` is none.
//! - **Not code**: comments (doc comments included), string and char literals,
//!   attributes, visibilities (`pub(in path)`), and test-only code: an item (module,
//!   function, `impl`, `use`, macro invocation, ...), an associated item or a block
//!   under a `#[cfg(test)]`-only attribute.
//!
//! - **Through the root's re-exports**: a path in any module but `lib.rs` that takes a
//!   name `lib.rs` re-exports rather than defines (`crate::Entity` for `pub use
//!   entity::Entity;`) is reported with its file, line and the defining module to name
//!   instead (`crate::entity::Entity`). Test code counts here; doc comments do not, so an
//!   intra-doc link keeps the public path a reader of the docs sees. See [`reexports`]
//!   for what is fine.
//!
//! Sources are read with all `cfg`s on at once (both `#[cfg(feature = "tracy")]` and
//! its `not` twin count), except the test-only ones. A file `syn` cannot read is an
//! error naming its path and line.
//!
#![doc = include_str!("format.md")]

use std::io;
use std::path::{Path, PathBuf};

mod graph;
mod list;
mod macros;
mod parse;
pub mod reexports;
mod report;
#[cfg(test)]
mod tests;

pub use graph::{Analysis, Edge, FileNode, Skipped, analyze};
pub use list::{Layer, LayerProblem, LayerSyntaxError, Layers, check_layers, parse_layers};
pub use parse::ParseError;
pub use reexports::{RootReexport, root_reexports};
pub use report::{Options, Report, report};

/// The layer list's format, as written in the module docs (for `--help`).
pub const FORMAT: &str = include_str!("format.md");

/// The default limit on an import cycle's size, in files: two files may import each other
/// (a type and the file of its methods), three may not.
pub const DEFAULT_MAX_CYCLE: usize = 2;

/// One source file: its path relative to the source directory (`/`-separated, e.g.
/// `world/mod.rs`) and its text.
#[derive(Clone, Debug)]
pub struct SourceFile {
    /// Path relative to the source directory, with `/` separators.
    pub path: String,
    /// The file's contents.
    pub text: String,
}

impl SourceFile {
    /// A file at `path` (relative, `/`-separated) with contents `text`.
    pub fn new(path: impl Into<String>, text: impl Into<String>) -> SourceFile {
        SourceFile {
            path: path.into(),
            text: text.into(),
        }
    }
}

/// Reads every `*.rs` file under `dir`, recursively, sorted by path.
pub fn load(dir: &Path) -> io::Result<Vec<SourceFile>> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<SourceFile>) -> io::Result<()> {
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            if path.is_dir() {
                walk(root, &path, out)?;
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(root).unwrap_or(&path);
                let rel: Vec<String> = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                let text = std::fs::read_to_string(&path)?;
                out.push(SourceFile::new(rel.join("/"), text));
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out)?;
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

/// The workspace root: `$CARGO_MANIFEST_DIR/..` when run by cargo from the xtask crate,
/// else the nearest directory at or above the current one whose `Cargo.toml` has a
/// `[workspace]` table, else the current directory.
pub fn workspace_root() -> PathBuf {
    if let Some(dir) = std::env::var_os("CARGO_MANIFEST_DIR") {
        let dir = PathBuf::from(dir);
        if let Some(parent) = dir.parent().filter(|p| is_workspace(p)) {
            return parent.to_path_buf();
        }
        if is_workspace(&dir) {
            return dir;
        }
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    cwd.ancestors()
        .find(|d| is_workspace(d))
        .unwrap_or(&cwd)
        .to_path_buf()
}

fn is_workspace(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join("Cargo.toml"))
        .is_ok_and(|t| t.lines().any(|l| l.trim() == "[workspace]"))
}
