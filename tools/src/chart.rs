//! The per-frame chart: Run and Sync time, stacked, as an SVG (plotters, SVG backend only).

use std::path::Path;

use plotters::prelude::*;

use crate::report::FrameRecord;

/// Draws Run (bottom) and Sync (stacked on top) time per frame to an SVG at `path`, with
/// the p95 frame time as a dashed reference line.
pub fn draw(
    path: &Path,
    frames: &[FrameRecord],
    title: &str,
) -> Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::new(path, (1200, 520)).into_drawing_area();
    root.fill(&WHITE)?;
    let n = frames.len().max(1) as u32;
    let tops: Vec<f64> = frames
        .iter()
        .map(|f| (f.run_us + f.sync_us) / 1e3)
        .collect();
    let mut sorted = tops.clone();
    sorted.sort_by(f64::total_cmp);
    let p95 = sorted
        .get(((sorted.len() as f64 * 0.95).ceil() as usize).saturating_sub(1))
        .copied()
        .unwrap_or(0.0);
    // Scale to p99 with headroom so one slow frame (the first wave) doesn't flatten the rest.
    let p99 = sorted
        .get(((sorted.len() as f64 * 0.99).ceil() as usize).saturating_sub(1))
        .copied()
        .unwrap_or(1.0);
    let ymax = (p99 * 1.25).max(0.01);

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
            frames
                .iter()
                .zip(0u32..)
                .map(|(f, i)| (i, ((f.run_us + f.sync_us) / 1e3).min(ymax))),
            0.0,
            sync_color.mix(0.75),
        ))?
        .label("Sync (merge outputs, apply commands)")
        .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 14, y + 6)], sync_color.filled()));
    chart
        .draw_series(AreaSeries::new(
            frames
                .iter()
                .zip(0u32..)
                .map(|(f, i)| (i, (f.run_us / 1e3).min(ymax))),
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
        .label(format!("p95 Run+Sync = {p95:.2} ms"))
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
