//! Goal: where PostgreSQL's server binaries are installed, `--with-postgres` starts a throwaway
//! server, loads the same generated data, runs the specification's SQL for every implemented
//! query with one worker and with the default parallelism, and its answers equal ours (the run
//! fails otherwise); its rows land in the report beside the layers'. Skipped, saying so, where
//! PostgreSQL is not installed.

use nvpage_bench::tpch::postgres::find_bin;
use nvpage_bench::tpch::{Config, Medium, Query, execute};

#[test]
fn postgres_answers_equal_ours() {
    if let Err(e) = find_bin() {
        eprintln!("skipped: {e}");
        return;
    }
    let disk = tempfile::tempdir_in(std::env::current_dir().unwrap()).unwrap();
    // The server runs as an unprivileged user, who must be able to reach its directory.
    std::fs::set_permissions(disk.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .unwrap();
    let cfg = Config {
        sf: 0.005,
        layers: vec![nvpage::Layer::compiled()[0]],
        media: vec![Medium::Disk],
        dir_disk: disk.path().into(),
        dir_tmpfs: "/dev/shm".into(),
        pool_fractions: vec![1.0],
        runs: 1,
        threads: 2,
        queries: Query::ALL.to_vec(),
        cold: false,
        warm: true,
        with_postgres: true,
        quiet: true,
    };
    let report = execute(&cfg).unwrap();
    for layer in ["postgres", "postgres-1w"] {
        let n = report.runs.iter().filter(|r| r.layer == layer).count();
        assert_eq!(n, Query::ALL.len(), "{layer} runs");
    }
    assert!(report.config.loads.iter().any(|l| l.layer == "postgres" && l.rows > 0));
}
