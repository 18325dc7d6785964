//! The 22 queries' SQL through a cluster (feature `cluster`): a coordinator and nvpage workers
//! (`nvpage-cluster`), the TPC-H tables split across the workers — `lineitem` by hash of
//! `l_orderkey`, `orders` of `o_orderkey`, `customer` of `c_custkey`, `part` of `p_partkey`,
//! `partsupp` of `ps_partkey`, `supplier` of `s_suppkey`; `nation` and `region` on every worker.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use datafusion::datasource::MemTable;
use indicatif::ProgressBar;
use nvpage::{Database, Layer};
use nvpage_cluster::{Cluster, Coordinator, Traffic};
use nvpage_sql::Session;

use super::args::{Config, Medium};
use super::load::load_all;
use super::postgres::compare_text;
use super::queries::{Query, QueryResult};
use super::runner::builder;
use super::sql::{TABLES, rows, text};
use super::summary::geo_mean;
use crate::BoxError;
use crate::stats::median;

/// The cluster file's `[tables.*]` for the eight tables.
pub const SPLITS: &str = r#"
[tables.lineitem]
hash = ["l_orderkey"]
[tables.orders]
hash = ["o_orderkey"]
[tables.customer]
hash = ["c_custkey"]
[tables.part]
hash = ["p_partkey"]
[tables.partsupp]
hash = ["ps_partkey"]
[tables.supplier]
hash = ["s_suppkey"]
[tables.nation]
replicated = true
[tables.region]
replicated = true
"#;

/// A cluster file for workers at `addresses` (`host:port`, in shard order) with `token`.
pub fn cluster_file(token: &str, addresses: &[String]) -> String {
    let mut s = format!("token = \"{token}\"\n");
    for a in addresses {
        s.push_str(&format!("[[workers]]\naddress = \"{a}\"\n"));
    }
    s.push_str(SPLITS);
    s
}

/// Loads the eight tables of `db` into the cluster through `coordinator`: each read whole
/// from `db` into memory, then `CREATE TABLE … AS SELECT` through the coordinator, which
/// splits its rows among the workers.
pub async fn load(coordinator: &Coordinator, db: Arc<Database>) -> Result<(), BoxError> {
    let session = Session::new(db)?;
    for t in TABLES {
        let df = session.sql(&format!("select * from {t}")).await?;
        let schema = Arc::new(df.schema().as_arrow().clone());
        let batches = df.collect().await?;
        let source = format!("source_{t}");
        let ctx = coordinator.context();
        ctx.register_table(source.as_str(), Arc::new(MemTable::try_new(schema, vec![batches])?))?;
        let loaded = coordinator.sql(&format!("create table {t} as select * from {source}")).await;
        ctx.deregister_table(source.as_str())?;
        loaded?;
    }
    session.close();
    Ok(())
}

/// Query `q`'s SQL as the cluster runs it: the SQL engines' text, except Q11, whose subquery
/// names its sum. The distributed planner has DataFusion turn an uncorrelated scalar subquery
/// into a join (its physical form does not travel between processes), and that rewrite fails
/// ("ambiguous reference") where the subquery's aggregate is spelled as the outer query's.
pub fn cluster_text(q: Query, sf: f64) -> String {
    let sql = text(q, sf);
    if q != Query::Q11 {
        return sql;
    }
    const SUM: &str = "select sum(ps_supplycost * ps_availqty) from";
    debug_assert!(sql.contains(SUM), "Q11's subquery as the SQL engines' text spells it");
    sql.replace(SUM, "select sum(ps_supplycost * ps_availqty) as total_value from")
}

/// Runs `q`'s SQL ([`cluster_text`]) through `coordinator`; its rows as text (NULL empty).
pub async fn run(
    coordinator: &Coordinator,
    q: Query,
    sf: f64,
) -> Result<Vec<Vec<String>>, BoxError> {
    let batches = coordinator.sql(&cluster_text(q, sf)).await?.collect().await?;
    rows(&batches)
}

/// [`run`], with what the query moved over the network.
pub async fn run_with_traffic(
    coordinator: &Coordinator,
    q: Query,
    sf: f64,
) -> Result<(Vec<Vec<String>>, Traffic), BoxError> {
    let df = coordinator.sql(&cluster_text(q, sf)).await?;
    let ctx = Arc::new(df.task_ctx());
    let plan = df.create_physical_plan().await?;
    let batches = datafusion::physical_plan::collect(plan.clone(), ctx).await?;
    Ok((rows(&batches)?, Traffic::of(plan).await?))
}

/// The environment variable through which the benchmark hands its workers their token.
const TOKEN_ENV: &str = nvpage_cluster::config::TOKEN_ENV;

/// `nvpage-bench cluster-worker DIR --listen ADDR --medium M`: one worker of [`bench`],
/// serving the database in `dir` (the best layer compiled in, opened for medium `M`) until
/// SIGTERM. Its first line on stdout is `listening on ADDR`.
pub fn worker(dir: &Path, listen: SocketAddr, medium: Medium) -> Result<(), BoxError> {
    let token = std::env::var(TOKEN_ENV).map_err(|_| format!("{TOKEN_ENV} is not set"))?;
    let db = builder(Layer::best_compiled(), medium).open(dir)?;
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind(listen).await?;
        println!("listening on {}", listener.local_addr()?);
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        let stop = async move {
            term.recv().await;
        };
        nvpage_cluster::worker::serve(db, listener, &token, stop).await?;
        Ok::<_, BoxError>(())
    })?;
    rt.shutdown_timeout(Duration::from_secs(1));
    Ok(())
}

/// A worker process of [`bench`].
struct WorkerProcess {
    child: Child,
    address: String,
}

impl WorkerProcess {
    fn start(dir: &Path, medium: Medium, token: &str) -> Result<Self, BoxError> {
        let mut child = Command::new(std::env::current_exe()?)
            .arg("cluster-worker")
            .arg(dir)
            .args(["--listen", "127.0.0.1:0", "--medium", medium.name()])
            .env(TOKEN_ENV, token)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()?;
        let mut line = String::new();
        let stdout = child.stdout.take().ok_or("a worker without its stdout")?;
        BufReader::new(stdout).read_line(&mut line)?;
        let Some(address) = line.trim().strip_prefix("listening on ") else {
            let _ = child.kill();
            return Err(format!("a worker did not start: {line:?}").into());
        };
        Ok(Self { address: address.to_string(), child })
    }

    /// The process's user + system CPU time so far (`/proc/PID/stat`).
    fn cpu(&self) -> Result<Duration, BoxError> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id()))?;
        // The fields after the command's name, which is in parentheses and may hold spaces.
        let rest = stat.rsplit_once(')').map(|(_, r)| r).ok_or("an unreadable /proc stat")?;
        let f: Vec<&str> = rest.split_whitespace().collect();
        let ticks: u64 = f.get(11).ok_or("no utime")?.parse::<u64>()?
            + f.get(12).ok_or("no stime")?.parse::<u64>()?;
        let hz = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)?.unwrap_or(100) as u64;
        Ok(Duration::from_micros(ticks * 1_000_000 / hz.max(1)))
    }

    fn stop(mut self) -> Result<(), BoxError> {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM)?;
        let status = self.child.wait()?;
        if !status.success() {
            return Err(format!("a worker ended with {status}").into());
        }
        Ok(())
    }
}

/// One query's figures at one worker count: medians of the measured runs.
#[derive(Clone, Default)]
struct Cell {
    wall: Duration,
    /// Each worker's CPU time in the query, in shard order.
    cpu_each: Vec<Duration>,
    /// All workers' CPU time in the query.
    cpu_sum: Duration,
    /// What the checked run moved.
    traffic: Traffic,
}

/// `tpch --workers N,...`: for each N, N worker processes on this machine (their databases in
/// the medium's directory), the tables loaded through the coordinator, then each query's SQL
/// through the coordinator — a warm-up run checked against the plans' answer over one
/// database, then `cfg.runs` measured runs — with the wall time and the workers' CPU time.
pub fn bench(cfg: &Config, counts: &[usize]) -> Result<(), BoxError> {
    if counts.contains(&0) {
        return Err("--workers: every count must be at least 1".into());
    }
    let medium = cfg.media.first().copied().unwrap_or(Medium::Tmpfs);
    let base = match medium {
        Medium::Tmpfs => &cfg.dir_tmpfs,
        Medium::Disk => &cfg.dir_disk,
    };
    std::fs::create_dir_all(base)?;
    let root = tempfile::tempdir_in(base)?;
    let layer = Layer::best_compiled();
    let quiet = cfg.quiet;
    let say = |s: String| {
        if !quiet {
            eprintln!("{s}");
        }
    };
    say(format!("loading SF {} into one database ({layer}, {})", cfg.sf, medium.name()));
    let db = Arc::new(builder(layer, medium).open(root.path().join("one"))?);
    load_all(&db, cfg.sf, false, &ProgressBar::hidden())?;
    let want: Vec<(Query, QueryResult)> = {
        let rx = db.begin_read()?;
        cfg.queries
            .iter()
            .map(|&q| Ok((q, q.run(&rx, cfg.threads)?)))
            .collect::<Result<_, BoxError>>()?
    };
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let token =
        format!("nvpage-bench-{}-{}", std::process::id(), Instant::now().elapsed().as_nanos());
    let mut cells: Vec<Vec<Cell>> = Vec::new();
    let mut loads = Vec::new();
    for &n in counts {
        say(format!("{n} worker(s): starting, loading through the coordinator"));
        let workers = (0..n)
            .map(|i| WorkerProcess::start(&root.path().join(format!("n{n}-w{i}")), medium, &token))
            .collect::<Result<Vec<_>, _>>()?;
        let addresses: Vec<String> = workers.iter().map(|w| w.address.clone()).collect();
        let measured = rt.block_on(async {
            let cluster = Cluster::parse(&cluster_file(&token, &addresses), None)?;
            let c = Coordinator::connect(cluster).await?;
            let t0 = Instant::now();
            load(&c, db.clone()).await?;
            let load_time = t0.elapsed();
            c.refresh().await?;
            let mut row = Vec::new();
            for (q, expect) in &want {
                let (got, traffic) = run_with_traffic(&c, *q, cfg.sf).await?;
                if let Some(diff) = compare_text(expect, &got, "the cluster's") {
                    return Err(format!("{q} through {n} workers: {diff}").into());
                }
                let (mut walls, mut each, mut sums) = (Vec::new(), vec![Vec::new(); n], Vec::new());
                for _ in 0..cfg.runs.max(1) {
                    let before =
                        workers.iter().map(WorkerProcess::cpu).collect::<Result<Vec<_>, _>>()?;
                    let t = Instant::now();
                    run(&c, *q, cfg.sf).await?;
                    walls.push(t.elapsed().as_secs_f64());
                    let after =
                        workers.iter().map(WorkerProcess::cpu).collect::<Result<Vec<_>, _>>()?;
                    let used: Vec<f64> =
                        after.iter().zip(&before).map(|(a, b)| (*a - *b).as_secs_f64()).collect();
                    for (e, u) in each.iter_mut().zip(&used) {
                        e.push(*u);
                    }
                    sums.push(used.iter().sum());
                }
                let secs = |v: &[f64]| Duration::from_secs_f64(median(v));
                row.push(Cell {
                    wall: secs(&walls),
                    cpu_each: each.iter().map(|e| secs(e)).collect(),
                    cpu_sum: secs(&sums),
                    traffic,
                });
                say(format!("{n} worker(s): {q} {:.1} ms", secs(&walls).as_secs_f64() * 1e3));
            }
            Ok::<_, BoxError>((load_time, row))
        });
        for w in workers {
            w.stop()?;
        }
        let (load_time, row) = measured?;
        loads.push(load_time);
        cells.push(row);
    }
    print_table(cfg, counts, &want, &cells, &loads, layer, medium);
    Ok(())
}

fn print_table(
    cfg: &Config,
    counts: &[usize],
    want: &[(Query, QueryResult)],
    cells: &[Vec<Cell>],
    loads: &[Duration],
    layer: Layer,
    medium: Medium,
) {
    println!(
        "TPC-H SF {} through a coordinator and N worker processes on this machine ({} cores): \
         the queries' SQL, warm, medians of {} runs; every answer equal to the plans' over one \
         database. Workers' databases: {layer} on {}, each shard loaded as one \
         transaction per worker, durable when it commits.",
        cfg.sf,
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        cfg.runs.max(1),
        medium.name(),
    );
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED);
    let mut header = vec!["query".to_string()];
    for n in counts {
        header.push(format!("{n}w wall ms"));
        header.push(format!("{n}w CPU ms: each worker (all)"));
    }
    t.set_header(header);
    let ms = |d: Duration| format!("{:.1}", d.as_secs_f64() * 1e3);
    for (i, (q, _)) in want.iter().enumerate() {
        let mut row = vec![q.to_string()];
        for c in cells {
            let c = &c[i];
            row.push(ms(c.wall));
            let each: Vec<String> =
                c.cpu_each.iter().map(|d| format!("{:.0}", d.as_secs_f64() * 1e3)).collect();
            row.push(format!("{} ({:.0})", each.join(", "), c.cpu_sum.as_secs_f64() * 1e3));
        }
        t.add_row(row);
    }
    let mut geo = vec!["geometric mean".to_string()];
    for c in cells {
        let walls: Vec<f64> = c.iter().map(|c| c.wall.as_secs_f64() * 1e3).collect();
        geo.push(geo_mean(&walls).map_or("-".into(), |g| format!("{g:.1}")));
        geo.push(String::new());
    }
    t.add_row(geo);
    let mut load = vec!["load (s)".to_string()];
    for l in loads {
        load.push(format!("{:.1}", l.as_secs_f64()));
        load.push(String::new());
    }
    t.add_row(load);
    println!("{t}");

    println!(
        "What each query moved (its checked run), between workers and from the workers to the \
         coordinator: rows through the stage boundaries (a worker's reads of its own tasks, \
         in-process, included) / MiB over the network (Arrow Flight messages)."
    );
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED);
    let mut header = vec!["query".to_string()];
    for n in counts {
        header.push(format!("{n}w between workers"));
        header.push(format!("{n}w to coordinator"));
    }
    t.set_header(header);
    let flow =
        |f: nvpage_cluster::Flow| format!("{} / {:.1}", f.rows, f.bytes as f64 / (1024.0 * 1024.0));
    let mut totals = vec![(0u64, 0u64); counts.len()];
    for (i, (q, _)) in want.iter().enumerate() {
        let mut row = vec![q.to_string()];
        for (c, total) in cells.iter().zip(&mut totals) {
            let tr = c[i].traffic;
            total.0 += tr.between_workers.bytes;
            total.1 += tr.to_coordinator.bytes;
            row.push(flow(tr.between_workers));
            row.push(flow(tr.to_coordinator));
        }
        t.add_row(row);
    }
    let mut sum = vec!["all queries (MiB)".to_string()];
    for (between, to) in totals {
        sum.push(format!("{:.1}", between as f64 / (1024.0 * 1024.0)));
        sum.push(format!("{:.1}", to as f64 / (1024.0 * 1024.0)));
    }
    t.add_row(sum);
    println!("{t}");
}
