//! The infer stage's error type.

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What stops the infer stage as a whole (a failed call is not one of them:
/// it becomes a response row with `status = error`).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Schema(#[from] cfeval_schema::Error),
    #[error("failed to set up subject {subject}: {source}")]
    Subject {
        subject: String,
        #[source]
        source: cfeval_model::Error,
    },
    #[error(
        "unknown control subject `{0}` (known: control/reference, control/constant, control/erratic, control/blind-<kind> with kind surgery, biomarker, stage, prior_line)"
    )]
    UnknownControl(String),
    /// The run's pack does not load, or does not fit the request.
    #[error("{0}")]
    Pack(String),
    #[error("failed to load the guideline table: {0}")]
    Guidelines(#[from] cfeval_guidelines::Error),
    #[error(
        "variants were made under two different intervention catalogs ({first} and {second}); refusing to mix them (pass --allow-mixed-catalogs to override)"
    )]
    MixedCatalogs { first: String, second: String },
    #[error("run {0} has no variants: run `cfeval perturb` first")]
    NoVariants(String),
    #[error("invalid shard slice `{0}`: expected i/n with 1 <= i <= n")]
    Slice(String),
    #[error("failed to start the async runtime: {0}")]
    Runtime(std::io::Error),
    /// An answering task failed and its tuple could not be told (never
    /// expected: every task's tuple is kept until it ends).
    #[error("an answering task failed and its tuple is unknown: {0}")]
    Task(String),
    /// Batch mode asked of a subject or mode that cannot use it.
    #[error("{0}")]
    Batch(String),
}
