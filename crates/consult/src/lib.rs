//! The Clinical Consultant of the EviDx harness (seed 004): the Diagnostician
//! asks `consult(query)` and gets the passages of a local corpus that match
//! it best, by BM25 over a real inverted index (tantivy).
//!
//! - A corpus is a list of [`Passage`]s: a folder of Markdown or text files
//!   ([`read_dir`]; a pack ships one in `corpus/`, a user can point at their
//!   own), plus whatever the caller adds (the harness adds the pack's
//!   ontology definitions).
//! - [`Corpus::build`] indexes them in memory, in one thread and without
//!   merges, so the same passages give the same index.
//! - [`Corpus::search`] reads the query with the index's own analyzer
//!   (words, lower case, English stop words removed, English stemming) and
//!   ORs its terms over the title (boosted) and the text: free text from a
//!   model is never parsed as query syntax, so no query is an error. Ties
//!   are broken by the passage's place in the corpus, so the same query
//!   returns the same passages in the same order every time.

use std::path::Path;

use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, BoostQuery, Occur, Query, TermQuery};
use tantivy::schema::{
    Field, INDEXED, IndexRecordOption, STORED, Schema, TextFieldIndexing, TextOptions, Value,
};
use tantivy::tokenizer::{
    Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, StopWordFilter, TextAnalyzer,
};
use tantivy::{Index, IndexReader, TantivyDocument, Term, doc};

/// What can go wrong reading or indexing a corpus.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: {error}")]
    Read { path: String, error: std::io::Error },
    #[error("{0}: the corpus folder holds no passage (no .md or .txt file with text)")]
    Empty(String),
    #[error("indexing the corpus: {0}")]
    Index(#[from] tantivy::TantivyError),
}

pub type Result<T> = std::result::Result<T, Error>;

/// One retrievable passage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Passage {
    /// Stable id: `<file>#<n>` (the n-th passage of the file, from 1), or
    /// the caller's own for passages it adds.
    pub id: String,
    /// The heading (Markdown `##`) or the file's name.
    pub title: String,
    pub text: String,
}

/// A passage found for a query, with its BM25 score.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit<'a> {
    pub passage: &'a Passage,
    pub score: f32,
}

/// How much a title match counts against a match in the text.
const TITLE_BOOST: f32 = 2.0;
/// The analyzer's name in the index.
const ANALYZER: &str = "cfeval_en";
/// Words longer than this are dropped (a base64 blob is not a word).
const LONGEST_WORD: usize = 40;

/// An indexed corpus.
pub struct Corpus {
    passages: Vec<Passage>,
    /// The index's analyzer, for queries (cloned per query: it streams
    /// tokens through `&mut`).
    analyzer: TextAnalyzer,
    reader: IndexReader,
    title: Field,
    text: Field,
    ord: Field,
    hash: String,
}

impl std::fmt::Debug for Corpus {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Corpus")
            .field("passages", &self.passages.len())
            .field("hash", &self.hash)
            .finish()
    }
}

fn analyzer() -> TextAnalyzer {
    let builder = TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(LONGEST_WORD))
        .filter(LowerCaser);
    match StopWordFilter::new(Language::English) {
        Some(stop_words) => builder
            .filter(stop_words)
            .filter(Stemmer::new(Language::English))
            .build(),
        None => builder.filter(Stemmer::new(Language::English)).build(),
    }
}

impl Corpus {
    /// Indexes `passages` (in memory; their order is kept as the tie order).
    pub fn build(passages: Vec<Passage>) -> Result<Corpus> {
        let mut schema = Schema::builder();
        let indexing = TextFieldIndexing::default()
            .set_tokenizer(ANALYZER)
            .set_index_option(IndexRecordOption::WithFreqs);
        let options = TextOptions::default().set_indexing_options(indexing);
        let title = schema.add_text_field("title", options.clone());
        let text = schema.add_text_field("text", options);
        let ord = schema.add_u64_field("ord", INDEXED | STORED);
        let index = Index::create_in_ram(schema.build());
        let analyzer = analyzer();
        index.tokenizers().register(ANALYZER, analyzer.clone());
        // One thread and no merges: the same passages give the same segments.
        let mut writer = index.writer_with_num_threads::<TantivyDocument>(1, 64 << 20)?;
        writer.set_merge_policy(Box::new(tantivy::indexer::NoMergePolicy));
        for (n, passage) in passages.iter().enumerate() {
            writer.add_document(doc!(
                title => passage.title.as_str(),
                text => passage.text.as_str(),
                ord => n as u64,
            ))?;
        }
        writer.commit()?;
        let reader = index.reader()?;
        Ok(Corpus {
            hash: passages_hash(&passages),
            passages,
            analyzer,
            reader,
            title,
            text,
            ord,
        })
    }

    /// Reads and indexes a folder of `.md` and `.txt` files.
    pub fn from_dir(dir: &Path) -> Result<Corpus> {
        let passages = read_dir(dir)?;
        if passages.is_empty() {
            return Err(Error::Empty(dir.display().to_string()));
        }
        Corpus::build(passages)
    }

    /// The passages, in corpus order.
    pub fn passages(&self) -> &[Passage] {
        &self.passages
    }

    /// A content hash of the passages (ids, titles and texts, in order): two
    /// corpora with the same hash answer every query alike.
    pub fn hash(&self) -> &str {
        &self.hash
    }

    /// The query's terms as the index reads them (stemmed, stop words out),
    /// each once, in order.
    pub fn terms(&self, query: &str) -> Vec<String> {
        let mut analyzer = self.analyzer.clone();
        let mut stream = analyzer.token_stream(query);
        let mut terms: Vec<String> = Vec::new();
        stream.process(&mut |token| {
            if !terms.contains(&token.text) {
                terms.push(token.text.clone());
            }
        });
        terms
    }

    /// The `limit` passages that match `query` best, best first (ties in
    /// corpus order). A query with no indexed word finds nothing.
    pub fn search(&self, query: &str, limit: usize) -> Result<Vec<Hit<'_>>> {
        let terms = self.terms(query);
        if terms.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        for term in &terms {
            for (field, boost) in [(self.title, TITLE_BOOST), (self.text, 1.0)] {
                let query = TermQuery::new(Term::from_field_text(field, term), IndexRecordOption::WithFreqs);
                clauses.push((Occur::Should, Box::new(BoostQuery::new(Box::new(query), boost))));
            }
        }
        let query = BooleanQuery::new(clauses);
        let searcher = self.reader.searcher();
        // Collect past the limit so that ties at the boundary are resolved
        // by corpus order, not by the collector.
        let wanted = limit.saturating_mul(2).max(limit + 8);
        let found = searcher.search(&query, &TopDocs::with_limit(wanted).order_by_score())?;
        let mut hits = Vec::with_capacity(found.len());
        for (score, address) in found {
            let stored: TantivyDocument = searcher.doc(address)?;
            let Some(n) = stored.get_first(self.ord).and_then(|value| value.as_u64()) else {
                continue;
            };
            if let Some(passage) = self.passages.get(n as usize) {
                hits.push((n, Hit { passage, score }));
            }
        }
        hits.sort_by(|(a_n, a), (b_n, b)| b.score.total_cmp(&a.score).then(a_n.cmp(b_n)));
        hits.truncate(limit);
        Ok(hits.into_iter().map(|(_, hit)| hit).collect())
    }
}

/// The content hash of passages (ids, titles and texts, in order), as
/// [`Corpus::hash`] has it.
pub fn passages_hash(passages: &[Passage]) -> String {
    let mut hasher = blake3::Hasher::new();
    for passage in passages {
        for part in [&passage.id, &passage.title, &passage.text] {
            hasher.update(&(part.len() as u64).to_le_bytes());
            hasher.update(part.as_bytes());
        }
    }
    hasher.finalize().to_hex()[..16].to_string()
}

/// The passages of every `.md` and `.txt` file under `dir` (recursively, in
/// path order). A Markdown file gives one passage per `##` heading (the text
/// before the first is the file's introduction; a file with no `##` is one
/// passage titled by its `#` heading or its name); a text file gives one
/// passage per paragraph (blank-line separated), titled by the file's name.
pub fn read_dir(dir: &Path) -> Result<Vec<Passage>> {
    let mut files = Vec::new();
    collect(dir, dir, &mut files)?;
    files.sort();
    let mut passages = Vec::new();
    for relative in files {
        let path = dir.join(&relative);
        let text = std::fs::read_to_string(&path).map_err(|error| Error::Read {
            path: path.display().to_string(),
            error,
        })?;
        let name = relative.replace('\\', "/");
        if name.to_lowercase().ends_with("readme.md") {
            continue;
        }
        let parts = if name.ends_with(".md") {
            markdown_passages(&text, &name)
        } else {
            text_passages(&text, &name)
        };
        passages.extend(parts.into_iter().enumerate().map(|(n, (title, text))| Passage {
            id: format!("{name}#{}", n + 1),
            title,
            text,
        }));
    }
    Ok(passages)
}

fn collect(root: &Path, dir: &Path, files: &mut Vec<String>) -> Result<()> {
    let entries = std::fs::read_dir(dir).map_err(|error| Error::Read {
        path: dir.display().to_string(),
        error,
    })?;
    for entry in entries {
        let entry = entry.map_err(|error| Error::Read {
            path: dir.display().to_string(),
            error,
        })?;
        let path = entry.path();
        if path.is_dir() {
            collect(root, &path, files)?;
        } else if matches!(path.extension().and_then(|ext| ext.to_str()), Some("md" | "txt"))
            && let Ok(relative) = path.strip_prefix(root)
        {
            files.push(relative.to_string_lossy().into_owned());
        }
    }
    Ok(())
}

fn file_title(name: &str) -> String {
    let stem = name.rsplit('/').next().unwrap_or(name);
    stem.rsplit_once('.')
        .map_or(stem, |(stem, _)| stem)
        .replace(['-', '_'], " ")
}

/// `##` sections of a Markdown file as (title, text).
fn markdown_passages(text: &str, name: &str) -> Vec<(String, String)> {
    let mut passages = Vec::new();
    let mut heading: Option<String> = None;
    let mut top = None;
    let mut body = String::new();
    let flush = |heading: &Option<String>, body: &mut String, passages: &mut Vec<(String, String)>| {
        let text = body.split_whitespace().collect::<Vec<_>>().join(" ");
        if let Some(title) = heading
            && !text.is_empty()
        {
            passages.push((title.clone(), text));
        }
        body.clear();
    };
    for line in text.lines() {
        let trimmed = line.trim_start();
        if let Some(title) = trimmed.strip_prefix("## ") {
            flush(&heading, &mut body, &mut passages);
            heading = Some(title.trim().trim_end_matches('#').trim().to_string());
        } else if let Some(title) = trimmed.strip_prefix("# ")
            && heading.is_none()
            && top.is_none()
        {
            top = Some(title.trim().to_string());
        } else {
            body.push_str(line);
            body.push('\n');
        }
    }
    if heading.is_some() {
        flush(&heading, &mut body, &mut passages);
    } else {
        let whole = body.split_whitespace().collect::<Vec<_>>().join(" ");
        if !whole.is_empty() {
            passages.push((top.unwrap_or_else(|| file_title(name)), whole));
        }
    }
    passages
}

/// Blank-line separated paragraphs of a text file as (title, text).
fn text_passages(text: &str, name: &str) -> Vec<(String, String)> {
    let title = file_title(name);
    text.split("\n\n")
        .map(|paragraph| paragraph.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|paragraph| !paragraph.is_empty())
        .map(|paragraph| (title.clone(), paragraph))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn passage(id: &str, title: &str, text: &str) -> Passage {
        Passage {
            id: id.into(),
            title: title.into(),
            text: text.into(),
        }
    }

    fn corpus() -> Corpus {
        Corpus::build(vec![
            passage(
                "a#1",
                "Myasthenia gravis",
                "Fatigable ptosis and diplopia; acetylcholine receptor antibodies confirm it.",
            ),
            passage(
                "a#2",
                "Hyperparathyroidism",
                "Hypercalcemia with a high PTH; sestamibi scan localises the adenoma.",
            ),
            passage(
                "a#3",
                "Malignancy-associated hypercalcemia",
                "Hypercalcemia with a suppressed PTH and a high PTHrP.",
            ),
            passage(
                "a#4",
                "Pancreatic cancer",
                "Painless jaundice and weight loss; CT of the pancreas.",
            ),
        ])
        .unwrap()
    }

    #[test]
    fn the_best_passage_comes_first_and_stemming_matches_word_forms() {
        let corpus = corpus();
        let hits = corpus.search("which antibodies confirm myasthenia?", 2).unwrap();
        assert_eq!(hits[0].passage.id, "a#1");
        // "jaundiced" and "jaundice" share a stem.
        let hits = corpus.search("jaundiced, losing weight", 1).unwrap();
        assert_eq!(hits[0].passage.id, "a#4");
    }

    #[test]
    fn a_title_match_outranks_the_same_word_in_the_text() {
        let corpus = Corpus::build(vec![
            passage("t#1", "Anemia", "Low haemoglobin."),
            passage("t#2", "Fatigue", "Anemia is one cause of fatigue among many."),
        ])
        .unwrap();
        let hits = corpus.search("anemia", 2).unwrap();
        assert_eq!(hits[0].passage.id, "t#1");
        assert!(hits[0].score > hits[1].score);
    }

    #[test]
    fn the_same_query_returns_the_same_passages_every_time_and_ties_follow_corpus_order() {
        let corpus = Corpus::build(
            (0..20)
                .map(|n| passage(&format!("x#{n}"), "Same", "identical text about sepsis"))
                .collect(),
        )
        .unwrap();
        let first: Vec<String> = corpus
            .search("sepsis", 5)
            .unwrap()
            .iter()
            .map(|hit| hit.passage.id.clone())
            .collect();
        assert_eq!(first, ["x#0", "x#1", "x#2", "x#3", "x#4"]);
        for _ in 0..10 {
            let again: Vec<String> = corpus
                .search("sepsis", 5)
                .unwrap()
                .iter()
                .map(|hit| hit.passage.id.clone())
                .collect();
            assert_eq!(again, first);
        }
        // Rebuilt from the same passages: the same hash and the same answer.
        let rebuilt = Corpus::build(corpus.passages().to_vec()).unwrap();
        assert_eq!(rebuilt.hash(), corpus.hash());
    }

    #[test]
    fn query_syntax_and_stop_words_are_plain_text_never_an_error() {
        let corpus = corpus();
        for query in [
            "",
            "the of and",
            "PTH:high AND (\"calcium",
            "-- * ? ~2 ^3 [a TO b]",
        ] {
            assert!(corpus.search(query, 3).is_ok(), "{query}");
        }
        assert!(corpus.search("the of and", 3).unwrap().is_empty());
        let hits = corpus.search("PTH:high AND (\"hypercalcemia", 3).unwrap();
        assert!(!hits.is_empty());
        assert!(
            hits.iter()
                .all(|hit| hit.passage.id != "a#1" && hit.passage.id != "a#4")
        );
    }

    #[test]
    fn markdown_files_split_at_second_level_headings_and_text_files_at_blank_lines() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("cardio.md"),
            "# Cardiology\nIntro text, not a passage.\n\n## Pericarditis\nPleuritic chest pain,\nrelieved sitting forward.\n\n## Aortic dissection\nTearing pain.\n",
        )
        .unwrap();
        std::fs::create_dir(dir.path().join("more")).unwrap();
        std::fs::write(
            dir.path().join("more/notes.txt"),
            "First paragraph.\n\nSecond\nparagraph.\n\n\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("single.md"), "# Gout\nUrate crystals.\n").unwrap();
        std::fs::write(
            dir.path().join("README.md"),
            "## Not a passage\nAbout the folder.\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("image.png"), "not text").unwrap();
        let passages = read_dir(dir.path()).unwrap();
        let got: Vec<(&str, &str, &str)> = passages
            .iter()
            .map(|p| (p.id.as_str(), p.title.as_str(), p.text.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (
                    "cardio.md#1",
                    "Pericarditis",
                    "Pleuritic chest pain, relieved sitting forward."
                ),
                ("cardio.md#2", "Aortic dissection", "Tearing pain."),
                ("more/notes.txt#1", "notes", "First paragraph."),
                ("more/notes.txt#2", "notes", "Second paragraph."),
                ("single.md#1", "Gout", "Urate crystals."),
            ]
        );
    }

    #[test]
    fn an_empty_or_missing_folder_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let error = Corpus::from_dir(dir.path()).unwrap_err().to_string();
        assert!(error.contains("holds no passage"), "{error}");
        let error = Corpus::from_dir(&dir.path().join("nope"))
            .unwrap_err()
            .to_string();
        assert!(error.contains("nope"), "{error}");
    }
}
