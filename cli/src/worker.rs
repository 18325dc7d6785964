//! `nvpage worker DIR`: serves a database's shards to a cluster's coordinator (the
//! `nvpage-cluster` crate) until SIGTERM or Ctrl-C; then lets running requests finish for a few
//! seconds, cancels the rest, and closes the database.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;
use nvpage::{Database, Layer};
use nvpage_cluster::config::TOKEN_ENV;

use crate::place::Failure;

/// `nvpage worker`'s arguments.
#[derive(Args)]
pub struct WorkerArgs {
    /// The database directory (made if missing).
    pub path: PathBuf,
    /// The address to listen on. Loopback unless another address is named here.
    #[arg(long, default_value = "127.0.0.1:7600")]
    pub listen: SocketAddr,
    /// A cluster file to take the token from (else the environment variable
    /// NVPAGE_CLUSTER_TOKEN).
    #[arg(long, value_name = "FILE")]
    pub cluster: Option<PathBuf>,
    /// The log's directory, for a database whose log lives apart.
    #[arg(long)]
    pub log_dir: Option<PathBuf>,
    /// The file layer: pread, se1 or se2 (default: the best compiled in).
    #[arg(long, value_parser = parse_layer)]
    pub layer: Option<Layer>,
}

fn parse_layer(s: &str) -> Result<Layer, String> {
    s.parse::<Layer>().map_err(|e| e.to_string())
}

/// Runs `nvpage worker`.
pub fn run(args: &WorkerArgs) -> Result<(), Failure> {
    let token = match &args.cluster {
        Some(f) => nvpage_cluster::Cluster::load(f).map_err(|e| e.to_string())?.token,
        None => std::env::var(TOKEN_ENV)
            .ok()
            .filter(|t| !t.is_empty())
            .ok_or_else(|| format!("no token: pass --cluster FILE or set {TOKEN_ENV}"))?,
    };
    let mut b = Database::builder();
    if let Some(layer) = args.layer {
        b = b.layer(layer);
    }
    if let Some(d) = &args.log_dir {
        b = b.log_dir(d);
    }
    let db = b.open(&args.path).map_err(|e| e.to_string())?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the worker's runtime: {e}"))?;
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .map_err(|e| format!("cannot watch for SIGTERM: {e}"))?;
        let stop = async move {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        };
        eprintln!(
            "nvpage worker: serving {} on {}",
            args.path.display(),
            listener.local_addr().map_err(|e| e.to_string())?
        );
        nvpage_cluster::worker::serve(db, listener, &token, stop).await.map_err(|e| e.to_string())
    })?;
    // Dropping the runtime cancels whatever the grace left running.
    rt.shutdown_timeout(std::time::Duration::from_secs(1));
    Ok(())
}
