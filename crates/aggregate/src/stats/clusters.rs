//! How per-case sums become a bootstrap [`Design`]: which units are drawn
//! together.
//!
//! A case is the unit of independence: its baseline answer, and through it
//! every (baseline, variant) pair of every family, is shared, and a subject
//! that reads a case well tends to do so in every family. [`Resampling::Cases`]
//! (the default) therefore makes one stratum of every case of the run: a
//! replicate draws case ids once and every series — every family,
//! intervention, subject, mode and judge, CMS as well as CSS — uses the same
//! draw. [`Resampling::FamilyStrata`] is the earlier design, kept to compare
//! against: one stratum per family, cases drawn independently in each. It
//! ignores the correlation between a case's families, so the interval of a
//! statistic that pools families (overall CSS) is too narrow when that
//! correlation is positive (see `BENCHMARKS.md`, "Aggregate: interval
//! coverage").

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use super::bootstrap::{Design, Series};
use crate::error::Result;

/// Which units a bootstrap replicate resamples.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Resampling {
    /// Cases, jointly across families: a case's tuples move together.
    #[default]
    Cases,
    /// Cases within each family, independently per family (cfeval's first
    /// design; it under-covers statistics that pool families).
    FamilyStrata,
}

impl Resampling {
    /// The name the scores and the report use.
    pub fn as_str(self) -> &'static str {
        match self {
            Resampling::Cases => "cases",
            Resampling::FamilyStrata => "family-strata",
        }
    }
}

/// One series' per-case sums before layout.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cells {
    /// The series' family (its stratum under [`Resampling::FamilyStrata`]).
    pub family: String,
    /// `(case, sum of scores, number of tuples)`, at most one entry per case.
    pub cells: Vec<(u32, f64, f64)>,
}

/// A laid-out design and the units behind it.
#[derive(Debug, Clone)]
pub struct Clustered {
    pub design: Design,
    /// Stratum names: `cases`, or the family names in sorted order.
    pub strata: Vec<String>,
    /// Per stratum, the case ids of its units in unit order.
    pub units: Vec<Vec<u32>>,
}

/// Lays `series` out for the bootstrap under `resampling`; series keep their
/// order (statistic `i` of the design is `series[i]`).
pub fn layout(resampling: Resampling, series: &[Cells]) -> Result<Clustered> {
    let stratum_of = |cells: &Cells| match resampling {
        Resampling::Cases => Resampling::Cases.as_str().to_string(),
        Resampling::FamilyStrata => cells.family.clone(),
    };
    let mut stratum_cases: BTreeMap<String, BTreeSet<u32>> = BTreeMap::new();
    for one in series {
        stratum_cases
            .entry(stratum_of(one))
            .or_default()
            .extend(one.cells.iter().map(|&(case, _, _)| case));
    }
    let strata: Vec<String> = stratum_cases.keys().cloned().collect();
    let units: Vec<Vec<u32>> = stratum_cases
        .values()
        .map(|cases| cases.iter().copied().collect())
        .collect();
    let unit_index: Vec<HashMap<u32, usize>> = units
        .iter()
        .map(|cases| {
            cases
                .iter()
                .enumerate()
                .map(|(unit, &case)| (case, unit))
                .collect()
        })
        .collect();
    let sizes: Vec<usize> = units.iter().map(Vec::len).collect();
    let laid: Vec<Series> = series
        .iter()
        .map(|one| {
            let name = stratum_of(one);
            let stratum = strata.binary_search(&name).unwrap_or(0);
            let mut num = vec![0.0; sizes[stratum]];
            let mut den = vec![0.0; sizes[stratum]];
            for &(case, sum, count) in &one.cells {
                if let Some(&unit) = unit_index[stratum].get(&case) {
                    num[unit] += sum;
                    den[unit] += count;
                }
            }
            Series { stratum, num, den }
        })
        .collect();
    Ok(Clustered {
        design: Design::new(&sizes, &laid)?,
        strata,
        units,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cells(family: &str, cells: &[(u32, f64, f64)]) -> Cells {
        Cells {
            family: family.into(),
            cells: cells.to_vec(),
        }
    }

    #[test]
    fn cases_make_one_stratum_of_every_case() {
        let series = [
            cells("A", &[(0, 1.0, 1.0), (2, 0.0, 1.0)]),
            cells("B", &[(1, 0.5, 1.0), (2, 1.0, 2.0)]),
        ];
        let joint = layout(Resampling::Cases, &series).expect("layout");
        assert_eq!(joint.strata, vec!["cases".to_string()]);
        assert_eq!(joint.units, vec![vec![0, 1, 2]]);
        assert_eq!(joint.design.strata(), 1);
        let stratified = layout(Resampling::FamilyStrata, &series).expect("layout");
        assert_eq!(stratified.strata, vec!["A".to_string(), "B".to_string()]);
        assert_eq!(stratified.units, vec![vec![0, 2], vec![1, 2]]);
        assert_eq!(stratified.design.units(1), Some(2));
    }

    #[test]
    fn names_are_stable() {
        assert_eq!(Resampling::default(), Resampling::Cases);
        assert_eq!(Resampling::FamilyStrata.as_str(), "family-strata");
        assert_eq!(
            serde_json::to_string(&Resampling::FamilyStrata).expect("json"),
            "\"family-strata\""
        );
    }
}
