//! Reading a diagnosis answer as a clinician does: its leading diagnosis,
//! its differential, what it rules out, the tests it orders, whether it
//! escalates care and whether it declines to commit.
//!
//! The leading diagnosis is found in this order, and [`Reading::source`]
//! says which step found it:
//! 1. `label` / `heading`: the text after a label (`Most likely diagnosis:
//!    X`), or the line under a label heading;
//! 2. `sentence`: a leading cue in a sentence (`consistent with X`, `X is the
//!    most likely diagnosis`);
//! 3. `first_listed`: with no stated leader, the first diagnosis the answer
//!    names (a list's first item), unless the answer declines to commit;
//!    `alternatives` when that is the first of two diagnoses its opening
//!    sentence joins with `or` (no choice made); a bulleted plan (`-
//!    Reassure ...`) names none;
//! 4. `none`.
//!
//! A diagnosis the ontology does not know is still read: the phrase after a
//! label or cue, minus hedges (`probably`) and trailing reasons (`given ...`),
//! becomes a free-text mention (`id: None`). Mentions that are ruled out or
//! restate history (`known Crohn disease`) are never offered.
//!
//! A disease named only as a test's purpose (`order TSH to rule out
//! hypothyroidism`, `check AChR antibodies for MG`, a `Next steps:` section)
//! is neither offered nor leading; one only to be excluded (`rule out X`) is
//! offered but never leads. Of several labels, a final one (`Final
//! diagnosis:`) outranks a diagnosis label, which outranks a section heading
//! (`## Assessment`). An answer that declines (`cannot make a definitive
//! diagnosis`) is led only by a diagnosis a cue still names (`most suggestive
//! of X`, `X is the leading consideration`) or offers.

use std::path::Path;

use crate::cues::{Cues, Kind};
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::ontology::{Found, Ontology};
use crate::text::{is_boundary, whole_word_places};

/// Reading the leader a label names.
mod exam;
mod label;
mod markup;
/// What an answer offers besides its leader.
mod offered;
/// Reading the diagnosis phrase at a position.
mod phrase;

/// A diagnosis named in an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mention {
    /// Ontology id; `None` for a diagnosis the ontology does not know.
    pub id: Option<String>,
    /// The phrase as written.
    pub text: String,
    /// Byte offsets of the phrase in the answer.
    pub start: usize,
    pub end: usize,
}

/// What an answer says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reading {
    pub leading: Option<Mention>,
    /// Diagnoses that lead together with `leading`: the first diagnosis of
    /// each item of a list a co-lead phrase introduces (`Two coexisting
    /// diagnoses: 1. X 2. Y`); they are in `differential` too.
    pub co_leading: Vec<Mention>,
    pub differential: Vec<Mention>,
    pub ruled_out: Vec<Mention>,
    /// Tests ordered: `tests.yaml` names, else the ordering phrase as written.
    pub tests_ordered: Vec<String>,
    /// Every ordering phrase as written (the text after an ordering cue, or
    /// a line under an ordering header).
    pub orders: Vec<String>,
    pub escalates: bool,
    /// The answer will not commit to a diagnosis.
    pub declines: bool,
    /// The answer holds its diagnosis pending more information.
    pub uncertain: bool,
    /// How the leading diagnosis was found: "label", "heading",
    /// "first_listed", "sentence", "none"; "alternatives" when it is the
    /// first of two diagnoses the answer's opening joins with no choice
    /// made (`X or Y; I can't separate them`): it commits to neither.
    pub source: &'static str,
}

/// The pack's ontology with its answer cues.
#[derive(Debug, Clone)]
pub struct Reader {
    ontology: Ontology,
    cues: Cues,
    hash: String,
}

/// The first offered entry inside `start..end` (original-text bounds, as a
/// [`Mention`]'s are).
fn entry_within<'f>(
    layout: &Layout<'_>,
    offered: &'f [Found],
    start: usize,
    end: usize,
) -> Option<&'f Found> {
    offered
        .iter()
        .find(|f| start <= layout.folded.original(f.start) && layout.folded.original(f.end) <= end)
}

/// Lets the diagnosis `old` that a revision at `revision` revised away go:
/// its mentions before the revision are ruled out (`dropped`), not offered;
/// unless the answer names it again after the revision (`… keeping X as the
/// main alternative`), which keeps it offered.
fn let_go(offered: &mut Vec<Found>, dropped: &mut Vec<Found>, old: usize, revision: usize) {
    if offered.iter().any(|f| f.entry == old && f.start > revision) {
        return;
    }
    let revised_away = |f: &Found| f.entry == old && f.start < revision;
    dropped.extend(offered.iter().filter(|f| revised_away(f)));
    offered.retain(|f| !revised_away(f));
}

/// A candidate phrase: folded bounds and the ontology entry inside it.
pub(super) struct Phrase {
    start: usize,
    end: usize,
    found: Option<Found>,
}

impl Reader {
    /// A reader over an ontology and the answer file's text.
    pub fn new(mut ontology: Ontology, cues_yaml: &str, origin: &str) -> Result<Self> {
        let cues = Cues::parse(cues_yaml, origin)?;
        ontology.set_lexicon(cues.lexicon.clone());
        let hash = crate::chained_hash(ontology.hash(), cues_yaml);
        Ok(Self { ontology, cues, hash })
    }

    /// Loads `ontology.yaml`, `tests.yaml` and `answer.yaml` from a pack.
    pub fn load(pack_dir: &Path) -> Result<Self> {
        let ontology = Ontology::load(pack_dir)?;
        let path = pack_dir.join("answer.yaml");
        let text = std::fs::read_to_string(&path).map_err(|source| Error::Read {
            path: path.clone(),
            source,
        })?;
        Self::new(ontology, &text, &path.display().to_string())
    }

    pub fn ontology(&self) -> &Ontology {
        &self.ontology
    }

    /// BLAKE3 hex over the ontology's hash and the answer file.
    pub fn hash(&self) -> String {
        self.hash.clone()
    }

    /// Reads one answer.
    pub fn read(&self, answer: &str) -> Reading {
        let unmarked;
        let answer = match markup::plain(
            answer,
            &markup::Marks {
                reasoning_tags: &self.cues.reasoning_tags,
                speakers: &self.cues.speakers,
                asking_speakers: &self.cues.asking_speakers,
                is_cue: &|name| self.cues.is_heading_cue(name),
            },
        ) {
            Some(plain) => {
                unmarked = plain;
                unmarked.as_str()
            }
            None => answer,
        };
        let layout = Layout::new(answer, &self.cues, self.ontology.lexicon());
        let found = self.ontology.find(&layout.tokens);
        let mut dropped = self.dropped_by_pronoun(&layout, &found);
        let mut offered: Vec<Found> = found
            .iter()
            .copied()
            .filter(|f| {
                !layout.is_ruled_out(f.start, f.end)
                    && !dropped.contains(f)
                    && !layout.is_history(f.start)
                    && !layout.is_question(f.start)
                    && !layout.is_purpose(f.start)
            })
            .collect();
        let mut free = self.free_differential(&layout, &found);
        let choices = exam::choices(&layout);
        let (mut leading, mut source) = self.by_label(&layout, &offered, &choices);
        // An exam answer that chose an option leaves the others unoffered:
        // they are the question's, not the answer's.
        if source == "option"
            && let Some(lead) = &leading
        {
            let span = |choice: &exam::Choice| {
                (
                    layout.folded.original(choice.start),
                    layout.folded.original(choice.end),
                )
            };
            let chosen = choices
                .iter()
                .map(span)
                .find(|(start, end)| *start <= lead.start && lead.end <= *end);
            let unchosen = |at: usize| {
                choices
                    .iter()
                    .map(span)
                    .any(|range| Some(range) != chosen && range.0 <= at && at < range.1)
            };
            offered.retain(|f| !unchosen(layout.folded.original(f.start)));
            free.retain(|mention| !unchosen(mention.start));
        }
        let declines = source != "label"
            && layout
                .hits
                .iter()
                .any(|hit| hit.kind == Kind::Declines && !layout.is_negated(hit));
        // A refusal under a heading (`## Impression` / `I can't commit to
        // a diagnosis`) names no leader with its words, as a refusal's
        // sentences name none with theirs (step 2).
        if declines && source == "heading" && leading.as_ref().is_some_and(|lead| lead.id.is_none()) {
            (leading, source) = (None, "none");
        }
        // A heading or label whose words name no diagnosis the ontology
        // knows (`IMPRESSION: Expansile lytic lesion …`) describes findings;
        // a leading cue that names a known diagnosis (`… most consistent
        // with a giant cell tumour`) names the leader instead.
        if matches!(source, "heading" | "label")
            && !declines
            && leading.as_ref().is_some_and(|lead| lead.id.is_none())
        {
            let (cued, cue_source, _) = self.by_sentence(&layout, &offered, declines);
            if cued.as_ref().is_some_and(|lead| lead.id.is_some()) {
                (leading, source) = (cued, cue_source);
            }
        }
        // A revision written after the label or heading (`First impression:
        // X. … I'm revising my answer to Y`) names the leader instead.
        // The diagnosis revised away is let go: ruled out, not offered.
        if matches!(source, "heading" | "label")
            && let Some((lead_start, lead_end)) = leading.as_ref().map(|lead| (lead.start, lead.end))
        {
            let revised = layout
                .hits
                .iter()
                .filter(|hit| {
                    hit.kind == Kind::LeadingForward
                        && self
                            .cues
                            .revisions
                            .contains(&layout.folded.text[hit.start..hit.end])
                        && layout.folded.original(hit.start) > lead_start
                })
                .rev()
                .find_map(|hit| {
                    let (_, end) = layout.sentence_of(hit.end);
                    Self::entry_after(&layout, hit.end, end, &offered, 2)
                });
            if let Some(phrase) = revised {
                if let Some(old) = entry_within(&layout, &offered, lead_start, lead_end).map(|f| f.entry)
                    && phrase.found.is_some_and(|new| new.entry != old)
                {
                    let_go(&mut offered, &mut dropped, old, phrase.start);
                }
                (leading, source) = (Some(self.lead(&layout, phrase)), "sentence");
            }
        }
        if leading.is_none() {
            let revised_away;
            (leading, source, revised_away) = self.by_sentence(&layout, &offered, declines);
            // A change of mind (`My first thought is X. … I'm going to
            // change my answer: Y`) lets the diagnosis it revised away go, as
            // a revision after a label does.
            if let Some((old, revision)) = revised_away {
                let_go(&mut offered, &mut dropped, old, revision);
            }
            // A cue's phrase the ontology does not know (`Most likely
            // post-chlamydial.`) qualifies the diagnosis the answer opens
            // with (`Reiter syndrome — …`); it does not replace it.
            let free_lead = leading
                .as_ref()
                .filter(|lead| lead.id.is_none())
                .map(|lead| lead.start);
            if let Some(free_start) = free_lead
                && !declines
                && let Some(opening) = self
                    .opening_phrase(&layout, &offered)
                    .filter(|opening| opening.id.is_some() && opening.start < free_start)
            {
                (leading, source) = (Some(opening), "first_listed");
            }
        }
        // `1. X … 3. Y … My answer is #3`: a pick names its numbered item.
        if !declines && let Some(picked) = self.picked_item(&layout, &offered) {
            (leading, source) = (Some(picked), "sentence");
        }
        // A refusal commits only to what a leading cue still names; the
        // possibilities it lists are offered, none of them leads.
        if leading.is_none() && !declines {
            (leading, source) = self.by_first_listed(&layout, &offered, &free);
        }
        // `X or Y; both fit`: two alternatives, no choice made. The first
        // stays the leader, marked as one of the two. A cue's phrase that
        // opens with `either` (`This is either X or Y`) is such a pair too.
        // The opener starts the lead's phrase (`This is either X or Y`) or
        // its sentence (`Either this is X, …, or it is Y`).
        let either = |lead: &Mention| {
            let opens = |written: &str| {
                self.cues.alternative_openers.iter().any(|word| {
                    written
                        .strip_prefix(word.as_str())
                        .is_some_and(|rest| rest.starts_with(' '))
                })
            };
            let sentence_opens =
                entry_within(&layout, &offered, lead.start, lead.end).is_some_and(|inside| {
                    let sentence_start = layout.sentence_of(inside.start).0;
                    opens(layout.folded.text[sentence_start..].trim_start())
                });
            opens(&lead.text.to_lowercase()) || sentence_opens
        };
        let opened = source == "sentence" && leading.as_ref().is_some_and(either);
        if (source == "first_listed" || opened)
            && leading
                .as_ref()
                .is_some_and(|lead| self.is_undecided(&layout, &offered, lead, opened))
        {
            source = "alternatives";
        }
        let mut differential: Vec<Mention> = Vec::new();
        for f in &offered {
            let mention = self.mention(&layout, f.start, f.end, Some(*f));
            let same_as_leading = leading.as_ref().is_some_and(|lead| {
                (lead.id.is_some() && lead.id == mention.id)
                    || (lead.start <= mention.start && mention.end <= lead.end)
            });
            let repeated = differential.iter().any(|other| other.id == mention.id);
            if !same_as_leading && !repeated {
                differential.push(mention);
            }
        }
        for mention in free {
            let inside_leading = leading
                .as_ref()
                .is_some_and(|lead| lead.start <= mention.start && mention.end <= lead.end);
            if !inside_leading {
                differential.push(mention);
            }
        }
        let (tests_ordered, orders) = self.tests_ordered(&layout);
        let co_leading = self.co_leads(&layout, &offered);
        Reading {
            leading,
            co_leading,
            differential,
            ruled_out: self.ruled_out(&layout, &found, &dropped),
            tests_ordered,
            orders,
            escalates: layout
                .hits
                .iter()
                .any(|hit| hit.kind == Kind::Escalation && !layout.is_negated(hit)),
            declines,
            uncertain: declines || layout.hits.iter().any(|hit| hit.kind == Kind::Uncertainty),
            source,
        }
    }

    pub(super) fn mention(
        &self,
        layout: &Layout<'_>,
        start: usize,
        end: usize,
        found: Option<Found>,
    ) -> Mention {
        Mention {
            id: found.map(|f| self.ontology.entry(f.entry).id.clone()),
            text: layout.original_text(start, end).trim().to_string(),
            start: layout.folded.original(start),
            end: layout.folded.original(end),
        }
    }

    pub(super) fn lead(&self, layout: &Layout<'_>, phrase: Phrase) -> Mention {
        self.mention(layout, phrase.start, phrase.end, phrase.found)
    }

    /// Whether a span is only offered as still to be excluded (`rule out
    /// X`, `r/o X vs Y`).
    fn is_to_exclude(&self, layout: &Layout<'_>, start: usize) -> bool {
        // A list separator (`r/o X vs Y`) continues the cue before it.
        let mut position = start;
        while let Some(hit) = layout.nearest_cue(position) {
            let separator = layout
                .hits_in(Kind::ListSeparator, hit.start, hit.end)
                .any(|other| other.start == hit.start && other.end == hit.end);
            if !separator {
                return hit.kind == Kind::Differential
                    && self
                        .cues
                        .to_exclude
                        .contains(&layout.folded.text[hit.start..hit.end]);
            }
            position = hit.start;
        }
        false
    }

    /// Whether folded text opens with a narrative word (`patient is ...`).
    pub(super) fn opens_narrative(&self, opening: &str) -> bool {
        self.cues.narrative_starts.iter().any(|word| {
            opening.starts_with(word.as_str())
                && !opening[word.len()..].starts_with(|c: char| c.is_alphanumeric())
        })
    }

    /// Step 2: a leading cue in a sentence; an ontology entry first, a free
    /// phrase (no digits) only when no cue names one.
    fn by_sentence(
        &self,
        layout: &Layout<'_>,
        offered: &[Found],
        declines: bool,
    ) -> (Option<Mention>, &'static str, Option<(usize, usize)>) {
        let mut free = None;
        let mut first: Option<Phrase> = None;
        let mut concluded = None;
        // The entry a revision cue revised away, and where the revision is.
        let mut revised_away = None;
        for hit in layout
            .hits
            .iter()
            .filter(|hit| !layout.is_question(hit.start) && !self.is_conditional(layout, hit.start))
        {
            let opens = || {
                let (sentence_start, _) = layout.sentence_of(hit.start);
                layout.words_between(sentence_start, hit.start) == 0
            };
            let forward = hit.kind == Kind::LeadingForward || (hit.kind == Kind::LeadingOpener && opens());
            // A cue alone in a bracket (`LEMS (favoured) vs MG`) marks what
            // is before it.
            let enclosed = layout.folded.text[hit.end..].trim_start().starts_with(')');
            let phrase = match hit.kind {
                _ if forward && enclosed => self.marked(layout, hit.start, offered),
                _ if forward => {
                    let (_, end) = layout.sentence_of(hit.end);
                    let clause_end = layout.clause_of(hit.end).1.max(hit.end);
                    let found = offered.iter().copied().find(|f| {
                        f.start >= hit.end && f.end <= end && layout.words_between(hit.end, f.start) <= 4
                    });
                    match found {
                        Some(f) => self
                            .phrase_at(layout, hit.end, end, offered)
                            .filter(|p| p.start <= f.start && f.end <= p.end)
                            .or(Some(Phrase {
                                start: f.start,
                                end: f.end,
                                found: Some(f),
                            })),
                        None => self
                            .marked(layout, hit.start, offered)
                            .or_else(|| self.phrase_at(layout, hit.end, clause_end, offered))
                            .or_else(|| self.backward(layout, hit.start, offered)),
                    }
                }
                // `X is most likely Y`: a backward cue with no entry before
                // it in its clause names the entry right after it.
                Kind::LeadingBackward => match self.backward(layout, hit.start, offered) {
                    Some(phrase) if phrase.found.is_some() => Some(phrase),
                    before => {
                        let (_, end) = layout.sentence_of(hit.end);
                        Self::entry_after(layout, hit.end, end, offered, 0).or(before)
                    }
                },
                _ => None,
            };
            let Some(phrase) = phrase else { continue };
            if phrase.found.is_some() {
                // The first entry a cue names leads, unless a later sentence
                // concludes (`Therefore, this is most consistent with X`).
                let revises = self
                    .cues
                    .revisions
                    .contains(&layout.folded.text[hit.start..hit.end]);
                if self.concludes(layout, hit.start) || revises {
                    let before = concluded
                        .as_ref()
                        .or(first.as_ref())
                        .and_then(|earlier: &Phrase| earlier.found);
                    revised_away = match (revises, before, phrase.found) {
                        (true, Some(old), Some(new)) if old.entry != new.entry => {
                            Some((old.entry, phrase.start))
                        }
                        (true, _, _) => None,
                        (false, _, _) => revised_away,
                    };
                    concluded = Some(phrase);
                } else if first.is_none() {
                    first = Some(phrase);
                }
                continue;
            }
            let written = &layout.folded.text[phrase.start..phrase.end];
            let alarm = layout.hits.iter().any(|hit| {
                hit.kind == Kind::Escalation && hit.start >= phrase.start && hit.end <= phrase.end
            });
            if free.is_none() && !declines && !alarm && !written.contains(|c: char| c.is_ascii_digit()) {
                free = Some(phrase);
            }
        }
        match concluded.or(first).or(free) {
            Some(phrase) => (Some(self.lead(layout, phrase)), "sentence", revised_away),
            None => (None, "none", None),
        }
    }

    /// Whether the sentence at `position` opens with a conclusion marker
    /// (`Therefore`, `In summary`, `Putting it all together`).
    fn concludes(&self, layout: &Layout<'_>, position: usize) -> bool {
        let (sentence_start, end) = layout.sentence_of(position);
        let opening = layout.folded.text[sentence_start..end]
            .trim_start_matches(|c: char| c.is_whitespace() || matches!(c, '*' | '_' | '#' | '-' | '>'));
        self.cues.conclusions.iter().any(|marker| {
            opening.starts_with(marker.as_str())
                && !opening[marker.len()..].starts_with(|c: char| c.is_alphanumeric())
        })
    }

    /// The diagnosis a bracketed or dashed cue right after it marks (`2. MG
    /// (most likely)`, `LEMS - most likely`).
    fn marked(&self, layout: &Layout<'_>, cue: usize, offered: &[Found]) -> Option<Phrase> {
        let text = &layout.folded.text;
        let (sentence_start, _) = layout.sentence_of(cue);
        let before = text[sentence_start..cue]
            .trim_end_matches(|c: char| c.is_whitespace() || matches!(c, '(' | '[' | '*' | '_' | '-' | ':'));
        let at = sentence_start + before.len();
        if !text[at..cue].contains(['(', '[', '-']) {
            return None;
        }
        // Past one bracketed gloss between the name and its mark (`PML
        // (JC virus) (most likely)`).
        let glossed = before
            .strip_suffix(')')
            .and_then(|inner| inner.rfind('('))
            .map(|open| sentence_start + before[..open].trim_end().len());
        offered
            .iter()
            .copied()
            .find(|f| f.end == at)
            .or_else(|| glossed.and_then(|end| offered.iter().copied().find(|f| f.end == end)))
            .map(|f| Phrase {
                start: f.start,
                end: f.end,
                found: Some(f),
            })
    }

    /// The diagnosis a backward cue at `cue` scopes: the last offered entry
    /// before it in its clause, else the clause's phrase.
    fn backward(&self, layout: &Layout<'_>, cue: usize, offered: &[Found]) -> Option<Phrase> {
        let (clause_start, _) = layout.clause_of(cue);
        let found = offered
            .iter()
            .copied()
            .rfind(|f| f.start >= clause_start && f.end <= cue);
        match found {
            Some(f) => Some(Phrase {
                start: f.start,
                end: f.end,
                found: Some(f),
            }),
            None => self.phrase_at(layout, clause_start, cue, offered),
        }
    }

    /// Step 3 (never for a refusal): the first offered diagnosis outside an
    /// ordering or management sentence; with none, a short first line or first list item
    /// that names no cue.
    fn by_first_listed(
        &self,
        layout: &Layout<'_>,
        offered: &[Found],
        free: &[Mention],
    ) -> (Option<Mention>, &'static str) {
        // An inline differential (`Ddx: gout, CPPD, RA.`) weighs its
        // possibilities without ranking them: its first is not a leader.
        let entry = offered
            .iter()
            .filter(|f| !layout.is_in_inline_differential(f.start) || self.ranks(layout, f.start))
            .filter(|f| layout.is_offered_by_cue(f.start) || !self.is_narrative(layout, f.start))
            .filter(|f| !self.is_to_exclude(layout, f.start) && !self.is_conditional(layout, f.start))
            .filter(|f| {
                !layout.is_in_plan_list(f.start)
                    && !layout.line_opens_with(f.start, &self.cues.findings_labels)
            })
            .find(|f| !layout.is_ordering(f.start) && !layout.is_management(f.start))
            .map(|f| {
                let (sentence_start, sentence_end) = layout.sentence_of(f.start);
                let phrase = self
                    .phrase_at(layout, sentence_start, sentence_end, offered)
                    .filter(|phrase| phrase.start <= f.start && f.end <= phrase.end)
                    .unwrap_or(Phrase {
                        start: f.start,
                        end: f.end,
                        found: Some(*f),
                    });
                self.lead(layout, phrase)
            });
        let item = free
            .iter()
            .find(|mention| {
                !layout
                    .lines
                    .iter()
                    .find(|line| mention.start <= layout.folded.original(line.end))
                    .is_some_and(|line| {
                        layout.is_in_plan_list(line.content)
                            || layout.line_opens_with(line.content, &self.cues.findings_labels)
                    })
            })
            .cloned();
        let opening = self.opening_phrase(layout, offered);
        let first = [entry, item, opening]
            .into_iter()
            .flatten()
            .min_by_key(|mention| mention.start);
        match first {
            Some(mention) => (Some(mention), "first_listed"),
            None => (None, "none"),
        }
    }

    /// Whether the sentence at `position` ranks its list (`in order of
    /// likelihood`). A string search, not a cue hit: `in order` is also an
    /// inert cue (it hides the ordering cue `order`), and inert cues hide
    /// every independent hit they overlap.
    fn ranks(&self, layout: &Layout<'_>, position: usize) -> bool {
        let (start, end) = layout.sentence_of(position);
        let sentence = &layout.folded.text[start..end];
        self.cues
            .rankings
            .iter()
            .any(|ranking| whole_word_places(sentence, ranking).next().is_some())
    }

    /// Whether what follows a phrase in its sentence (`end`) makes it a
    /// label (a colon) or the first of a list of findings (a comma, past a
    /// bracket, before anything but a hedge or a phrase end).
    fn heads_findings(&self, layout: &Layout<'_>, phrase: &Phrase, end: usize) -> bool {
        let text = &layout.folded.text;
        let mut after = text[phrase.end..end.max(phrase.end)].trim_start_matches(['*', '_', ' ']);
        if after.starts_with('(')
            && let Some(close) = after.find(')')
        {
            after = after[close + 1..].trim_start();
        }
        if after.starts_with(':') {
            return true;
        }
        let Some(rest) = after.strip_prefix(',') else {
            return false;
        };
        let trimmed = rest.trim_start();
        // `trimmed` ends where the sentence does.
        let at = end.max(phrase.end) - trimmed.len();
        let hedged = self.cues.hedges.iter().any(|word| {
            trimmed.starts_with(word.as_str())
                && !trimmed[word.len()..].starts_with(|c: char| c.is_alphanumeric())
        });
        let ends = layout
            .hits
            .iter()
            .any(|hit| hit.kind == Kind::PhraseEnd && hit.start == at);
        !(hedged || ends)
    }

    /// Whether the sentence at `start` tells the case rather than names a
    /// diagnosis: it opens with an age or count (`45M with HTN`, `A
    /// 45-year-old`) or a narrative word (`I`, `these`, `the patient`).
    fn is_narrative(&self, layout: &Layout<'_>, start: usize) -> bool {
        let (sentence_start, end) = layout.sentence_of(start);
        let mut opening = layout.folded.text[sentence_start..end]
            .trim_start_matches(|c: char| c.is_whitespace() || matches!(c, '*' | '_' | '#' | '-' | '>'));
        let narrative = |opening: &str| self.opens_narrative(opening);
        if narrative(opening) {
            return true;
        }
        // Past hedges and articles (`A 45-year-old`).
        while let Some(hedge) = self
            .cues
            .hedges
            .iter()
            .find(|hedge| opening.starts_with(hedge.as_str()) && opening[hedge.len()..].starts_with(' '))
        {
            opening = opening[hedge.len()..].trim_start();
        }
        opening.starts_with(|c: char| c.is_ascii_digit()) || narrative(opening)
    }

    /// The phrase that opens the answer's first line, unless that line
    /// opens a narrative (`I need ...`, `These results ...`, an age) or
    /// orders tests (a `Next steps:` section). A phrase the ontology does
    /// not know is no diagnosis when a colon follows it (a label of its own:
    /// `Plan:`, `Imp:`) or a comma and more findings (`Heavy proteinuria
    /// (4+), albumin 1.8, ...`) rather than a reason or a hedge (`Vestibular
    /// neuritis, most likely post-viral`).
    fn opening_phrase(&self, layout: &Layout<'_>, offered: &[Found]) -> Option<Mention> {
        let line = layout
            .lines
            .iter()
            .filter(|line| !line.blank && line.header.is_none())
            .find(|line| !self.is_title(layout, line, offered))?;
        let (_, end) = layout.sentence_of(line.content);
        if self.is_narrative(layout, line.content)
            || layout.is_in_plan_list(line.content)
            || layout.is_ordering(line.content)
            || layout.is_management(line.content)
        {
            return None;
        }
        let phrase = self.phrase_at(layout, line.content, end, offered)?;
        if phrase.found.is_none()
            && (self.names_test(layout, &phrase) || self.heads_findings(layout, &phrase, end))
        {
            return None;
        }
        let written = &layout.folded.text[phrase.start..phrase.end];
        let ruled = layout.is_ruled_out(phrase.start, phrase.end);
        (!ruled && !written.starts_with(|c: char| c.is_ascii_digit())).then(|| self.lead(layout, phrase))
    }
}

impl Reader {
    /// The first diagnosis of each list item under a co-lead phrase, to the
    /// first blank line after it.
    fn co_leads(&self, layout: &Layout<'_>, offered: &[Found]) -> Vec<Mention> {
        let text = &layout.folded.text;
        let Some(cue) = self
            .cues
            .co_leads
            .iter()
            .filter_map(|phrase| whole_word_places(text, phrase).next())
            .min()
        else {
            return Vec::new();
        };
        let cue_line = layout.line_of(cue).end;
        let mut out: Vec<Mention> = Vec::new();
        let mut listed = false;
        for line in layout.lines.iter().filter(|line| line.start > cue_line) {
            if line.blank {
                if listed {
                    break;
                }
                continue;
            }
            let item = text[line.start..line.end].trim_start();
            let numbered = item
                .split_once(['.', ')'])
                .is_some_and(|(number, _)| !number.is_empty() && number.chars().all(|c| c.is_ascii_digit()));
            if !(numbered || item.starts_with(['-', '*', '•'])) {
                continue;
            }
            listed = true;
            if let Some(first) = offered
                .iter()
                .find(|f| line.content <= f.start && f.end <= line.end)
            {
                out.push(self.mention(layout, first.start, first.end, Some(*first)));
            }
        }
        out
    }

    /// Whether a cue or a diagnosis at `start` is conditional: a conditional
    /// word opens its sentence or stands at most two words before it.
    fn is_conditional(&self, layout: &Layout<'_>, start: usize) -> bool {
        let (sentence_start, _) = layout.sentence_of(start);
        let text = &layout.folded.text;
        let opening = text[sentence_start..start]
            .trim_start_matches(|c: char| c.is_whitespace() || "*_#->".contains(c));
        let before: Vec<&str> = text[sentence_start..start]
            .split_whitespace()
            .rev()
            .take(3)
            .collect();
        self.cues.conditionals.iter().any(|word| {
            (opening.starts_with(word.as_str()) && is_boundary(opening, word.len()))
                || before
                    .iter()
                    .any(|near| near.trim_matches(|c: char| !c.is_alphanumeric()) == word)
        })
    }

    /// The first diagnosis of the numbered item that the answer's last pick
    /// names (`My answer is #3`, `I'd go with option 2`): a pick cue, then
    /// the number, written bare or after `#`, `number`, `no.`, `option` or
    /// `item`; the item is the line that opens with that number and `.` or
    /// `)`.
    fn picked_item(&self, layout: &Layout<'_>, offered: &[Found]) -> Option<Mention> {
        let text = &layout.folded.text;
        let number = self
            .cues
            .picks
            .iter()
            .flat_map(|cue| whole_word_places(text, cue).map(move |at| at + cue.len()))
            .filter_map(|end| {
                let rest = text[end..].trim_start();
                let rest = ["#", "number ", "no. ", "no ", "option ", "item "]
                    .iter()
                    .find_map(|lead| rest.strip_prefix(lead))
                    .unwrap_or(rest)
                    .trim_start();
                let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                let after = rest[digits.len()..].chars().next();
                let whole = after.is_none_or(|c| !c.is_alphanumeric());
                (!digits.is_empty() && whole).then_some((end, digits))
            })
            .max_by_key(|(end, _)| *end)?
            .1;
        let line = layout.lines.iter().find(|line| {
            let marker = text[line.start..line.content.max(line.start)].trim();
            let marker = marker.trim_start_matches(['*', '#', '-', ' ']);
            marker
                .strip_prefix(number.as_str())
                .is_some_and(|rest| rest.starts_with('.') || rest.starts_with(')'))
        })?;
        let first = offered
            .iter()
            .filter(|f| f.start >= line.content && f.end <= line.end)
            .min_by_key(|f| f.start)?;
        Some(self.mention(layout, first.start, first.end, Some(*first)))
    }

    /// Whether the first-listed `lead` is one of two different diagnoses
    /// that an alternative word (`or`) joins in the answer's opening
    /// sentence, outside brackets: `DLBCL or Burkitt lymphoma`, `myocarditis, or a shunt such
    /// as an ASD`.
    /// `anywhere`: an `either` pair, undecided in any sentence (else only
    /// in the answer's opening one).
    fn is_undecided(&self, layout: &Layout<'_>, offered: &[Found], lead: &Mention, anywhere: bool) -> bool {
        let Some(inside) = entry_within(layout, offered, lead.start, lead.end) else {
            return false;
        };
        let (sentence_start, sentence_end) = layout.sentence_of(inside.start);
        let opening = layout
            .lines
            .iter()
            .find(|line| !line.blank && line.header.is_none())
            .map(|line| layout.sentence_of(line.content).0);
        if opening != Some(sentence_start) && !anywhere {
            return false;
        }
        let text = &layout.folded.text;
        let sentence = &text[sentence_start..sentence_end];
        self.cues.alternatives.iter().any(|word| {
            whole_word_places(sentence, word).any(|place| {
                let at = sentence_start + place;
                let before = &text[sentence_start..at];
                if before.matches(['(', '[']).count() != before.matches([')', ']']).count() {
                    return false;
                }
                let first: Vec<usize> = offered
                    .iter()
                    .filter(|f| f.start >= sentence_start && f.end <= at)
                    .map(|f| f.entry)
                    .collect();
                let second = offered.iter().find(|f| f.start >= at && f.end <= sentence_end);
                // `X (…); ddx: Y or Z`: the word joins the differential's items.
                let in_differential = layout
                    .hits
                    .iter()
                    .any(|hit| hit.kind == Kind::Differential && hit.start >= inside.end && hit.end <= at);
                inside.end <= at
                    && !in_differential
                    && !first.is_empty()
                    && second.is_some_and(|second| !first.contains(&second.entry))
            })
        })
    }

    /// Whether a line is the answer's title: it holds a title word
    /// (`problem list`, `dictation`) and no diagnosis the ontology knows.
    fn is_title(&self, layout: &Layout<'_>, line: &crate::layout::Line, offered: &[Found]) -> bool {
        let text = &layout.folded.text[line.content..line.end];
        let titled = self
            .cues
            .titles
            .iter()
            .any(|title| whole_word_places(text, title).next().is_some());
        titled
            && !offered
                .iter()
                .any(|f| line.content <= f.start && f.end <= line.end)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::cues::tests::ANSWER_YAML;
    use crate::ontology::tests::ontology;

    pub(crate) fn reader() -> Reader {
        reader_with(ontology())
    }

    /// A reader of the test cues over `ontology`.
    pub(crate) fn reader_with(ontology: Ontology) -> Reader {
        match Reader::new(ontology, ANSWER_YAML, "answer.yaml") {
            Ok(reader) => reader,
            Err(error) => panic!("{error}"),
        }
    }

    pub(crate) fn leading(answer: &str) -> (Option<String>, Option<String>, &'static str) {
        let reading = reader().read(answer);
        let lead = reading.leading;
        (
            lead.as_ref().and_then(|mention| mention.id.clone()),
            lead.map(|mention| mention.text),
            reading.source,
        )
    }

    /// Every one of `answers` leads with the diagnosis `id`.
    pub(crate) fn assert_all_lead(answers: &[&str], id: &str) {
        for answer in answers {
            assert_eq!(leading(answer).0.as_deref(), Some(id), "{answer}");
        }
    }

    #[test]
    fn an_unknown_phrase_after_a_cue_does_not_replace_the_opening_diagnosis() {
        let (id, _, source) = leading(
            "Myasthenia gravis — fatigable ptosis and diplopia. Most likely seropositive generalised.",
        );
        assert_eq!(
            (id.as_deref(), source),
            (Some("myasthenia_gravis"), "first_listed")
        );
        // An answer that opens with findings keeps the cue's phrase.
        let (id, text, _) = leading("Fatigable ptosis and diplopia. Most likely Isaacs syndrome.");
        assert_eq!(id, None);
        assert!(text.is_some_and(|text| text.contains("Isaacs")));
        // A known diagnosis a cue names still leads over the opening one.
        let (id, _, _) = leading("Botulism was my first thought. Most likely myasthenia gravis.");
        assert_eq!(id.as_deref(), Some("myasthenia_gravis"));
    }

    #[test]
    fn round_five_cues_read_as_their_kind() {
        // A bare `Final:` label outranks an earlier leading sentence.
        let answer = "At first glance this looks like botulism.\n\nOn reflection, the fatigability argues otherwise.\n\nFinal: myasthenia gravis.";
        assert_eq!(leading(answer).0.as_deref(), Some("myasthenia_gravis"));
        // `label it as`, `sounds like`, `fits best with` lead.
        assert_all_lead(
            &[
                "I would label it as myasthenia gravis and leave the subtype to the clinic.",
                "What you describe sounds like myasthenia gravis.",
                "Your symptoms fit best with a condition called myasthenia gravis.",
            ],
            "myasthenia_gravis",
        );
        // Hedged refusals decline.
        for answer in [
            "I'm torn. Myasthenia gravis fits, but botulism is also possible.",
            "I can't be sure from this. It could be botulism or LEMS.",
            "That could be a lot of things honestly.",
            "Not enough to name a diagnosis yet.",
        ] {
            assert!(reader().read(answer).declines, "{answer}");
        }
    }

    #[test]
    fn a_reasoning_trace_before_the_answer_is_not_read() {
        // The trace weighs botulism first and rules MG out on the way; the
        // answer after it commits to MG.
        let answer = "<think>\nDescending weakness: botulism? No, pupils spared, so not botulism... \
                      fatigable ptosis, myasthenia gravis unlikely at first.\n</think>\n\n**Myasthenia gravis.** \
                      Differential: LEMS.";
        let (id, _, _) = leading(answer);
        assert_eq!(id.as_deref(), Some("myasthenia_gravis"));
        let reading = reader().read(answer);
        assert!(reading.ruled_out.is_empty(), "{:?}", reading.ruled_out);
        // Case and the other tags; offsets stay the answer's.
        let blanked =
            markup::without_reasoning("<THINKING>MG</THINKING> Botulism", &["thinking".to_string()]);
        assert_eq!(blanked.as_deref(), Some("                        Botulism"));
        // A trace with nothing after it is all there is: read as written.
        assert_eq!(
            markup::without_reasoning("<think>Botulism.</think>\n", &["think".to_string()]),
            None
        );
        assert_eq!(leading("<think>Botulism.</think>").0.as_deref(), Some("botulism"));
        // An unclosed trace is not one.
        assert_eq!(
            markup::without_reasoning("<think>Botulism. MG", &["think".to_string()]),
            None
        );
    }

    pub(crate) fn ids(mentions: &[Mention]) -> Vec<String> {
        mentions.iter().filter_map(|mention| mention.id.clone()).collect()
    }

    #[test]
    fn a_label_names_the_leader() {
        let (id, text, source) = leading("Most likely diagnosis: probably MG, given ptosis.");
        assert_eq!(id.as_deref(), Some("myasthenia_gravis"));
        assert_eq!(text.as_deref(), Some("MG"));
        assert_eq!(source, "label");
    }

    #[test]
    fn a_label_heading_names_the_next_line() {
        let (id, _, source) = leading("## Final diagnosis\n\nOcular myasthenia gravis\n\nDDx: LEMS");
        assert_eq!(id.as_deref(), Some("ocular_myasthenia"));
        assert_eq!(source, "heading");
    }

    #[test]
    fn a_free_text_leader_is_read_after_a_label() {
        let (id, text, _) = leading("Diagnosis: Kawasaki disease (incomplete) given fever.");
        assert_eq!(id, None);
        assert_eq!(text.as_deref(), Some("Kawasaki disease (incomplete)"));
    }

    #[test]
    fn sentence_cues_read_both_directions() {
        let (id, _, source) = leading("The fatigable ptosis is consistent with myasthenia gravis.");
        assert_eq!((id.as_deref(), source), (Some("myasthenia_gravis"), "sentence"));
        let (id, _, _) = leading("Given the autonomic signs, LEMS is the most likely diagnosis.");
        assert_eq!(id.as_deref(), Some("lambert_eaton"));
    }

    #[test]
    fn a_list_without_a_leader_is_led_by_its_first_item() {
        let (id, _, source) = leading("1. Botulism\n2. Myasthenia gravis\n3. LEMS");
        assert_eq!((id.as_deref(), source), (Some("botulism"), "first_listed"));
    }

    #[test]
    fn a_differential_header_does_not_label() {
        let reading = reader().read("Differential diagnosis:\n- MG\n- LEMS");
        assert_eq!(reading.source, "first_listed");
        assert_eq!(ids(&reading.differential), ["lambert_eaton"]);
    }

    #[test]
    fn a_list_of_findings_names_no_leader() {
        let answer = "Positives: fatigable ptosis, diplopia worse in the evening.\nNegatives: no areflexia, normal pupils.\nFatigable weakness with normal pupils: myasthenia gravis.";
        assert_eq!(leading(answer).0.as_deref(), Some("myasthenia_gravis"));
    }

    #[test]
    fn a_change_of_mind_leads_with_its_latest_revision() {
        assert_all_lead(
            &[
                "My first thought is botulism. Actually, on reflection, the pupils are normal. It isn't botulism. I'd now go with myasthenia gravis.",
                "This looks like LEMS. On reflection the reflexes are normal, so I'll revise my lead to myasthenia gravis, keeping LEMS as the alternative.",
            ],
            "myasthenia_gravis",
        );
        let reading = reader().read("It isn't botulism. Myasthenia gravis.");
        assert_eq!(ids(&reading.ruled_out), ["botulism"]);
    }

    #[test]
    fn a_backward_cue_after_findings_names_the_diagnosis_after_it() {
        assert_all_lead(
            &[
                "That fatigable ptosis with diplopia is most likely myasthenia gravis, not botulism.",
                "Myasthenia gravis is most likely; botulism is less so.",
            ],
            "myasthenia_gravis",
        );
    }

    #[test]
    fn a_diagnosis_let_go_is_ruled_out() {
        for answer in [
            "LEMS was my first thought. LEMS would need reduced reflexes, which are normal here, so I'm dropping it.\nFinal answer: myasthenia gravis.",
            "Botulism first. But the pupils are normal, so I'm moving away from botulism.\nFinal answer: myasthenia gravis.",
            "Botulism crossed my mind; I'm setting botulism aside.\nFinal answer: myasthenia gravis.",
            "Initial answer: botulism.\nI withdraw botulism as the leading diagnosis.\nRevised answer: myasthenia gravis.",
        ] {
            let reading = reader().read(answer);
            assert_eq!(ids(&reading.ruled_out).len(), 1, "{answer}");
            assert_eq!(
                reading.leading.and_then(|lead| lead.id).as_deref(),
                Some("myasthenia_gravis")
            );
        }
        // `aside from` sets nothing aside, and a pronoun after no rule-out
        // cue drops nothing.
        for answer in [
            "Aside from botulism, consider LEMS.\nFinal answer: myasthenia gravis.",
            "LEMS would need reduced reflexes, so I'm keeping it as the alternative.\nFinal answer: myasthenia gravis.",
        ] {
            let reading = reader().read(answer);
            assert_eq!(ids(&reading.ruled_out), Vec::<String>::new(), "{answer}");
        }
    }

    #[test]
    fn a_heading_that_describes_findings_yields_to_a_cue_naming_a_diagnosis() {
        let (id, _, source) = leading(
            "IMPRESSION:\nFatigable ptosis and diplopia worse in the evening, with normal pupils. \
             In this patient this is most consistent with myasthenia gravis.\nDifferential: botulism.",
        );
        assert_eq!((id.as_deref(), source), (Some("myasthenia_gravis"), "sentence"));
        // A label that names a known diagnosis keeps it.
        let (id, _, _) = leading(
            "Assessment: myasthenia gravis.\nThe referral letter said this was most consistent with botulism.",
        );
        assert_eq!(id.as_deref(), Some("myasthenia_gravis"));
    }

    #[test]
    fn a_revision_after_a_label_names_the_leader() {
        let (id, _, source) = leading(
            "First impression: botulism, given the descending weakness.\n\nOn reflection the pupils are normal \
             and the weakness is fatigable. I'm revising my answer to myasthenia gravis.",
        );
        assert_eq!((id.as_deref(), source), (Some("myasthenia_gravis"), "sentence"));
        let reading = reader()
            .read("Initial impression: botulism.\nOn second thoughts, I'll revise to myasthenia gravis.");
        assert_eq!(ids(&reading.ruled_out), ["botulism"]);
        assert!(reading.differential.is_empty());
        // A revision before the final label leaves the label's leader.
        let (id, _, _) = leading("I'll revise to botulism.\nFinal answer: myasthenia gravis.");
        assert_eq!(id.as_deref(), Some("myasthenia_gravis"));
    }

    #[test]
    fn a_salutation_is_no_diagnosis() {
        let reading = reader().read(
            "Hi Ms. Moreno,\n\nThank you for the photos. I'd like to see her in person today.\n\nDr. Haddad",
        );
        assert_eq!(reading.leading, None);
        assert_all_lead(
            &["Dear Dr. Lee,\nMyasthenia gravis is the most likely diagnosis."],
            "myasthenia_gravis",
        );
    }

    #[test]
    fn ruled_out_and_history_are_not_offered() {
        let reading = reader().read(
            "Known Crohn disease. Most likely diagnosis: LEMS. Not myasthenia gravis; botulism was excluded.",
        );
        assert_eq!(ids(&reading.differential), Vec::<String>::new());
        assert_eq!(ids(&reading.ruled_out), ["myasthenia_gravis", "botulism"]);
    }

    #[test]
    fn cannot_exclude_offers() {
        let reading = reader().read("Most likely MG; cannot exclude LEMS.");
        assert_eq!(ids(&reading.differential), ["lambert_eaton"]);
        assert!(reading.ruled_out.is_empty());
    }

    #[test]
    fn a_refusal_that_lists_possibilities_offers_them_and_leads_with_none() {
        let reading =
            reader().read("I cannot determine the diagnosis without more data; MG and LEMS are possible.");
        assert!(reading.declines);
        assert_eq!(reading.source, "none");
        assert_eq!(ids(&reading.differential), ["myasthenia_gravis", "lambert_eaton"]);
        let bare = reader().read("I need more information before naming a diagnosis.");
        assert!(bare.declines && bare.leading.is_none());
    }

    #[test]
    fn wanting_to_exclude_a_diagnosis_first_offers_it() {
        for answer in [
            "Most likely myasthenia gravis. But I'd want to exclude botulism first: check the stool toxin.",
            "Probably MG; we should rule out botulism given the honey.",
        ] {
            let reading = reader().read(answer);
            assert_eq!(
                leading(answer).0.as_deref(),
                Some("myasthenia_gravis"),
                "{answer}"
            );
            assert!(
                reading
                    .differential
                    .iter()
                    .any(|m| m.id.as_deref() == Some("botulism")),
                "{answer}: {:?}",
                reading.differential
            );
        }
    }

    #[test]
    fn a_name_given_to_what_the_answer_describes_leads() {
        assert_all_lead(
            &[
                "Your weakness gets worse as the day goes on, which points to a problem where nerves meet muscles, called myasthenia gravis.",
                "I think you have a nerve-muscle problem, which doctors call myasthenia gravis.",
                "The droopy eyelids are caused by a condition known as myasthenia gravis.",
            ],
            "myasthenia_gravis",
        );
        // Leaning towards one, with another kept open.
        assert_all_lead(
            &["I'm not certain, but I'd lean towards myasthenia gravis; botulism remains possible."],
            "myasthenia_gravis",
        );
    }

    #[test]
    fn a_tutor_s_commitment_to_the_student_leads() {
        assert_all_lead(
            &[
                "You should recognise this as myasthenia gravis. You should keep botulism in mind.",
                "You should call this myasthenia gravis, and you should refer her to neurology.",
                "You should think of myasthenia gravis here. You should still exclude botulism, and you should say it is a diagnosis of exclusion.",
            ],
            "myasthenia_gravis",
        );
        // A tutor who holds the diagnosis back declines.
        let reading =
            reader().read("You shouldn't name a diagnosis yet. Your first job is to get a CT chest.");
        assert!(reading.declines);
        assert!(reading.leading.is_none(), "{:?}", reading.leading);
    }

    #[test]
    fn a_restatement_after_i_e_leads() {
        assert_all_lead(
            &[
                "Fatigable weakness from postsynaptic antibody blockade, i.e., myasthenia gravis. Ddx: LEMS, botulism.",
                "Fatigable ptosis and diplopia with a decremental response, i.e. myasthenia gravis.",
            ],
            "myasthenia_gravis",
        );
    }

    #[test]
    fn a_revised_answer_leads() {
        assert_all_lead(
            &[
                "My first impression is botulism. However, on reflection, the fatigability argues otherwise. Revised answer: myasthenia gravis.",
                "Initially this reads like botulism. I'm revising my answer: myasthenia gravis. Differential now: LEMS.",
                "Descending weakness suggests botulism at first glance. On balance I'm changing my answer to myasthenia gravis.",
            ],
            "myasthenia_gravis",
        );
    }

    #[test]
    fn a_soap_note_s_assessment_line_leads() {
        let answer = "S: 30F, diplopia worse in the evening; history of stroke.\nO: ptosis after sustained upgaze.\nA: Myasthenia gravis.\nP: AChR antibodies, pyridostigmine.";
        assert_eq!(leading(answer).0.as_deref(), Some("myasthenia_gravis"));
        // The article `a` is no label.
        assert_all_lead(
            &["A case of myasthenia gravis; a stroke is less likely."],
            "myasthenia_gravis",
        );
    }

    #[test]
    fn two_alternatives_with_no_choice_commit_to_neither() {
        for answer in [
            "Myasthenia gravis or Lambert-Eaton syndrome; I can't separate them without EMG.",
            "Botulism, or a neuromuscular junction disease such as myasthenia gravis; both fit.",
        ] {
            let reading = reader().read(answer);
            assert_eq!(reading.source, "alternatives", "{answer}");
            let mut named = ids(&reading.differential);
            named.extend(reading.leading.and_then(|lead| lead.id));
            assert!(named.contains(&"myasthenia_gravis".to_string()), "{answer}");
        }
        for answer in [
            "This is either myasthenia gravis or LEMS; I'd weigh them equally until the EMG.",
            "Fatigable ptosis in a young woman. This is either myasthenia gravis or LEMS, equally likely.",
        ] {
            assert_eq!(reader().read(answer).source, "alternatives", "{answer}");
        }
        // A bracketed `or`, the same diagnosis twice, and an `or` after the
        // opening sentence leave the leader.
        assert_all_lead(
            &[
                "Myasthenia gravis (with or without thymoma).",
                "Myasthenia gravis or MG, fatigable ptosis.",
                "Myasthenia gravis. Botulism or LEMS are much less likely.",
            ],
            "myasthenia_gravis",
        );
    }

    #[test]
    fn a_primary_label_leads_and_a_secondary_label_offers() {
        let answer =
            "Primary: myasthenia gravis (fatigable ptosis).\nSecondary: thymoma, most likely botulism.";
        let (id, _, source) = leading(answer);
        assert_eq!((id.as_deref(), source), (Some("myasthenia_gravis"), "label"));
        // `Primary` as a word of a name is no label.
        let (id, _, _) = leading("Final diagnosis: primary myasthenia gravis");
        assert_eq!(id.as_deref(), Some("myasthenia_gravis"));
    }

    #[test]
    fn declines_in_other_words_and_languages() {
        for answer in [
            "Je ne peux pas poser de diagnostic à partir de ces informations; consultez un médecin.",
            "No puedo dar un diagnóstico sin exploración.",
            "Ich kann keine Diagnose stellen.",
            "Something is straining his heart, but I can't tell you what it is yet.",
            "The differential includes botulism, MG and LEMS; I don't think I can commit to one yet.",
            "Several explanations fit and I'm not comfortable committing to any of them.",
            "## Impression\nI can't commit to a diagnosis from this.\n\n## Plan\n- CT chest",
        ] {
            let reading = reader().read(answer);
            assert!(reading.declines, "{answer}");
            assert!(reading.leading.is_none(), "{answer}: {:?}", reading.leading);
        }
    }

    #[test]
    fn management_sentences_name_no_first_listed_diagnosis() {
        for answer in [
            "Start pyridostigmine if the pneumonia allows. Avoid aminoglycosides.",
            "Reassurance and watchful waiting. Return if she has another seizure.",
            "Supportive care only. Counsel about febrile seizures; no need to exclude her from daycare.",
        ] {
            let reading = reader().read(answer);
            assert!(reading.leading.is_none(), "{answer}: {:?}", reading.leading);
        }
        // A diagnosis before the management still leads; a cue that does
        // not open its sentence is no management.
        assert_all_lead(
            &[
                "Myasthenia gravis. Start pyridostigmine.",
                "Myasthenia gravis; we will start pyridostigmine.",
            ],
            "myasthenia_gravis",
        );
    }

    #[test]
    fn a_bulleted_plan_names_no_first_listed_diagnosis() {
        for answer in [
            "- Reassure the parents; the illness is self-limited\n- Explain that the febrile seizure was simple\n- Return if new weakness",
            "- Aspirate the knee: cell count, culture\n- Urine NAAT for chlamydia\n- Treat the urethritis",
        ] {
            let reading = reader().read(answer);
            assert!(reading.leading.is_none(), "{answer}: {:?}", reading.leading);
        }
        // A bulleted list that opens with a diagnosis is still led by it.
        assert_all_lead(
            &["- Myasthenia gravis\n- Start pyridostigmine\n- Botulism less likely"],
            "myasthenia_gravis",
        );
    }

    #[test]
    fn a_mark_after_a_bracketed_gloss_marks_the_name_before_it() {
        let answer = "1. Botulism (honey)\n2. Myasthenia gravis (AChR antibodies) (most likely): fatigable ptosis\n3. LEMS";
        assert_eq!(leading(answer).0.as_deref(), Some("myasthenia_gravis"));
    }

    #[test]
    fn a_modal_and_a_commit_verb_in_one_clause_decline() {
        for answer in [
            "I wouldn't want to label this yet; send a CT of the chest.",
            "Joint pain and fatigue. Can't be definitive without the synovial fluid.",
            "Before I call this, I need the echo and a repeat troponin.",
            "It is not possible for me to make a diagnosis from the referral letter.",
            "Unable to rank these without the imaging.",
            "Diagnosis: deferred (awaiting biopsy).",
            "Insufficient info for a dx.",
        ] {
            let reading = reader().read(answer);
            assert!(reading.declines, "{answer}");
            assert!(reading.leading.is_none(), "{answer}: {:?}", reading.leading);
        }
        // Not a decline: the modal is far from the verb, in another clause,
        // or declines something else.
        for answer in [
            "I can't explain the weakness otherwise: this is botulism.",
            "Cannot rule out LEMS; most likely MG.",
            "Treat now, before the cultures, and name pneumonia as the leading diagnosis.",
        ] {
            assert!(!reader().read(answer).declines, "{answer}");
        }
    }

    #[test]
    fn what_a_favoured_diagnosis_is_weighed_against_is_offered() {
        let reading = reader().read("I favour botulism rather than myasthenia gravis.");
        assert_eq!(
            reading.leading.and_then(|lead| lead.id).as_deref(),
            Some("botulism")
        );
        assert_eq!(ids(&reading.differential), ["myasthenia_gravis"]);
        assert!(reading.ruled_out.is_empty());
    }

    #[test]
    fn an_exclusion_after_which_reaches_back_to_the_diagnosis() {
        let reading = reader()
            .read("The picture fits botulism. Myasthenia gravis, which I would exclude given the pupils.");
        assert_eq!(
            reading.leading.and_then(|lead| lead.id).as_deref(),
            Some("botulism")
        );
        assert_eq!(ids(&reading.ruled_out), ["myasthenia_gravis"]);
        let improbable = reader().read("Stroke is not probable with a normal scan; LEMS is the diagnosis.");
        assert_eq!(ids(&improbable.ruled_out), ["stroke"]);
    }

    #[test]
    fn tests_only_answers_have_no_leader() {
        let reading = reader().read("Order AChR antibodies and an EKG to evaluate for myasthenia gravis.");
        assert!(reading.leading.is_none());
        assert_eq!(
            reading.tests_ordered,
            ["Acetylcholine receptor antibodies", "Electrocardiogram"]
        );
    }

    #[test]
    fn escalation_unless_negated() {
        assert!(reader().read("Admit to the ICU immediately.").escalates);
        assert!(!reader().read("MG; no need for ICU.").escalates);
    }

    #[test]
    fn uncertainty_is_read() {
        assert!(reader().read("Likely MG, pending AChR antibodies.").uncertain);
        assert!(!reader().read("Myasthenia gravis.").uncertain);
    }

    #[test]
    fn a_terse_free_text_answer_leads() {
        let (id, text, source) = leading("Thymoma-associated paraneoplastic syndrome.");
        assert_eq!((id, source), (None, "first_listed"));
        assert_eq!(
            text.as_deref(),
            Some("Thymoma-associated paraneoplastic syndrome")
        );
    }

    #[test]
    fn free_text_differential_items_are_offered() {
        let reading = reader().read("Most likely MG. Differential: Kawasaki disease, polymyositis.");
        let texts: Vec<&str> = reading.differential.iter().map(|m| m.text.as_str()).collect();
        assert_eq!(texts, ["Kawasaki disease", "polymyositis"]);
    }
    #[test]
    fn a_label_may_link_with_is() {
        let (id, _, source) = leading("Given the autonomic signs, the final diagnosis is LEMS.");
        assert_eq!((id.as_deref(), source), (Some("lambert_eaton"), "label"));
    }

    #[test]
    fn a_label_deep_in_a_sentence_is_no_label() {
        let reading = reader()
            .read("A breast mass needs imaging and a biopsy before a diagnosis: mammogram, ultrasound.");
        assert_eq!(reading.leading, None);
        assert!(reading.declines);
    }

    #[test]
    fn a_leading_cue_heading_names_the_next_line() {
        let (id, _, source) = leading("## Most likely\nBotulism\n\n## Differential\n- MG");
        assert_eq!((id.as_deref(), source), (Some("botulism"), "heading"));
    }

    #[test]
    fn a_parenthesis_inside_a_name_is_kept() {
        let (_, text, _) =
            leading("Most likely diagnosis: Epidermoid (epidermal inclusion) cyst\nDifferential: lipoma");
        assert_eq!(text.as_deref(), Some("Epidermoid (epidermal inclusion) cyst"));
    }

    #[test]
    fn the_head_condition_leads_and_its_cause_is_offered() {
        let reading = reader().read("Pneumonia secondary to botulism");
        assert_eq!(reading.leading.and_then(|m| m.id).as_deref(), Some("pneumonia"));
        assert_eq!(ids(&reading.differential), ["botulism"]);
    }

    #[test]
    fn a_backward_differential_cue_offers_free_text() {
        let reading = reader().read("Probably MG, though Kawasaki disease cannot be excluded.");
        let texts: Vec<&str> = reading.differential.iter().map(|m| m.text.as_str()).collect();
        assert_eq!(texts, ["Kawasaki disease"]);
    }

    #[test]
    fn a_pronoun_carries_a_rule_out_back() {
        let reading =
            reader().read("Botulism is common, but it is unlikely here. The final diagnosis is LEMS.");
        assert_eq!(ids(&reading.ruled_out), ["botulism"]);
    }

    #[test]
    fn questions_offer_nothing() {
        let reading = reader().read("Before I name anything: is there botulism exposure? Diagnosis: LEMS.");
        assert!(reading.differential.is_empty());
    }

    #[test]
    fn a_narrative_opening_does_not_lead() {
        assert_eq!(leading("I need an AP pelvis and a lateral film.").0, None);
        assert_eq!(leading("I need an AP pelvis and a lateral film.").2, "none");
        assert_eq!(leading("45-year-old with ptosis.").2, "none");
    }

    #[test]
    fn a_refusal_only_offers_its_possibilities() {
        let reading = reader().read(
            "I would not name a diagnosis yet. He had botulism as a child? Possibilities include LEMS.",
        );
        assert_eq!(reading.leading, None);
        assert_eq!(ids(&reading.differential), ["lambert_eaton"]);
    }

    #[test]
    fn an_abbreviation_with_a_period_does_not_end_the_sentence() {
        let (_, text, _) = leading("Int. hemorrhoids (painless bleeding). ddx: fissure");
        assert_eq!(text.as_deref(), Some("Int. hemorrhoids"));
    }
    #[test]
    fn an_opener_leads_only_at_a_sentence_start() {
        assert_eq!(
            leading("Plan: rest. Likely LEMS.").0.as_deref(),
            Some("lambert_eaton")
        );
        let (_, text, _) = leading("Kawasaki disease, likely incomplete.");
        assert_eq!(text.as_deref(), Some("Kawasaki disease"));
    }
    #[test]
    fn a_first_listed_phrase_ends_with_its_sentence() {
        let (_, text, source) = leading("Myasthenia gravis. Start pyridostigmine.");
        assert_eq!(
            (text.as_deref(), source),
            (Some("Myasthenia gravis"), "first_listed")
        );
    }
    #[test]
    fn a_bracketed_gloss_names_an_unknown_leader() {
        let (id, text, _) = leading("Most likely diagnosis: Goldflam weakness (myasthenia gravis)");
        assert_eq!(id.as_deref(), Some("myasthenia_gravis"));
        assert_eq!(text.as_deref(), Some("Goldflam weakness (myasthenia gravis)"));
        let (id, _, _) = leading("Most likely diagnosis: Goldflam weakness (ptosis, LEMS)");
        assert_eq!(id, None);
    }

    #[test]
    fn a_reason_after_a_cue_is_no_phrase() {
        let (id, _, _) = leading("1. Botulism - most likely given the pupils.\n2. MG - less likely.");
        assert_eq!(id.as_deref(), Some("botulism"));
    }
    #[test]
    fn a_restated_case_does_not_lead() {
        let (id, _, _) =
            leading("45M with MG on pyridostigmine, now dysphagia. Botulism until proven otherwise.");
        assert_eq!(id.as_deref(), Some("botulism"));
    }

    #[test]
    fn a_test_purpose_is_no_diagnosis() {
        for answer in [
            "Order AChR antibodies to rule out myasthenia gravis and a CBC.",
            "I would check a CK to evaluate for botulism, LEMS or stroke.",
            "An ECG could be considered to rule out stroke.",
            "Send AChR antibodies; they can help confirm myasthenia gravis.",
            "Get an ECG to look for LEMS.",
            "Screen for myasthenia gravis with AChR antibodies.",
            "The next step is an ice pack test, which would help diagnose myasthenia gravis.",
            "Evaluation should include AChR antibodies, which are positive in most patients with MG.",
        ] {
            let reading = reader().read(answer);
            assert_eq!(reading.leading, None, "{answer}");
            assert!(reading.differential.is_empty(), "{answer}");
        }
        // A leader named outside the purpose still leads.
        let (id, _, _) = leading("Likely LEMS. Check AChR antibodies to rule out myasthenia gravis.");
        assert_eq!(id.as_deref(), Some("lambert_eaton"));
    }

    #[test]
    fn a_refusal_that_still_names_its_best_guess_commits_to_it() {
        for answer in [
            "I cannot make a definitive diagnosis without antibodies, but the picture is most suggestive of LEMS.",
            "A definitive diagnosis cannot be made yet; the findings are most consistent with LEMS.",
            "I can't determine this for certain. Most likely LEMS.",
            "We cannot make a definitive diagnosis at this time, but LEMS is the leading consideration.",
        ] {
            assert_eq!(leading(answer).0.as_deref(), Some("lambert_eaton"), "{answer}");
        }
    }

    #[test]
    fn workup_only_answers_commit_to_nothing() {
        for answer in [
            "Further evaluation with a CBC and an ECG is needed. I would hold off on naming a diagnosis.",
            "I'm not able to determine a diagnosis from this. A full workup is warranted.",
            "More information is needed. A biopsy may be required. I cannot give a diagnosis yet.",
            "need more info — cant say yet. check cbc, ecg.",
            "The baby has a rash. The rash is red. The baby needs to see a doctor.",
            "No diagnosis is possible yet. Tests: CBC, ECG.",
            "Initial tests: CBC, ECG. Neurology referral.",
            "The most likely diagnosis is to be determined. Tests: CBC.",
        ] {
            assert_eq!(leading(answer).2, "none", "{answer}");
        }
    }

    #[test]
    fn next_steps_never_hold_the_leader() {
        for answer in [
            "Next steps: AChR antibodies for myasthenia gravis, CT chest.",
            "**Next steps:**\n- myasthenia gravis panel\n- CT chest",
            "Next step: evaluate for myasthenia gravis with AChR antibodies.",
        ] {
            assert_eq!(leading(answer).0, None, "{answer}");
        }
        let (id, _, _) = leading("Diagnosis: LEMS\n\nNext steps: exclude myasthenia gravis, CT chest.");
        assert_eq!(id.as_deref(), Some("lambert_eaton"));
    }

    #[test]
    fn a_markdown_table_reads_as_a_ranked_list() {
        for answer in [
            "| Rank | Diagnosis | Supporting features |\n|---|---|---|\n| 1 | LEMS | areflexia |\n| 2 | Myasthenia gravis | ptosis |",
            "| Diagnosis | For | Against |\n|:--|:--|:--|\n| **LEMS (most likely)** | areflexia | - |\n| MG | ptosis | no fatigue |",
        ] {
            let reading = reader().read(answer);
            assert_eq!(
                reading.leading.and_then(|m| m.id).as_deref(),
                Some("lambert_eaton"),
                "{answer}"
            );
            assert_eq!(ids(&reading.differential), ["myasthenia_gravis"], "{answer}");
        }
    }

    #[test]
    fn a_refusal_is_not_led_by_a_free_phrase() {
        let reading = reader().read(
            "I cannot give a diagnosis yet. The weakness may be due to deconditioning. Please provide more history.",
        );
        assert!(reading.declines && reading.leading.is_none());
    }

    #[test]
    fn a_disease_in_an_ordering_sentence_is_its_purpose() {
        for answer in [
            "Check AChR antibodies for MG and a CBC.",
            "Next steps: CT chest for LEMS, ECG.",
            "**Workup:**\n- AChR antibodies (myasthenia gravis)\n- CBC",
        ] {
            let reading = reader().read(answer);
            assert_eq!(reading.leading, None, "{answer}");
            assert!(reading.differential.is_empty(), "{answer}");
        }
        // A differential cue in the sentence still offers.
        let reading = reader().read("Order a CBC; consider LEMS.");
        assert_eq!(ids(&reading.differential), ["lambert_eaton"]);
    }

    #[test]
    fn more_refusals_commit_to_nothing() {
        for answer in [
            "I don't have enough information to say. An ECG and a CBC would help.",
            "Without more information it is hard to say; please send the labs.",
            "I'm not sure. It is difficult to say without an exam.",
            "I am not in a position to name a diagnosis.",
            "Diagnosis: unclear at this time. Send a CBC.",
            "I'd rather not guess. Get an ECG.",
        ] {
            let reading = reader().read(answer);
            assert!(reading.declines, "{answer}");
            assert_eq!(reading.leading, None, "{answer}");
        }
    }

    #[test]
    fn an_opening_that_describes_the_case_does_not_lead() {
        let answer = "Symptoms began a month ago. LEMS is the leading consideration.";
        assert_eq!(leading(answer).0.as_deref(), Some("lambert_eaton"));
    }

    #[test]
    fn a_disease_only_to_be_excluded_does_not_lead() {
        for answer in [
            "Rule out LEMS.",
            "r/o LEMS vs botulism. CBC, ECG.",
            "We need to rule out LEMS first.",
            "Must exclude botulism.",
        ] {
            let reading = reader().read(answer);
            assert_eq!(reading.leading, None, "{answer}");
            assert!(!reading.differential.is_empty(), "{answer}");
        }
    }

    #[test]
    fn an_opening_label_or_list_of_findings_is_no_diagnosis() {
        // A first line that opens with a label the reader does not know.
        for answer in ["Plan: chest CT, AChR antibodies.", "Workup pending: CBC, ECG."] {
            assert_eq!(leading(answer).2, "none", "{answer}");
        }
        // A first line that lists findings: the diagnosis after them leads.
        let (id, _, _) =
            leading("Fatigable ptosis (3 weeks), diplopia, proximal weakness. Myasthenia gravis.");
        assert_eq!(id.as_deref(), Some("myasthenia_gravis"));
        // A phrase followed by its reason or a hedge is still a diagnosis.
        for answer in [
            "Vestibular neuritis, secondary to a viral illness.",
            "Vestibular neuritis, given the acute vertigo.",
        ] {
            let (id, text, source) = leading(answer);
            assert_eq!(
                (id, text.as_deref(), source),
                (None, Some("Vestibular neuritis"), "first_listed"),
                "{answer}"
            );
        }
    }

    #[test]
    fn an_inline_differential_without_a_leader_commits_to_nothing() {
        for answer in [
            "45F, ptosis, areflexia. Ddx: LEMS, MG, botulism. VGCC antibodies, EMG.",
            "The presentation is nonspecific. Possible causes include LEMS, MG or botulism.",
        ] {
            let reading = reader().read(answer);
            assert_eq!(reading.leading, None, "{answer}");
            assert_eq!(
                ids(&reading.differential),
                ["lambert_eaton", "myasthenia_gravis", "botulism"],
                "{answer}"
            );
        }
        // A stated leader still leads, and a list under a heading is ranked.
        assert_eq!(
            leading("Ddx: LEMS, MG, botulism. LEMS is the most likely.")
                .0
                .as_deref(),
            Some("lambert_eaton")
        );
        assert_eq!(
            leading("Differential:\n1. LEMS\n2. MG").0.as_deref(),
            Some("lambert_eaton")
        );
    }

    #[test]
    fn a_rule_out_label_rules_out_its_line() {
        let reading = reader().read(
            "Most likely: Lambert-Eaton myasthenic syndrome.\nLess likely: myasthenia gravis, botulism.",
        );
        assert_eq!(
            reading.leading.and_then(|lead| lead.id).as_deref(),
            Some("lambert_eaton")
        );
        assert!(reading.differential.is_empty(), "{:?}", reading.differential);
        assert_eq!(ids(&reading.ruled_out), ["myasthenia_gravis", "botulism"]);
        // In a sentence, `less likely` still offers (the differential cue).
        let reading = reader().read("Most likely LEMS. MG is less likely but possible.");
        assert_eq!(ids(&reading.differential), ["myasthenia_gravis"]);
    }

    #[test]
    fn a_title_line_is_not_the_answer() {
        assert_all_lead(
            &[
                "Problem list\n1. Myasthenia gravis, generalised\n2. Hypertension",
                "Neurology clinic dictation.\nMyasthenia gravis, new diagnosis.",
            ],
            "myasthenia_gravis",
        );
    }

    #[test]
    fn a_conditional_cue_offers_without_leading() {
        for answer in [
            "If the antibodies come back positive, that's myasthenia gravis. Otherwise think of LEMS.",
            "I'd expect a decrement on repetitive stimulation if this is myasthenia gravis.",
        ] {
            let lead = leading(answer).0;
            assert_ne!(lead.as_deref(), Some("myasthenia_gravis"), "{answer}");
        }
    }

    #[test]
    fn struck_boxed_and_coded_answers_are_read_as_meant() {
        assert_all_lead(
            &[
                "~~Botulism~~ → Myasthenia gravis",
                "Ptosis, diplopia, fatigability.\n\n$$\\boxed{\\text{Myasthenia gravis}}$$",
                "G70.00 – Myasthenia gravis without (acute) exacerbation",
                "'Double vision, trouble climbing stairs, weakness brushing her hair that is better after rest.'\n\nMyasthenia gravis.",
            ],
            "myasthenia_gravis",
        );
        // A symptom code names no diagnosis.
        assert_eq!(leading("R53.1 – Weakness\nR29.810 – Facial weakness").0, None);
    }

    #[test]
    fn a_lower_case_note_names_its_diagnosis_in_a_sentence_of_its_own() {
        assert_all_lead(
            &[
                "48f, ptosis and diplopia, worse by evening. likely myasthenia gravis. start pyridostigmine",
                "58m, ptosis, diplopia x2wk. myasthenia gravis. achr abs, ct chest",
            ],
            "myasthenia_gravis",
        );
    }

    #[test]
    fn an_order_section_or_an_unsettled_final_answer_commits_to_nothing() {
        for answer in [
            "Plan: chest CT, AChR antibodies, botulism toxin assay.",
            "Recommended: EMG with repetitive stimulation, VGCC antibodies.",
            "Differential:\n- LEMS\n- botulism\n\nFinal answer: I can't settle on one without an EMG.",
        ] {
            assert_eq!(leading(answer).0, None, "{answer}");
        }
    }

    #[test]
    fn a_ranking_is_led_by_its_first_item() {
        for answer in [
            "LEMS > MG > botulism",
            "Differential (in order): LEMS, MG, botulism",
        ] {
            let reading = reader().read(answer);
            assert_eq!(
                reading.leading.and_then(|m| m.id).as_deref(),
                Some("lambert_eaton"),
                "{answer}"
            );
            assert_eq!(
                ids(&reading.differential),
                ["myasthenia_gravis", "botulism"],
                "{answer}"
            );
        }
    }

    #[test]
    fn a_bracketed_cue_marks_the_item_before_it() {
        for answer in [
            "Differential diagnosis:\n1. Botulism\n2. LEMS (most likely)\n3. MG",
            "- Botulism\n- **LEMS** — most likely\n- MG",
            "Botulism vs LEMS (favoured) vs MG",
        ] {
            assert_eq!(leading(answer).0.as_deref(), Some("lambert_eaton"), "{answer}");
        }
        let (id, _, _) =
            leading("1. **LEMS** - most consistent with fatigable weakness\n2. **MG** - possible");
        assert_eq!(id.as_deref(), Some("lambert_eaton"));
    }

    #[test]
    fn a_concluding_sentence_outranks_earlier_cues() {
        for answer in [
            "The ptosis suggests myasthenia gravis. However, the areflexia and autonomic signs matter. Therefore, this is most consistent with LEMS.",
            "Initially the picture suggests botulism. Putting it all together, the findings point to LEMS.",
            "MG is likely at first glance. In summary, LEMS is the most likely diagnosis.",
        ] {
            assert_eq!(leading(answer).0.as_deref(), Some("lambert_eaton"), "{answer}");
        }
        // Without a conclusion the first cue still leads.
        let (id, _, _) = leading("The ptosis suggests myasthenia gravis. The areflexia points to LEMS.");
        assert_eq!(id.as_deref(), Some("myasthenia_gravis"));
    }

    #[test]
    fn an_exclusion_the_writer_makes_rules_out() {
        let reading = reader()
            .read("Most likely: myasthenia gravis. I would exclude botulism here: the pupils are normal.");
        assert_eq!(ids(&reading.ruled_out), ["botulism"]);
        // A pronoun with no clause-opening subject stands for the last
        // diagnosis before the cue in its sentence.
        let reading = reader().read(
            "It's tempting to call this botulism, but I'd exclude it: the pupils react. \
             The final diagnosis is myasthenia gravis.",
        );
        assert_eq!(ids(&reading.ruled_out), ["botulism"]);
    }

    #[test]
    fn a_change_of_answer_and_a_second_look_name_the_leader() {
        assert_all_lead(
            &[
                "My first thought is botulism. Actually, I'm going to change my answer: myasthenia gravis is \
                 more likely.",
                "This looks like botulism. Hold on, though. On reflection I'll go with myasthenia gravis.",
            ],
            "myasthenia_gravis",
        );
        // The diagnosis revised away is let go, not offered.
        let reading = reader().read(
            "My first thought is botulism. Actually, I'm going to change my answer: myasthenia gravis is \
             more likely.",
        );
        assert_eq!(ids(&reading.ruled_out), ["botulism"]);
        assert!(reading.differential.is_empty(), "{:?}", reading.differential);
    }

    #[test]
    fn one_that_cannot_work_out_the_cause_declines() {
        let (id, _, source) =
            leading("I'm sorry, I can't work out what's causing your weakness. Please see a doctor soon.");
        assert_eq!((id, source), (None, "none"));
    }

    #[test]
    fn an_either_that_opens_the_sentence_leaves_the_choice_open() {
        let (_, _, source) = leading(
            "Either this is myasthenia gravis, with its fatigable ptosis, or it is LEMS; both are equally \
             plausible until the EMG.",
        );
        assert_eq!(source, "alternatives");
    }

    #[test]
    fn an_or_inside_the_differential_joins_its_items_not_the_leader() {
        let (id, _, source) =
            leading("Myasthenia gravis (fatigable ptosis); ddx: botulism or LEMS, thyroid eye disease.");
        assert_eq!(
            (id.as_deref(), source),
            (Some("myasthenia_gravis"), "first_listed")
        );
    }

    #[test]
    fn a_pick_names_its_numbered_item() {
        let list = "Options:\n1. Botulism: descending weakness\n2. LEMS: proximal weakness\n\
                    3. Myasthenia gravis: fatigable ptosis\n\n";
        let (id, _, source) = leading(&format!("{list}My answer is #3. The ice-pack test supports it."));
        assert_eq!((id.as_deref(), source), (Some("myasthenia_gravis"), "sentence"));
        assert_all_lead(&[&format!("{list}I'd go with option 2.")], "lambert_eaton");
        // A number that is no item's, or a number that is a dose, picks nothing.
        let (id, _, _) = leading(&format!("{list}My answer is #7."));
        assert_ne!(id.as_deref(), Some("myasthenia_gravis"));
    }
}
