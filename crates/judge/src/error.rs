//! Errors of the judge stage.

/// What went wrong while judging.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("failed to read {path}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to parse {origin}")]
    Parse {
        origin: String,
        #[source]
        source: serde_norway::Error,
    },
    #[error("{origin}: {message}")]
    Invalid { origin: String, message: String },
    #[error(
        "judge {judge} is in model family `{family}`, the same as subject {subject}: a judge never scores its own family; name a fallback judge of another family"
    )]
    SelfPreference {
        judge: String,
        subject: String,
        family: String,
    },
    #[error("fallback judge {fallback} is in family `{family}`, the same as subject {subject}")]
    FallbackSameFamily {
        fallback: String,
        subject: String,
        family: String,
    },
    #[error(
        "responses were made under different intervention catalogs ({first} and {second}); rerun with allow_mixed_catalogs to judge them together"
    )]
    MixedCatalogs { first: String, second: String },
    #[error(
        "catalog lock: the responses were made under catalog {found}, but this run is locked to catalog {expected} (its variants'); rerun `cfeval infer` for every subject after `cfeval perturb`, or pass --allow-mixed-catalogs"
    )]
    CatalogLock { expected: String, found: String },
    #[error("run {0} has no responses to judge (run infer first)")]
    NoResponses(String),
    /// The run's pack does not load, or its diagnosis judge does not.
    #[error("{0}")]
    Pack(String),
    #[error(
        "the responses of run {run} hold no rows of subject {subject}; run `cfeval infer --run {run} --subject {subject}` first"
    )]
    MissingSubject { subject: String, run: String },
    #[error("failed to start the async runtime for the LLM judge")]
    Runtime(#[source] std::io::Error),
    #[error(transparent)]
    Schema(#[from] cfeval_schema::Error),
    #[error(transparent)]
    Guidelines(#[from] cfeval_guidelines::Error),
}

/// The judge stage's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<cfeval_schema::lineage::CatalogConflict> for Error {
    fn from(conflict: cfeval_schema::lineage::CatalogConflict) -> Self {
        match conflict {
            cfeval_schema::lineage::CatalogConflict::Lock { expected, found } => {
                Error::CatalogLock { expected, found }
            }
            cfeval_schema::lineage::CatalogConflict::Mixed { first, second } => {
                Error::MixedCatalogs { first, second }
            }
        }
    }
}
