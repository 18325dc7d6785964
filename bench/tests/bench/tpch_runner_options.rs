//! Goal: the `tpch` subcommand's options — defaults as documented, and every bad value a clear
//! error that names it.

use clap::Parser;
use nvpage_bench::tpch::{Config, Medium, Query, TpchArgs};

#[derive(Debug, Parser)]
struct Cli {
    #[command(flatten)]
    args: TpchArgs,
}

fn parse(args: &[&str]) -> Result<TpchArgs, String> {
    let mut argv = vec!["tpch"];
    argv.extend_from_slice(args);
    Cli::try_parse_from(argv).map(|c| c.args).map_err(|e| e.to_string())
}

#[test]
fn defaults_are_the_documented_matrix() {
    let cfg = Config::from_args(&parse(&[]).unwrap()).unwrap();
    assert_eq!(cfg.sf, 0.1);
    assert_eq!(cfg.media, vec![Medium::Disk, Medium::Tmpfs]);
    assert_eq!(cfg.pool_fractions, vec![1.0, 0.1]);
    assert_eq!(cfg.runs, 3);
    assert_eq!(cfg.queries, Query::ALL.to_vec());
    assert_eq!(cfg.layers, nvpage::Layer::compiled());
    assert!(cfg.cold && cfg.warm);
    assert_eq!(cfg.threads, std::thread::available_parallelism().unwrap().get());
    // On a disk wherever the command is run (see `nvpage_bench::dirs`), and the usual tmpfs.
    assert_eq!(cfg.dir_disk, std::path::Path::new("/var/tmp"));
    assert_eq!(cfg.dir_tmpfs, std::path::Path::new("/dev/shm"));
}

#[test]
fn lists_and_passes_parse() {
    let a = parse(&[
        "--sf",
        "0.01",
        "--layers",
        "se2,pread",
        "--media",
        "tmpfs",
        "--pool-fraction",
        "0.25",
        "--queries",
        "q6,1,Q19",
        "--warm",
        "--threads",
        "1",
        "--runs",
        "2",
    ])
    .unwrap();
    let cfg = Config::from_args(&a).unwrap();
    assert_eq!(cfg.layers, vec![nvpage::Layer::Se2, nvpage::Layer::Pread]);
    assert_eq!(cfg.queries, vec![Query::Q06, Query::Q01, Query::Q19]);
    assert_eq!(cfg.pool_fractions, vec![0.25]);
    assert!(!cfg.cold && cfg.warm);
    assert_eq!((cfg.threads, cfg.runs), (1, 2));
}

#[test]
fn reduced_is_the_documented_small_matrix() {
    let cfg = Config::from_args(&parse(&["--reduced", "--sf", "10"]).unwrap()).unwrap();
    assert!(cfg.reduced);
    assert_eq!(cfg.sf, 10.0);
    assert_eq!(cfg.queries, vec![Query::Q01, Query::Q03, Query::Q06, Query::Q12]);
    let want: Vec<nvpage::Layer> = [nvpage::Layer::Pread, nvpage::Layer::Se2]
        .into_iter()
        .filter(|l| l.is_compiled())
        .collect();
    assert_eq!(cfg.layers, want);
    assert_eq!(cfg.media, vec![Medium::Disk]);
    assert_eq!(cfg.pool_fractions, vec![0.1]);
    assert!(cfg.cold && cfg.warm);
    // Scaling takes a list, and its first scale factor is the configuration's.
    let a = parse(&["--scaling", "0.1,1,3,10", "--reduced"]).unwrap();
    assert_eq!(a.scaling, vec![0.1, 1.0, 3.0, 10.0]);
    assert_eq!(Config::from_args(&a).unwrap().sf, 0.1);
}

#[test]
fn bad_values_are_clear_errors() {
    let cases: &[(&[&str], &str)] = &[
        (&["--sf", "0"], "scale factor"),
        (&["--sf", "-1"], "scale factor"),
        (&["--sf", "abc"], "'abc' is not a number"),
        (&["--sf", "NaN"], "scale factor"),
        (&["--layers", "pread,nope"], "unknown layer 'nope'"),
        (&["--media", "nvm"], "nvm"),
        (&["--pool-fraction", "0"], "pool fraction"),
        (&["--pool-fraction", "1.0,9"], "pool fraction"),
        (&["--pool-fraction", "x"], "'x' is not a number"),
        (&["--runs", "0"], "--runs"),
        (&["--threads", "0"], "--threads"),
        (&["--queries", "q23"], "unknown query 'q23'"),
        (&["--queries", "q1,,q6"], "query"),
        (&["--cold", "--warm"], "cannot be used with"),
        (&["--reduced", "--layers", "se1"], "cannot be used with"),
        (&["--reduced", "--queries", "q2"], "cannot be used with"),
        (&["--scaling", "0.1,1", "--sf", "1"], "cannot be used with"),
        (&["--scaling", "0.1,0"], "scale factor"),
        (&["--bogus"], "--bogus"),
    ];
    for (args, want) in cases {
        let err = parse(args).expect_err(&format!("{args:?} should be refused"));
        assert!(err.contains(want), "{args:?}: error {err:?} should mention {want:?}");
    }
}

#[test]
fn a_missing_directory_is_an_error_naming_it() {
    let a = parse(&["--media", "disk", "--dir-disk", "/no/such/dir/nvpage"]).unwrap();
    let err = Config::from_args(&a).unwrap_err().to_string();
    assert!(err.contains("/no/such/dir/nvpage") && err.contains("--dir-disk"), "{err}");
    // The tmpfs directory is only checked when tmpfs is asked for.
    let a = parse(&["--media", "disk", "--dir-tmpfs", "/no/such/dir"]).unwrap();
    assert!(Config::from_args(&a).is_ok());
}
