//! The oncology pack compiled into cfeval: every file of
//! `data/packs/oncology/`, the one place that names them. The treatment
//! task's readers take their data from here (the guideline table, the
//! ontology, the extractor's word lists, the coherence lexicon, the AJCC
//! tables, the prompts), so a run without a pack, and a run whose treatment
//! pack [`check`]s, read exactly these files.
//!
//! A treatment pack is checked against them: every file but the pack's own
//! catalog, manifest and notes must be the compiled one, or the pack is
//! refused with the files that differ — the readers would otherwise run
//! with data the pack does not hold.

use std::sync::OnceLock;

pub const MANIFEST: &str = include_str!("../../../../data/packs/oncology/pack.yaml");
pub const VOCABULARY: &str = include_str!("../../../../data/packs/oncology/vocabulary.yaml");
pub const CATALOG: &str = include_str!("../../../../data/packs/oncology/catalog.yaml");
pub const GUIDELINES: &str = include_str!("../../../../data/packs/oncology/guidelines.yaml");
pub const ONTOLOGY: &str = include_str!("../../../../data/packs/oncology/ontology.yaml");
pub const EXTRACT: &str = include_str!("../../../../data/packs/oncology/extract.yaml");
pub const COHERENCE: &str = include_str!("../../../../data/packs/oncology/coherence.yaml");
pub const STAGING: &str = include_str!("../../../../data/packs/oncology/staging.yaml");
pub const SINGLE_SHOT_PROMPT: &str = include_str!("../../../../data/packs/oncology/prompts/single_shot.md");
pub const AGENT_PROMPT: &str = include_str!("../../../../data/packs/oncology/prompts/agent.md");
pub const CUED_SINGLE_SHOT_PROMPT: &str =
    include_str!("../../../../data/packs/oncology/prompts/cued/single_shot.md");
pub const CUED_AGENT_PROMPT: &str = include_str!("../../../../data/packs/oncology/prompts/cued/agent.md");
pub const JUDGE_PAIR_PROMPT: &str = include_str!("../../../../data/packs/oncology/prompts/judge_pair.md");
pub const EXTRACT_PROMPT: &str = include_str!("../../../../data/packs/oncology/prompts/extract.md");
pub const RUBRIC: &str = include_str!("../../../../data/packs/oncology/rubric.yaml");

/// Every file of the folder, by its path in the pack.
pub const FILES: &[(&str, &str)] = &[
    ("pack.yaml", MANIFEST),
    ("vocabulary.yaml", VOCABULARY),
    ("catalog.yaml", CATALOG),
    ("guidelines.yaml", GUIDELINES),
    ("ontology.yaml", ONTOLOGY),
    ("extract.yaml", EXTRACT),
    ("coherence.yaml", COHERENCE),
    ("staging.yaml", STAGING),
    ("prompts/single_shot.md", SINGLE_SHOT_PROMPT),
    ("prompts/agent.md", AGENT_PROMPT),
    ("prompts/cued/single_shot.md", CUED_SINGLE_SHOT_PROMPT),
    ("prompts/cued/agent.md", CUED_AGENT_PROMPT),
    ("prompts/judge_pair.md", JUDGE_PAIR_PROMPT),
    ("prompts/extract.md", EXTRACT_PROMPT),
    ("rubric.yaml", RUBRIC),
];

/// The files a treatment pack holds of its own: the rest is what cfeval's
/// readers were compiled with.
const OWN: &[&str] = &["pack.yaml", "catalog.yaml", "rubric.yaml", "README.md"];

/// The files of a treatment pack (besides its own) that the compiled
/// readers need.
pub fn knowledge() -> impl Iterator<Item = &'static (&'static str, &'static str)> {
    FILES.iter().filter(|(path, _)| !OWN.contains(path))
}

/// The compiled pack's hash, as [`super::Pack::hash`] computes it for the
/// folder.
pub fn hash() -> &'static str {
    static HASH: OnceLock<String> = OnceLock::new();
    HASH.get_or_init(|| {
        let mut files: Vec<(&str, &[u8])> = FILES
            .iter()
            .map(|(path, text)| (*path, text.as_bytes()))
            .collect();
        files.sort_by(|a, b| a.0.cmp(b.0));
        super::hash_files(files)
    })
}

/// Whether a treatment pack's folder holds the compiled files: `Err` names
/// each one that is missing or differs.
pub fn check(dir: &std::path::Path) -> Result<(), String> {
    let mut differ = Vec::new();
    for (path, text) in knowledge() {
        match std::fs::read(dir.join(path)) {
            Ok(bytes) if bytes == text.as_bytes() => {}
            Ok(_) => differ.push(format!("{path} (differs)")),
            Err(_) => differ.push(format!("{path} (missing)")),
        }
    }
    if differ.is_empty() {
        return Ok(());
    }
    Err(format!(
        "{}: a treatment pack is read by cfeval's oncology readers, which were built with data/packs/oncology; these files are not the ones cfeval was built with: {}. Rebuild cfeval after editing data/packs/oncology, or copy those files from it (only catalog.yaml is a treatment pack's own)",
        dir.display(),
        differ.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn folder() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/packs/oncology")
    }

    #[test]
    fn every_file_of_the_folder_is_compiled_and_the_hashes_agree() {
        let mut on_disk = Vec::new();
        super::super::collect(&folder(), &folder(), &mut on_disk).unwrap();
        on_disk.sort();
        let mut listed: Vec<String> = FILES.iter().map(|(path, _)| path.to_string()).collect();
        listed.sort();
        assert_eq!(on_disk, listed, "FILES lists every file of data/packs/oncology");
        let pack = super::super::Pack::load(&folder()).unwrap();
        assert_eq!(pack.hash(), hash());
        assert!(check(&folder()).is_ok());
    }

    #[test]
    fn a_treatment_pack_with_other_knowledge_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in FILES {
            let target = dir.path().join(path);
            std::fs::create_dir_all(target.parent().unwrap()).unwrap();
            std::fs::write(target, text).unwrap();
        }
        // Its own catalog is its own.
        std::fs::write(dir.path().join("catalog.yaml"), "catalog: mine\n").unwrap();
        assert!(check(dir.path()).is_ok());
        std::fs::write(dir.path().join("guidelines.yaml"), "changed").unwrap();
        std::fs::remove_file(dir.path().join("prompts/agent.md")).unwrap();
        let error = check(dir.path()).unwrap_err();
        assert!(
            error.contains("guidelines.yaml (differs)") && error.contains("prompts/agent.md (missing)"),
            "{error}"
        );
    }
}
