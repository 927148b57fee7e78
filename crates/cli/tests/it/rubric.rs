//! `cfeval rubric check FILE`: the shipped rubric is valid and hashed; a
//! broken copy is refused with every problem on its line, non-zero exit.

use std::path::Path;
use std::process::Command;

fn check(file: &Path) -> (bool, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_cfeval"))
        .args(["rubric", "check"])
        .arg(file)
        .env_remove("RUST_LOG")
        .output()
        .expect("cfeval rubric check");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

#[test]
fn the_shipped_rubric_checks_and_a_broken_one_names_its_lines() {
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/rubrics/clinical-reasoning-v1.yaml");
    let (ok, stdout) = check(&shipped);
    assert!(ok, "{stdout}");
    assert!(
        stdout.starts_with("ok ") && stdout.contains("7 domains") && stdout.contains("blake3="),
        "{stdout}"
    );

    let text = std::fs::read_to_string(&shipped).expect("rubric");
    // Drop the first `3:` anchor line and point an N/A rule at nothing.
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let anchor = lines
        .iter()
        .position(|line| line.trim_start().starts_with("3:"))
        .expect("an anchor line");
    lines.remove(anchor);
    let rule = lines
        .iter()
        .position(|line| line.trim_start().starts_with("applies_to:"))
        .expect("an applies_to line");
    lines[rule] = lines[rule].replacen("applies_to:", "applies_to: [\"99\"] #", 1);
    let dir = tempfile::tempdir().expect("tempdir");
    let broken = dir.path().join("broken.yaml");
    std::fs::write(&broken, lines.join("\n") + "\n").expect("write");
    let (ok, stdout) = check(&broken);
    assert!(!ok, "{stdout}");
    let shown: Vec<&str> = stdout.lines().collect();
    assert!(
        shown
            .iter()
            .any(|line| line.contains("broken.yaml:") && line.contains("not exactly 1, 3 and 5")),
        "{stdout}"
    );
    assert!(
        shown
            .iter()
            .any(|line| line.contains(&format!("broken.yaml:{}: ", rule)) && line.contains("`99`")),
        "{stdout}"
    );
}

/// Fifteen and more ways to break the shipped rubric: each is refused,
/// every problem printed as `file:line: message` with a real line.
#[test]
fn malformed_rubrics_are_refused_with_their_lines() {
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/rubrics/clinical-reasoning-v1.yaml");
    let text = std::fs::read_to_string(&shipped).expect("rubric");
    let first_line_starting = |prefix: &str| -> String {
        text.lines()
            .find(|line| line.trim_start().starts_with(prefix))
            .unwrap_or_else(|| panic!("a line starting {prefix}"))
            .to_string()
    };
    let anchor_three = first_line_starting("3:");
    let anchor_five = first_line_starting("5:");
    let applies = first_line_starting("applies_to:");
    let when = first_line_starting("when:");
    let diagnosis = first_line_starting("diagnosis:");
    let replace = |from: &str, to: &str| text.replacen(from, to, 1);
    let mutations: Vec<(&str, String, &str)> = vec![
        ("version 2", replace("version: 1", "version: 2"), "version 2"),
        (
            "scale 0-10",
            replace("scale: {min: 1, max: 5}", "scale: {min: 0, max: 10}"),
            "not 1–5",
        ),
        (
            "an anchor missing",
            replace(&format!("{anchor_three}\n"), ""),
            "not exactly 1, 3 and 5",
        ),
        (
            "an anchor at 4",
            replace(&anchor_three, &anchor_three.replacen("3:", "4:", 1)),
            "not exactly 1, 3 and 5",
        ),
        (
            "an empty anchor",
            replace(
                &anchor_five,
                &format!("{}\"\"", &anchor_five[..anchor_five.find("5:").expect("5:") + 3]),
            ),
            "anchor 5 is empty",
        ),
        (
            "a duplicate domain",
            replace("id: \"2\"", "id: \"1\""),
            "used twice",
        ),
        (
            "a duplicate sub-dimension",
            replace("id: \"1b\"", "id: \"1a\""),
            "used twice",
        ),
        (
            "a sub-dimension of another domain",
            replace("id: \"2a\"", "id: \"9a\""),
            "does not start with its domain's id",
        ),
        (
            "an N/A rule naming nothing",
            replace(&applies, "    applies_to: []"),
            "applies to nothing",
        ),
        (
            "an N/A rule naming no domain",
            replace(&applies, "    applies_to: [\"42\"]"),
            "`42`, which is no domain",
        ),
        (
            "an unknown N/A condition",
            replace(&when, "    when: on_tuesdays"),
            "unknown variant",
        ),
        (
            "a duplicate N/A rule",
            replace("id: sycophancy_multi_turn_only", "id: longitudinal_only"),
            "defined twice",
        ),
        (
            "weights not summing to 1",
            replace(
                &diagnosis,
                "  diagnosis: {\"1\": 0.5, \"2\": 0.15, \"3\": 0.25, \"4\": 0.10, \"5\": 0.15, \"6\": 0.15, \"7\": 0.05}",
            ),
            "sum to",
        ),
        (
            "a weight for no domain",
            replace(
                &diagnosis,
                "  diagnosis: {\"1\": 0.15, \"2\": 0.15, \"3\": 0.25, \"4\": 0.10, \"5\": 0.15, \"6\": 0.15, \"8\": 0.05}",
            ),
            "which is no domain",
        ),
        (
            "a negative weight",
            replace(
                &diagnosis,
                "  diagnosis: {\"1\": 0.35, \"2\": 0.15, \"3\": 0.25, \"4\": 0.10, \"5\": 0.15, \"6\": 0.15, \"7\": -0.15}",
            ),
            "is not ≥ 0",
        ),
        (
            "an unknown key",
            replace("title:", "colour: blue\ntitle:"),
            "unknown field",
        ),
        (
            "no profiles",
            text[..text.find("profiles:").expect("profiles")].to_string() + "profiles: {}\n",
            "no weighting profiles",
        ),
        ("not YAML", replace("domains:", "domains: [unclosed"), ""),
    ];
    assert!(mutations.len() >= 15);
    let dir = tempfile::tempdir().expect("tempdir");
    for (what, broken, expected) in mutations {
        assert_ne!(broken, text, "{what}: the mutation changed nothing");
        let file = dir.path().join("broken.yaml");
        std::fs::write(&file, &broken).expect("write");
        let (ok, stdout) = check(&file);
        assert!(!ok, "{what}: accepted\n{stdout}");
        let lines: Vec<&str> = stdout.lines().collect();
        assert!(!lines.is_empty(), "{what}: no problem printed");
        for line in &lines {
            let rest = line
                .split_once("broken.yaml:")
                .unwrap_or_else(|| panic!("{what}: {line} does not name the file"))
                .1;
            let number: usize = rest
                .split(':')
                .next()
                .and_then(|number| number.trim().parse().ok())
                .unwrap_or_else(|| panic!("{what}: {line} has no line number"));
            assert!(number > 0, "{what}: {line} has no real line");
        }
        assert!(
            stdout.contains(expected),
            "{what}: wanted `{expected}` in\n{stdout}"
        );
    }
}
