//! `--with-postgres`'s side of the matrix: on each medium asked for, a throwaway PostgreSQL
//! server with its data directory there ([`super::postgres`]), the same data loaded, and the
//! same queries per pool fraction, cold and warm, with one worker (`postgres-1w`) and with the
//! default parallelism (`postgres`); every answer compared with ours. So the report holds the
//! paper's three comparisons: the layers against each other, against PostgreSQL on disk, and
//! against PostgreSQL on (emulated) NVM.

use std::collections::BTreeMap;
use std::time::Instant;

use super::args::Medium;
use super::output::pool_label;
use super::postgres::{Server, compare};
use super::runner::{Ctx, LoadRecord, RunRecord, medium_dir, room_for_postgres};
use crate::BoxError;
use crate::dirs::{check_medium, check_room};

/// What PostgreSQL's data directory survives on `medium`.
fn durability(version: &str, medium: Medium) -> String {
    let name = version.split(',').next().unwrap_or("PostgreSQL");
    match medium {
        Medium::Disk => {
            format!("{name}: fsync on, WAL flushed at commit on disk: survives power loss")
        }
        Medium::Tmpfs => {
            format!("{name}: fsync on, on tmpfs: survives a process crash only: the medium is DRAM")
        }
    }
}

/// Runs PostgreSQL's side on every medium of the configuration; returns the note that says how.
pub(super) fn run(ctx: &mut Ctx<'_>, loads: &mut Vec<LoadRecord>) -> Result<String, BoxError> {
    let cfg = ctx.cfg;
    for &medium in &cfg.media {
        let dir = medium_dir(cfg, medium);
        let flag = format!("--dir-{}", medium.name());
        check_medium(dir, medium == Medium::Tmpfs, &flag)?;
        let what = format!("PostgreSQL's database at SF {}", cfg.sf);
        check_room(dir, room_for_postgres(cfg.sf), &what, &flag)?;
        let server = Server::start(dir, 128 << 10)?;
        let durability = durability(&server.version, medium);
        let t0 = Instant::now();
        let (rows, size) = server.load(cfg.sf)?;
        let elapsed = t0.elapsed();
        ctx.progress.load_done(&format!("postgres on {}", medium.name()), rows, elapsed, size);
        let seconds = elapsed.as_secs_f64();
        loads.push(LoadRecord {
            layer: "postgres".into(),
            medium: medium.name().into(),
            durability: durability.clone(),
            rows,
            seconds,
            rows_per_s: rows as f64 / seconds.max(1e-9),
            user_ms: None,
            sys_ms: None,
            data_bytes: size,
            tables: BTreeMap::new(),
            table_bytes: BTreeMap::new(),
        });
        for &fraction in &cfg.pool_fractions {
            let kb = ((size as f64 * fraction) as u64 / 1024).max(128);
            for (layer, workers) in [("postgres-1w", Some(0)), ("postgres", None)] {
                let mut pass = |cold: bool, run: u32, measured: bool| -> Result<(), BoxError> {
                    for &q in &cfg.queries {
                        if cold {
                            server.restart(kb)?;
                            if medium == Medium::Disk {
                                server.evict()?;
                            }
                        }
                        let pg = server.query(q, cfg.sf, workers)?;
                        let ours = ctx.checker.get(q).ok_or("PostgreSQL ran before nvpage")?;
                        if let Some(d) = compare(ours, &pg.rows) {
                            return Err(format!(
                                "{q}: PostgreSQL's answer on {} differs from ours: {d}",
                                medium.name()
                            )
                            .into());
                        }
                        if measured {
                            let cpu = pg.cpu();
                            ctx.runs.push(RunRecord {
                                query: q.name(),
                                layer: layer.into(),
                                medium: medium.name().into(),
                                durability: durability.clone(),
                                pool_fraction: fraction,
                                cold,
                                run,
                                wall_ms: pg.server_ms,
                                user_ms: cpu.user_ms(),
                                sys_ms: cpu.sys_ms(),
                                pages_read: 0,
                                bytes_copied: 0,
                                redirected_reads: 0,
                            });
                        }
                    }
                    Ok(())
                };
                let what = |pass: &str| {
                    format!(
                        "{layer} on {}, pool holds {}, {pass}",
                        medium.name(),
                        pool_label(fraction)
                    )
                };
                let detail = format!("{} queries × {} run(s)", cfg.queries.len(), cfg.runs);
                if cfg.cold {
                    let t0 = Instant::now();
                    for run in 0..cfg.runs {
                        pass(true, run, true)?;
                    }
                    ctx.progress.config_done(&what("cold"), &detail, t0.elapsed());
                }
                if cfg.warm {
                    let t0 = Instant::now();
                    server.restart(kb)?;
                    pass(false, 0, false)?;
                    for run in 0..cfg.runs {
                        pass(false, run, true)?;
                    }
                    let detail = format!("{detail} after a warm-up");
                    ctx.progress.config_done(&what("warm"), &detail, t0.elapsed());
                }
            }
        }
    }
    Ok("postgres: a throwaway PostgreSQL server per medium, its data directory in --dir-disk \
        or --dir-tmpfs (Unix socket only, autovacuum off after VACUUM ANALYZE at load, the \
        tables streamed in with \\copy), shared_buffers = pool fraction × its database size; \
        postgres-1w runs with max_parallel_workers_per_gather = 0, postgres with the default \
        (2); cold = server restarted, and on disk its files evicted from the OS cache; wall \
        time is the server's own duration for the statement (log_min_duration_statement: \
        parse, plan and execution, no client round trip); CPU is the backend's and its parallel \
        workers', read in the query's session just before and after it (10 ms ticks of \
        /proc/<pid>/stat); Q2, Q17 and Q20 in the decorrelated SQL our plans follow (PostgreSQL \
        runs their correlated subqueries once per outer row); no page counters (shown as -), \
        load CPU not measured"
        .into())
}
