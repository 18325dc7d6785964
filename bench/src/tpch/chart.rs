//! The SVG chart: one panel per medium, pool size and pass; in each, the queries along the x
//! axis with one bar per layer (median wall time). Drawn by [`crate::chart`].

use std::path::Path;

use super::output::{Line, medium_label};
use crate::BoxError;
use crate::chart::{self, Bar};

/// Draws `lines` into an SVG file at `path`.
pub fn draw(lines: &[Line], title: &str, path: &Path) -> Result<(), BoxError> {
    let bars: Vec<Bar> = lines
        .iter()
        .map(|l| Bar {
            panel: format!(
                "{}, pool {} of the data, {}",
                medium_label(&l.medium),
                l.pool_fraction,
                if l.cold { "cold" } else { "warm" }
            ),
            group: l.query.clone(),
            series: l.layer.clone(),
            value: l.median_ms,
        })
        .collect();
    chart::draw(&bars, title, "median wall time, ms", path)
}
