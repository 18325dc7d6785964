//! The cluster's typed errors.

use datafusion::error::DataFusionError;

/// What can go wrong in a worker or a coordinator.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The cluster file, or a worker's options.
    #[error("cluster configuration: {0}")]
    Config(String),
    /// A worker failed, could not be reached in time, or refused the request.
    #[error("worker {worker}: {message}")]
    Worker { worker: String, message: String },
    /// A statement the cluster does not run (it names what to do instead).
    #[error("{0}")]
    Unsupported(String),
    /// The engine.
    #[error(transparent)]
    Engine(#[from] nvpage::Error),
    /// SQL on a worker's own database.
    #[error(transparent)]
    Sql(#[from] nvpage_sql::Error),
    /// DataFusion's planner or engine.
    #[error(transparent)]
    DataFusion(#[from] DataFusionError),
    /// The worker's listener.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// The cluster's results.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub(crate) fn worker(worker: impl Into<String>, message: impl std::fmt::Display) -> Self {
        Self::Worker { worker: worker.into(), message: message.to_string() }
    }
}

impl From<Error> for DataFusionError {
    fn from(e: Error) -> Self {
        match e {
            Error::DataFusion(e) => e,
            e => DataFusionError::External(Box::new(e)),
        }
    }
}
