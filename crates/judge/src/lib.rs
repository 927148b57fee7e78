//! `cfeval-judge`: the judge stage. For each (subject, mode, case,
//! intervention) a judge compares the baseline recommendation with the
//! intervened one against the catalog's pre-registered expected direction
//! and writes a CSS verdict (0 ignored, 0.5 noticed but unchanged, 1 updated
//! correctly; negative controls: 1 held, 0 shifted); beside it, CMS, the
//! weighted recall of the case's consensus items in the baseline answer.
//!
//! - [`ontology`]: the regimen and drug-class ontology (`data/packs/oncology/ontology.yaml`)
//!   that reads a recommendation into classes, drugs, line, intent, tests.
//! - [`reading`]: where a reply states its plan ([`reading::plan`]) and what
//!   it says about each treatment or test ([`reading::context`]).
//! - [`rule`]: the deterministic, offline [`RuleJudge`] and CMS; it abstains
//!   (`uncertain`) rather than guess, and [`Judge::Cascade`] sends only those
//!   pairs to a model judge.
//! - [`llm`]: the [`LlmJudge`], strict JSON verdicts from a model with one
//!   repair retry; the subject's text is quoted as data.
//! - [`families`]: the model-family map (`data/model-families.yaml`) and the
//!   self-preference guard: a judge never scores its own family.
//! - [`rubric`]: the clinical-reasoning rubric (seed 002) as data, and the
//!   rubric judge (`rubric:<model>`) that scores each response on it.
//! - [`run()`]: the stage over a run's tables, judge-only reruns included
//!   (responses are read, subjects are never called).

pub mod diagnosis;
mod error;
pub mod families;
pub mod llm;
pub mod ontology;
pub mod reading;
pub mod rubric;
pub mod rule;
mod run;
mod verdict;

pub use error::{Error, Result};
pub use families::{Families, GuardPlan};
pub use llm::{JUDGE_PAIR_TEMPLATE, LlmJudge, PairPrompt};
pub use ontology::{Analysis, Ontology};
pub use rubric::judge::RubricJudge;
pub use rubric::stage::RubricRun;
pub use rule::RuleJudge;
pub use run::{Config, Judge, Report, run, unit};
pub use verdict::{Label, PairInput, Verdict};
