//! The SQL layer's errors: the engine's, DataFusion's, and the layer's own refusals.

use datafusion::error::DataFusionError;

/// What can go wrong running SQL over nvpage.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The engine refused or failed (a unique key taken, a full log, a damaged page, …).
    #[error(transparent)]
    Engine(#[from] nvpage::Error),
    /// DataFusion refused or failed: a syntax error, an unknown table or column, a type
    /// mismatch, as its message says.
    #[error(transparent)]
    DataFusion(#[from] DataFusionError),
    /// Arrow refused a batch or a value (a type it cannot cast, a malformed array).
    #[error(transparent)]
    Arrow(#[from] datafusion::arrow::error::ArrowError),
    /// A statement the SQL layer cannot carry out as written (a type with no nvpage
    /// counterpart, a value that does not fit its column), with what and why.
    #[error("{0}")]
    Plan(String),
    /// A statement of a transaction that an earlier failed statement doomed: nothing runs until
    /// `COMMIT` or `ROLLBACK` ends it, and `COMMIT` rolls it back.
    #[error(
        "the transaction was rolled back at its end: an earlier statement failed after changing \
         something ({0}); nothing of the transaction is kept"
    )]
    TransactionAborted(String),
    /// `COMMIT` or `ROLLBACK` outside a transaction, `BEGIN` inside one, or a form of them the
    /// session does not carry out (savepoints, `AND CHAIN`, `READ ONLY`).
    #[error("{0}")]
    Transaction(String),
}

/// Results of the SQL layer.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<Error> for DataFusionError {
    fn from(e: Error) -> Self {
        match e {
            Error::DataFusion(e) => e,
            other => DataFusionError::External(Box::new(other)),
        }
    }
}

/// DataFusion's error for an engine error, for code that returns DataFusion's results.
pub(crate) fn df(e: impl Into<Error>) -> DataFusionError {
    e.into().into()
}
