//! The layer list written in `lib.rs`'s docs (its format: [`super::FORMAT`]), where
//! each file sits on it, and the check of the import graph against it.

use std::collections::{BTreeSet, HashMap};
use std::fmt;

use super::graph::{Analysis, Edge};

/// One line of the layer list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layer {
    /// Its rank: 0 is the bottom.
    pub rank: u32,
    /// Its label, possibly empty.
    pub label: String,
    /// Module paths placed on it (`crate` for the root).
    pub modules: Vec<String>,
    /// Face groups: sets of its modules that may import each other.
    pub faces: Vec<Vec<String>>,
}

/// The layer list read from the crate root's docs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Layers {
    /// The layers, lowest first.
    pub layers: Vec<Layer>,
}

/// A malformed layer list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayerSyntaxError {
    /// 1-based line of `lib.rs`.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for LayerSyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "lib.rs:{}: {}", self.line, self.message)
    }
}

impl std::error::Error for LayerSyntaxError {}

/// Reads the layer list from the `//!` lines of `lib_rs` (see the module docs for the
/// format): `Ok(None)` if there is no `<!-- layers` marker.
pub fn parse_layers(lib_rs: &str) -> Result<Option<Layers>, LayerSyntaxError> {
    let docs: Vec<(usize, &str)> = lib_rs
        .lines()
        .enumerate()
        .filter_map(|(n, l)| {
            let l = l.trim_start().strip_prefix("//!")?;
            Some((n + 1, l.strip_prefix(' ').unwrap_or(l)))
        })
        .collect();
    let Some(marker) = docs
        .iter()
        .position(|(_, l)| l.trim_start().starts_with("<!-- layers"))
    else {
        return Ok(None);
    };
    let err = |line, message: String| LayerSyntaxError { line, message };
    let marker_line = docs[marker].0;
    let Some(open) = docs[marker + 1..]
        .iter()
        .position(|(_, l)| l.trim_start().starts_with("```"))
        .map(|p| marker + 1 + p)
    else {
        return Err(err(
            marker_line,
            "no fenced block after the layers marker".to_owned(),
        ));
    };
    let mut layers: Vec<Layer> = Vec::new();
    let mut closed = false;
    for &(line, text) in &docs[open + 1..] {
        let text = text.trim();
        if text.starts_with("```") {
            closed = true;
            break;
        }
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        let layer = layer_line(text, &layers).map_err(|message| err(line, message))?;
        layers.push(layer);
    }
    if !closed {
        return Err(err(
            docs[open].0,
            "the layers block is not closed".to_owned(),
        ));
    }
    layers.sort_by_key(|l| l.rank);
    Ok(Some(Layers { layers }))
}

/// One line of the layer block, `<rank> <label>: <entry> {<entry> <entry>} ..`; an
/// error says what is wrong (a rank already among `layers` too).
fn layer_line(text: &str, layers: &[Layer]) -> Result<Layer, String> {
    let Some((head, body)) = text.split_once(':') else {
        return Err(format!(
            "expected `<rank> <label>: <modules>`, got `{text}`"
        ));
    };
    let mut head = head.split_whitespace();
    let rank: u32 = head
        .next()
        .and_then(|r| r.parse().ok())
        .ok_or_else(|| format!("a layer line starts with its rank: `{text}`"))?;
    let label = head.collect::<Vec<_>>().join(" ");
    if layers.iter().any(|l| l.rank == rank) {
        return Err(format!("layer {rank} is listed twice"));
    }
    let mut layer = Layer {
        rank,
        label,
        modules: Vec::new(),
        faces: Vec::new(),
    };
    let spaced = body.replace('{', " { ").replace('}', " } ");
    let mut face: Option<Vec<String>> = None;
    for word in spaced.split_whitespace() {
        match word {
            "{" if face.is_none() => face = Some(Vec::new()),
            "}" => match face.take() {
                Some(f) if f.len() >= 2 => layer.faces.push(f),
                Some(_) => {
                    return Err("a face group needs two modules or more".into());
                }
                None => return Err("`}` without `{`".to_owned()),
            },
            "{" => return Err("face groups do not nest".to_owned()),
            m => {
                let valid = m.split("::").all(|s| {
                    let word = |c: char| c == '_' || c.is_alphanumeric();
                    s.chars().next().is_some_and(|c| !c.is_numeric()) && s.chars().all(word)
                });
                if !valid {
                    return Err(format!("`{m}` is not a module path"));
                }
                layer.modules.push(m.to_owned());
                if let Some(f) = &mut face {
                    f.push(m.to_owned());
                }
            }
        }
    }
    if face.is_some() {
        return Err("unclosed `{`".to_owned());
    }
    Ok(layer)
}

/// What is wrong between the layer list and the code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LayerProblem {
    /// An edge to a higher layer.
    Upward {
        /// The edge (indices into [`Analysis::files`], and names).
        edge: Edge,
        /// Rank of the importing file's layer.
        from_rank: u32,
        /// Rank of the imported file's layer.
        to_rank: u32,
    },
    /// An edge of an import cycle between two entries of one layer that are not in one
    /// face group.
    SameLayerCycle {
        /// The edge.
        edge: Edge,
        /// The layer's rank.
        rank: u32,
    },
    /// A file module no entry covers.
    Unplaced {
        /// Index into [`Analysis::files`].
        file: usize,
    },
    /// An entry that names no file module of the crate.
    UnknownModule {
        /// The entry as written.
        module: String,
    },
    /// An entry listed more than once.
    Duplicate {
        /// The entry as written.
        module: String,
    },
}

/// Where a file sits: its layer's rank and the entry that covers it.
fn placement<'a>(layers: &'a Layers, module: &str) -> Option<(u32, &'a str)> {
    let mut best: Option<(u32, &str)> = None;
    for l in &layers.layers {
        for m in &l.modules {
            let covers = if m == "crate" {
                module == "crate"
            } else {
                module == m
                    || module
                        .strip_prefix(m.as_str())
                        .is_some_and(|r| r.starts_with("::"))
            };
            if covers && best.is_none_or(|(_, b)| m.len() > b.len()) {
                best = Some((l.rank, m));
            }
        }
    }
    best
}

/// Checks the graph against the layer list: upward edges, same-layer cycles outside face
/// groups, file modules no entry covers, entries naming no file module, duplicates.
pub fn check_layers(analysis: &Analysis, layers: &Layers) -> Vec<LayerProblem> {
    let mut problems = Vec::new();
    let mut seen = BTreeSet::new();
    for l in &layers.layers {
        for m in &l.modules {
            if !seen.insert(m.as_str()) {
                problems.push(LayerProblem::Duplicate { module: m.clone() });
            }
            if analysis.file_of(m).is_none() {
                problems.push(LayerProblem::UnknownModule { module: m.clone() });
            }
        }
    }
    // The root is above everything unless listed.
    let top = layers.layers.last().map_or(0, |l| l.rank + 1);
    let place: Vec<Option<(u32, &str)>> = analysis
        .files
        .iter()
        .map(|f| placement(layers, &f.module).or((f.module == "crate").then_some((top, "crate"))))
        .collect();
    for (k, p) in place.iter().enumerate() {
        if p.is_none() {
            problems.push(LayerProblem::Unplaced { file: k });
        }
    }
    let same_face = |rank: u32, a: &str, b: &str| {
        layers.layers.iter().any(|l| {
            l.rank == rank
                && l.faces
                    .iter()
                    .any(|f| f.iter().any(|m| m == a) && f.iter().any(|m| m == b))
        })
    };
    let cycle_of: HashMap<usize, usize> = analysis
        .cycles
        .iter()
        .enumerate()
        .flat_map(|(c, files)| files.iter().map(move |&f| (f, c)))
        .collect();
    for e in &analysis.edges {
        let (Some((fr, fe)), Some((tr, te))) = (place[e.from], place[e.to]) else {
            continue;
        };
        if fr < tr {
            problems.push(LayerProblem::Upward {
                edge: e.clone(),
                from_rank: fr,
                to_rank: tr,
            });
        } else if fr == tr
            && fe != te
            && cycle_of
                .get(&e.from)
                .is_some_and(|c| cycle_of.get(&e.to) == Some(c))
            && !same_face(fr, fe, te)
        {
            problems.push(LayerProblem::SameLayerCycle {
                edge: e.clone(),
                rank: fr,
            });
        }
    }
    problems
}
