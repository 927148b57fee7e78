//! An exam answer's options (`(A) X`, `B. Y`, `C) Z`, one per line): the
//! question's choices, not the answer's differential. When the answer's
//! label chooses a letter (`Final answer: (C)`), the chosen option is the
//! leader and the other options are offered by no one.

use crate::layout::Layout;

/// One option line: its letter (folded, `a` to `j`) and the span of its
/// text past the letter (folded offsets).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Choice {
    pub letter: char,
    pub start: usize,
    pub end: usize,
}

/// The option lines of `layout`: lines that open with a lettered marker,
/// at least three, lettered `a`, `b`, `c`, … in order with no gap (a
/// single `A. fib` line is no option list). Empty when there are none.
pub(super) fn choices(layout: &Layout<'_>) -> Vec<Choice> {
    let text = &layout.folded.text;
    let mut run: Vec<Choice> = Vec::new();
    let mut best: Vec<Choice> = Vec::new();
    for line in layout.lines.iter().filter(|line| !line.blank) {
        let body = &text[line.start..line.end];
        let trimmed = body.trim_start_matches([' ', '\t', '-', '*']);
        let at = line.start + body.len() - trimmed.len();
        match option_marker(trimmed) {
            Some((letter, length)) => {
                let expected = run.last().map_or('a', |last| next_letter(last.letter));
                if letter != expected {
                    if run.len() > best.len() {
                        best = std::mem::take(&mut run);
                    }
                    run.clear();
                    if letter != 'a' {
                        continue;
                    }
                }
                run.push(Choice {
                    letter,
                    start: at + length,
                    end: line.end,
                });
            }
            None => {
                if run.len() > best.len() {
                    best = std::mem::take(&mut run);
                }
                run.clear();
            }
        }
    }
    if run.len() > best.len() {
        best = run;
    }
    if best.len() >= 3 { best } else { Vec::new() }
}

fn next_letter(letter: char) -> char {
    char::from_u32(letter as u32 + 1).unwrap_or(letter)
}

/// The letter of an option marker opening `line` (`(a) `, `a) `, `a. `)
/// and the marker's length with the spaces after it.
fn option_marker(line: &str) -> Option<(char, usize)> {
    let (open, body) = match line.strip_prefix('(') {
        Some(body) => (1, body),
        None => (0, line),
    };
    let letter = body
        .chars()
        .next()
        .filter(|letter| ('a'..='j').contains(letter))?;
    let after = &body[1..];
    let mark = match (open, after.chars().next()) {
        (1, Some(')')) | (0, Some(')' | '.')) => 1,
        _ => return None,
    };
    let rest = &after[mark..];
    let text = rest.trim_start_matches(' ');
    if text.len() == rest.len() || !text.starts_with(|c: char| c.is_alphanumeric()) {
        return None;
    }
    Some((letter, open + 1 + mark + rest.len() - text.len()))
}

#[cfg(test)]
mod tests {
    use super::option_marker;
    use crate::answer::tests::reader;

    #[test]
    fn option_markers_are_read() {
        assert_eq!(option_marker("(b) duodenal atresia"), Some(('b', 4)));
        assert_eq!(option_marker("c. malrotation"), Some(('c', 3)));
        assert_eq!(option_marker("d)  meconium ileus"), Some(('d', 4)));
        assert_eq!(option_marker("a fib"), None);
        assert_eq!(option_marker("k. x"), None);
        assert_eq!(option_marker("e.g. this"), None);
    }

    const QUESTION: &str = "Which of the following is the most likely diagnosis?\n(A) Lambert-Eaton myasthenic syndrome\n(B) Myasthenia gravis\n(C) Botulism\n(D) Multiple sclerosis\n";

    #[test]
    fn the_chosen_option_leads_and_the_others_are_not_offered() {
        for (answer, lead) in [
            (
                format!("{QUESTION}Fatigability is the key.\nFinal answer: (B)"),
                "myasthenia_gravis",
            ),
            (format!("{QUESTION}Answer: C"), "botulism"),
            (
                format!("{QUESTION}Final answer: (A) — proximal weakness suggests a presynaptic disorder."),
                "lambert_eaton",
            ),
        ] {
            let reading = reader().read(&answer);
            let id = reading.leading.and_then(|lead| lead.id);
            assert_eq!(id.as_deref(), Some(lead), "{answer}");
            assert!(
                reading.differential.is_empty(),
                "{answer}: {:?}",
                reading.differential
            );
        }
        // With no letter chosen, the options are what the answer lists.
        let reading = reader().read(&format!("{QUESTION}I think it is MG."));
        assert!(!reading.differential.is_empty());
    }
}
