//! The model-based extractor, as in EviDx's E-Synthesis: a model reads the
//! note and returns facts in a strict JSON schema, each with the exact quote
//! it rests on; cfeval keeps a fact only when its quote is found in the note
//! and its kind, name and value are in the vocabulary.
//!
//! A quote is located exactly first, then ignoring case and runs of
//! whitespace (a model that rewraps a line or changes a capital), and is
//! refused otherwise: a fact the note does not contain never becomes a fact.
//! The span kept is always the note's own text at the located offsets, so
//! it verifies like every rule fact ([`super::verify_fact`]). Refused claims
//! come back as [`Refused`] (the stage lists them in `cases_quarantine`).
//!
//! Calls go through the model crate's client (response cache, journal,
//! limits), so a rerun is free; the embedded model decodes under the
//! schema's grammar.

use cfeval_model::{ChatParams, ChatRequest, Message, ModelClient, ResponseFormat};
use cfeval_schema::Fact;
use serde::Deserialize;
use serde_json::{Value, json};

/// The instructions (data: `data/packs/oncology/prompts/extract.md`); the
/// vocabulary is filled in from the extractor lexicon.
const PROMPT: &str = cfeval_schema::pack::oncology::EXTRACT_PROMPT;

/// The most facts one answer may hold (the schema's `maxItems`).
const MAX_FACTS: usize = 48;

/// The fact kinds the model may state.
pub const KINDS: [&str; 6] = [
    "cancer_type",
    "stage",
    "metastatic",
    "biomarker",
    "surgery",
    "prior_line",
];

/// One fact as the model states it, before it is checked.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claim {
    pub kind: String,
    pub name: String,
    pub value: String,
    pub quote: String,
}

/// A claim that did not become a fact, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub claim: Claim,
    pub reason: String,
}

/// How a quote was found in the note.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Located {
    /// Character for character.
    Exact,
    /// Ignoring case and runs of whitespace.
    Loose,
}

/// The JSON schema of an answer (strict structured output).
pub fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "facts": {
                "type": "array",
                "maxItems": MAX_FACTS,
                "items": {
                    "type": "object",
                    "properties": {
                        "kind": {"type": "string", "enum": KINDS},
                        "name": {"type": "string", "maxLength": 64},
                        "value": {"type": "string", "maxLength": 64},
                        "quote": {"type": "string", "maxLength": 240}
                    },
                    "required": ["kind", "name", "value", "quote"],
                    "additionalProperties": false
                }
            }
        },
        "required": ["facts"],
        "additionalProperties": false
    })
}

/// Parses an answer strictly: one JSON object `{"facts": [...]}` (a
/// whole-answer code fence is allowed), nothing else.
pub fn parse(text: &str) -> Result<Vec<Claim>, String> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Answer {
        facts: Vec<Claim>,
    }
    let trimmed = text.trim();
    let body = trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .and_then(|rest| rest.strip_suffix("```"))
        .unwrap_or(trimmed);
    serde_json::from_str::<Answer>(body.trim())
        .map(|answer| answer.facts)
        .map_err(|error| format!("not a facts object: {error}"))
}

/// Where `quote` is in `source`: its byte offsets and how it was found, or
/// `None`. An exact match wins; otherwise case and whitespace runs are
/// ignored (the offsets still cover the note's own characters). Of several
/// occurrences the first is taken (the quote's text is what a fact rests
/// on, wherever it is).
pub fn locate(source: &str, quote: &str) -> Option<(usize, usize, Located)> {
    let quote = quote.trim();
    if quote.is_empty() {
        return None;
    }
    if let Some(start) = source.find(quote) {
        return Some((start, start + quote.len(), Located::Exact));
    }
    // Normalise both sides: lower case, every whitespace run one space; keep
    // each normalised character's byte offset in the source.
    let (normal, offsets) = normalise(source);
    let (wanted, _) = normalise(quote);
    let wanted = wanted.trim();
    if wanted.is_empty() {
        return None;
    }
    let at = normal.find(wanted)?;
    let first = normal[..at].chars().count();
    let last = first + wanted.chars().count() - 1;
    let start = offsets[first];
    let end_char = offsets[last];
    let end = end_char + source[end_char..].chars().next().map_or(0, char::len_utf8);
    Some((start, end, Located::Loose))
}

/// `text` lower-cased with every whitespace run as one space, and the source
/// byte offset of each character of the result.
fn normalise(text: &str) -> (String, Vec<usize>) {
    let mut out = String::with_capacity(text.len());
    let mut offsets = Vec::with_capacity(text.len());
    let mut space = false;
    for (offset, c) in text.char_indices() {
        if c.is_whitespace() {
            if !space {
                out.push(' ');
                offsets.push(offset);
            }
            space = true;
            continue;
        }
        space = false;
        // One character in, one out: a lower case that expands (rare) keeps
        // the character as it is, so offsets stay one per character.
        let mut lower = c.to_lowercase();
        match (lower.next(), lower.next()) {
            (Some(single), None) => out.push(single),
            _ => out.push(c),
        }
        offsets.push(offset);
    }
    (out, offsets)
}

/// What a claim's kind, name and value must be: the pack's vocabulary
/// (`cfeval_schema::vocab`), the same one catalogs are checked against.
pub struct Vocabulary {
    pack: &'static cfeval_schema::vocab::Vocabulary,
}

impl Vocabulary {
    /// The built-in pack's vocabulary.
    pub fn builtin() -> Self {
        Self {
            pack: cfeval_schema::vocab::Vocabulary::builtin(),
        }
    }

    fn cancer_types(&self) -> &[String] {
        self.pack.values("cancer_type")
    }

    fn markers(&self) -> &[String] {
        self.pack.names("biomarker")
    }

    /// The claim's (name, value) in the vocabulary's words, or why not.
    fn check(&self, claim: &Claim) -> Result<(String, String), String> {
        let value = claim.value.trim().to_ascii_lowercase();
        let name = claim.name.trim();
        let one_of = |kind: &str| {
            let allowed = self.pack.values(kind);
            allowed
                .iter()
                .find(|known| known.eq_ignore_ascii_case(&value))
                .cloned()
                .ok_or_else(|| format!("value `{value}` is not one of {}", allowed.join(", ")))
        };
        match claim.kind.as_str() {
            "cancer_type" => self
                .cancer_types()
                .iter()
                .find(|known| **known == value)
                .map(|known| ("primary".to_string(), known.clone()))
                .ok_or_else(|| format!("cancer type `{value}` is not in the vocabulary")),
            "stage" => {
                let group = claim.value.trim().trim_start_matches("stage ").trim();
                let roman = group
                    .trim_end_matches(|c: char| c.is_ascii_digit() || matches!(c, 'A'..='D' | 'a'..='d'));
                // The group without its sub-letter, as the rules write it
                // (the whole group goes in the fact's detail).
                if self.pack.stage_groups.iter().any(|known| known == roman) {
                    Ok(("group".to_string(), roman.to_string()))
                } else {
                    Err(format!("stage group `{group}` is not a roman stage group"))
                }
            }
            "metastatic" => Ok(("metastatic".to_string(), one_of("metastatic")?)),
            "biomarker" => {
                let marker = self
                    .markers()
                    .iter()
                    .find(|known| known.eq_ignore_ascii_case(name))
                    .ok_or_else(|| format!("marker `{name}` is not in the vocabulary"))?;
                Ok((marker.clone(), one_of("biomarker")?))
            }
            "surgery" => Ok(("surgery".to_string(), one_of("surgery")?)),
            "prior_line" if !name.is_empty() => Ok((name.to_string(), one_of("prior_line")?)),
            "prior_line" => Err("a prior line needs its regimen as the name".to_string()),
            other => Err(format!("kind `{other}` is not one of {}", KINDS.join(", "))),
        }
    }
}

/// Turns the model's claims into facts: each claim in the vocabulary whose
/// quote is found in `source` becomes a fact over the note's own text
/// (`origin = llm`; `detail` says when the quote matched only loosely);
/// every other claim is refused with its reason.
pub fn facts_from_claims(
    source: &str,
    claims: Vec<Claim>,
    vocabulary: &Vocabulary,
) -> (Vec<Fact>, Vec<Refused>) {
    let mut facts = Vec::new();
    let mut refused = Vec::new();
    for claim in claims {
        let (name, value) = match vocabulary.check(&claim) {
            Ok(checked) => checked,
            Err(reason) => {
                refused.push(Refused { claim, reason });
                continue;
            }
        };
        let Some((start, end, located)) = locate(source, &claim.quote) else {
            refused.push(Refused {
                reason: "its quote is not in the note".to_string(),
                claim,
            });
            continue;
        };
        let negative = value == "negative" || value == "false";
        let mut details = Vec::new();
        if claim.kind == "stage" && !claim.value.trim().eq_ignore_ascii_case(&value) {
            details.push(format!("stage {}", claim.value.trim().to_ascii_uppercase()));
        }
        if located == Located::Loose {
            details.push("quote matched ignoring case and spacing".to_string());
        }
        facts.push(Fact {
            kind: claim.kind.clone(),
            name,
            value,
            polarity: if negative { "negated" } else { "affirmed" }.to_string(),
            certainty: "certain".to_string(),
            detail: (!details.is_empty()).then(|| details.join("; ")),
            section: String::new(),
            span_start: start as u64,
            span_end: end as u64,
            span_text: source[start..end].to_string(),
            origin: "llm".to_string(),
        });
    }
    (facts, refused)
}

/// The model-based extractor: a model client and its instructions.
pub struct LlmExtractor {
    name: String,
    client: ModelClient,
    instructions: String,
    vocabulary: Vocabulary,
    max_tokens: u32,
}

impl std::fmt::Debug for LlmExtractor {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("LlmExtractor")
            .field("name", &self.name)
            .finish()
    }
}

impl LlmExtractor {
    /// The default answer budget.
    pub const DEFAULT_MAX_TOKENS: u32 = 1024;

    /// An extractor calling `client` (the model `name`), with the pack's
    /// vocabulary.
    pub fn new(name: impl Into<String>, client: ModelClient, max_tokens: u32) -> Self {
        let vocabulary = Vocabulary::builtin();
        let instructions = PROMPT
            .replace("{cancer_types}", &vocabulary.cancer_types().join(", "))
            .replace("{markers}", &vocabulary.markers().join(", "));
        Self {
            name: name.into(),
            client,
            instructions,
            vocabulary,
            max_tokens,
        }
    }

    /// The model's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What the extractor's facts depend on besides the note: the model,
    /// its instructions and its budget.
    pub fn fingerprint(&self) -> String {
        cfeval_schema::ids::content_id(
            "llm-extractor",
            &[&self.name, &self.instructions, &self.max_tokens.to_string()],
        )
    }

    /// The vocabulary claims are checked against.
    pub fn vocabulary(&self) -> &Vocabulary {
        &self.vocabulary
    }

    fn request(&self, messages: Vec<Message>) -> ChatRequest {
        ChatRequest::new(messages).with_params(ChatParams {
            temperature: Some(0.0),
            seed: Some(0),
            max_tokens: Some(self.max_tokens),
            response_format: Some(ResponseFormat::JsonSchema {
                name: "note_facts".into(),
                schema: schema(),
                strict: true,
            }),
            ..ChatParams::default()
        })
    }

    async fn call(&self, messages: &[Message]) -> Result<String, String> {
        let completion = self
            .client
            .chat(&self.request(messages.to_vec()))
            .await
            .map_err(|error| format!("extractor call failed: {error}"))?;
        completion
            .response
            .text
            .ok_or_else(|| "the extractor model returned no text".to_string())
    }

    /// The model's claims for one note: one call, and one repair retry when
    /// the answer is not a facts object. `Err` is an extraction error for
    /// the case (recorded, never a guessed fact).
    pub async fn claims(&self, note: &str) -> Result<Vec<Claim>, String> {
        let mut messages = vec![
            Message::system(self.instructions.clone()),
            Message::user(format!("Note:\n<<<\n{note}\n>>>")),
        ];
        let first = self.call(&messages).await?;
        let problem = match parse(&first) {
            Ok(claims) => return Ok(claims),
            Err(problem) => problem,
        };
        messages.push(Message::assistant(first));
        messages.push(Message::user(format!(
            "Your answer was not valid ({problem}). Answer again with only the JSON object \
             {{\"facts\": [...]}} described in the instructions, for the same note."
        )));
        let second = self.call(&messages).await?;
        parse(&second).map_err(|again| format!("invalid answer after one repair retry: {again}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_are_found_exactly_then_loosely_and_refused_otherwise() {
        let note = "Pathology: ER 95%, PR 10%,\nHER2  1+ (IHC).\nNo surgery planned.";
        let exact = locate(note, "ER 95%").expect("exact");
        assert_eq!((&note[exact.0..exact.1], exact.2), ("ER 95%", Located::Exact));
        // Rewrapped and re-cased by the model: the note's own text is kept.
        let loose = locate(note, "pr 10%, her2 1+").expect("loose");
        assert_eq!(&note[loose.0..loose.1], "PR 10%,\nHER2  1+");
        assert_eq!(loose.2, Located::Loose);
        for invented in ["HER2 3+", "ER 90%", "", "   "] {
            assert_eq!(locate(note, invented), None, "{invented:?}");
        }
        // Multi-byte characters keep their boundaries.
        let accents = "Diagnose: Mammakarzinom, Östrogenrezeptor positiv.";
        let found = locate(accents, "östrogenrezeptor POSITIV").expect("loose");
        assert_eq!(&accents[found.0..found.1], "Östrogenrezeptor positiv");
    }

    #[test]
    fn answers_parse_strictly() {
        let claims = parse(
            r#"{"facts": [{"kind": "biomarker", "name": "ER", "value": "positive", "quote": "ER 95%"}]}"#,
        )
        .expect("valid");
        assert_eq!(claims.len(), 1);
        assert_eq!(
            parse("```json\n{\"facts\": []}\n```").expect("fenced"),
            Vec::new()
        );
        for bad in [
            "ER positive",
            r#"{"facts": [{"kind": "biomarker", "name": "ER", "value": "positive"}]}"#,
            r#"{"facts": [], "note": "x"}"#,
            r#"{"facts": []} and more"#,
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    fn claim(kind: &str, name: &str, value: &str, quote: &str) -> Claim {
        Claim {
            kind: kind.into(),
            name: name.into(),
            value: value.into(),
            quote: quote.into(),
        }
    }

    #[test]
    fn only_claims_in_the_vocabulary_with_a_quote_in_the_note_become_facts() {
        let vocabulary = Vocabulary::builtin();
        let note = "72F metastatic breast cancer, ER 95%, HER2 0. Progressed on letrozole + palbociclib.";
        let (facts, refused) = facts_from_claims(
            note,
            vec![
                claim("cancer_type", "cancer_type", "breast", "breast cancer"),
                claim("biomarker", "er", "Positive", "ER 95%"),
                claim("biomarker", "HER2", "negative", "HER2 0"),
                claim(
                    "prior_line",
                    "letrozole + palbociclib",
                    "progression",
                    "Progressed on letrozole + palbociclib",
                ),
                claim("metastatic", "metastatic", "true", "metastatic breast cancer"),
                // Invented quote, unknown kind, unknown marker, bad values.
                claim("biomarker", "PR", "positive", "PR 80%"),
                claim("ecog", "ecog", "1", "ECOG 1"),
                claim("biomarker", "FOO1", "positive", "ER 95%"),
                claim("surgery", "surgery", "maybe", "breast cancer"),
                claim("stage", "group", "advanced", "metastatic"),
            ],
            &vocabulary,
        );
        let got: Vec<(&str, &str, &str)> = facts
            .iter()
            .map(|fact| (fact.kind.as_str(), fact.name.as_str(), fact.value.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("cancer_type", "primary", "breast"),
                ("biomarker", "ER", "positive"),
                ("biomarker", "HER2", "negative"),
                ("prior_line", "letrozole + palbociclib", "progression"),
                ("metastatic", "metastatic", "true"),
            ]
        );
        for fact in &facts {
            assert_eq!(
                &note[fact.span_start as usize..fact.span_end as usize],
                fact.span_text
            );
            assert_eq!(fact.origin, "llm");
        }
        assert_eq!(facts[2].polarity, "negated");
        // A substage is kept as the group (as the rules write it), the whole
        // of it in the detail.
        let (staged, _) = facts_from_claims(
            "Staging: clinical stage IIIB (cT4N2M0).",
            vec![claim("stage", "group", "IIIB", "stage IIIB")],
            &vocabulary,
        );
        assert_eq!(
            (staged[0].value.as_str(), staged[0].detail.as_deref()),
            ("III", Some("stage IIIB"))
        );
        let reasons: Vec<&str> = refused.iter().map(|refused| refused.reason.as_str()).collect();
        assert_eq!(reasons.len(), 5, "{reasons:?}");
        assert_eq!(reasons[0], "its quote is not in the note");
        assert!(reasons[1].contains("kind `ecog`"), "{}", reasons[1]);
        assert!(reasons[2].contains("marker `FOO1`"), "{}", reasons[2]);
        assert!(reasons[3].contains("value `maybe`"), "{}", reasons[3]);
        assert!(reasons[4].contains("stage group"), "{}", reasons[4]);
    }
}
