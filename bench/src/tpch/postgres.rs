//! `--with-postgres`: the same data and queries on a throwaway PostgreSQL server, side by side.
//!
//! The server is our own: `initdb` into a temporary directory, listening on a Unix socket in that
//! directory only (`listen_addresses = ''`), run as an unprivileged user (`postgres` if it exists,
//! else `nobody`) when we are root, since the server refuses root; stopped when dropped. A server
//! the user already runs is never touched. Each query runs with `max_parallel_workers_per_gather`
//! 0 (one worker, `postgres-1w`) and with PostgreSQL's default (`postgres`), cold (server
//! restarted, its files evicted from the OS cache) and warm, with `shared_buffers` set to the
//! same fraction of the data as nvpage's pool. Its answers must equal ours (after rounding its
//! longer averages and ratios to our places, and trimming `char(n)` padding).

use std::fmt::Write as _;
use std::io::Write as _;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use tpchgen::generators::{
    CustomerGenerator, LineItemGenerator, NationGenerator, OrderGenerator, PartGenerator,
    PartSuppGenerator, RegionGenerator, SupplierGenerator,
};

use super::pg_sql;
use super::queries::{Query, QueryResult};
use super::schema::TABLES;
use crate::BoxError;

const PORT: u16 = 5433;

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
        let opts = format!(
            "-k {} -p {PORT} -c listen_addresses='' -c shared_buffers={}kB",
            self.dir.path().display(),
            shared_buffers_kb.max(128)
        );
        let mut c = self.cmd("pg_ctl");
        c.arg("-D").arg(self.data()).args(["-w", "-o", &opts, "-l"]);
        c.arg(self.dir.path().join("server.log")).arg("start");
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
                    let _ = nvpage::storage::file::evict_os_cache(&e.path());
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

    /// The postmaster's CPU time and its reaped children's (backends and parallel workers), in
    /// clock ticks: (user, system).
    pub fn cpu_ticks(&self) -> Option<(u64, u64)> {
        let pid = std::fs::read_to_string(self.data().join("postmaster.pid")).ok()?;
        let pid = pid.lines().next()?.trim().to_string();
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let rest = &stat[stat.rfind(')')? + 1..];
        let f: Vec<u64> =
            rest.split_ascii_whitespace().skip(11).take(4).filter_map(|x| x.parse().ok()).collect();
        (f.len() == 4).then(|| (f[0] + f[2], f[1] + f[3]))
    }

    /// Generates the tables as `|`-separated text and loads them with `\copy`, then `ANALYZE`.
    /// Returns the rows loaded and the database's size in bytes.
    pub fn load(&self, sf: f64) -> Result<(u64, u64), BoxError> {
        self.psql_file(pg_sql::SCHEMA)?;
        let mut rows = 0;
        for t in TABLES {
            let path = self.dir.path().join(format!("{t}.tbl"));
            rows += write_tbl(t, sf, &path)?;
            self.give_away(&path)?;
            let script = format!("\\copy {t} from '{}' with (delimiter '|')", path.display());
            self.psql_file(&script)?;
            std::fs::remove_file(&path)?;
        }
        self.psql("analyze")?;
        let size = self.psql("select pg_database_size('postgres')")?.trim().parse().unwrap_or(0);
        Ok((rows, size))
    }

    /// Runs query `q` with at most `workers` parallel workers per gather; returns its rows and
    /// the server's own execution time (psql's `\timing`).
    pub fn query(
        &self,
        q: Query,
        workers: Option<u32>,
    ) -> Result<(Vec<Vec<String>>, f64), BoxError> {
        let set = workers
            .map_or(String::new(), |w| format!("set max_parallel_workers_per_gather = {w};\n"));
        let script = format!("{set}\\timing on\n{};\n", pg_sql::query(q));
        let out = self.psql_file(&script)?;
        let mut rows = Vec::new();
        let mut ms = None;
        for line in out.lines() {
            if let Some(t) = line.strip_prefix("Time: ") {
                ms = t.split_whitespace().next().and_then(|v| v.parse::<f64>().ok());
            } else if !line.is_empty() {
                rows.push(line.split('|').map(str::to_string).collect());
            }
        }
        Ok((rows, ms.ok_or("psql printed no time")?))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// Writes table `t` in the `tbl` format without the trailing `|`; returns the row count.
fn write_tbl(t: &str, sf: f64, path: &Path) -> Result<u64, BoxError> {
    let mut w = std::io::BufWriter::new(std::fs::File::create(path)?);
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
    w.flush()?;
    Ok(n)
}

/// Whether PostgreSQL's answer equals ours: values equal after trimming, or, for numbers where
/// PostgreSQL prints more places (averages, Q14's ratio), equal once rounded half away from zero
/// to our places. `None` if equal, else the first difference.
pub fn compare(ours: &QueryResult, pg: &[Vec<String>]) -> Option<String> {
    if ours.rows.len() != pg.len() {
        return Some(format!("{} rows vs PostgreSQL's {}", ours.rows.len(), pg.len()));
    }
    for (i, (a, b)) in ours.rows.iter().zip(pg).enumerate() {
        let same = a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_value(x, y));
        if !same {
            return Some(format!("row {i}: {a:?} vs PostgreSQL's {b:?}"));
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
}
