//! The `refresh` subcommand's options, and their validation into a [`Config`].

use std::path::PathBuf;

use nvpage::Layer;
use serde::Serialize;

use super::functions::Lookup;
use crate::BoxError;
use crate::dirs::MediaDirs;
use crate::tpch::Medium;
use crate::tpch::args::{dedup, layer_names, parse_layer, parse_query, parse_sf, query_names};
use crate::tpch::queries::Query;

/// The queries whose answers the snapshot check knows how to predict (see `model`).
pub const QUERIES: [Query; 2] = [Query::Q01, Query::Q06];

/// Options of `nvpage-bench refresh`.
#[derive(Clone, Debug, clap::Args)]
pub struct RefreshArgs {
    /// TPC-H scale factor (1 is about 1 GB of data; at least 1/1500, so a refresh set holds
    /// an order)
    #[arg(long, value_name = "SF", default_value_t = 0.1, value_parser = parse_sf,
          allow_negative_numbers = true)]
    pub sf: f64,
    /// File layers, comma-separated [default: every layer compiled in]
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = parse_layer)]
    pub layers: Vec<Layer>,
    /// Media, comma-separated: disk, tmpfs (emulated NVM)
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "disk,tmpfs")]
    pub media: Vec<Medium>,
    /// Where the databases live.
    #[command(flatten)]
    pub dirs: MediaDirs,
    /// Measured runs: each runs every query alone, the refresh loop alone, and every query
    /// beside the refresh loop (a run at SF 1 takes a few seconds)
    #[arg(long, value_name = "N", default_value_t = 5,
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: u32,
    /// How RF2 finds the rows of its keys: `scan` (a scan of orders and lineitem, as with no
    /// index) or `index` (the primary-key indexes the loader builds, `orders_pkey` and
    /// `lineitem_pkey`, which every refresh keeps up to date either way)
    #[arg(long, value_name = "HOW", value_enum, default_value = "scan")]
    pub rf2: Lookup,
    /// Queries, comma-separated: q1, q6 [default: both]
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = parse_query)]
    pub queries: Vec<Query>,
    /// Write every run, the summaries and the loaded database's answers as JSON to PATH
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// No progress bars
    #[arg(long)]
    pub quiet: bool,
}

/// The validated configuration of a run, as saved in the JSON.
#[derive(Clone, Debug, Serialize)]
pub struct Config {
    /// Scale factor.
    pub sf: f64,
    /// Layers, in order.
    #[serde(serialize_with = "layer_names")]
    pub layers: Vec<Layer>,
    /// Media, in order.
    pub media: Vec<Medium>,
    /// Directory for disk databases.
    pub dir_disk: PathBuf,
    /// Directory for tmpfs databases.
    pub dir_tmpfs: PathBuf,
    /// Measured runs per database.
    pub runs: u32,
    /// How RF2 finds its rows.
    pub rf2: Lookup,
    /// Queries.
    #[serde(serialize_with = "query_names")]
    pub queries: Vec<Query>,
    /// No progress bars.
    #[serde(skip)]
    pub quiet: bool,
}

impl Config {
    /// Validates `args` (what clap cannot check alone) and fills in the defaults.
    pub fn from_args(args: &RefreshArgs) -> Result<Config, BoxError> {
        let layers = if args.layers.is_empty() { Layer::compiled() } else { dedup(&args.layers) };
        let media = dedup(&args.media);
        if media.is_empty() {
            return Err("--media needs at least one of disk, tmpfs".into());
        }
        let queries = if args.queries.is_empty() { QUERIES.to_vec() } else { dedup(&args.queries) };
        if let Some(q) = queries.iter().find(|q| !QUERIES.contains(q)) {
            return Err(format!(
                "--queries: {q} is not run beside the refresh loop: only q01 and q06, whose \
                 answers at every snapshot the benchmark can predict and check"
            )
            .into());
        }
        args.dirs.check(&media)?;
        let MediaDirs { dir_disk, dir_tmpfs } = args.dirs.clone();
        // Fail now, not after the load.
        super::sets::RefreshSets::new(args.sf)?;
        Ok(Config {
            sf: args.sf,
            layers,
            media,
            dir_disk,
            dir_tmpfs,
            runs: args.runs,
            rf2: args.rf2,
            queries,
            quiet: args.quiet,
        })
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        args: RefreshArgs,
    }

    fn config(argv: &[&str]) -> Result<Config, String> {
        let cli = Cli::try_parse_from(std::iter::once("refresh").chain(argv.iter().copied()))
            .map_err(|e| e.to_string())?;
        Config::from_args(&cli.args).map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_and_refusals() {
        let c = config(&["--media", "tmpfs", "--dir-tmpfs", "/"]).unwrap();
        assert_eq!((c.sf, c.runs, c.rf2), (0.1, 5, Lookup::Scan));
        let c = config(&["--media", "tmpfs", "--dir-tmpfs", "/", "--rf2", "index"]).unwrap();
        assert_eq!(c.rf2, Lookup::Index);
        assert!(config(&["--rf2", "hash"]).unwrap_err().contains("hash"));
        assert_eq!(c.queries, QUERIES.to_vec());
        assert_eq!(c.layers, Layer::compiled());
        let c = config(&["--media", "tmpfs", "--dir-tmpfs", "/", "--queries", "6"]).unwrap();
        assert_eq!(c.queries, vec![Query::Q06]);
        let e =
            config(&["--media", "tmpfs", "--dir-tmpfs", "/", "--queries", "q1,q3"]).unwrap_err();
        assert!(e.contains("q03") && e.contains("only q01 and q06"), "{e}");
        let e = config(&["--media", "tmpfs", "--dir-tmpfs", "/", "--sf", "0.0001"]).unwrap_err();
        assert!(e.contains("1/1500"), "{e}");
        let e = config(&["--media", "disk", "--dir-disk", "/no/such/nvpage"]).unwrap_err();
        assert!(e.contains("--dir-disk"), "{e}");
        assert!(config(&["--runs", "0"]).unwrap_err().contains("--runs"));
    }
}
