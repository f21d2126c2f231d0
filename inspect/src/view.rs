//! What the game shows of itself: the hooks a game gives the inspector (a picture of its
//! world, values to plot, resources to show) and the views built from the world alone
//! (the parent/child tree). Every hook runs on the game thread, between frames.

use std::fmt;
use std::sync::Arc;

use runsync::{Component, Entity, Runtime, World};
use serde::Serialize;

use crate::api::short_name;
use crate::picture::Picture;

/// The game's picture hook.
pub(crate) type PictureFn = dyn Fn(&World, &mut Picture) + Send + Sync;
/// A plotted value.
pub(crate) type PlotFn = dyn Fn(&Runtime) -> f64 + Send + Sync;
/// A resource's `Debug` text, if the world holds it.
pub(crate) type ShowFn = dyn Fn(&World) -> Option<String> + Send + Sync;

/// The hooks of one inspector, from its builder.
#[derive(Clone, Default)]
pub(crate) struct Hooks {
    pub(crate) picture: Option<Arc<PictureFn>>,
    pub(crate) plots: Vec<(String, Arc<PlotFn>)>,
    pub(crate) resources: Vec<(&'static str, Arc<ShowFn>)>,
}

impl fmt::Debug for Hooks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hooks")
            .field("picture", &self.picture.is_some())
            .field(
                "plots",
                &self.plots.iter().map(|p| &p.0).collect::<Vec<_>>(),
            )
            .field(
                "resources",
                &self.resources.iter().map(|r| r.0).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl Hooks {
    /// Each plotted value now, into `values` (cleared first; its memory reused).
    pub(crate) fn sample(&self, rt: &Runtime, values: &mut Vec<f64>) {
        values.clear();
        values.extend(self.plots.iter().map(|(_, f)| f(rt)));
    }

    /// The names of the plotted values.
    pub(crate) fn plot_names(&self) -> Vec<&str> {
        self.plots.iter().map(|(n, _)| n.as_str()).collect()
    }
}

/// The mean of `value` over every `C` in the world (`NaN`, shown as a gap, when there is
/// none).
pub(crate) fn mean<C: Component>(value: impl Fn(&C) -> f64 + Send + Sync + 'static) -> Arc<PlotFn> {
    Arc::new(move |rt: &Runtime| {
        let (mut n, mut sum) = (0u64, 0.0f64);
        for (_, (c,)) in rt.world().query::<(&C,)>() {
            sum += value(c);
            n += 1;
        }
        if n == 0 { f64::NAN } else { sum / n as f64 }
    })
}

/// The resources shown: the runtime's [`Time`](runsync::Time), then those the game named.
pub(crate) fn resources(hooks: &Hooks, world: &World) -> serde_json::Value {
    #[derive(Serialize)]
    struct Shown {
        name: &'static str,
        short: String,
        value: Option<String>,
    }
    let time = (
        std::any::type_name::<runsync::Time>(),
        world
            .get_resource::<runsync::Time>()
            .map(|t| format!("{t:?}")),
    );
    let list: Vec<Shown> = std::iter::once(time)
        .chain(
            hooks
                .resources
                .iter()
                .map(|(name, show)| (*name, show(world))),
        )
        .map(|(name, value)| Shown {
            name,
            short: short_name(name),
            value,
        })
        .collect();
    serde_json::json!({ "resources": list })
}

/// Most nodes one tree answer holds.
pub(crate) const MAX_TREE_NODES: usize = 5000;

/// The parent/child forest: every root (an entity with children and no parent) in
/// storage order, each followed by its descendants in pre-order, at most `limit` nodes.
pub(crate) fn tree(world: &World, limit: usize) -> serde_json::Value {
    #[derive(Serialize)]
    struct Node {
        id: String,
        depth: u32,
        children: usize,
        components: Vec<usize>,
    }
    if !world.has_hierarchy() {
        return serde_json::json!({
            "hierarchy": false, "roots": 0, "nodes": [], "truncated": false
        });
    }
    let mut nodes = Vec::new();
    let mut roots = 0usize;
    let mut truncated = false;
    let mut stack: Vec<(Entity, u32)> = Vec::new();
    for (e, _) in world.entities() {
        if world.parent(e).is_some() || world.children(e).is_empty() {
            continue;
        }
        roots += 1;
        if truncated {
            continue;
        }
        stack.push((e, 0));
        while let Some((e, depth)) = stack.pop() {
            if nodes.len() >= limit {
                truncated = true;
                stack.clear();
                break;
            }
            let children = world.children(e);
            nodes.push(Node {
                id: format!("{e:?}"),
                depth,
                children: children.len(),
                components: world
                    .component_ids(e)
                    .map(|ids| ids.iter().map(|c| c.index()).collect())
                    .unwrap_or_default(),
            });
            stack.extend(children.iter().rev().map(|&c| (c, depth + 1)));
        }
    }
    serde_json::json!({
        "hierarchy": true, "roots": roots, "nodes": nodes, "truncated": truncated
    })
}
