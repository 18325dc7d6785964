//! SVG bar charts (plotters), shared by the benchmarks: one panel per configuration, in each a
//! group of bars per category along the x axis, one bar per series.

use std::path::Path;

use plotters::prelude::*;

use crate::BoxError;

/// One bar: its panel, its group along the x axis, its series (colour and legend), its height.
#[derive(Clone, Debug, PartialEq)]
pub struct Bar {
    /// The panel's caption.
    pub panel: String,
    /// The group along the x axis (a query, a workload, ...).
    pub group: String,
    /// The series: bars of one series share a colour and a legend entry.
    pub series: String,
    /// The bar's height, in the unit `y_desc` names.
    pub value: f64,
}

/// Fixed colours for the names every chart uses, so one layer looks the same everywhere.
fn named_color(series: &str) -> Option<RGBColor> {
    Some(match series {
        "pread" => RGBColor(0x4c, 0x72, 0xb0),
        "se1" => RGBColor(0xdd, 0x84, 0x52),
        "se2" => RGBColor(0x55, 0xa8, 0x68),
        "postgres" => RGBColor(0xc4, 0x4e, 0x52),
        _ => return None,
    })
}

/// Colours for the other series, by position.
const PALETTE: [RGBColor; 10] = [
    RGBColor(0x4c, 0x72, 0xb0),
    RGBColor(0xdd, 0x84, 0x52),
    RGBColor(0x55, 0xa8, 0x68),
    RGBColor(0xc4, 0x4e, 0x52),
    RGBColor(0x81, 0x72, 0xb3),
    RGBColor(0x93, 0x78, 0x60),
    RGBColor(0xda, 0x8b, 0xc3),
    RGBColor(0x8c, 0x8c, 0x8c),
    RGBColor(0xcc, 0xb9, 0x74),
    RGBColor(0x64, 0xb5, 0xcd),
];

fn color(series: &str, index: usize) -> RGBColor {
    named_color(series).unwrap_or(PALETTE[index % PALETTE.len()])
}

/// The distinct values of `it`, in order of first appearance.
pub fn uniq<T: PartialEq + Clone>(it: impl Iterator<Item = T>) -> Vec<T> {
    let mut v: Vec<T> = Vec::new();
    for x in it {
        if !v.contains(&x) {
            v.push(x);
        }
    }
    v
}

/// Draws `bars` into an SVG file at `path`: panels, groups and series in order of first
/// appearance, two panels a row, each panel scaled to its tallest bar.
pub fn draw(bars: &[Bar], title: &str, y_desc: &str, path: &Path) -> Result<(), BoxError> {
    let panels = uniq(bars.iter().map(|b| b.panel.clone()));
    let groups = uniq(bars.iter().map(|b| b.group.clone()));
    let series = uniq(bars.iter().map(|b| b.series.clone()));
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
    let ng = groups.len() as f64;
    let bar_w = 0.8 / series.len() as f64;
    for (area, panel) in areas.iter().zip(&panels) {
        let mine: Vec<&Bar> = bars.iter().filter(|b| &b.panel == panel).collect();
        let ymax = mine.iter().map(|b| b.value).fold(0.0, f64::max).max(1e-3) * 1.15;
        let mut chart = ChartBuilder::on(area)
            .caption(panel, ("sans-serif", 15))
            .margin(10)
            .x_label_area_size(28)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..ng, 0f64..ymax)?;
        let names = groups.clone();
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(groups.len() * 2 + 1)
            .x_label_formatter(&move |x: &f64| {
                let i = x.floor();
                if (x - i - 0.5).abs() < 1e-6 {
                    names.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .y_desc(y_desc)
            .draw()?;
        for (j, s) in series.iter().enumerate() {
            let c = color(s, j);
            let rects: Vec<Rectangle<(f64, f64)>> = groups
                .iter()
                .enumerate()
                .filter_map(|(i, g)| {
                    let b = mine.iter().find(|b| &b.group == g && &b.series == s)?;
                    let x0 = i as f64 + 0.1 + j as f64 * bar_w;
                    Some(Rectangle::new([(x0, 0.0), (x0 + bar_w * 0.95, b.value)], c.filled()))
                })
                .collect();
            chart
                .draw_series(rects)?
                .label(s.as_str())
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
