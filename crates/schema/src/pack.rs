//! Specialty packs: a folder of data that tells every stage what a specialty
//! needs, so that a new specialty is a new folder, not a Rust change.
//!
//! ```text
//! data/packs/<name>/
//!   pack.yaml         name, task (treatment | diagnosis), version, description
//!   vocabulary.yaml   families and fact kinds (see [`crate::vocab`])
//!   catalog.yaml      the pre-registered interventions
//!   …                 what the task reads: for diagnosis the ontology
//!                     (ontology.yaml, tests.yaml, and optionally
//!                     translations.yaml: its names in other languages,
//!                     and links.yaml: complications, manifestations,
//!                     causes and grades of its diagnoses),
//!                     the answer cues
//!                     (answer.yaml), the chart reading (facts.yaml) and the
//!                     prompts (prompts/single_shot.md for the subject,
//!                     prompts/judge_pair.md for the model judges, and
//!                     optionally prompts/harness.md and
//!                     prompts/harness_opening.md for mode `harness`: the
//!                     Diagnostician's instructions and first message); cases
//!                     it ships
//! ```
//!
//! A pack's hash is the BLAKE3 of every file in the folder (relative path
//! and bytes, in path order), so a change to any of them is a different
//! pack; it joins the catalog's hash in the pre-registration lock.
//!
//! The treatment task's readers are compiled with the oncology pack
//! ([`oncology`]): a treatment pack must hold those files unchanged (its
//! catalog is its own), and is refused otherwise, naming the files.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::vocab::{TaskKind, Vocabulary};

pub mod oncology;

/// The manifest file that makes a folder a pack.
pub const MANIFEST: &str = "pack.yaml";

/// A loaded, checked pack.
#[derive(Debug, Clone)]
pub struct Pack {
    pub name: String,
    pub version: u32,
    pub task: TaskKind,
    pub description: Option<String>,
    /// The pack's folder.
    pub dir: PathBuf,
    pub vocabulary: Vocabulary,
    hash: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawManifest {
    pack: String,
    version: u32,
    task: TaskKind,
    #[serde(default)]
    description: Option<String>,
}

/// The files a pack of each task must hold.
fn required(task: TaskKind) -> &'static [&'static str] {
    match task {
        TaskKind::Treatment => &[
            "vocabulary.yaml",
            "catalog.yaml",
            "guidelines.yaml",
            "ontology.yaml",
        ],
        TaskKind::Diagnosis => &[
            "vocabulary.yaml",
            "catalog.yaml",
            "ontology.yaml",
            "tests.yaml",
            "answer.yaml",
            "facts.yaml",
            "prompts/single_shot.md",
            "prompts/judge_pair.md",
        ],
    }
}

impl Pack {
    /// Loads the pack in `dir`: its manifest, its vocabulary, and the files
    /// its task needs, with every problem named by file (and line where the
    /// YAML says so).
    pub fn load(dir: &Path) -> Result<Pack, String> {
        let manifest_path = dir.join(MANIFEST);
        let text = std::fs::read_to_string(&manifest_path).map_err(|error| {
            format!(
                "{}: cannot read the pack manifest: {error}",
                manifest_path.display()
            )
        })?;
        let raw: RawManifest =
            serde_norway::from_str(&text).map_err(|error| format!("{}: {error}", manifest_path.display()))?;
        if raw.version == 0 {
            return Err(format!("{}: version must be 1 or more", manifest_path.display()));
        }
        if raw.pack.trim().is_empty() || raw.pack.contains(['/', '\\', ' ']) {
            return Err(format!(
                "{}: pack name `{}` must be one word (letters, digits, `-`, `_`)",
                manifest_path.display(),
                raw.pack
            ));
        }
        let missing: Vec<&str> = required(raw.task)
            .iter()
            .copied()
            .filter(|file| !dir.join(file).is_file())
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "{}: a {} pack needs {} (missing)",
                dir.display(),
                task_name(raw.task),
                missing.join(", ")
            ));
        }
        if raw.task == TaskKind::Treatment {
            oncology::check(dir)?;
        }
        let vocabulary_path = dir.join("vocabulary.yaml");
        let vocabulary_text = std::fs::read_to_string(&vocabulary_path)
            .map_err(|error| format!("{}: {error}", vocabulary_path.display()))?;
        let vocabulary = Vocabulary::parse(&vocabulary_text, &vocabulary_path.display().to_string())?;
        if vocabulary.pack != raw.pack {
            return Err(format!(
                "{}: names pack `{}`, but {MANIFEST} names `{}`",
                vocabulary_path.display(),
                vocabulary.pack,
                raw.pack
            ));
        }
        if vocabulary.task != raw.task {
            return Err(format!(
                "{}: task `{}` differs from {MANIFEST}'s `{}`",
                vocabulary_path.display(),
                task_name(vocabulary.task),
                task_name(raw.task)
            ));
        }
        let hash = hash_dir(dir)?;
        Ok(Pack {
            name: raw.pack,
            version: raw.version,
            task: raw.task,
            description: raw.description,
            dir: dir.to_path_buf(),
            vocabulary,
            hash,
        })
    }

    /// The pack a file belongs to: the nearest folder above it (the file's
    /// own folder first, at most three levels) that holds a `pack.yaml`.
    pub fn containing(file: &Path) -> Option<PathBuf> {
        let mut dir = file.parent();
        for _ in 0..3 {
            let current = dir?;
            let current = if current.as_os_str().is_empty() {
                Path::new(".")
            } else {
                current
            };
            if current.join(MANIFEST).is_file() {
                return Some(current.to_path_buf());
            }
            dir = current.parent();
        }
        None
    }

    /// BLAKE3 of every file of the pack.
    pub fn hash(&self) -> &str {
        &self.hash
    }

    /// A file of the pack.
    pub fn file(&self, relative: &str) -> PathBuf {
        self.dir.join(relative)
    }

    /// The pack's intervention catalog.
    pub fn catalog_path(&self) -> PathBuf {
        self.file("catalog.yaml")
    }

    /// Reads a text file of the pack, naming it on failure.
    pub fn read(&self, relative: &str) -> Result<String, String> {
        let path = self.file(relative);
        std::fs::read_to_string(&path).map_err(|error| format!("{}: {error}", path.display()))
    }

    /// The packs in a folder of packs (each sub-folder with a `pack.yaml`),
    /// by name; a folder that fails to load is returned with its error.
    pub fn list(root: &Path) -> Result<Vec<Result<Pack, String>>, String> {
        let entries = std::fs::read_dir(root)
            .map_err(|error| format!("{}: cannot list packs: {error}", root.display()))?;
        let mut dirs: Vec<PathBuf> = entries
            .filter_map(|entry| entry.ok().map(|entry| entry.path()))
            .filter(|path| path.join(MANIFEST).is_file())
            .collect();
        dirs.sort();
        Ok(dirs.iter().map(|dir| Pack::load(dir)).collect())
    }
}

/// The file in a run directory that names the run's pack.
pub const RUN_RECORD: &str = "pack.json";

#[derive(serde::Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RunRecord {
    pack: String,
    task: String,
    version: u32,
    dir: PathBuf,
    hash: String,
}

impl Pack {
    /// Records the pack in `run_dir` (`pack.json`), so that every later
    /// stage takes it from the run. A run already recorded with another
    /// pack (another name or content) is refused: one run, one pack.
    pub fn record(&self, run_dir: &Path) -> Result<(), String> {
        if let Some(existing) = read_record(run_dir)? {
            if existing.hash == self.hash && existing.pack == self.name {
                return Ok(());
            }
            return Err(format!(
                "{}: the run was made with pack `{}` ({}), not `{}` ({}); use a new run directory",
                run_dir.join(RUN_RECORD).display(),
                existing.pack,
                short(&existing.hash),
                self.name,
                short(&self.hash)
            ));
        }
        let dir = std::fs::canonicalize(&self.dir).unwrap_or_else(|_| self.dir.clone());
        let record = RunRecord {
            pack: self.name.clone(),
            task: task_name(self.task).to_string(),
            version: self.version,
            dir,
            hash: self.hash.clone(),
        };
        let text = serde_json::to_string_pretty(&record).map_err(|error| error.to_string())?;
        std::fs::create_dir_all(run_dir).map_err(|error| format!("{}: {error}", run_dir.display()))?;
        crate::write_atomic(&run_dir.join(RUN_RECORD), text.as_bytes())
            .map_err(|error| format!("{}: {error}", run_dir.join(RUN_RECORD).display()))
    }

    /// The pack a run was made with (none: the built-in oncology), loaded
    /// again from its folder and checked to be the same content.
    pub fn of_run(run_dir: &Path) -> Result<Option<Pack>, String> {
        let Some(record) = read_record(run_dir)? else {
            return Ok(None);
        };
        let pack = Pack::load(&record.dir).map_err(|error| {
            format!(
                "{}: the run's pack `{}` does not load from {}: {error}",
                run_dir.join(RUN_RECORD).display(),
                record.pack,
                record.dir.display()
            )
        })?;
        if pack.hash != record.hash {
            return Err(format!(
                "{}: the pack `{}` in {} changed since the run was made (now {}, then {}); results of two packs never mix — use a new run directory",
                run_dir.join(RUN_RECORD).display(),
                record.pack,
                record.dir.display(),
                short(&pack.hash),
                short(&record.hash)
            ));
        }
        Ok(Some(pack))
    }
}

fn read_record(run_dir: &Path) -> Result<Option<RunRecord>, String> {
    let path = run_dir.join(RUN_RECORD);
    match std::fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str(&text)
            .map(Some)
            .map_err(|error| format!("{}: {error}", path.display())),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(format!("{}: {error}", path.display())),
    }
}

fn short(hash: &str) -> &str {
    &hash[..hash.len().min(12)]
}

/// The task's name as pack files write it.
pub fn task_name(task: TaskKind) -> &'static str {
    match task {
        TaskKind::Treatment => "treatment",
        TaskKind::Diagnosis => "diagnosis",
    }
}

/// BLAKE3 over every regular file below `dir` (relative path, length and
/// bytes, in path order).
fn hash_dir(dir: &Path) -> Result<String, String> {
    let mut files = Vec::new();
    collect(dir, dir, &mut files)?;
    files.sort();
    let mut contents = Vec::with_capacity(files.len());
    for relative in files {
        let path = dir.join(&relative);
        let bytes = std::fs::read(&path).map_err(|error| format!("{}: {error}", path.display()))?;
        contents.push((relative.replace('\\', "/"), bytes));
    }
    Ok(hash_files(
        contents
            .iter()
            .map(|(name, bytes)| (name.as_str(), bytes.as_slice()))
            .collect(),
    ))
}

/// BLAKE3 over files given as (path in the pack with `/`, bytes), in path
/// order.
fn hash_files(files: Vec<(&str, &[u8])>) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(b"cfeval-pack\0");
    for (name, bytes) in files {
        hasher.update(&(name.len() as u64).to_le_bytes());
        hasher.update(name.as_bytes());
        hasher.update(&(bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    }
    hasher.finalize().to_hex().to_string()
}

fn collect(root: &Path, dir: &Path, out: &mut Vec<String>) -> Result<(), String> {
    let entries = std::fs::read_dir(dir).map_err(|error| format!("{}: {error}", dir.display()))?;
    for entry in entries {
        let entry = entry.map_err(|error| format!("{}: {error}", dir.display()))?;
        let path = entry.path();
        let kind = entry
            .file_type()
            .map_err(|error| format!("{}: {error}", path.display()))?;
        if kind.is_dir() {
            collect(root, &path, out)?;
        } else if kind.is_file() {
            let relative = path.strip_prefix(root).unwrap_or(&path);
            out.push(relative.to_string_lossy().into_owned());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, file: &str, text: &str) {
        let path = dir.join(file);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(path, text).unwrap();
    }

    /// A treatment pack: the compiled oncology files, its own catalog.
    fn tiny(dir: &Path) {
        for (path, text) in oncology::FILES {
            write(dir, path, text);
        }
        write(dir, MANIFEST, "pack: oncology\nversion: 1\ntask: treatment\n");
        write(dir, "catalog.yaml", "catalog: tiny\n");
    }

    #[test]
    fn loads_a_pack_and_hashes_every_file() {
        let dir = tempfile::tempdir().unwrap();
        tiny(dir.path());
        let pack = Pack::load(dir.path()).unwrap();
        assert_eq!(pack.name, "oncology");
        assert_eq!(pack.task, TaskKind::Treatment);
        let before = pack.hash().to_string();
        write(dir.path(), "notes/extra.md", "x");
        assert_ne!(Pack::load(dir.path()).unwrap().hash(), before);
    }

    #[test]
    fn names_missing_files_and_mismatches() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), MANIFEST, "pack: tiny\nversion: 1\ntask: diagnosis\n");
        let error = Pack::load(dir.path()).unwrap_err();
        assert!(
            error.contains("needs vocabulary.yaml, catalog.yaml, ontology.yaml"),
            "{error}"
        );
        tiny(dir.path());
        write(dir.path(), MANIFEST, "pack: other\nversion: 1\ntask: treatment\n");
        let error = Pack::load(dir.path()).unwrap_err();
        assert!(error.contains("names pack `oncology`"), "{error}");
        write(
            dir.path(),
            MANIFEST,
            "pack: oncology\nversion: 1\ntask: treatment\ncolour: red\n",
        );
        let error = Pack::load(dir.path()).unwrap_err();
        assert!(error.contains("pack.yaml") && error.contains("colour"), "{error}");
    }

    #[test]
    fn finds_the_pack_a_file_is_in() {
        let dir = tempfile::tempdir().unwrap();
        tiny(dir.path());
        write(dir.path(), "prompts/a.md", "x");
        assert_eq!(
            Pack::containing(&dir.path().join("catalog.yaml")).unwrap(),
            dir.path()
        );
        assert_eq!(
            Pack::containing(&dir.path().join("prompts/a.md")).unwrap(),
            dir.path()
        );
        let other = tempfile::tempdir().unwrap();
        write(other.path(), "catalog.yaml", "x");
        assert!(Pack::containing(&other.path().join("catalog.yaml")).is_none());
    }

    #[test]
    fn a_run_keeps_its_pack_and_refuses_another() {
        let dir = tempfile::tempdir().unwrap();
        let pack_dir = dir.path().join("tiny");
        tiny(&pack_dir);
        let run = dir.path().join("run");
        assert!(Pack::of_run(&run).unwrap().is_none());
        let pack = Pack::load(&pack_dir).unwrap();
        pack.record(&run).unwrap();
        pack.record(&run).unwrap();
        assert_eq!(Pack::of_run(&run).unwrap().unwrap().hash(), pack.hash());
        write(&pack_dir, "catalog.yaml", "catalog: changed\n");
        let error = Pack::of_run(&run).unwrap_err();
        assert!(error.contains("changed since the run was made"), "{error}");
        let error = Pack::load(&pack_dir).unwrap().record(&run).unwrap_err();
        assert!(error.contains("use a new run directory"), "{error}");
    }

    #[test]
    fn the_shipped_packs_load() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/packs");
        for pack in Pack::list(&root).unwrap() {
            let pack = pack.unwrap();
            assert!(!pack.hash().is_empty());
        }
    }
}
