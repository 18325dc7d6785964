//! `nvpage-bench`: one subcommand per benchmark. `storage` measures the file layers;
//! `log` the persistent-memory log, `tpch` the main job, `engine` the engine's small durable
//! transactions beside SQLite's, its loads and recovery,
//! `refresh` TPC-H's refresh functions beside queries that read snapshots, `kv` key-value
//! lookups, scans and updates beside LMDB, redb and SQLite.

#![forbid(unsafe_code)]

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use nvpage_bench::log;
use nvpage_bench::{engine, kv, refresh, storage, tpch};

/// nvpage's benchmarks. Every number printed names its durability and configuration.
#[derive(Debug, Parser)]
#[command(name = "nvpage-bench", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// The file layers (pread, SE1, SE2) on disk and tmpfs: sequential passes in GB/s next to the
    /// machine's memory bandwidth, and random single-page read and write latency.
    Storage(storage::StorageArgs),
    /// The log beside `write`+`fdatasync` and (feature `pmdk`) libpmemlog: small durable
    /// appends and the seed's 4 MiB appends, on tmpfs (cache-line path and msync) and disk.
    Log(log::LogArgs),
    /// TPC-H queries over nvpage on each layer, on disk and on tmpfs (emulated NVM), cold and
    /// warm, with a pool holding all or a tenth of the data; answers checked across layers.
    Tpch(tpch::TpchArgs),
    /// The engine: small durable transactions (one row inserted; 1, 10, 100 rows updated) with
    /// SQLite beside them (feature `sqlite`; rollback journal and WAL, synchronous=FULL) and the
    /// ratios, bulk-load rows per second, and recovery (open) time against the log's size, per
    /// layer and medium (disk, tmpfs, and data on disk with the log on tmpfs).
    Engine(engine::EngineArgs),
    /// TPC-H's refresh functions (RF1 inserts orders, RF2 deletes them, one write transaction
    /// each) in a loop beside Q1 and Q6: query time alone and beside the loop, the loop's
    /// throughput alone and beside the queries, version memory and latch waits; every answer
    /// checked against its snapshot.
    Refresh(refresh::RefreshArgs),
    /// Key-value lookups, range scans and a 50/50 lookup/update mix on 8-byte keys and 100-byte
    /// values: nvpage (an indexed table) per layer and pool size beside LMDB, redb and SQLite
    /// (features `lmdb`, `redb`, `sqlite`; `compare` for all three), on disk and tmpfs, every
    /// answer checked.
    Kv(kv::KvArgs),
    /// A worker of `tpch --workers`: serves the database in DIR on --listen until SIGTERM (the
    /// benchmark starts these itself).
    #[cfg(feature = "cluster")]
    #[command(hide = true)]
    ClusterWorker {
        dir: std::path::PathBuf,
        #[arg(long)]
        listen: std::net::SocketAddr,
        #[arg(long, value_enum)]
        medium: tpch::Medium,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Storage(args) => storage::run(args),
        Command::Log(args) => log::run(args),
        Command::Tpch(args) => tpch::run(args),
        Command::Engine(args) => engine::run(args),
        Command::Refresh(args) => refresh::run(args),
        Command::Kv(args) => kv::run(args),
        #[cfg(feature = "cluster")]
        Command::ClusterWorker { dir, listen, medium } => {
            tpch::cluster::worker(dir, *listen, *medium)
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("nvpage-bench: error: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use nvpage_bench::dirs::MediaDirs;

    use super::*;

    fn dirs(argv: &[&str]) -> MediaDirs {
        let cli = Cli::try_parse_from(std::iter::once("nvpage-bench").chain(argv.iter().copied()))
            .unwrap_or_else(|e| panic!("{argv:?}: {e}"));
        match cli.command {
            Command::Storage(a) => a.dirs,
            Command::Log(a) => a.dirs,
            Command::Tpch(a) => a.dirs,
            Command::Engine(a) => a.dirs,
            Command::Refresh(a) => a.dirs,
            Command::Kv(a) => a.dirs,
            #[cfg(feature = "cluster")]
            Command::ClusterWorker { .. } => panic!("{argv:?}: the hidden worker command"),
        }
    }

    #[test]
    fn every_benchmark_takes_the_same_directory_options_with_the_same_defaults() {
        for sub in ["storage", "log", "tpch", "engine", "refresh", "kv"] {
            let d = dirs(&[sub]);
            assert_eq!(d.dir_disk, Path::new("/var/tmp"), "{sub}");
            assert_eq!(d.dir_tmpfs, Path::new("/dev/shm"), "{sub}");
            let d = dirs(&[sub, "--dir-disk", "/d", "--dir-tmpfs", "/t"]);
            assert_eq!(
                (d.dir_disk.as_path(), d.dir_tmpfs.as_path()),
                (Path::new("/d"), Path::new("/t"))
            );
        }
    }
}
