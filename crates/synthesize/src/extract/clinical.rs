//! Cancer type, stage, metastatic status, surgery, prior lines, ECOG,
//! comorbidities and negated/uncertain findings.

use super::Found;
use super::text::Tokens;

type Phrase = &'static [&'static str];

const CANCERS: &[(Phrase, &str)] = &[
    (&["non", "-", "small", "cell"], "nsclc"),
    (&["non", "small", "cell"], "nsclc"),
    (&["nonsmall", "cell"], "nsclc"),
    (&["nsclc"], "nsclc"),
    (&["lung", "adenocarcinoma"], "nsclc"),
    (&["adenocarcinoma", "of", "the", "lung"], "nsclc"),
    (&["squamous", "cell", "carcinoma", "of", "the", "lung"], "nsclc"),
    (&["lung", "squamous"], "nsclc"),
    (&["lung", "cancer"], "nsclc"),
    (&["lung", "carcinoma"], "nsclc"),
    (&["pulmonary", "adenocarcinoma"], "nsclc"),
    (&["small", "cell", "lung"], "sclc"),
    (&["sclc"], "sclc"),
    (&["breast", "cancer"], "breast"),
    (&["breast", "carcinoma"], "breast"),
    (&["breast", "adenocarcinoma"], "breast"),
    (&["breast", "idc"], "breast"),
    (&["breast", "ilc"], "breast"),
    (&["invasive", "ductal", "carcinoma"], "breast"),
    (&["invasive", "lobular", "carcinoma"], "breast"),
    (&["ductal", "carcinoma"], "breast"),
    (&["lobular", "carcinoma"], "breast"),
    (&["idc"], "breast"),
    (&["ilc"], "breast"),
    (&["mammary", "carcinoma"], "breast"),
    (&["of", "the", "left", "breast"], "breast"),
    (&["of", "the", "right", "breast"], "breast"),
    (&["of", "the", "breast"], "breast"),
    (&["left", "breast"], "breast"),
    (&["right", "breast"], "breast"),
    (&["colorectal"], "colorectal"),
    (&["crc"], "colorectal"),
    (&["colon", "cancer"], "colorectal"),
    (&["colon", "adenocarcinoma"], "colorectal"),
    (&["colonic", "adenocarcinoma"], "colorectal"),
    (&["rectal", "cancer"], "colorectal"),
    (&["rectal", "adenocarcinoma"], "colorectal"),
    (&["adenocarcinoma", "of", "the", "rectum"], "colorectal"),
    (&["sigmoid", "colon"], "colorectal"),
    (&["ascending", "colon"], "colorectal"),
    (&["descending", "colon"], "colorectal"),
    (&["transverse", "colon"], "colorectal"),
    (&["sigmoid", "adenocarcinoma"], "colorectal"),
    (&["sigmoid", "cancer"], "colorectal"),
    (&["rectosigmoid"], "colorectal"),
    (&["cecal"], "colorectal"),
    (&["caecal"], "colorectal"),
    (&["pancreatic", "cancer"], "pancreatic"),
    (&["pancreatic", "adenocarcinoma"], "pancreatic"),
    (&["pancreatic", "ductal"], "pancreatic"),
    (&["pancreatic", "head"], "pancreatic"),
    (&["pancreatic", "tail"], "pancreatic"),
    (&["pancreatic", "body"], "pancreatic"),
    (&["pdac"], "pancreatic"),
    (&["adenocarcinoma", "of", "the", "pancreas"], "pancreatic"),
    (&["carcinoma", "of", "the", "pancreas"], "pancreatic"),
    (&["pancreas", "cancer"], "pancreatic"),
    (&["gastric", "cancer"], "gastric"),
    (&["gastric", "adenocarcinoma"], "gastric"),
    (&["gastric", "carcinoma"], "gastric"),
    (&["adenocarcinoma", "of", "the", "stomach"], "gastric"),
    (&["carcinoma", "of", "the", "stomach"], "gastric"),
    (&["stomach", "cancer"], "gastric"),
    (&["gej"], "gastric"),
    (&["gastroesophageal", "junction"], "gastric"),
    (&["gastro", "-", "oesophageal", "junction"], "gastric"),
    (&["gastro", "-", "esophageal", "junction"], "gastric"),
    (&["esophageal", "cancer"], "esophageal"),
    (&["esophageal", "adenocarcinoma"], "esophageal"),
    (&["oesophageal", "cancer"], "esophageal"),
    (&["melanoma"], "melanoma"),
    (&["prostate", "cancer"], "prostate"),
    (&["prostate", "adenocarcinoma"], "prostate"),
    (&["ovarian", "cancer"], "ovarian"),
    (&["ovarian", "carcinoma"], "ovarian"),
];

const PROCEDURES: &[Phrase] = &[
    &["partial", "mastectomy"],
    &["mastectomy"],
    &["lumpectomy"],
    &["breast", "-", "conserving", "surgery"],
    &["lobectomy"],
    &["pneumonectomy"],
    &["segmentectomy"],
    &["wedge", "resection"],
    &["pancreaticoduodenectomy"],
    &["whipple"],
    &["distal", "pancreatectomy"],
    &["pancreatectomy"],
    &["total", "gastrectomy"],
    &["subtotal", "gastrectomy"],
    &["partial", "gastrectomy"],
    &["gastrectomy"],
    &["hemicolectomy"],
    &["colectomy"],
    &["sigmoidectomy"],
    &["low", "anterior", "resection"],
    &["abdominoperineal", "resection"],
    &["wide", "local", "excision"],
    &["wide", "excision"],
    &["esophagectomy"],
    &["oesophagectomy"],
    &["prostatectomy"],
    &["hysterectomy"],
];

const UNRESECTED: &[Phrase] = &[
    &["unresectable"],
    &["irresectable"],
    &["non", "-", "resectable"],
    &["nonresectable"],
    &["not", "resectable"],
    &["inoperable"],
    &["not", "operable"],
    &["not", "resected"],
    &["not", "a", "surgical", "candidate"],
    &["not", "a", "candidate", "for", "surgery"],
    &["not", "a", "candidate", "for", "resection"],
    &["not", "amenable", "to", "resection"],
    &["not", "amenable", "to", "surgery"],
    &["not", "surgically", "resectable"],
];

const SURGERY_WORDS: &[&str] = &[
    "surgery",
    "surgical",
    "resection",
    "operation",
    "operative",
    "operated",
    "excision",
];

const NOT_DONE_CUES: &[&str] = &[
    "declined",
    "refused",
    "deferred",
    "awaiting",
    "postponed",
    "declining",
];
const NEGATIONS: &[&str] = &["no", "not", "never", "without", "nor"];
const PLANNED_CUES: &[&str] = &[
    "planned",
    "plan",
    "scheduled",
    "candidate",
    "consider",
    "considered",
    "referred",
];
const RESECTED_WORDS: &[&str] = &["resected", "excised", "resection"];

const DRUGS: &[Phrase] = &[
    &["trastuzumab", "deruxtecan"],
    &["trastuzumab", "emtansine"],
    &["nab", "-", "paclitaxel"],
    &["ac", "-", "t"],
    &["t", "-", "dxd"],
    &["t", "-", "dm1"],
    &["nal", "-", "iri"],
    &["5", "-", "fu"],
    &["pembrolizumab"],
    &["nivolumab"],
    &["ipilimumab"],
    &["atezolizumab"],
    &["durvalumab"],
    &["relatlimab"],
    &["cemiplimab"],
    &["tislelizumab"],
    &["osimertinib"],
    &["erlotinib"],
    &["gefitinib"],
    &["afatinib"],
    &["alectinib"],
    &["lorlatinib"],
    &["crizotinib"],
    &["brigatinib"],
    &["sotorasib"],
    &["adagrasib"],
    &["amivantamab"],
    &["trastuzumab"],
    &["pertuzumab"],
    &["tchp"],
    &["letrozole"],
    &["anastrozole"],
    &["exemestane"],
    &["tamoxifen"],
    &["fulvestrant"],
    &["palbociclib"],
    &["ribociclib"],
    &["abemaciclib"],
    &["sacituzumab"],
    &["olaparib"],
    &["dabrafenib"],
    &["trametinib"],
    &["encorafenib"],
    &["binimetinib"],
    &["vemurafenib"],
    &["cobimetinib"],
    &["folfoxiri"],
    &["folfirinox"],
    &["mfolfirinox"],
    &["folfox"],
    &["mfolfox6"],
    &["folfiri"],
    &["capox"],
    &["xelox"],
    &["flot"],
    &["carboplatin"],
    &["cisplatin"],
    &["oxaliplatin"],
    &["pemetrexed"],
    &["paclitaxel"],
    &["docetaxel"],
    &["gemcitabine"],
    &["capecitabine"],
    &["irinotecan"],
    &["fluorouracil"],
    &["doxorubicin"],
    &["cyclophosphamide"],
    &["eribulin"],
    &["bevacizumab"],
    &["ramucirumab"],
    &["cetuximab"],
    &["panitumumab"],
    &["regorafenib"],
    &["everolimus"],
    &["lifileucel"],
    &["alpelisib"],
    &["temozolomide"],
];

const PROGRESSION: &[&str] = &[
    "progression",
    "progressed",
    "progressing",
    "progressive",
    "refractory",
    "failed",
    "failure",
    "relapse",
    "relapsed",
    "recurrence",
    "recurred",
];
const RESPONSE: &[&str] = &[
    "response",
    "responded",
    "responding",
    "remission",
    "regression",
    "shrinkage",
];
const ONGOING: &[&str] = &[
    "ongoing",
    "currently",
    "continues",
    "continuing",
    "receiving",
    "tolerating",
    "maintenance",
    "stable",
];
const FUTURE: &[&str] = &[
    "planned",
    "plan",
    "will",
    "recommend",
    "recommended",
    "consider",
    "proposed",
    "candidate",
];

const COMORBIDITIES: &[(Phrase, &str)] = &[
    (&["type", "2", "diabetes"], "diabetes"),
    (&["type", "1", "diabetes"], "diabetes"),
    (&["diabetes"], "diabetes"),
    (&["t2dm"], "diabetes"),
    (&["hypertension"], "hypertension"),
    (&["htn"], "hypertension"),
    (&["copd"], "copd"),
    (&["chronic", "obstructive", "pulmonary", "disease"], "copd"),
    (&["chronic", "kidney", "disease"], "chronic kidney disease"),
    (&["ckd"], "chronic kidney disease"),
    (&["atrial", "fibrillation"], "atrial fibrillation"),
    (&["hypothyroidism"], "hypothyroidism"),
    (&["coronary", "artery", "disease"], "coronary artery disease"),
    (&["heart", "failure"], "heart failure"),
    (&["osteoarthritis"], "osteoarthritis"),
    (&["depression"], "depression"),
    (&["obesity"], "obesity"),
    (&["asthma"], "asthma"),
    (&["hyperlipidemia"], "hyperlipidemia"),
    (&["hyperlipidaemia"], "hyperlipidemia"),
    (&["rheumatoid", "arthritis"], "rheumatoid arthritis"),
    (&["cirrhosis"], "cirrhosis"),
];

const FINDINGS: &[(Phrase, &str)] = &[
    (&["weight", "loss"], "weight loss"),
    (&["night", "sweats"], "night sweats"),
    (&["nodal", "involvement"], "nodal involvement"),
    (&["lymph", "node", "involvement"], "nodal involvement"),
    (&["lymphadenopathy"], "lymphadenopathy"),
    (&["jaundice"], "jaundice"),
    (&["hemoptysis"], "hemoptysis"),
    (&["haemoptysis"], "hemoptysis"),
    (&["dysphagia"], "dysphagia"),
    (&["bone", "pain"], "bone pain"),
    (&["abdominal", "pain"], "abdominal pain"),
    (&["chest", "pain"], "chest pain"),
    (&["shortness", "of", "breath"], "dyspnea"),
    (&["dyspnea"], "dyspnea"),
    (&["dyspnoea"], "dyspnea"),
    (&["fever"], "fever"),
    (&["fevers"], "fever"),
    (&["ascites"], "ascites"),
    (&["pleural", "effusion"], "pleural effusion"),
    (&["recent", "infections"], "infection"),
    (&["palpitations"], "palpitations"),
];

const FINDING_NEGATIONS: &[Phrase] = &[
    &["no"],
    &["denies"],
    &["denied"],
    &["deny"],
    &["without"],
    &["negative", "for"],
    &["absence", "of"],
    &["free", "of"],
    &["nor"],
];
const UNCERTAIN_CUES: &[Phrase] = &[
    &["possible"],
    &["possibly"],
    &["questionable"],
    &["suspicious"],
    &["suspected"],
    &["probable"],
    &["equivocal"],
    &["indeterminate"],
    &["cannot", "be", "excluded"],
    &["cannot", "exclude"],
    &["may", "represent"],
];

const ORGANS: &[&str] = &[
    "brain",
    "liver",
    "hepatic",
    "bone",
    "osseous",
    "lung",
    "pulmonary",
    "adrenal",
    "peritoneal",
    "nodal",
];

fn phrase_at(tokens: &Tokens<'_>, index: usize, phrases: &[Phrase]) -> Option<usize> {
    let word = tokens.lower(index);
    phrases
        .iter()
        .find(|phrase| phrase[0] == word && tokens.matches(index, phrase))
        .map(|phrase| phrase.len())
}

fn labelled_at<'p>(
    tokens: &Tokens<'_>,
    index: usize,
    phrases: &'p [(Phrase, &'p str)],
) -> Option<(usize, &'p str)> {
    let word = tokens.lower(index);
    phrases
        .iter()
        .find(|(phrase, _)| phrase[0] == word && tokens.matches(index, phrase))
        .map(|(phrase, label)| (phrase.len(), *label))
}

fn has_word(tokens: &Tokens<'_>, clause: (usize, usize), words: &[&str]) -> Option<usize> {
    (clause.0..clause.1).find(|&index| words.contains(&tokens.lower(index)))
}

#[allow(clippy::too_many_arguments)]
fn push(
    out: &mut Vec<Found>,
    tokens: &Tokens<'_>,
    kind: &'static str,
    name: &str,
    value: &str,
    polarity: &'static str,
    certainty: &'static str,
    detail: Option<String>,
    first: usize,
    last: usize,
) {
    let (start, end) = tokens.span(first, last);
    out.push(Found {
        kind,
        name: name.to_string(),
        value: value.to_string(),
        polarity,
        certainty,
        detail,
        start,
        end,
    });
}

/// The primary cancer type: the first mention outside family history.
pub fn cancer_type(tokens: &Tokens<'_>, clause: (usize, usize), out: &mut Vec<Found>) -> bool {
    if has_word(
        tokens,
        clause,
        &[
            "family", "mother", "father", "sister", "brother", "daughter", "son",
        ],
    )
    .is_some()
    {
        return false;
    }
    for index in clause.0..clause.1 {
        if let Some((length, value)) = labelled_at(tokens, index, CANCERS) {
            push(
                out,
                tokens,
                "cancer_type",
                "primary",
                value,
                "affirmed",
                "certain",
                None,
                index,
                index + length - 1,
            );
            return true;
        }
    }
    false
}

fn roman_group(word: &str) -> Option<(&'static str, Option<char>)> {
    let (base, letter) = match word.as_bytes().last() {
        Some(last @ (b'a' | b'b' | b'c')) if word.len() > 1 => (&word[..word.len() - 1], Some(*last as char)),
        _ => (word, None),
    };
    let group = match base {
        "i" | "1" => "I",
        "ii" | "2" => "II",
        "iii" | "3" => "III",
        "iv" | "4" => "IV",
        _ => return None,
    };
    Some((group, letter.map(|letter| letter.to_ascii_uppercase())))
}

/// `stage IIIA`, `Stage 3A`, `stage group IV`, `AJCC stage: IIB`.
pub fn stage_group(tokens: &Tokens<'_>, clause: (usize, usize), out: &mut Vec<Found>) -> bool {
    for index in clause.0..clause.1 {
        if tokens.lower(index) != "stage" {
            continue;
        }
        let mut next = index + 1;
        while next < clause.1 && matches!(tokens.lower(next), "group" | ":" | "ajcc") {
            next += 1;
        }
        if next >= clause.1 {
            continue;
        }
        if let Some((group, letter)) = roman_group(tokens.lower(next)) {
            let detail = letter.map(|letter| format!("{group}{letter}"));
            push(
                out, tokens, "stage", "group", group, "affirmed", "certain", detail, index, next,
            );
            return true;
        }
    }
    false
}

/// A TNM string written as one word: `cT2N1M0`, `pT3N2aM0`, `ypT1bN0M0`.
pub fn tnm(tokens: &Tokens<'_>, clause: (usize, usize), out: &mut Vec<Found>) -> bool {
    for index in clause.0..clause.1 {
        let raw = tokens.raw(index);
        if is_tnm(raw) {
            push(
                out, tokens, "stage", "tnm", raw, "affirmed", "certain", None, index, index,
            );
            return true;
        }
    }
    false
}

fn is_tnm(raw: &str) -> bool {
    let rest = raw
        .strip_prefix("yp")
        .or_else(|| raw.strip_prefix('c'))
        .or_else(|| raw.strip_prefix('p'))
        .or_else(|| raw.strip_prefix('r'))
        .unwrap_or(raw);
    let Some(rest) = rest.strip_prefix('T') else {
        return false;
    };
    let (Some(n), Some(m)) = (rest.find('N'), rest.find('M')) else {
        return false;
    };
    n > 0
        && m > n + 1
        && rest[..n]
            .starts_with(|character: char| character.is_ascii_digit() || character == 'x' || character == 'i')
        && rest[n + 1..].starts_with(|character: char| character.is_ascii_digit() || character == 'x')
        && rest[m + 1..].starts_with(|character: char| character.is_ascii_digit() || character == 'x')
}

/// `metastatic`, `liver metastases` (true); `no evidence of metastatic
/// disease`, `no distant metastases` (false). A negated organ-specific
/// mention (`no brain metastases`) says nothing about the whole.
pub fn metastatic(tokens: &Tokens<'_>, clause: (usize, usize), out: &mut Vec<Found>) -> bool {
    for index in clause.0..clause.1 {
        let word = tokens.lower(index);
        if !(word.starts_with("metasta") || word == "mets") {
            continue;
        }
        let window = index.saturating_sub(5).max(clause.0);
        let negation = (window..index).rev().find(|&before| {
            matches!(tokens.lower(before), "no" | "without" | "negative" | "free")
                || tokens.matches(before, &["ruled", "out"])
        });
        let organ_before = index > clause.0 && ORGANS.contains(&tokens.lower(index - 1));
        match negation {
            Some(_) if organ_before => continue,
            Some(first) => {
                let mut last = index;
                if tokens.lower(index + 1) == "disease" && index + 1 < clause.1 {
                    last += 1;
                }
                push(
                    out,
                    tokens,
                    "metastatic",
                    "metastatic",
                    "false",
                    "negated",
                    "certain",
                    None,
                    first,
                    last,
                );
            }
            None => {
                push(
                    out,
                    tokens,
                    "metastatic",
                    "metastatic",
                    "true",
                    "affirmed",
                    "certain",
                    None,
                    index,
                    index,
                );
            }
        }
        return true;
    }
    false
}

/// Surgery status: resected (a procedure done), unresected (judged
/// unresectable or inoperable) or not_done (declined, deferred, not yet).
pub fn surgery(tokens: &Tokens<'_>, clause: (usize, usize), out: &mut Vec<Found>) -> bool {
    let (start, end) = clause;
    let mut procedure: Option<(usize, usize)> = None;
    let mut unresected: Option<(usize, usize)> = None;
    let mut generic: Option<usize> = None;
    let mut resected_word: Option<usize> = None;
    let mut index = start;
    while index < end {
        if let Some(length) = phrase_at(tokens, index, UNRESECTED) {
            unresected.get_or_insert((index, index + length));
            index += length;
            continue;
        }
        if let Some(length) = phrase_at(tokens, index, PROCEDURES) {
            procedure.get_or_insert((index, index + length));
            index += length;
            continue;
        }
        let word = tokens.lower(index);
        if SURGERY_WORDS.contains(&word) {
            generic.get_or_insert(index);
        }
        if RESECTED_WORDS.contains(&word) {
            resected_word.get_or_insert(index);
        }
        index += 1;
    }
    let name = |span: Option<(usize, usize)>| {
        span.map_or_else(
            || "surgery".to_string(),
            |(first, end)| tokens.lower[tokens.tokens[first].start..tokens.tokens[end - 1].end].to_string(),
        )
    };
    let bounds = |points: &[Option<usize>]| {
        let first = points.iter().flatten().min().copied();
        let last = points.iter().flatten().max().copied();
        first.zip(last)
    };
    if let Some((first, after)) = unresected {
        let (first, last) = bounds(&[
            Some(first),
            Some(after - 1),
            procedure.map(|(_, end)| end - 1),
            procedure.map(|(first, _)| first),
        ])
        .unwrap_or((first, after - 1));
        push(
            out,
            tokens,
            "surgery",
            &name(procedure),
            "unresected",
            "affirmed",
            "certain",
            None,
            first,
            last,
        );
        return true;
    }
    let target = procedure.map(|(first, _)| first).or(generic);
    let Some(target) = target else {
        if let Some(word) = resected_word {
            push(
                out, tokens, "surgery", "surgery", "resected", "affirmed", "certain", None, word, word,
            );
            return true;
        }
        return false;
    };
    let target_last = procedure.map_or(target, |(_, end)| end - 1);
    let is_surgical = |index: usize| {
        SURGERY_WORDS.contains(&tokens.lower(index))
            || procedure.is_some_and(|(first, end)| (first..end).contains(&index))
    };
    // A not-done cue: declined/deferred anywhere, or a negation within a
    // few words of a surgery word (`no surgery`, `surgery not yet performed`).
    let cue = (start..end).find_map(|index| {
        let word = tokens.lower(index);
        if NOT_DONE_CUES.contains(&word) {
            return Some((index, target));
        }
        if !NEGATIONS.contains(&word) {
            return None;
        }
        let after = (index + 1..(index + 5).min(end)).find(|&next| is_surgical(next));
        let before = (index.saturating_sub(3).max(start)..index)
            .rev()
            .find(|&previous| is_surgical(previous));
        after.or(before).map(|surgical| (index, surgical))
    });
    if let Some((cue, surgical)) = cue {
        let (first, last) = (
            cue.min(surgical),
            cue.max(surgical).max(if procedure.is_some() {
                target_last
            } else {
                surgical
            }),
        );
        push(
            out,
            tokens,
            "surgery",
            &name(procedure),
            "not_done",
            "affirmed",
            "certain",
            None,
            first,
            last,
        );
        return true;
    }
    if procedure.is_none() && resected_word.is_none() {
        return false;
    }
    if let Some(planned) = (start..end).find(|&index| PLANNED_CUES.contains(&tokens.lower(index))) {
        let (first, last) = (planned.min(target), planned.max(target_last));
        push(
            out,
            tokens,
            "surgery",
            &name(procedure),
            "not_done",
            "affirmed",
            "uncertain",
            None,
            first,
            last,
        );
        return true;
    }
    let first = resected_before(tokens, target, start).unwrap_or(target);
    let last = resected_word.map_or(target_last, |word| word.max(target_last));
    push(
        out,
        tokens,
        "surgery",
        &name(procedure),
        "resected",
        "affirmed",
        "certain",
        None,
        first,
        last,
    );
    true
}

/// `s/p`, `status post`, `underwent` right before the procedure.
fn resected_before(tokens: &Tokens<'_>, target: usize, start: usize) -> Option<usize> {
    let window = target.saturating_sub(4).max(start);
    (window..target).find(|&index| {
        tokens.matches(index, &["s", "/", "p"])
            || tokens.matches(index, &["status", "post"])
            || matches!(
                tokens.lower(index),
                "underwent" | "post" | "after" | "following" | "had"
            )
    })
}

/// Regimens with their outcome: `progressed on FOLFOX`, `4 cycles of
/// carboplatin/pemetrexed with partial response`, `currently on osimertinib`.
pub fn prior_lines(tokens: &Tokens<'_>, clause: (usize, usize), out: &mut Vec<Found>) {
    let (start, end) = clause;
    if tokens.is_question(clause) || has_word(tokens, clause, FUTURE).is_some() {
        return;
    }
    let mut regimens: Vec<(usize, usize)> = Vec::new();
    let mut index = start;
    while index < end {
        let Some(length) = phrase_at(tokens, index, DRUGS) else {
            index += 1;
            continue;
        };
        let first = index;
        let mut after = index + length;
        loop {
            let connector = tokens.lower(after);
            let glue = matches!(connector, "/" | "+" | "plus" | "and" | "-" | "&");
            if glue && let Some(next) = phrase_at(tokens, after + 1, DRUGS) {
                after += 1 + next;
                continue;
            }
            break;
        }
        regimens.push((first, after));
        index = after;
    }
    if regimens.is_empty() {
        return;
    }
    let Some((outcome, cue)) = outcome(tokens, clause) else {
        return;
    };
    for (first, after) in regimens {
        let name = &tokens.text[tokens.tokens[first].start..tokens.tokens[after - 1].end];
        let certainty = "certain";
        let (span_first, span_last) = (first.min(cue), (after - 1).max(cue));
        push(
            out,
            tokens,
            "prior_line",
            name,
            outcome,
            "affirmed",
            certainty,
            None,
            span_first,
            span_last,
        );
    }
}

fn outcome(tokens: &Tokens<'_>, clause: (usize, usize)) -> Option<(&'static str, usize)> {
    let negated = |index: usize| {
        let window = index.saturating_sub(3).max(clause.0);
        (window..index).any(|before| matches!(tokens.lower(before), "no" | "without" | "free"))
    };
    let find = |words: &[&str]| {
        (clause.0..clause.1).find(|&index| words.contains(&tokens.lower(index)) && !negated(index))
    };
    let pd = (clause.0..clause.1).find(|&index| {
        tokens.raw(index) == "PD" && tokens.lower(index + 1) != "-" && tokens.lower(index + 1) != "1"
    });
    if let Some(index) = find(PROGRESSION).or(pd) {
        return Some(("progression", index));
    }
    if let Some(index) = find(RESPONSE) {
        return Some(("response", index));
    }
    find(ONGOING).map(|index| ("ongoing", index))
}

/// `ECOG 1`, `ECOG PS 0`, `ECOG performance status of 2`.
pub fn ecog(tokens: &Tokens<'_>, clause: (usize, usize), out: &mut Vec<Found>) -> bool {
    for index in clause.0..clause.1 {
        if tokens.lower(index) != "ecog" && !tokens.matches(index, &["performance", "status"]) {
            continue;
        }
        let stop = (index + 6).min(clause.1);
        if let Some(score) =
            (index + 1..stop).find(|&next| matches!(tokens.lower(next), "0" | "1" | "2" | "3" | "4"))
        {
            let value = tokens.lower(score).to_string();
            push(
                out, tokens, "ecog", "ECOG", &value, "affirmed", "certain", None, index, score,
            );
            return true;
        }
    }
    false
}

fn cue_before(tokens: &Tokens<'_>, index: usize, clause_start: usize, cues: &[Phrase]) -> Option<usize> {
    let window = index.saturating_sub(6).max(clause_start);
    (window..index).find(|&before| phrase_at(tokens, before, cues).is_some())
}

/// Comorbidities, affirmed or negated (`no history of diabetes`).
pub fn comorbidities(tokens: &Tokens<'_>, clause: (usize, usize), out: &mut Vec<Found>) {
    labelled_findings(tokens, clause, COMORBIDITIES, "comorbidity", out);
}

/// Symptoms and signs with polarity and certainty (`denies weight loss`,
/// `no nodal involvement`, `possible pleural effusion`).
pub fn findings(tokens: &Tokens<'_>, clause: (usize, usize), out: &mut Vec<Found>) {
    labelled_findings(tokens, clause, FINDINGS, "finding", out);
}

fn labelled_findings(
    tokens: &Tokens<'_>,
    clause: (usize, usize),
    lexicon: &[(Phrase, &str)],
    kind: &'static str,
    out: &mut Vec<Found>,
) {
    let mut index = clause.0;
    while index < clause.1 {
        let Some((length, name)) = labelled_at(tokens, index, lexicon) else {
            index += 1;
            continue;
        };
        let last = index + length - 1;
        let negation = cue_before(tokens, index, clause.0, FINDING_NEGATIONS);
        let uncertain = cue_before(tokens, index, clause.0, UNCERTAIN_CUES);
        let (value, polarity, first) = match negation {
            Some(cue) => ("absent", "negated", cue),
            None => ("present", "affirmed", index),
        };
        let (certainty, first) = match uncertain {
            Some(cue) => ("uncertain", first.min(cue)),
            None => ("certain", first),
        };
        push(
            out, tokens, kind, name, value, polarity, certainty, None, first, last,
        );
        index += length;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run<R>(
        text: &str,
        extractor: fn(&Tokens<'_>, (usize, usize), &mut Vec<Found>) -> R,
    ) -> Vec<(String, String, String)> {
        let tokens = Tokens::new(text);
        let mut out = Vec::new();
        for clause in tokens.clauses() {
            let _ = extractor(&tokens, clause, &mut out);
        }
        out.into_iter()
            .map(|fact| {
                assert!(text.get(fact.start..fact.end).is_some());
                (fact.name, fact.value, text[fact.start..fact.end].to_string())
            })
            .collect()
    }

    #[test]
    fn surgery_statuses() {
        let got = run("She is s/p Whipple with R0 margins.", surgery);
        assert_eq!(got[0].1, "resected");
        assert_eq!(got[0].2, "s/p Whipple");
        assert_eq!(run("The patient declined surgery.", surgery)[0].1, "not_done");
        assert_eq!(
            run("Tumour judged unresectable owing to SMA encasement", surgery)[0].1,
            "unresected"
        );
        assert_eq!(
            run("Has not undergone any operation yet", surgery)[0].1,
            "not_done"
        );
        assert_eq!(run("Right upper lobectomy in 2023", surgery)[0].1, "resected");
        assert!(
            run("Surgical oncology opinion welcome", surgery)
                .iter()
                .all(|fact| fact.1 != "resected")
        );
    }

    #[test]
    fn prior_line_outcomes() {
        let got = run(
            "Received gemcitabine plus nab-paclitaxel, then disease progression. On letrozole + palbociclib, ongoing; Responded well to CAPOX",
            prior_lines,
        );
        let names: Vec<(&str, &str)> = got
            .iter()
            .map(|fact| (fact.0.as_str(), fact.1.as_str()))
            .collect();
        assert_eq!(
            names,
            vec![
                ("gemcitabine plus nab-paclitaxel", "progression"),
                ("letrozole + palbociclib", "ongoing"),
                ("CAPOX", "response")
            ]
        );
        assert!(run("Would pembrolizumab be appropriate?", prior_lines).is_empty());
        assert_eq!(run("nivolumab x 6 months -> PD", prior_lines)[0].1, "progression");
    }

    #[test]
    fn stage_and_metastasis() {
        assert_eq!(run("AJCC stage: 3B disease", stage_group)[0].1, "III");
        assert_eq!(run("clinical Stage iv", stage_group)[0].1, "IV");
        assert_eq!(
            run("CT: no evidence of distant metastatic disease", metastatic)[0].1,
            "false"
        );
        assert!(run("MRI: no brain metastases", metastatic).is_empty());
        assert_eq!(run("multiple hepatic metastases", metastatic)[0].1, "true");
        assert_eq!(run("staged as ypT2N1aM0", tnm)[0].1, "ypT2N1aM0");
    }

    #[test]
    fn negated_findings_and_comorbidities() {
        let got = run(
            "Denies weight loss or night sweats; possible pleural effusion",
            findings,
        );
        assert_eq!(got[0].1, "absent");
        assert_eq!(got[1].1, "absent");
        assert_eq!(got[2].1, "present");
        let got = run("No history of diabetes. Known HTN", comorbidities);
        assert_eq!((got[0].0.as_str(), got[0].1.as_str()), ("diabetes", "absent"));
        assert_eq!(
            (got[1].0.as_str(), got[1].1.as_str()),
            ("hypertension", "present")
        );
    }
}
