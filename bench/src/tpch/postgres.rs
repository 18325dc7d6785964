//! `--with-postgres`: the same data and queries on a throwaway PostgreSQL server, side by side.
//!
//! The server is our own: `initdb` into a temporary directory (on the disk or on tmpfs: one
//! server per medium, see `pg_matrix`), listening on a Unix socket in that directory only (`listen_addresses = ''`), run as an unprivileged user (`postgres` if it exists,
//! else `nobody`) when we are root, since the server refuses root; stopped when dropped. A server
//! the user already runs is never touched. Each query runs with `max_parallel_workers_per_gather`
//! 0 (one worker, `postgres-1w`) and with PostgreSQL's default (`postgres`), cold (server
//! restarted, and on disk its files evicted from the OS cache) and warm, with `shared_buffers` set to the
//! same fraction of the data as nvpage's pool. Its answers must equal ours (after rounding its
//! longer averages and ratios to our places, and trimming `char(n)` padding).
//!
//! What is measured, and how ([`Server::run_measured`]):
//! - **Wall time** is the server's own: the duration PostgreSQL logs for the statement
//!   (`log_min_duration_statement = 0`), from the arrival of the query to the end of its
//!   execution — parse, plan, execution, commit — without the client's round trip. It is read
//!   from the server's log, written after the clock stops, so measuring changes neither the plan
//!   nor the work (as `EXPLAIN ANALYZE`'s per-node timing would).
//! - **CPU time** is the backend's and its parallel workers'. Inside the query's own session,
//!   just before and just after the query, one statement reads the backend's `/proc/self/stat`
//!   (its own user and system time) and the postmaster's `/proc/<pid>/stat` (its own time, which
//!   covers starting workers, and its reaped children's). A parallel query returns only after
//!   the postmaster has reaped its workers (`WaitForParallelWorkersToExit`), so the children's
//!   share grows by exactly this query's workers, provided no other child of the postmaster ends
//!   in between: autovacuum is off (the load ends with `VACUUM ANALYZE`, so it would have nothing
//!   to do), and each session's backend is waited for until reaped before the next one starts.
//!   The background writer, WAL writer and checkpointer are not counted; a read-only query gives
//!   them next to nothing to do.

use std::fmt::Write as _;
use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tpchgen::generators::{
    CustomerGenerator, LineItemGenerator, NationGenerator, OrderGenerator, PartGenerator,
    PartSuppGenerator, RegionGenerator, SupplierGenerator,
};

use super::pg_sql;
use super::queries::{Query, QueryResult};
use super::runner::row_text;
use super::schema::{self, TABLES};
use crate::BoxError;
use crate::cputime::{CpuTimes, parse_stat, parse_stat_reaped};

const PORT: u16 = 5433;

/// The first value of the rows [`Server::run_measured`]'s probes print.
const PROBE_TAG: &str = "nvpage-bench-cpu";

/// How long a backend may take to be reaped after its client left before we give up.
const REAP_TIMEOUT: Duration = Duration::from_secs(30);

/// The directory of the newest installed PostgreSQL's binaries.
pub fn find_bin() -> Result<PathBuf, BoxError> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.path().join("bin")).collect())
        .unwrap_or_default();
    dirs.retain(|d| d.join("postgres").exists() && d.join("initdb").exists());
    dirs.sort();
    dirs.pop().ok_or_else(|| {
        "PostgreSQL's server binaries are not installed (/usr/lib/postgresql/*/bin): run \
         bench/scripts/install-postgres.sh as root, or leave out --with-postgres"
            .into()
    })
}

/// A running throwaway server.
#[derive(Debug)]
pub struct Server {
    bin: PathBuf,
    user: Option<String>,
    dir: tempfile::TempDir,
    /// PostgreSQL's version line.
    pub version: String,
}

fn run(cmd: &mut Command, what: &str) -> Result<String, BoxError> {
    let out = cmd.output().map_err(|e| format!("{what}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{what} failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn id_of(user: &str, flag: &str) -> Option<u32> {
    let out = Command::new("id").args([flag, user]).output().ok()?;
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

impl Server {
    /// `initdb` and start in a new temporary directory under `base`.
    pub fn start(base: &Path, shared_buffers_kb: u64) -> Result<Server, BoxError> {
        let bin = find_bin()?;
        let root = std::fs::metadata("/proc/self")?.uid() == 0;
        let user = if !root {
            None
        } else if id_of("postgres", "-u").is_some() {
            Some("postgres".to_string())
        } else {
            Some("nobody".to_string())
        };
        let dir = tempfile::Builder::new().prefix("nvpage-pg-").tempdir_in(base)?;
        let mut s = Server { bin, user, dir, version: String::new() };
        s.give_away(s.dir.path())?;
        let mut init = s.cmd("initdb");
        init.args(["-D"]).arg(s.data()).args(["-U", "bench", "--auth=trust", "-E", "UTF8"]);
        init.args(["--no-sync", "--locale=C"]);
        run(&mut init, "initdb")?;
        s.start_server(shared_buffers_kb)?;
        s.version = s.psql("select version()")?.trim().to_string();
        Ok(s)
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// A command running `prog` as the server's user.
    fn cmd(&self, prog: &str) -> Command {
        let path = self.bin.join(prog);
        match &self.user {
            Some(u) => {
                let mut c = Command::new("runuser");
                c.args(["-u", u, "--"]).arg(path);
                c
            }
            None => Command::new(path),
        }
    }

    /// Makes `path` (a file or our directory) the server user's.
    fn give_away(&self, path: &Path) -> Result<(), BoxError> {
        if let Some(u) = &self.user {
            let (uid, gid) = (id_of(u, "-u"), id_of(u, "-g"));
            std::os::unix::fs::chown(path, uid, gid)?;
        }
        Ok(())
    }

    fn start_server(&self, shared_buffers_kb: u64) -> Result<(), BoxError> {
        // Every statement's duration goes to the log, each line led by the backend's pid; no
        // autovacuum worker may come and go during a query (see the module's comment).
        let opts = format!(
            "-k {} -p {PORT} -c listen_addresses='' -c shared_buffers={}kB \
             -c log_min_duration_statement=0 -c log_line_prefix='%p ' -c autovacuum=off",
            self.dir.path().display(),
            shared_buffers_kb.max(128)
        );
        let mut c = self.cmd("pg_ctl");
        c.arg("-D").arg(self.data()).args(["-w", "-o", &opts, "-l"]);
        c.arg(self.log_path()).arg("start");
        run(&mut c, "pg_ctl start")?;
        Ok(())
    }

    /// Restarts with another `shared_buffers`: an empty buffer cache.
    pub fn restart(&self, shared_buffers_kb: u64) -> Result<(), BoxError> {
        self.stop()?;
        self.start_server(shared_buffers_kb)
    }

    fn stop(&self) -> Result<(), BoxError> {
        let mut c = self.cmd("pg_ctl");
        c.arg("-D").arg(self.data()).args(["-w", "-m", "fast", "stop"]);
        run(&mut c, "pg_ctl stop")?;
        Ok(())
    }

    /// Drops the server's files from the OS page cache (with the server stopped or idle).
    pub fn evict(&self) -> Result<(), BoxError> {
        fn walk(p: &Path) -> Result<(), BoxError> {
            for e in std::fs::read_dir(p)? {
                let e = e?;
                let ty = e.file_type()?;
                if ty.is_dir() {
                    walk(&e.path())?;
                } else if ty.is_file() {
                    let _ = nvpage_storage::file::evict_os_cache(&e.path());
                }
            }
            Ok(())
        }
        walk(&self.data().join("base"))
    }

    /// Runs `script` with `psql`, unaligned and without headers; returns its output.
    pub fn psql(&self, script: &str) -> Result<String, BoxError> {
        let mut c = self.cmd("psql");
        c.args(["-X", "-q", "-A", "-t", "-F", "|", "-v", "ON_ERROR_STOP=1", "-U", "bench"]);
        c.args(["-d", "postgres", "-p", &PORT.to_string(), "-h"]).arg(self.dir.path());
        c.args(["-c", script]);
        run(&mut c, "psql")
    }

    /// Runs `script` from a file (several statements, psql meta-commands).
    pub fn psql_file(&self, script: &str) -> Result<String, BoxError> {
        let path = self.dir.path().join("script.sql");
        std::fs::write(&path, script)?;
        self.give_away(&path)?;
        let mut c = self.cmd("psql");
        c.args(["-X", "-q", "-A", "-t", "-F", "|", "-v", "ON_ERROR_STOP=1", "-U", "bench"]);
        c.args(["-d", "postgres", "-p", &PORT.to_string(), "-h"]).arg(self.dir.path());
        c.arg("-f").arg(&path);
        run(&mut c, "psql")
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("server.log")
    }

    /// The running postmaster's pid, from the first line of `postmaster.pid`.
    fn postmaster_pid(&self) -> Result<u32, BoxError> {
        let path = self.data().join("postmaster.pid");
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let pid = text.lines().next().and_then(|l| l.trim().parse().ok());
        pid.ok_or_else(|| format!("{}: no pid on its first line", path.display()).into())
    }

    /// Generates the tables as `|`-separated text and streams them into `\copy` through psql's
    /// standard input (no file: memory and disk stay bounded whatever the scale factor), adds
    /// each table's primary key after its rows (the index nvpage's loader builds), then
    /// `VACUUM ANALYZE`. Returns the rows loaded and the database's size in bytes.
    pub fn load(&self, sf: f64) -> Result<(u64, u64), BoxError> {
        self.psql_file(pg_sql::SCHEMA)?;
        let mut rows = 0;
        for t in TABLES {
            rows += self.copy_in(t, sf)?;
            // The same primary-key index as nvpage's loader builds, after the rows (and as it
            // does, without the constraint where the generator repeats a key: partsupp below
            // SF 0.01).
            let key = schema::primary_key(t).join(", ");
            let name = schema::primary_key_index(t);
            let pk = format!("alter table {t} add constraint {name} primary key ({key})");
            if self.psql(&pk).is_err() {
                self.psql(&format!("create index {name} on {t} ({key})"))?;
            }
        }
        // What autovacuum, which is off, would have done: hint bits set and statistics taken
        // now, not by the first queries.
        self.psql("vacuum analyze")?;
        let size = self.psql("select pg_database_size('postgres')")?.trim().parse().unwrap_or(0);
        Ok((rows, size))
    }

    /// Streams table `t` at scale factor `sf` into the server; returns the rows sent.
    fn copy_in(&self, t: &str, sf: f64) -> Result<u64, BoxError> {
        let mut c = self.cmd("psql");
        c.args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-U", "bench"]);
        c.args(["-d", "postgres", "-p", &PORT.to_string(), "-h"]).arg(self.dir.path());
        c.args(["-c", &format!("\\copy {t} from pstdin with (delimiter '|')")]);
        c.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = c.spawn().map_err(|e| format!("psql: {e}"))?;
        let stdin = child.stdin.take().ok_or("psql: no standard input")?;
        let mut w = std::io::BufWriter::with_capacity(1 << 20, stdin);
        // A write fails if psql stopped reading (it failed): its own message says why.
        let sent = write_tbl(t, sf, &mut w).and_then(|n| w.flush().map(|()| n).map_err(Into::into));
        drop(w);
        let out = child.wait_with_output().map_err(|e| format!("psql: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "loading {t} with psql failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            )
            .into());
        }
        sent
    }

    /// Runs query `q` (on data of scale factor `sf`) with at most `workers` parallel workers per
    /// gather, measured as [`Server::run_measured`] says.
    pub fn query(&self, q: Query, sf: f64, workers: Option<u32>) -> Result<PgRun, BoxError> {
        self.run_measured(&pg_sql::query(q, sf), workers)
    }

    /// Runs one statement `sql` (no trailing `;`) in a session of its own, with at most
    /// `workers` parallel workers per gather (PostgreSQL's default if `None`); returns its rows,
    /// the server's duration for it and the CPU time the backend and its parallel workers spent
    /// on it. The module's comment says why each figure is exact. Returns once the session's
    /// backend has been reaped, so that its end is no part of the next query's figures.
    pub fn run_measured(&self, sql: &str, workers: Option<u32>) -> Result<PgRun, BoxError> {
        let pm = self.postmaster_pid()?;
        let set = workers
            .map_or(String::new(), |w| format!("set max_parallel_workers_per_gather = {w};\n"));
        let probe = format!(
            "select '{PROBE_TAG}', pg_backend_pid(), \
             rtrim(pg_read_file('/proc/self/stat'), E'\\n'), \
             rtrim(pg_read_file('/proc/{pm}/stat'), E'\\n');\n"
        );
        let script = format!("{set}{probe}{sql};\n{probe}");
        let log_path = self.log_path();
        let log_start = std::fs::metadata(&log_path)?.len();
        let out = self.psql_file(&script)?;
        let lines: Vec<&str> = out.lines().collect();
        let (before, after, rows) = match lines.as_slice() {
            [first, rows @ .., last] => (Probe::parse(first)?, Probe::parse(last)?, rows),
            _ => return Err(format!("psql printed less than the two probes: {out:?}").into()),
        };
        if before.backend_pid != after.backend_pid {
            return Err("the two probes ran in different backends".into());
        }
        wait_reaped(before.backend_pid)?;
        let mut log = String::new();
        let mut f = std::fs::File::open(&log_path)?;
        f.seek(SeekFrom::Start(log_start))?;
        f.read_to_string(&mut log)?;
        let server_ms = logged_duration(&log, before.backend_pid, sql).ok_or_else(|| {
            format!(
                "{}: no duration logged for the query of backend {}",
                log_path.display(),
                before.backend_pid
            )
        })?;
        Ok(PgRun {
            rows: rows.iter().map(|l| l.split('|').map(str::to_string).collect()).collect(),
            server_ms,
            backend_cpu: after.backend.since(before.backend),
            workers_cpu: after.postmaster.since(before.postmaster),
        })
    }
}

/// One statement run by [`Server::run_measured`].
#[derive(Clone, Debug)]
pub struct PgRun {
    /// The rows, each value as psql prints it unaligned (a SQL `NULL` is empty).
    pub rows: Vec<Vec<String>>,
    /// The statement's duration as the server logs it (`log_min_duration_statement`): from the
    /// arrival of the query to the end of its execution, parse and plan included, the client's
    /// round trip not.
    pub server_ms: f64,
    /// CPU time of the backend that ran the statement, over the statement.
    pub backend_cpu: CpuTimes,
    /// CPU time of the statement's parallel workers (the postmaster's children reaped during
    /// it) and of the postmaster starting them.
    pub workers_cpu: CpuTimes,
}

impl PgRun {
    /// All the CPU time the statement took: its backend's and its workers'.
    pub fn cpu(&self) -> CpuTimes {
        self.backend_cpu.plus(self.workers_cpu)
    }
}

/// What one probe of [`Server::run_measured`] read: a line `tag|pid|backend stat|postmaster
/// stat`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Probe {
    backend_pid: u32,
    /// The backend's own CPU time.
    backend: CpuTimes,
    /// The postmaster's own CPU time plus that of the children it has reaped.
    postmaster: CpuTimes,
}

impl Probe {
    fn parse(line: &str) -> Result<Probe, BoxError> {
        let bad = || format!("not a probe line from psql: {line:?}");
        let mut f = line.splitn(4, '|');
        if f.next() != Some(PROBE_TAG) {
            return Err(bad().into());
        }
        let backend_pid = f.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
        let backend = f.next().and_then(parse_stat).ok_or_else(bad)?;
        let pm = f.next().ok_or_else(bad)?;
        let own = parse_stat(pm).ok_or_else(bad)?;
        let reaped = parse_stat_reaped(pm).ok_or_else(bad)?;
        Ok(Probe { backend_pid, backend, postmaster: own.plus(reaped) })
    }
}

/// Waits until process `pid` has been reaped by its parent (a zombie keeps its `/proc` entry;
/// a reaped process has none).
fn wait_reaped(pid: u32) -> Result<(), BoxError> {
    let path = PathBuf::from(format!("/proc/{pid}"));
    let t0 = Instant::now();
    while path.exists() {
        if t0.elapsed() > REAP_TIMEOUT {
            return Err(format!(
                "PostgreSQL's backend {pid} was not reaped {} s after its client left",
                REAP_TIMEOUT.as_secs()
            )
            .into());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(())
}

/// The duration, in ms, that backend `pid` logged last for a statement starting with `sql`'s
/// first line, in a server log whose lines start with the pid (`log_line_prefix = '%p '`).
fn logged_duration(log: &str, pid: u32, sql: &str) -> Option<f64> {
    let prefix = format!("{pid} LOG:  duration: ");
    let first = sql.lines().next()?.trim();
    log.lines()
        .filter_map(|l| l.strip_prefix(&prefix)?.split_once(" ms  statement: "))
        .filter(|(_, statement)| statement.starts_with(first))
        .filter_map(|(ms, _)| ms.parse().ok())
        .next_back()
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// Writes table `t` in the `tbl` format without the trailing `|` to `w`; returns the row count.
fn write_tbl(t: &str, sf: f64, w: &mut impl std::io::Write) -> Result<u64, BoxError> {
    let mut n = 0u64;
    let mut line = String::new();
    let mut put = |row: &dyn std::fmt::Display| -> std::io::Result<()> {
        line.clear();
        write!(line, "{row}").expect("writing to a String");
        let l = line.strip_suffix('|').unwrap_or(&line);
        n += 1;
        writeln!(w, "{l}")
    };
    match t {
        "region" => RegionGenerator::new(sf, 1, 1).iter().try_for_each(|r| put(&r))?,
        "nation" => NationGenerator::new(sf, 1, 1).iter().try_for_each(|r| put(&r))?,
        "supplier" => SupplierGenerator::new(sf, 1, 1).iter().try_for_each(|r| put(&r))?,
        "customer" => CustomerGenerator::new(sf, 1, 1).iter().try_for_each(|r| put(&r))?,
        "part" => PartGenerator::new(sf, 1, 1).iter().try_for_each(|r| put(&r))?,
        "partsupp" => PartSuppGenerator::new(sf, 1, 1).iter().try_for_each(|r| put(&r))?,
        "orders" => OrderGenerator::new(sf, 1, 1).iter().try_for_each(|r| put(&r))?,
        "lineitem" => LineItemGenerator::new(sf, 1, 1).iter().try_for_each(|r| put(&r))?,
        other => return Err(format!("unknown table {other}").into()),
    }
    Ok(n)
}

/// Whether PostgreSQL's answer equals ours: values equal after trimming, or, for numbers where
/// PostgreSQL prints more places (averages, Q14's ratio), equal once rounded half away from zero
/// to our places. `None` if equal, else the first difference.
pub fn compare(ours: &QueryResult, pg: &[Vec<String>]) -> Option<String> {
    compare_text(ours, pg, "PostgreSQL's")
}

/// [`compare`] for any SQL engine's answer as text (NULL empty), `theirs` naming it in the
/// difference.
pub fn compare_text(ours: &QueryResult, rows: &[Vec<String>], theirs: &str) -> Option<String> {
    if ours.rows.len() != rows.len() {
        return Some(format!("{} rows vs {theirs} {}", ours.rows.len(), rows.len()));
    }
    for (i, (a, b)) in ours.rows.iter().zip(rows).enumerate() {
        let same = a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_value(x, y));
        if !same {
            return Some(format!("row {i}: {} vs {theirs} {}", row_text(a), row_text(b)));
        }
    }
    None
}

fn same_value(ours: &str, pg: &str) -> bool {
    // `char(n)` values come padded; `varchar` values keep their own trailing blanks.
    if ours == pg {
        return true;
    }
    let pg = pg.trim_end();
    if ours == pg {
        return true;
    }
    // Q6 and Q19 sum no rows at tiny scale factors: SQL says NULL (empty), we say 0.
    if pg.is_empty() && ours.trim_start_matches(['0', '.']).is_empty() {
        return true;
    }
    let places = ours.split_once('.').map_or(0, |(_, f)| f.len());
    round_to(pg, places).is_some_and(|r| r == ours)
}

/// `v` (a decimal string) rounded half away from zero to `places` places.
pub(crate) fn round_to(v: &str, places: usize) -> Option<String> {
    let (neg, digits) = match v.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, v),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    if !int.chars().chain(frac.chars()).all(|c| c.is_ascii_digit()) || int.is_empty() {
        return None;
    }
    let mut f: String = frac.chars().take(places).collect();
    while f.len() < places {
        f.push('0');
    }
    let mut units: i128 = format!("{int}{f}").parse().ok()?;
    if frac.chars().nth(places).is_some_and(|c| c >= '5') {
        units += 1;
    }
    let s = super::queries::scaled(if neg { -units } else { units }, places as u8);
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_postgres_numbers_to_our_places() {
        assert_eq!(round_to("25.5220058532573370", 2).as_deref(), Some("25.52"));
        assert_eq!(round_to("0.04999", 2).as_deref(), Some("0.05"));
        assert_eq!(round_to("16.3807786263955401", 2).as_deref(), Some("16.38"));
        assert_eq!(round_to("-1.005", 2).as_deref(), Some("-1.01"));
        assert_eq!(round_to("12", 2).as_deref(), Some("12.00"));
        assert_eq!(round_to("abc", 2), None);
        assert!(same_value("BUILDING", "BUILDING  "));
        assert!(same_value("0.0000", ""));
        assert!(!same_value("1.00", "1.01"));
    }

    #[test]
    fn the_query_duration_is_found_among_the_logged_statements() {
        let sql = "select l_returnflag, l_linestatus\nfrom lineitem";
        let log = "41 LOG:  duration: 0.104 ms  statement: set max_parallel_workers_per_gather = 0;
41 LOG:  duration: 2.050 ms  statement: select 'nvpage-bench-cpu', pg_backend_pid();
42 LOG:  duration: 9.500 ms  statement: select l_returnflag, l_linestatus
\tfrom lineitem;
41 LOG:  duration: 12.345 ms  statement: select l_returnflag, l_linestatus
\tfrom lineitem;
41 LOG:  duration: 0.039 ms  statement: select 'nvpage-bench-cpu', pg_backend_pid();
";
        assert_eq!(logged_duration(log, 41, sql), Some(12.345));
        assert_eq!(logged_duration(log, 42, sql), Some(9.5));
        assert_eq!(logged_duration(log, 43, sql), None);
    }

    #[test]
    fn a_probe_adds_the_postmasters_own_and_reaped_cpu() {
        let backend = "77 (postgres) R 7 77 77 0 -1 4194368 1026 0 0 0 31 4 0 0 20 0 1 0 5";
        let pm = "7 (postgres) S 1 7 7 0 -1 4194560 99 0 0 0 2 1 500 60 20 0 1 0 3";
        let p = Probe::parse(&format!("{PROBE_TAG}|77|{backend}|{pm}")).unwrap();
        assert_eq!(p.backend_pid, 77);
        assert_eq!(p.backend, CpuTimes::from_ticks(31, 4));
        assert_eq!(p.postmaster, CpuTimes::from_ticks(502, 61));
        assert!(Probe::parse("1|2|3").is_err());
        assert!(Probe::parse(&format!("{PROBE_TAG}|77|{backend}|")).is_err());
    }
}
