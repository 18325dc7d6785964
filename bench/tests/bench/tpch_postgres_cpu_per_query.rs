//! Goal: `--with-postgres`'s CPU figure for a query is the CPU time spent on that query and on no
//! other: a statement that burns CPU in its backend is charged for it (not 0, as when the figure
//! waited on the postmaster to reap the backend some time later), the cheap statement run right
//! after it is not charged for it, and a parallel statement is charged for its workers too. The
//! server's own duration is read for each. Skipped, saying so, where PostgreSQL is not installed.

use nvpage_bench::tpch::postgres::{Server, find_bin};

/// Work for one process, in PostgreSQL's own functions: CPU time no scheduler can make vanish.
const BURN: &str =
    "select count(*) from generate_series(1, 1500000) g where md5(g::text) like 'a%'";

#[test]
fn each_statement_is_charged_its_own_cpu() {
    if let Err(e) = find_bin() {
        eprintln!("skipped: {e}");
        return;
    }
    let base = tempfile::tempdir_in(std::env::current_dir().unwrap()).unwrap();
    // The server runs as an unprivileged user, who must be able to reach its directory.
    std::fs::set_permissions(base.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .unwrap();
    let server = Server::start(base.path(), 128 << 10).unwrap();

    let heavy = server.run_measured(BURN, Some(0)).unwrap();
    let light = server.run_measured("select 1", Some(0)).unwrap();
    let ticks = |c: nvpage_bench::cputime::CpuTimes| c.total_us();
    assert_eq!(heavy.rows.len(), 1, "{:?}", heavy.rows);
    assert!(ticks(heavy.backend_cpu) > 0, "the burning statement is charged: {heavy:?}");
    assert!(
        ticks(light.cpu()) < ticks(heavy.cpu()),
        "the statement after it is not charged for it: {light:?} after {heavy:?}"
    );
    assert!(heavy.server_ms > 0.0 && light.server_ms >= 0.0);

    // A table big enough, and parallelism cheap enough, that the planner sends workers.
    server
        .psql_file(
            "create table t as select g from generate_series(1, 1500000) g;
             vacuum analyze t;
             alter database postgres set parallel_setup_cost = 0;
             alter database postgres set parallel_tuple_cost = 0;
             alter database postgres set min_parallel_table_scan_size = 0;",
        )
        .unwrap();
    let parallel = server
        .run_measured("select count(*) from t where md5(g::text) like 'a%'", Some(2))
        .unwrap();
    assert!(ticks(parallel.workers_cpu) > 0, "the workers are charged: {parallel:?}");
}
