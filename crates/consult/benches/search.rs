//! The Consultant's query time over a corpus of 10,000 passages (issue 18's
//! goal: under 10 ms a query), against a peer in the same run: a linear
//! scan that scores every passage by the query terms it holds (what a
//! hand-rolled retriever without an index does).
//!
//! `cargo bench -p cfeval-consult --bench search`
//!
//! The passages are the general-medicine pack's corpus, with its sentences
//! recombined (a fixed seed) until there are 10,000 of them, so the
//! vocabulary and lengths are clinical writing's.

use std::path::Path;
use std::time::Instant;

use cfeval_consult::{Corpus, Passage, read_dir};

const PASSAGES: usize = 10_000;
const QUERIES: &[&str] = &[
    "causes of hypercalcemia with low PTH",
    "test that confirms myasthenia gravis",
    "painless jaundice weight loss",
    "tense bullae linear IgG basement membrane",
    "anion gap metabolic acidosis causes",
    "young woman palpitations weight loss tremor",
    "crushing chest pain ST elevation",
    "fever neck stiffness photophobia lumbar puncture",
    "microcytic anemia ferritin",
    "hematuria hearing loss family history",
    "night sweats hilar lymphadenopathy",
    "postmenopausal bleeding",
];

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/packs/general-medicine/corpus");
    let base = match read_dir(&dir) {
        Ok(passages) if !passages.is_empty() => passages,
        Ok(_) => {
            eprintln!("{}: no passages", dir.display());
            std::process::exit(1);
        }
        Err(error) => {
            eprintln!("{error}");
            std::process::exit(1);
        }
    };
    let sentences: Vec<&str> = base
        .iter()
        .flat_map(|passage| passage.text.split(". "))
        .filter(|sentence| !sentence.trim().is_empty())
        .collect();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move |bound: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % bound as u64) as usize
    };
    let mut passages = base.clone();
    while passages.len() < PASSAGES {
        let title = base[next(base.len())].title.clone();
        let text: Vec<&str> = (0..5).map(|_| sentences[next(sentences.len())]).collect();
        passages.push(Passage {
            id: format!("synthetic#{}", passages.len()),
            title,
            text: text.join(". "),
        });
    }
    let built = Instant::now();
    let corpus = match Corpus::build(passages) {
        Ok(corpus) => corpus,
        Err(error) => {
            eprintln!("{error}");
            std::process::exit(1);
        }
    };
    let build_ms = built.elapsed().as_secs_f64() * 1e3;
    // The peer: every passage's terms, scanned for every query.
    let tokenized: Vec<Vec<String>> = corpus
        .passages()
        .iter()
        .map(|passage| corpus.terms(&format!("{} {}", passage.title, passage.text)))
        .collect();
    let rounds = 20;
    let mut indexed = Vec::new();
    let mut scanned = Vec::new();
    for _ in 0..rounds {
        for query in QUERIES {
            let start = Instant::now();
            let hits = corpus.search(query, 3).map(|hits| hits.len()).unwrap_or(0);
            indexed.push(start.elapsed().as_secs_f64() * 1e3);
            std::hint::black_box(hits);
            let start = Instant::now();
            let terms = corpus.terms(query);
            let mut best: Vec<(usize, usize)> = tokenized
                .iter()
                .enumerate()
                .map(|(at, words)| (words.iter().filter(|word| terms.contains(word)).count(), at))
                .collect();
            best.sort_unstable_by(|a, b| b.cmp(a));
            best.truncate(3);
            scanned.push(start.elapsed().as_secs_f64() * 1e3);
            std::hint::black_box(best);
        }
    }
    let percentile = |times: &mut Vec<f64>, p: f64| {
        times.sort_by(f64::total_cmp);
        times[((times.len() as f64 - 1.0) * p).round() as usize]
    };
    let (i50, i99) = (percentile(&mut indexed, 0.5), percentile(&mut indexed, 0.99));
    let (s50, s99) = (percentile(&mut scanned, 0.5), percentile(&mut scanned, 0.99));
    println!(
        "passages {}  index built in {build_ms:.0} ms",
        corpus.passages().len()
    );
    println!("tantivy BM25   p50 {i50:.3} ms  p99 {i99:.3} ms");
    println!("linear scan    p50 {s50:.3} ms  p99 {s99:.3} ms");
    println!("scan / index   p50 {:.1}x", s50 / i50);
}
