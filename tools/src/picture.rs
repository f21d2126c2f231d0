//! A picture of the arena: every agent as a dot coloured by team, turrets as smaller pale
//! dots on their ships, projectiles as small dark dots, on the field — as an SVG
//! (plotters, SVG backend only).

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
    chart.plotting_area().fill(&RGBColor(245, 245, 240))?;
    // Dot size: smaller for crowded fields.
    let agents = world.query::<(&Position, &Team)>().count().max(1);
    let r = (8000.0 / agents as f32).sqrt().clamp(1.0, 4.0) as i32;
    chart.draw_series(
        world
            .query::<(&Position, &Team)>()
            .filter(|(e, _)| world.get::<Projectile>(*e).is_none())
            .map(|(_, (p, t))| {
                let c = COLORS[usize::from(t.0) % COLORS.len()];
                Circle::new((p.0.x, p.0.y), r, c.filled())
            }),
    )?;
    // Turrets: where `PropagateTransforms` put them, on their ships.
    if world.has_hierarchy() {
        chart.draw_series(
            world
                .query::<(&GlobalTransform, &Team, With<ChildOf>)>()
                .map(|(_, (g, t, ()))| {
                    let c = COLORS[usize::from(t.0) % COLORS.len()];
                    let p = g.translation();
                    Circle::new((p.x, p.y), (r / 2).max(1), c.mix(0.5).filled())
                }),
        )?;
    }
    chart.draw_series(
        world
            .query::<(&Position, &Projectile)>()
            .map(|(_, (p, _))| Circle::new((p.0.x, p.0.y), 1, BLACK.mix(0.6).filled())),
    )?;
    root.present()?;
    Ok(())
}
