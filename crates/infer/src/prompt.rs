//! Prompt templates (in `data/prompts/`, versioned by content hash), chart
//! rendering and extraction of the final recommendation.

use cfeval_schema::Section;

/// The single-shot template; `{chart}` is replaced by the rendered chart.
pub const SINGLE_SHOT: &str = include_str!("../../../data/prompts/single_shot.md");
/// The agent's system prompt.
pub const AGENT: &str = include_str!("../../../data/prompts/agent.md");
/// Appended to the agent's prompt for models without native tool calling.
pub const AGENT_TEXT_PROTOCOL: &str = include_str!("../../../data/prompts/agent_text_protocol.md");

/// The prompt templates a run uses.
#[derive(Debug, Clone)]
pub struct Prompts {
    pub single_shot: String,
    pub agent: String,
    pub agent_text_protocol: String,
}

impl Default for Prompts {
    fn default() -> Self {
        Self {
            single_shot: SINGLE_SHOT.to_string(),
            agent: AGENT.to_string(),
            agent_text_protocol: AGENT_TEXT_PROTOCOL.to_string(),
        }
    }
}

impl Prompts {
    /// Content hash of the templates a mode uses (recorded in every response).
    pub fn hash(&self, agent: bool) -> String {
        if agent {
            cfeval_schema::ids::content_id("prompt", &[&self.agent, &self.agent_text_protocol])
        } else {
            cfeval_schema::ids::content_id("prompt", &[&self.single_shot])
        }
    }
}

/// A chart as the subject reads it: each section under its name.
pub fn render_chart(sections: &[Section]) -> String {
    let mut out = String::new();
    for section in sections {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&format!("## {}\n{}\n", section.name, section.text.trim_end()));
    }
    out
}

/// The final recommendation: what follows the last `Recommendation:` (any
/// case, with or without markdown emphasis), else the whole answer trimmed.
pub fn extract_recommendation(text: &str) -> String {
    let lower = text.to_lowercase();
    let found = lower
        .rfind("recommendation:")
        .or_else(|| lower.rfind("recommendation**:"));
    let tail = match found {
        Some(index) => {
            let after = &text[index..];
            after.split_once(':').map_or(after, |(_, rest)| rest)
        }
        None => text,
    };
    tail.trim().trim_start_matches('*').trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extracts_the_last_recommendation() {
        let text = "Reasoning: HER2 positive.\nRecommendation: trastuzumab + pertuzumab + docetaxel\n";
        assert_eq!(
            extract_recommendation(text),
            "trastuzumab + pertuzumab + docetaxel"
        );
        let text = "**Recommendation**: FOLFOX";
        assert_eq!(extract_recommendation(text), "FOLFOX");
        assert_eq!(extract_recommendation("  just a plan "), "just a plan");
    }

    #[test]
    fn renders_sections_in_order() {
        let section = |name: &str, text: &str| Section {
            name: name.into(),
            text: text.into(),
            span_start: None,
            span_end: None,
        };
        let chart = render_chart(&[section("demographics", "58F"), section("biomarkers", "HER2 3+\n")]);
        assert_eq!(chart, "## demographics\n58F\n\n## biomarkers\nHER2 3+\n");
    }

    #[test]
    fn prompt_hash_changes_with_the_template() {
        let prompts = Prompts::default();
        let mut other = prompts.clone();
        other.single_shot.push('.');
        assert_ne!(prompts.hash(false), other.hash(false));
        assert_eq!(prompts.hash(true), other.hash(true));
    }
}
