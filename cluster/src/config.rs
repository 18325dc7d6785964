//! The cluster file: the workers, the shared token, and how each table's rows are split.
//!
//! ```toml
//! # The token every request carries (or leave it out and set NVPAGE_CLUSTER_TOKEN).
//! token = "a long random string"
//!
//! [[workers]]
//! address = "127.0.0.1:7601"
//! dir = "/data/nvpage/w0"        # where that worker's database lives (for the reader's sake)
//!
//! [[workers]]
//! address = "127.0.0.1:7602"
//! dir = "/data/nvpage/w1"
//!
//! [tables.lineitem]
//! hash = ["l_orderkey"]          # a row lives on worker hash(l_orderkey) mod workers
//!
//! [tables.nation]
//! replicated = true              # every worker holds every row
//! ```
//!
//! The order of `[[workers]]` is the shards' order: shard *i* of every split table is worker
//! *i*'s. A table the file does not name is read as split (each worker's rows once) and cannot
//! be loaded through the coordinator.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::{Error, Result};

/// The environment variable that holds the cluster's token where the cluster file does not.
pub const TOKEN_ENV: &str = "NVPAGE_CLUSTER_TOKEN";

/// A parsed cluster file.
#[derive(Clone, Debug)]
pub struct Cluster {
    /// The token every request to a worker carries.
    pub token: String,
    /// The workers, in shard order.
    pub workers: Vec<WorkerSpec>,
    /// How each named table's rows are split.
    pub tables: BTreeMap<String, Split>,
}

/// One worker of the cluster file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkerSpec {
    /// `host:port` the worker listens on.
    pub address: String,
    /// The worker's database directory, on the worker's machine (the coordinator never opens it).
    #[serde(default)]
    pub dir: Option<PathBuf>,
}

/// How a table's rows are split across the workers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Split {
    /// A row lives on worker `hash(columns) mod workers` ([`crate::hash`]).
    Hash(Vec<String>),
    /// Every worker holds every row.
    Replicated,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    token: Option<String>,
    #[serde(default)]
    workers: Vec<WorkerSpec>,
    #[serde(default)]
    tables: BTreeMap<String, TableRule>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TableRule {
    #[serde(default)]
    hash: Vec<String>,
    #[serde(default)]
    replicated: bool,
}

impl Cluster {
    /// Reads and checks the cluster file at `path`; the token comes from the file, else from
    /// [`TOKEN_ENV`].
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::Config(format!("{}: {e}", path.display())))?;
        Self::parse(&text, std::env::var(TOKEN_ENV).ok())
            .map_err(|e| Error::Config(format!("{}: {e}", path.display())))
    }

    /// Parses a cluster file's text; `env_token` is used where the file names no token.
    pub fn parse(text: &str, env_token: Option<String>) -> std::result::Result<Self, String> {
        let f: File = toml::from_str(text).map_err(|e| e.to_string())?;
        let token = f
            .token
            .or(env_token)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| format!("no token: set `token` in the file or {TOKEN_ENV}"))?;
        if f.workers.is_empty() {
            return Err("no [[workers]]".into());
        }
        for (i, w) in f.workers.iter().enumerate() {
            if f.workers[..i].iter().any(|o| o.address == w.address) {
                return Err(format!("worker {} is listed twice", w.address));
            }
        }
        let mut tables = BTreeMap::new();
        for (name, rule) in f.tables {
            let split = match (rule.replicated, rule.hash.is_empty()) {
                (true, true) => Split::Replicated,
                (false, false) => Split::Hash(rule.hash),
                (true, false) => {
                    return Err(format!("table {name}: both `hash` and `replicated`"));
                }
                (false, true) => {
                    return Err(format!("table {name}: name `hash = [columns]` or `replicated`"));
                }
            };
            tables.insert(name, split);
        }
        Ok(Self { token, workers: f.workers, tables })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cluster_file_names_workers_in_order_and_each_tables_split() {
        let c = Cluster::parse(
            r#"
            token = "t0"
            [[workers]]
            address = "127.0.0.1:1"
            [[workers]]
            address = "127.0.0.1:2"
            dir = "/d"
            [tables.a]
            hash = ["k", "j"]
            [tables.n]
            replicated = true
            "#,
            None,
        )
        .unwrap();
        assert_eq!(c.token, "t0");
        assert_eq!(c.workers[1].address, "127.0.0.1:2");
        assert_eq!(c.tables["a"], Split::Hash(vec!["k".into(), "j".into()]));
        assert_eq!(c.tables["n"], Split::Replicated);
    }

    #[test]
    fn a_cluster_file_without_a_token_or_a_rule_is_refused() {
        let w = "[[workers]]\naddress = \"h:1\"\n";
        assert!(Cluster::parse(w, None).unwrap_err().contains("no token"));
        assert_eq!(Cluster::parse(w, Some("e".into())).unwrap().token, "e");
        let both = format!("token='t'\n{w}[tables.x]\nhash=['a']\nreplicated=true\n");
        assert!(Cluster::parse(&both, None).unwrap_err().contains("both"));
        let neither = format!("token='t'\n{w}[tables.x]\n");
        assert!(Cluster::parse(&neither, None).unwrap_err().contains("name `hash"));
        let twice = format!("token='t'\n{w}{w}");
        assert!(Cluster::parse(&twice, None).unwrap_err().contains("twice"));
        assert!(Cluster::parse("token='t'\nworkers=[]\nextra=1", None).is_err());
    }
}
