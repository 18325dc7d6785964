//! The verdict under the summary, in one sentence: which layer is fastest on each medium with
//! each pool size as measured, and by how much; and, when PostgreSQL ran, how far behind or ahead
//! of that layer it was. Every number is read from the runs' medians ([`super::output::lines`]).
//!
//! A layer's time in a group (medium, pool size) is the geometric mean of its median times over
//! every query and pass the group ran (the summary's mean, which weighs a query that halves and
//! one that doubles alike). The fastest layer has the smallest; its lead is the next layer's time
//! divided by its own.

use super::output::{Line, is_plan_layer, layer_rank, medium_label, pool_label};
use super::summary::geo_mean;

/// Leads below this read as a tie ("level with"): they print as 1.00×.
const TIE: f64 = 1.005;

/// The layers of one medium and pool size, fastest first.
#[derive(Clone, Debug, PartialEq)]
pub struct Standing {
    /// `disk` or `tmpfs`.
    pub medium: String,
    /// The pool's size as a fraction of the data.
    pub pool_fraction: f64,
    /// nvpage's layers with their geometric mean times in ms, fastest first.
    pub layers: Vec<(String, f64)>,
    /// PostgreSQL's geometric mean time in ms, with whichever of its settings (`postgres`,
    /// `postgres-1w`) was faster, if it ran.
    pub postgres_ms: Option<f64>,
}

/// The standings of every medium and pool size in `lines`, in the order they first appear.
pub fn standings(lines: &[Line]) -> Vec<Standing> {
    let mut groups: Vec<(String, f64)> = Vec::new();
    for l in lines {
        let g = (l.medium.clone(), l.pool_fraction);
        if !groups.contains(&g) {
            groups.push(g);
        }
    }
    groups
        .into_iter()
        .map(|(medium, pool_fraction)| {
            let mine: Vec<&Line> = lines
                .iter()
                .filter(|l| l.medium == medium && l.pool_fraction == pool_fraction)
                .collect();
            let mut names: Vec<&str> = Vec::new();
            for l in &mine {
                if !names.contains(&l.layer.as_str()) {
                    names.push(&l.layer);
                }
            }
            names.sort_by_key(|n| layer_rank(n));
            let geo = |layer: &str| {
                let times: Vec<f64> =
                    mine.iter().filter(|l| l.layer == layer).map(|l| l.median_ms).collect();
                geo_mean(&times)
            };
            let mut layers: Vec<(String, f64)> = names
                .iter()
                .filter(|n| is_plan_layer(n))
                .filter_map(|&n| Some((n.to_string(), geo(n)?)))
                .collect();
            layers.sort_by(|a, b| a.1.total_cmp(&b.1));
            let postgres_ms = names
                .iter()
                .filter(|n| n.starts_with("postgres"))
                .filter_map(|&n| geo(n))
                .min_by(f64::total_cmp);
            Standing { medium, pool_fraction, layers, postgres_ms }
        })
        .collect()
}

/// One group's clause: `se2 with the pool holding 10% (1.40× faster than pread)`; after a
/// clause of the same medium, `with 10% (…)` when the same layer won, `pread with 10% (…)` when
/// another did.
fn clause(s: &Standing, previous: Option<&Standing>) -> Option<String> {
    let (fastest, ms) = s.layers.first()?;
    let pool = pool_label(s.pool_fraction);
    let who = match previous.and_then(|p| p.layers.first()) {
        None => format!("{fastest} with the pool holding {pool}"),
        Some((won, _)) if won == fastest => format!("with {pool}"),
        Some(_) => format!("{fastest} with {pool}"),
    };
    Some(match s.layers.get(1) {
        None => format!("{who} ({fastest} alone, {ms:.1} ms)"),
        Some((next, next_ms)) => {
            let lead = next_ms / ms;
            if lead < TIE {
                format!("{who} (level with {next})")
            } else {
                format!("{who} ({lead:.2}× faster than {next})")
            }
        }
    })
}

/// `x` or `lo–hi`, each with `digits` decimals.
fn range(v: &[f64], digits: usize) -> String {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if format!("{lo:.digits$}") == format!("{hi:.digits$}") {
        format!("{lo:.digits$}")
    } else {
        format!("{lo:.digits$}–{hi:.digits$}")
    }
}

/// The sentence: the fastest layer per medium and pool size, over `queries` queries run in
/// `passes` ("cold and warm", "cold", "warm"), and PostgreSQL's time against it if it ran.
pub fn sentence(standings: &[Standing], queries: usize, passes: &str) -> String {
    let mut media: Vec<&str> = Vec::new();
    for s in standings {
        if !media.contains(&s.medium.as_str()) {
            media.push(&s.medium);
        }
    }
    let per_medium: Vec<String> = media
        .iter()
        .filter_map(|&m| {
            let mine: Vec<&Standing> = standings.iter().filter(|s| s.medium == m).collect();
            let clauses: Vec<String> = (0..mine.len())
                .filter_map(|i| clause(mine[i], i.checked_sub(1).map(|p| mine[p])))
                .collect();
            (!clauses.is_empty())
                .then(|| format!("on {}, {}", medium_label(m), clauses.join(" and ")))
        })
        .collect();
    if per_medium.is_empty() {
        return "No layer ran.".into();
    }
    let mut text = format!(
        "Fastest layer, by the geometric mean of its median times over the {queries} quer{}, \
         {passes}: {}",
        if queries == 1 { "y" } else { "ies" },
        per_medium.join("; ")
    );
    let postgres: Vec<f64> =
        standings.iter().filter_map(|s| Some(s.postgres_ms? / s.layers.first()?.1)).collect();
    if !postgres.is_empty() {
        text.push_str(&format!(
            "; PostgreSQL (the faster of its two settings) took {}× that layer's time",
            range(&postgres, 1)
        ));
    }
    text.push('.');
    text
}

/// The passes `lines` hold: "cold and warm", "cold" or "warm".
pub fn passes(lines: &[Line]) -> &'static str {
    match (lines.iter().any(|l| l.cold), lines.iter().any(|l| !l.cold)) {
        (true, true) => "cold and warm",
        (true, false) => "cold",
        _ => "warm",
    }
}

#[cfg(test)]
mod tests {
    use super::super::output::lines;
    use super::super::runner::RunRecord;
    use super::*;

    /// Three runs of `query` on `layer`, cold and warm: `ms`, `ms` and ten times `ms`, so only
    /// the median is `ms` (the mean is four times it).
    fn runs(medium: &str, pool: f64, layer: &str, query: &str, ms: f64) -> Vec<RunRecord> {
        [ms, ms, 10.0 * ms]
            .into_iter()
            .enumerate()
            .flat_map(|(run, wall_ms)| {
                [true, false].map(|cold| RunRecord {
                    query: query.into(),
                    layer: layer.into(),
                    medium: medium.into(),
                    durability: String::new(),
                    pool_fraction: pool,
                    cold,
                    run: run as u32,
                    wall_ms,
                    user_ms: 0.0,
                    sys_ms: 0.0,
                    pages_read: 0,
                    bytes_copied: 0,
                    redirected_reads: 0,
                })
            })
            .collect()
    }

    fn made_up(with_postgres: bool) -> Vec<Line> {
        let mut all = Vec::new();
        // With a tenth of the data in the pool, pread is fastest on disk, 1.10× ahead of SE2,
        // and SE2 on tmpfs, 1.40× ahead of pread; with all of it, SE1 on disk (1.25× ahead of
        // pread) and SE2 again on tmpfs (1.20× ahead of SE1); in both queries.
        for (medium, pool, layer, q1, q6) in [
            ("disk", 0.1, "pread", 100.0, 10.0),
            ("disk", 0.1, "se1", 130.0, 13.0),
            ("disk", 0.1, "se2", 110.0, 11.0),
            ("disk", 1.0, "pread", 50.0, 5.0),
            ("disk", 1.0, "se1", 40.0, 4.0),
            ("disk", 1.0, "se2", 60.0, 6.0),
            ("tmpfs", 0.1, "pread", 70.0, 7.0),
            ("tmpfs", 0.1, "se1", 75.0, 7.5),
            ("tmpfs", 0.1, "se2", 50.0, 5.0),
            ("tmpfs", 1.0, "pread", 50.0, 5.0),
            ("tmpfs", 1.0, "se1", 36.0, 3.6),
            ("tmpfs", 1.0, "se2", 30.0, 3.0),
        ] {
            all.extend(runs(medium, pool, layer, "q01", q1));
            all.extend(runs(medium, pool, layer, "q06", q6));
        }
        if with_postgres {
            for (medium, layer, ms) in [
                ("disk", "postgres", 300.0),
                ("disk", "postgres-1w", 200.0),
                ("tmpfs", "postgres", 150.0),
            ] {
                all.extend(runs(medium, 0.1, layer, "q01", ms));
                all.extend(runs(medium, 0.1, layer, "q06", ms / 10.0));
            }
        }
        lines(&all)
    }

    #[test]
    fn the_verdict_names_the_fastest_layer_per_medium_and_its_lead() {
        let lines = made_up(false);
        let text = sentence(&standings(&lines), 2, passes(&lines));
        assert!(
            text.starts_with(
                "Fastest layer, by the geometric mean of its median times over the 2 queries, \
                 cold and warm: "
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "on disk, pread with the pool holding 10% (1.10× faster than se2) and se1 with \
                 100% (1.25× faster than pread); "
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "on tmpfs (emulated NVM), se2 with the pool holding 10% (1.40× faster than pread) \
                 and with 100% (1.20× faster than se1)."
            ),
            "{text}"
        );
        assert!(!text.contains("PostgreSQL"), "{text}");
    }

    #[test]
    fn postgres_is_set_against_the_fastest_layer_when_it_ran() {
        let lines = made_up(true);
        let text = sentence(&standings(&lines), 2, passes(&lines));
        // Disk: its one-worker setting, 200 / 100 ms; tmpfs: 150 / 50 ms.
        assert!(
            text.ends_with(
                "; PostgreSQL (the faster of its two settings) took 2.0–3.0× that layer's time."
            ),
            "{text}"
        );
        // PostgreSQL is never named the fastest layer.
        assert!(text.contains("on disk, pread with"), "{text}");
    }

    #[test]
    fn a_lone_layer_and_a_tie_are_said_as_such() {
        let alone = Standing {
            medium: "disk".into(),
            pool_fraction: 1.0,
            layers: vec![("se2".into(), 12.34)],
            postgres_ms: None,
        };
        assert_eq!(
            clause(&alone, None).unwrap(),
            "se2 with the pool holding 100% (se2 alone, 12.3 ms)"
        );
        let tie = Standing {
            pool_fraction: 0.1,
            layers: vec![("se2".into(), 100.0), ("pread".into(), 100.4)],
            ..alone.clone()
        };
        assert_eq!(clause(&tie, None).unwrap(), "se2 with the pool holding 10% (level with pread)");
        // After a clause of the same medium: only the pool when the same layer won.
        assert_eq!(clause(&tie, Some(&alone)).unwrap(), "with 10% (level with pread)");
    }
}
