//! A picture of the arena: every agent as a dot coloured by team, turrets as smaller pale
//! dots on their ships, projectiles as small dark dots, on the field — as an SVG
//! (plotters, SVG backend only), or as the live inspector's picture of each frame
//! ([`inspector`]). Both draw the same [`dots`].

use std::path::Path;

use plotters::prelude::*;
use runsync::{ChildOf, With, World};
use runsync_systems::{GlobalTransform, Position, Projectile, Team};

/// Team colours, by team index (wrapping).
const COLORS: [RGBColor; 4] = [
    RGBColor(52, 120, 200),
    RGBColor(230, 126, 34),
    RGBColor(46, 160, 67),
    RGBColor(192, 57, 43),
];

/// The field's colour.
const FIELD: RGBColor = RGBColor(245, 245, 240);

/// One dot of the picture: where (world coordinates), its radius in pixels, its colour
/// and opacity.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Dot {
    /// Where, in world coordinates.
    pub at: [f32; 2],
    /// Radius in pixels.
    pub radius: i32,
    /// Colour.
    pub color: RGBColor,
    /// Opacity, 0 to 1.
    pub opacity: f64,
}

/// The picture's dots, in drawing order: agents (by team), turrets where
/// `PropagateTransforms` put them on their ships, projectiles. Dots are smaller on
/// crowded fields. Cost: one query per kind, one `Dot` per entity.
pub fn dots(world: &World) -> Vec<Dot> {
    let agents = world.query::<(&Position, &Team)>().count().max(1);
    let r = (8000.0 / agents as f32).sqrt().clamp(1.0, 4.0) as i32;
    let mut dots: Vec<Dot> = world
        .query::<(&Position, &Team)>()
        .filter(|(e, _)| world.get::<Projectile>(*e).is_none())
        .map(|(_, (p, t))| Dot {
            at: [p.0.x, p.0.y],
            radius: r,
            color: COLORS[usize::from(t.0) % COLORS.len()],
            opacity: 1.0,
        })
        .collect();
    if world.has_hierarchy() {
        dots.extend(
            world
                .query::<(&GlobalTransform, &Team, With<ChildOf>)>()
                .map(|(_, (g, t, ()))| {
                    let p = g.translation();
                    Dot {
                        at: [p.x, p.y],
                        radius: (r / 2).max(1),
                        color: COLORS[usize::from(t.0) % COLORS.len()],
                        opacity: 0.5,
                    }
                }),
        );
    }
    dots.extend(
        world
            .query::<(&Position, &Projectile)>()
            .map(|(_, (p, _))| Dot {
                at: [p.0.x, p.0.y],
                radius: 1,
                color: BLACK,
                opacity: 0.6,
            }),
    );
    dots
}

/// Draws the world's agents and projectiles on a `side` × `side` field to an SVG at `path`.
/// Cost: one query over the world and one circle per entity (a 100k-agent picture is a few
/// MB of SVG).
pub fn draw(
    path: &Path,
    world: &World,
    side: f32,
    title: &str,
) -> Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::new(path, (900, 940)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .build_cartesian_2d(0f32..side, 0f32..side)?;
    chart.plotting_area().fill(&FIELD)?;
    chart.draw_series(dots(world).into_iter().map(|d| {
        let style = if d.opacity < 1.0 {
            d.color.mix(d.opacity).filled()
        } else {
            d.color.filled()
        };
        Circle::new((d.at[0], d.at[1]), d.radius, style)
    }))?;
    root.present()?;
    Ok(())
}

/// The same picture for the live inspector (`arena --inspect`): the field and [`dots`],
/// given to its picture hook for each frame it shows.
pub fn inspector(world: &World, side: f32, picture: &mut runsync_inspect::Picture) {
    use runsync_inspect::Color;
    let rgb = |c: RGBColor| Color::rgb(c.0, c.1, c.2);
    picture.title("arena");
    picture.bounds([0.0, 0.0], [side, side]);
    picture.rect([0.0, 0.0], [side, side], rgb(FIELD));
    for d in dots(world) {
        picture.dot(d.at, d.radius as f32, rgb(d.color).alpha(d.opacity as f32));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{ArenaConfig, arena_side, build};
    use runsync_systems::Health;

    #[test]
    fn the_inspector_gets_the_svg_s_dots_on_the_field() {
        let config = ArenaConfig {
            agents: 300,
            seed: 7,
            workers: 1,
        };
        let mut rt = build(config);
        for _ in 0..40 {
            rt.frame();
        }
        let w = rt.world();
        let agents = w.query::<(&Health,)>().count();
        let turrets = w.query::<(With<ChildOf>,)>().count();
        let projectiles = w.query::<(&Projectile,)>().count();
        assert!(agents > 0 && turrets > 0 && projectiles > 0);
        let d = dots(w);
        assert_eq!(d.len(), agents + turrets + projectiles);
        let mut p = runsync_inspect::Picture::default();
        inspector(w, arena_side(config.agents), &mut p);
        assert_eq!(p.shapes(), d.len() + 1, "the field, then a dot each");
    }
}
