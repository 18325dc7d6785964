//! Goal: where PostgreSQL's server binaries are installed, `--with-postgres` starts a throwaway
//! server on each medium asked for (its data directory on the disk, then on tmpfs), streams the
//! same generated data in, runs the SQL of all 22 queries with one worker and with the default
//! parallelism, and its answers equal ours (the run fails otherwise); its rows land in the report
//! beside the layers', labelled with their medium. Skipped, saying so, where PostgreSQL is not
//! installed.

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
    let shm = std::path::Path::new("/dev/shm");
    let mut media = vec![Medium::Disk];
    if shm.is_dir() {
        media.push(Medium::Tmpfs);
    } else {
        eprintln!("no /dev/shm: PostgreSQL on tmpfs is left out");
    }
    let cfg = Config {
        sf: 0.01,
        layers: vec![nvpage::Layer::compiled()[0]],
        media: media.clone(),
        dir_disk: disk.path().into(),
        dir_tmpfs: "/dev/shm".into(),
        pool_fractions: vec![1.0],
        runs: 1,
        threads: 2,
        queries: Query::ALL.to_vec(),
        cold: false,
        warm: true,
        with_postgres: true,
        sql: false,
        reduced: false,
        clustered: false,
        quiet: true,
    };
    let report = execute(&cfg).unwrap();
    for medium in &media {
        for layer in ["postgres", "postgres-1w"] {
            let n = report
                .runs
                .iter()
                .filter(|r| r.layer == layer && r.medium == medium.name())
                .count();
            assert_eq!(n, Query::ALL.len(), "{layer} runs on {}", medium.name());
        }
        let loaded = report.config.loads.iter().any(|l| {
            l.layer == "postgres" && l.medium == medium.name() && l.rows > 0 && l.data_bytes > 0
        });
        assert!(loaded, "PostgreSQL loaded on {}", medium.name());
    }
}
