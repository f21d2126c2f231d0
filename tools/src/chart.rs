//! The per-frame chart: Run and Sync time, stacked, as an SVG (plotters, SVG backend only).

use std::path::Path;

use plotters::prelude::*;

use crate::report::RunStats;

/// Draws Run (bottom) and Sync (stacked on top) time per frame over the whole run to an
/// SVG at `path`, with the run's p95 Run + Sync time as a dashed reference line. Past
/// [`Timeline::POINTS`](crate::report::Timeline::POINTS) frames, each point is the mean
/// of consecutive frames (the x axis still counts frames; the legend says how many).
pub fn draw(path: &Path, stats: &RunStats, title: &str) -> Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::new(path, (1200, 520)).into_drawing_area();
    root.fill(&WHITE)?;
    let timeline = stats.timeline();
    let n = u32::try_from(timeline.frames().max(1)).unwrap_or(u32::MAX);
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    let p95 = ms(stats.run_sync().quantile(0.95));
    // Scale to p99 with headroom so one slow frame (the first wave) doesn't flatten the rest.
    let p99 = if stats.run_sync().is_empty() {
        1.0
    } else {
        ms(stats.run_sync().quantile(0.99))
    };
    let ymax = (p99 * 1.25).max(0.01);
    let x = |first: u64| u32::try_from(first).unwrap_or(u32::MAX);
    let per_point = match timeline.width() {
        1 => String::new(),
        w => format!(", each point the mean of {w} frames"),
    };

    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0u32..n, 0f64..ymax)?;
    chart
        .configure_mesh()
        .x_desc("frame")
        .y_desc("milliseconds")
        .light_line_style(WHITE.mix(0.0))
        .draw()?;

    let sync_color = RGBColor(230, 126, 34);
    let run_color = RGBColor(52, 120, 200);
    chart
        .draw_series(AreaSeries::new(
            timeline
                .points()
                .map(|p| (x(p.first), (p.run_ms + p.sync_ms).min(ymax))),
            0.0,
            sync_color.mix(0.75),
        ))?
        .label("Sync (merge outputs, apply commands)")
        .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 14, y + 6)], sync_color.filled()));
    chart
        .draw_series(AreaSeries::new(
            timeline.points().map(|p| (x(p.first), p.run_ms.min(ymax))),
            0.0,
            run_color.mix(0.85),
        ))?
        .label("Run (all systems in parallel)")
        .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 14, y + 6)], run_color.filled()));
    chart
        .draw_series(LineSeries::new(
            [(0u32, p95), (n, p95)],
            BLACK.stroke_width(1),
        ))?
        .label(format!("p95 Run+Sync = {p95:.2} ms{per_point}"))
        .legend(|(x, y)| PathElement::new([(x, y), (x + 14, y)], BLACK));
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .draw()?;
    root.present()?;
    Ok(())
}
