//! # nvpage-cluster
//!
//! nvpage shards under a distributed DataFusion engine (`datafusion-distributed`): a
//! distributed table is a set of nvpage tables of one name and schema, one in each worker's
//! database, split by a hash of key columns or replicated on every worker ([`config`]).
//!
//! - A **worker** ([`worker::serve`], `nvpage worker DIR`) owns one database and serves its
//!   shards: it runs the plan fragments the coordinator sends it, reading its shards in place.
//! - The **coordinator** ([`Coordinator`], `nvpage sql --cluster FILE`) is the client's session:
//!   it learns the tables from the workers, plans each query across them — each shard's scan
//!   routed to its worker, with projection, filters and limit pushed into that worker's nvpage
//!   scan ([`scan`]) — and loads rows by splitting them ([`hash`]).
//!
//! [`Traffic::of`] tells what a query moved between workers and to the coordinator.
//!
//! Every request between them carries the cluster's token; a worker refuses any other. A worker
//! that is down, stops answering or dies mid-query ends the query with an error naming it, in
//! bounded time ([`flight::CONNECT_TIMEOUT`], [`flight::KEEPALIVE`]).

#![forbid(unsafe_code)]

pub mod config;
pub mod coordinator;
mod error;
pub mod flight;
pub mod hash;
pub mod scan;
pub mod traffic;
pub mod worker;

pub use config::{Cluster, Split};
pub use coordinator::Coordinator;
pub use error::{Error, Result};
pub use traffic::{Flow, Traffic};
