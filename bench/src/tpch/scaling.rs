//! `--scaling`: the matrix at several scale factors, and a table of how load and query time grow
//! with the data. Each line is one database (medium, layer) and pass at one scale factor, with
//! its time and its time per GiB of data file: if cost grows linearly with the data, the per-GiB
//! columns stay level down a layer's lines.

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{Cell, ContentArrangement, Table};

use crate::report::right;

use super::output::{layer_rank, lines, pool_label};
use super::runner::Report;
use super::summary::geo_mean;

const GIB: f64 = (1u64 << 30) as f64;

/// One line of the scaling table.
#[derive(Clone, Debug, PartialEq)]
pub struct ScalingRow {
    /// Scale factor.
    pub sf: f64,
    /// `disk` or `tmpfs`.
    pub medium: String,
    /// Layer (or `postgres`, `postgres-1w`).
    pub layer: String,
    /// Pool size as a fraction of the data.
    pub pool_fraction: f64,
    /// Cold or warm.
    pub cold: bool,
    /// The data file's size (PostgreSQL: its database's).
    pub data_bytes: u64,
    /// Load time, generation included (PostgreSQL's loads once per medium: `postgres` and
    /// `postgres-1w` show the same).
    pub load_s: f64,
    /// Geometric mean of the queries' median times, in ms.
    pub query_geo_ms: f64,
}

/// The scaling rows of several reports, one per scale factor.
pub fn rows(reports: &[Report]) -> Vec<ScalingRow> {
    let mut out = Vec::new();
    for r in reports {
        let ls = lines(&r.runs);
        let mut keys: Vec<(String, String, f64, bool)> = Vec::new();
        for l in &ls {
            let k = (l.medium.clone(), l.layer.clone(), l.pool_fraction, l.cold);
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        keys.sort_by(|a, b| {
            (a.0.as_str(), layer_rank(&a.1), !a.3)
                .cmp(&(b.0.as_str(), layer_rank(&b.1), !b.3))
                .then(a.2.total_cmp(&b.2))
        });
        for (medium, layer, pool_fraction, cold) in keys {
            let times: Vec<f64> = ls
                .iter()
                .filter(|l| {
                    l.medium == medium
                        && l.layer == layer
                        && l.pool_fraction == pool_fraction
                        && l.cold == cold
                })
                .map(|l| l.median_ms)
                .collect();
            let loaded = if layer.starts_with("postgres") { "postgres" } else { layer.as_str() };
            let load = r.config.loads.iter().find(|l| l.layer == loaded && l.medium == medium);
            out.push(ScalingRow {
                sf: r.config.options.sf,
                data_bytes: load.map_or(0, |l| l.data_bytes),
                load_s: load.map_or(0.0, |l| l.seconds),
                query_geo_ms: geo_mean(&times).unwrap_or(0.0),
                medium,
                layer,
                pool_fraction,
                cold,
            });
        }
    }
    out
}

/// The scaling table.
pub fn table(rows: &[ScalingRow]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED).set_content_arrangement(ContentArrangement::Disabled);
    t.set_header(vec![
        "SF",
        "medium",
        "layer",
        "pool holds",
        "pass",
        "data GiB",
        "load s",
        "load s / GiB",
        "query ms (geo)",
        "query ms / GiB",
    ]);
    for r in rows {
        let gib = r.data_bytes as f64 / GIB;
        let per = |v: f64| if gib > 0.0 { format!("{:.1}", v / gib) } else { "-".into() };
        t.add_row(vec![
            right(format!("{}", r.sf)),
            Cell::new(&r.medium),
            Cell::new(&r.layer),
            right(pool_label(r.pool_fraction)),
            Cell::new(if r.cold { "cold" } else { "warm" }),
            right(format!("{gib:.2}")),
            right(format!("{:.1}", r.load_s)),
            right(per(r.load_s)),
            right(format!("{:.1}", r.query_geo_ms)),
            right(per(r.query_geo_ms)),
        ]);
    }
    t
}

/// The legend printed above the table.
pub const LEGEND: &str = "Scaling: per scale factor, each database's load time (generation \
                          included) and the geometric mean of its queries' median times, each \
                          also per GiB of data file; level per-GiB columns down a layer's lines \
                          mean cost grows linearly with the data.";
