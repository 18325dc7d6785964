//! The SVG chart: one panel per medium, pool size and pass; in each, the queries along the x
//! axis with one bar per layer (median wall time).

use std::path::Path;

use plotters::prelude::*;

use super::output::{Line, medium_label};
use crate::BoxError;

fn color(layer: &str) -> RGBColor {
    match layer {
        "pread" => RGBColor(0x4c, 0x72, 0xb0),
        "se1" => RGBColor(0xdd, 0x84, 0x52),
        "se2" => RGBColor(0x55, 0xa8, 0x68),
        "postgres" => RGBColor(0xc4, 0x4e, 0x52),
        _ => RGBColor(0x81, 0x72, 0xb3),
    }
}

fn uniq<T: PartialEq + Clone>(it: impl Iterator<Item = T>) -> Vec<T> {
    let mut v: Vec<T> = Vec::new();
    for x in it {
        if !v.contains(&x) {
            v.push(x);
        }
    }
    v
}

/// Draws `lines` into an SVG file at `path`.
pub fn draw(lines: &[Line], title: &str, path: &Path) -> Result<(), BoxError> {
    let panels = uniq(lines.iter().map(|l| (l.medium.clone(), l.pool_fraction, l.cold)));
    let queries = uniq(lines.iter().map(|l| l.query.clone()));
    let layers = uniq(lines.iter().map(|l| l.layer.clone()));
    if panels.is_empty() {
        return Err("nothing to draw".into());
    }
    let cols = 2.min(panels.len());
    let rows = panels.len().div_ceil(cols);
    let (w, h) = (720 * cols as u32, 360 * rows as u32 + 40);
    let root = SVGBackend::new(path, (w, h)).into_drawing_area();
    root.fill(&WHITE)?;
    let (top, body) = root.split_vertically(40);
    top.titled(title, ("sans-serif", 20))?;
    let areas = body.split_evenly((rows, cols));
    let nq = queries.len() as f64;
    let bar_w = 0.8 / layers.len() as f64;
    for (area, (medium, pool, cold)) in areas.iter().zip(&panels) {
        let mine: Vec<&Line> = lines
            .iter()
            .filter(|l| &l.medium == medium && l.pool_fraction == *pool && l.cold == *cold)
            .collect();
        let ymax = mine.iter().map(|l| l.median_ms).fold(0.0, f64::max).max(1e-3) * 1.15;
        let caption = format!(
            "{}, pool {} of the data, {}",
            medium_label(medium),
            pool,
            if *cold { "cold" } else { "warm" }
        );
        let mut chart = ChartBuilder::on(area)
            .caption(caption, ("sans-serif", 15))
            .margin(10)
            .x_label_area_size(28)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..nq, 0f64..ymax)?;
        let names = queries.clone();
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(queries.len() * 2 + 1)
            .x_label_formatter(&move |x: &f64| {
                let i = x.floor();
                if (x - i - 0.5).abs() < 1e-6 {
                    names.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .y_desc("median wall time, ms")
            .draw()?;
        for (j, layer) in layers.iter().enumerate() {
            let c = color(layer);
            let bars: Vec<Rectangle<(f64, f64)>> = queries
                .iter()
                .enumerate()
                .filter_map(|(i, q)| {
                    let l = mine.iter().find(|l| &l.query == q && &l.layer == layer)?;
                    let x0 = i as f64 + 0.1 + j as f64 * bar_w;
                    Some(Rectangle::new([(x0, 0.0), (x0 + bar_w * 0.95, l.median_ms)], c.filled()))
                })
                .collect();
            chart
                .draw_series(bars)?
                .label(layer.as_str())
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], c.filled()));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()?;
    }
    root.present()?;
    Ok(())
}
