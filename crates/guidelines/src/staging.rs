//! The AJCC stage-group tables (`data/packs/oncology/staging.yaml`): which stage
//! groups a T, N and M category can have, per cancer type.
//!
//! A table row covers categories by their number (T1–T4, N0–N3, M0/M1) and
//! lists every group its letter subdivisions reach; where a T sub-category
//! moves a row to another main group (lung T2a/T2b, T4a/T4b), the row names
//! it (`T2a N0 M0`). The cohort generator
//! draws T and N from the rows of a stage group; the chart coherence check
//! of `cfeval-perturb` flags a stated group its TNM cannot have.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;

use crate::error::{Error, Result};

/// The staging tables shipped with cfeval, compiled in.
pub const BUILTIN_AJCC8_YAML: &str = cfeval_schema::pack::oncology::STAGING;

const BUILTIN_ORIGIN: &str = "data/packs/oncology/staging.yaml (built in)";

/// Which staging a TNM states: `c` clinical, `p` pathologic, `yp`/`yc`
/// after neoadjuvant therapy, no prefix either.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Basis {
    Clinical,
    Pathologic,
    /// After neoadjuvant therapy: the table's `post_therapy` rows where it
    /// has them, else its pathologic rows.
    PostTherapy,
    Either,
}

impl Basis {
    /// The basis a TNM prefix (`c`, `p`, `yp`, `yc`, empty) states.
    pub fn from_prefix(prefix: &str) -> Self {
        if prefix.starts_with('y') {
            Basis::PostTherapy
        } else if prefix.contains('p') {
            Basis::Pathologic
        } else if prefix.contains('c') {
            Basis::Clinical
        } else {
            Basis::Either
        }
    }
}

/// One expanded table row: a T, N and M category and its groups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub t: u8,
    /// The T sub-category the row is limited to (`a` in `T2a`), if any.
    pub t_sub: Option<char>,
    pub n: u8,
    pub m: u8,
    pub groups: Vec<String>,
}

/// The stage-group tables of one cancer type.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CancerTable {
    clinical: Vec<Row>,
    pathologic: Vec<Row>,
    post_therapy: Vec<Row>,
}

/// Every cancer type's table, with the edition they follow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Staging {
    edition: String,
    cancers: BTreeMap<String, CancerTable>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStaging {
    edition: String,
    cancers: BTreeMap<String, RawCancer>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCancer {
    #[serde(default)]
    rows: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    clinical: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    pathologic: BTreeMap<String, Vec<String>>,
    /// Staging after neoadjuvant therapy (ypTNM), where the edition gives
    /// it its own table.
    #[serde(default)]
    post_therapy: BTreeMap<String, Vec<String>>,
}

impl Staging {
    /// The built-in tables (parsed once per process).
    pub fn builtin() -> Result<&'static Staging> {
        static CELL: OnceLock<std::result::Result<Staging, String>> = OnceLock::new();
        CELL.get_or_init(|| {
            Staging::parse(BUILTIN_AJCC8_YAML, BUILTIN_ORIGIN).map_err(|error| error.to_string())
        })
        .as_ref()
        .map_err(|message| Error::Invalid {
            origin: BUILTIN_ORIGIN.to_string(),
            rule: "staging".to_string(),
            message: message.clone(),
        })
    }

    /// Parses and validates a staging file's text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Staging> {
        let raw: RawStaging = serde_norway::from_str(text).map_err(|source| Error::Parse {
            origin: origin.to_string(),
            source,
        })?;
        let mut cancers = BTreeMap::new();
        for (name, raw_cancer) in raw.cancers {
            let invalid = |message: String| Error::Invalid {
                origin: origin.to_string(),
                rule: name.clone(),
                message,
            };
            let both = expand(&raw_cancer.rows).map_err(invalid)?;
            let mut clinical = expand(&raw_cancer.clinical).map_err(invalid)?;
            let mut pathologic = expand(&raw_cancer.pathologic).map_err(invalid)?;
            clinical.extend(both.iter().cloned());
            pathologic.extend(both);
            if clinical.is_empty() || pathologic.is_empty() {
                return Err(invalid(
                    "needs `rows`, or both `clinical` and `pathologic`".to_string(),
                ));
            }
            let post_therapy = expand(&raw_cancer.post_therapy).map_err(invalid)?;
            cancers.insert(
                name,
                CancerTable {
                    clinical,
                    pathologic,
                    post_therapy,
                },
            );
        }
        Ok(Staging {
            edition: raw.edition,
            cancers,
        })
    }

    /// The edition the tables follow.
    pub fn edition(&self) -> &str {
        &self.edition
    }

    /// The table of `cancer` (a cancer-type value such as `nsclc`).
    pub fn table(&self, cancer: &str) -> Option<&CancerTable> {
        self.cancers.get(&cancer.to_ascii_lowercase())
    }
}

impl CancerTable {
    /// The rows of `basis` (`Either`: clinical and pathologic).
    pub fn rows(&self, basis: Basis) -> impl Iterator<Item = &Row> {
        let own_post_therapy = basis == Basis::PostTherapy && !self.post_therapy.is_empty();
        let (clinical, pathologic, post_therapy) = match basis {
            Basis::Clinical => (true, false, false),
            Basis::Pathologic => (false, true, false),
            Basis::PostTherapy => (false, !own_post_therapy, own_post_therapy),
            Basis::Either => (true, true, false),
        };
        self.clinical
            .iter()
            .filter(move |_| clinical)
            .chain(self.pathologic.iter().filter(move |_| pathologic))
            .chain(self.post_therapy.iter().filter(move |_| post_therapy))
    }

    /// Every group `t`, `n` and `m` can have under `basis` (empty: the
    /// combination is in no row).
    pub fn groups(&self, basis: Basis, t: u8, n: u8, m: u8) -> Vec<&str> {
        self.groups_of(basis, t, None, n, m)
    }

    /// Every group `t` with sub-category `t_sub` (`a` of `T2a`; `None`:
    /// any), `n` and `m` can have under `basis`.
    pub fn groups_of(&self, basis: Basis, t: u8, t_sub: Option<char>, n: u8, m: u8) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for row in self.rows(basis) {
            let sub_fits = t_sub.is_none() || row.t_sub.is_none() || row.t_sub == t_sub;
            if (row.t, row.n, row.m) == (t, n, m) && sub_fits {
                for group in &row.groups {
                    if !out.contains(&group.as_str()) {
                        out.push(group);
                    }
                }
            }
        }
        out
    }

    /// Whether `group` (`IIIA`, or a main group such as `III`) is one of
    /// `candidates`: exactly, or by its main group when no sub-stage is
    /// stated.
    pub fn matches(group: &str, candidates: &[&str]) -> bool {
        let (main, sub) = split_group(group);
        candidates
            .iter()
            .any(|candidate| *candidate == group || (sub.is_empty() && split_group(candidate).0 == main))
    }

    /// Whether any row of either basis has `group` (with its sub-stage when
    /// stated).
    pub fn knows(&self, group: &str) -> bool {
        self.rows(Basis::Either)
            .any(|row| Self::matches(group, &row.groups.iter().map(String::as_str).collect::<Vec<_>>()))
    }

    /// Whether node-negative (N0) disease without metastases can be stage
    /// `main` (a main group: `III`).
    pub fn node_negative_can_be(&self, main: &str) -> bool {
        self.rows(Basis::Either)
            .filter(|row| row.n == 0 && row.m == 0)
            .any(|row| row.groups.iter().any(|group| split_group(group).0 == main))
    }
}

/// A group split into its main group and sub-stage: `IIIA` → (`III`, `A`).
pub fn split_group(group: &str) -> (&str, &str) {
    let end = group
        .find(|character: char| !matches!(character, 'I' | 'V'))
        .unwrap_or(group.len());
    group.split_at(end)
}

/// Expands `T1-2 N0 M0: [..]` keys into one row per category combination.
fn expand(rows: &BTreeMap<String, Vec<String>>) -> std::result::Result<Vec<Row>, String> {
    let mut out = Vec::new();
    for (key, groups) in rows {
        let parts: Vec<&str> = key.split_whitespace().collect();
        let [t, n, m] = parts[..] else {
            return Err(format!("row `{key}` is not `T<range> N<range> M<0|1>`"));
        };
        // `T2a`: one number and its sub-category.
        let t_sub = t
            .strip_suffix(|letter: char| matches!(letter, 'a'..='d'))
            .map(|number| (number, t.chars().last()));
        let (t, t_sub) = match t_sub {
            Some((number, sub)) if !number.contains('-') => (number, sub),
            _ => (t, None),
        };
        let t = range(t, 'T', key)?;
        let n = range(n, 'N', key)?;
        let m = range(m, 'M', key)?;
        if groups.is_empty() || groups.iter().any(|group| split_group(group).0.is_empty()) {
            return Err(format!(
                "row `{key}` needs stage groups written in Roman numerals"
            ));
        }
        for t in t.0..=t.1 {
            for n in n.0..=n.1 {
                for m in m.0..=m.1 {
                    out.push(Row {
                        t,
                        t_sub,
                        n,
                        m,
                        groups: groups.clone(),
                    });
                }
            }
        }
    }
    Ok(out)
}

fn range(part: &str, letter: char, key: &str) -> std::result::Result<(u8, u8), String> {
    let bad = || format!("row `{key}`: `{part}` is not {letter}<number> or {letter}<a>-<b>");
    let body = part.strip_prefix(letter).ok_or_else(bad)?;
    let (low, high) = body.split_once('-').unwrap_or((body, body));
    let (low, high): (u8, u8) = (low.parse().map_err(|_| bad())?, high.parse().map_err(|_| bad())?);
    if low > high || high > 4 {
        return Err(bad());
    }
    Ok((low, high))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_tables_load_with_their_edition() {
        let staging = Staging::builtin().unwrap();
        assert!(staging.edition().contains("8th"));
        for cancer in [
            "breast",
            "nsclc",
            "sclc",
            "colorectal",
            "pancreatic",
            "gastric",
            "esophageal",
            "melanoma",
            "head_and_neck",
            "head_and_neck_hpv",
            "prostate",
            "bladder",
            "renal",
            "cervical",
            "endometrial",
            "ovarian",
            "hepatocellular",
            "cholangiocarcinoma",
        ] {
            let table = staging.table(cancer).unwrap();
            // Every M1 combination is stage IV, in every table.
            for row in table.rows(Basis::Either).filter(|row| row.m == 1) {
                assert!(
                    row.groups.iter().all(|group| split_group(group).0 == "IV"),
                    "{cancer}"
                );
            }
        }
    }

    #[test]
    fn lookups_follow_the_tables() {
        let staging = Staging::builtin().unwrap();
        let nsclc = staging.table("NSCLC").unwrap();
        assert_eq!(nsclc.groups(Basis::Either, 2, 0, 0), ["IB", "IIA"]);
        assert!(CancerTable::matches("II", &nsclc.groups(Basis::Either, 2, 0, 0)));
        assert!(!CancerTable::matches(
            "IIIA",
            &nsclc.groups(Basis::Either, 1, 0, 0)
        ));
        assert!(nsclc.knows("IVB") && !staging.table("breast").unwrap().knows("IVB"));
        let gastric = staging.table("gastric").unwrap();
        assert_eq!(gastric.groups(Basis::Clinical, 1, 1, 0), ["IIA"]);
        assert_eq!(gastric.groups(Basis::Pathologic, 1, 1, 0), ["IB"]);
        assert!(gastric.groups(Basis::Either, 1, 1, 0).len() == 2);
        assert!(
            staging
                .table("colorectal")
                .unwrap()
                .groups(Basis::Either, 1, 3, 0)
                .is_empty()
        );
        assert!(nsclc.node_negative_can_be("III"));
        assert!(!staging.table("colorectal").unwrap().node_negative_can_be("III"));
        assert_eq!(split_group("IIIA"), ("III", "A"));
        assert_eq!(split_group("IV"), ("IV", ""));
        assert_eq!(Basis::from_prefix("yp"), Basis::PostTherapy);
        assert_eq!(Basis::from_prefix("p"), Basis::Pathologic);
        // ypTNM: the table's own post-therapy rows, else its pathologic ones.
        let esophageal = staging.table("esophageal").unwrap();
        assert_eq!(esophageal.groups(Basis::PostTherapy, 0, 0, 0), ["I"]);
        assert_eq!(esophageal.groups(Basis::PostTherapy, 1, 1, 0), ["IIIA"]);
        assert_eq!(esophageal.groups(Basis::Pathologic, 1, 1, 0), ["IIB"]);
        assert_eq!(nsclc.groups(Basis::PostTherapy, 1, 0, 0), ["IA"]);
        // T sub-categories: T2a N0 is IB, T2b N0 IIA, T2 N0 either.
        assert_eq!(nsclc.groups_of(Basis::Either, 2, Some('a'), 0, 0), ["IB"]);
        assert_eq!(nsclc.groups_of(Basis::Either, 2, Some('b'), 0, 0), ["IIA"]);
        assert_eq!(
            nsclc.groups_of(Basis::Either, 2, Some('c'), 0, 0),
            Vec::<&str>::new()
        );
        assert_eq!(nsclc.groups_of(Basis::Either, 1, Some('b'), 0, 0), ["IA"]);
        let bladder = staging.table("bladder").unwrap();
        assert_eq!(bladder.groups_of(Basis::Either, 4, Some('b'), 0, 0), ["IVA"]);
    }

    #[test]
    fn malformed_rows_are_refused_with_the_row() {
        let text = "edition: x\ncancers:\n  lung:\n    rows:\n      T1 N0: [IA]\n";
        let error = Staging::parse(text, "test").unwrap_err().to_string();
        assert!(error.contains("T1 N0"), "{error}");
        let text = "edition: x\ncancers:\n  lung:\n    rows:\n      T1-9 N0 M0: [IA]\n";
        assert!(Staging::parse(text, "test").is_err());
    }
}
