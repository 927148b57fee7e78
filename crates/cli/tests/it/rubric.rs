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
