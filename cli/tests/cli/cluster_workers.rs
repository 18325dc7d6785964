//! Goal: `nvpage worker` processes serve their databases to a coordinator; a worker killed in
//! the middle of a query ends the query with an error naming it (the others' databases keep
//! every row), a coordinator with the wrong token is refused, and `nvpage sql --cluster` loads
//! and queries tables across the workers from the command line.

#![cfg(feature = "cluster")]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

use futures::StreamExt;
use nvpage_cluster::{Cluster, Coordinator};

const TOKEN: &str = "cli-test-token";

/// A worker process and the address it listens on.
struct Worker {
    child: Child,
    address: String,
}

fn worker(dir: &Path) -> Worker {
    let mut child = Command::new(env!("CARGO_BIN_EXE_nvpage"))
        .args(["worker", "--listen", "127.0.0.1:0"])
        .arg(dir)
        .env("NVPAGE_CLUSTER_TOKEN", TOKEN)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start a worker");
    // Its first line says where it listens, once it does.
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap()).read_line(&mut line).unwrap();
    let address = line.trim().rsplit(' ').next().unwrap().to_string();
    assert!(line.starts_with("nvpage worker: serving"), "{line}");
    Worker { child, address }
}

impl Worker {
    /// SIGTERM, and the exit status.
    fn stop(mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        self.child.wait().unwrap()
    }
}

fn cluster_file(dir: &Path, token: &str, workers: &[&Worker]) -> std::path::PathBuf {
    let mut s = format!("token = \"{token}\"\n");
    for w in workers {
        s.push_str(&format!("[[workers]]\naddress = \"{}\"\n", w.address));
    }
    s.push_str("[tables.t]\nhash = [\"k\"]\n[tables.s]\nhash = [\"k\"]\n");
    let path = dir.join(format!("cluster-{token}.toml"));
    std::fs::write(&path, s).unwrap();
    path
}

fn sql(cluster: &Path, statements: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_nvpage"));
    cmd.arg("sql").arg("--cluster").arg(cluster).args(["--format", "csv"]);
    for s in statements {
        cmd.args(["-c", s]);
    }
    cmd.stdin(Stdio::null()).output().unwrap()
}

#[test]
fn the_sql_command_loads_and_queries_across_workers_and_a_wrong_token_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (worker(&tmp.path().join("a")), worker(&tmp.path().join("b")));
    let file = cluster_file(tmp.path(), TOKEN, &[&a, &b]);
    let out = sql(
        &file,
        &[
            "CREATE TABLE t (k BIGINT NOT NULL, v VARCHAR(8))",
            "INSERT INTO t SELECT value, 'v' || value FROM generate_series(1, 1000)",
            "SELECT count(*) AS n, sum(k) AS s FROM t",
            "SELECT v FROM t WHERE k = 77",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("n,s\n1000,500500\n"), "{stdout}");
    assert!(stdout.contains("v\nv77\n"), "{stdout}");

    // Integer arithmetic is checked on the workers too: what fits is exact, and an overflow is
    // an error, not a wrapped value.
    let out = sql(&file, &["SELECT sum(k * k) AS q FROM t"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("q\n333833500\n"), "{stderr}");
    let out = sql(&file, &["SELECT k * 4611686018427387904 AS p FROM t WHERE k > 1"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("integer out of range for Int64"), "{stderr}");
    // So is a sum of the shards' partial sums: each product fits, their sum does not.
    let out = sql(&file, &["SELECT sum(k * 9000000000000000) AS q FROM t"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("integer out of range for Int64: sum("), "{stderr}");

    // A literal its column cannot hold is refused by the column's name, and nothing is kept.
    let out = sql(&file, &["CREATE TABLE s (k BIGINT NOT NULL, small SMALLINT)"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let out = sql(&file, &["INSERT INTO s VALUES (1, 1), (2, 40000)"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("column small (Int16) cannot hold 40000"), "{stderr}");
    let out = sql(&file, &["SELECT count(*) AS n FROM s"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("n\n0\n"), "{out:?}");

    // `--timing` says what a query moved: here every row of both shards to the coordinator.
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_nvpage"));
    cmd.arg("sql").arg("--cluster").arg(&file).args(["--format", "csv", "--timing"]);
    let out = cmd.args(["-c", "SELECT k FROM t"]).stdin(Stdio::null()).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("MiB to the coordinator over the network"), "{stderr}");
    assert!(stderr.contains("0 between workers, 1000 to the coordinator"), "{stderr}");

    let wrong = cluster_file(tmp.path(), "not-the-token", &[&a, &b]);
    let out = sql(&wrong, &["SELECT count(*) FROM t"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&a.address) && stderr.contains("token"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");

    let out = sql(
        &file,
        &["UPDATE t SET v = 'x' WHERE k <= 10", "SELECT count(*) AS n FROM t WHERE v = 'x'"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("count\n10\nn\n10\n"), "{stderr}");
    let out = sql(&file, &["UPDATE t SET k = 0"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("split by"));
    assert!(a.stop().success());
    assert!(b.stop().success());
}

#[test]
fn a_worker_killed_mid_query_ends_it_with_an_error_naming_the_worker() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, mut b) = (worker(&tmp.path().join("a")), worker(&tmp.path().join("b")));
    let file = cluster_file(tmp.path(), TOKEN, &[&a, &b]);
    let rows = 2_000_000u64;
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let c = Coordinator::connect(Cluster::load(&file).unwrap()).await.unwrap();
        c.sql("CREATE TABLE t (k BIGINT NOT NULL, v BIGINT NOT NULL)").await.unwrap();
        let load = format!("INSERT INTO t SELECT value, value % 7 FROM generate_series(1, {rows})");
        c.sql(&load).await.unwrap().collect().await.unwrap();
        c.refresh().await.unwrap();
        let mut stream = c.sql("SELECT k, v FROM t").await.unwrap().execute_stream().await.unwrap();
        let first = stream.next().await.expect("a first batch").expect("no error yet");
        assert!(first.num_rows() > 0);
        // The query has begun: kill one worker outright.
        b.child.kill().unwrap();
        b.child.wait().unwrap();
        let mut seen = first.num_rows() as u64;
        let mut error = None;
        while let Some(batch) = stream.next().await {
            match batch {
                Ok(batch) => seen += batch.num_rows() as u64,
                Err(e) => {
                    error = Some(e.to_string());
                    break;
                }
            }
        }
        let error =
            error.unwrap_or_else(|| panic!("the query ended without an error ({seen} rows)"));
        assert!(error.contains(&b.address), "the error names the killed worker: {error}");
        // A DELETE commits on the worker left standing and says so, naming the one it missed.
        let error = c.sql("DELETE FROM t WHERE v = 0").await.unwrap_err().to_string();
        assert!(error.contains(&b.address), "{error}");
        assert!(error.contains(&format!("committed on http://{}", a.address)), "{error}");
    });
    // The worker left standing closes cleanly and keeps its part of every row.
    assert!(a.stop().success());
    let count = |sql: &str| -> u64 {
        let out = Command::new(env!("CARGO_BIN_EXE_nvpage"))
            .arg("sql")
            .arg(tmp.path().join("a"))
            .args(["--format", "csv", "-c", sql])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let mut lines = stdout.lines();
        assert_eq!(lines.next(), Some("n"), "{stdout}");
        lines.next().unwrap().parse().unwrap()
    };
    let n = count("SELECT count(*) AS n FROM t");
    assert!(n > rows / 3 && n < rows * 2 / 3, "worker a holds about half the rows: {n}");
    assert_eq!(count("SELECT count(*) AS n FROM t WHERE v = 0"), 0, "the DELETE committed on a");
}
