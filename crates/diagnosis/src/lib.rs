//! The diagnostic task (packs whose `task` is `diagnosis`, such as
//! `data/packs/general-medicine`): everything cfeval needs to know about a
//! diagnosis answer, over data the pack owns.
//!
//! - [`ontology`]: the pack's diagnoses (`ontology.yaml`: names, synonyms,
//!   abbreviations, eponyms, broader categories), loaded with file:line
//!   errors, and the matcher that finds diagnosis mentions in free text —
//!   with a lexical fallback for a reference diagnosis the ontology does not
//!   know (cases cfeval has never seen).
//! - [`answer`]: reads one answer as a clinician does — its leading
//!   diagnosis, its differential, what it rules out, the tests it orders,
//!   whether it escalates care and whether it declines to commit.
//! - [`grade`]: grades an answer against the case's diagnosis as `exact`,
//!   `related`, `wrong` or `none` (the task's CMS analogue), and the CSS pair
//!   verdicts of the diagnosis interventions (flip / remove the decisive
//!   result, a red flag, age or sex, negative controls).

pub mod answer;
mod cues;
pub mod error;
pub mod grade;
mod layout;
pub mod ontology;
mod text;

pub use error::{Error, Result};
