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
//!
//! Every phrase the reader uses — labels, differential and rule-out cues,
//! hedges, refusal, ordering and escalation cues, spelling pairs, stop words —
//! is data in the pack's `answer.yaml` (its fields are commented at its top);
//! the private modules `cues` (that file), `layout` (lines, sections,
//! sentences, clauses and the scope of each cue) and `text` (folding and
//! canonical words) hold no domain knowledge.
//!
//! ```
//! use cfeval_diagnosis::answer::Reader;
//! use cfeval_diagnosis::grade::{Grade, grade};
//! use cfeval_diagnosis::ontology::Ontology;
//!
//! let ontology = Ontology::parse(
//!     "version: 1\ndiagnoses:\n  - id: mg\n    name: Myasthenia gravis\n    synonyms: [MG]\n",
//!     "version: 1\ntests: []\n",
//!     "example",
//! )?;
//! let cues = include_str!("../../../data/packs/general-medicine/answer.yaml");
//! let reader = Reader::new(ontology, cues, "answer.yaml")?;
//! let reading = reader.read("Most likely diagnosis: MG.\nDifferential: LEMS.");
//! assert_eq!(reading.source, "label");
//! assert_eq!(grade(&reader, &reading, "Myasthenia gravis").0, Grade::Exact);
//! # Ok::<(), cfeval_diagnosis::Error>(())
//! ```

pub mod answer;
pub mod control;
mod cues;
pub mod dialogue;
pub mod error;
pub mod evidence;
pub mod findings;
pub mod grade;
mod layout;
pub mod ontology;
pub mod ranges;
mod text;

pub use error::{Error, Result};

/// BLAKE3 hex of a hash followed by a file's text: how a reader's hash
/// takes in each further file it is built from.
pub(crate) fn chained_hash(hash: &str, text: &str) -> String {
    blake3::Hasher::new()
        .update(hash.as_bytes())
        .update(text.as_bytes())
        .finalize()
        .to_hex()
        .to_string()
}
