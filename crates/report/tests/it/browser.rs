//! The report opens in headless Chromium: no console errors, no failed
//! loads, a screenshot with the plots drawn in their colours, and the DOM
//! Chromium built holds every plot with its marks.
//!
//! Needs `/usr/bin/chromium` (`scripts/install.sh` installs it); skipped with
//! a note without it, except under CI (`CI` set), where that is a failure.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{FAMILIES, SUBJECTS, full_run, marks, svg};

const CHROMIUM: &str = "/usr/bin/chromium";
const TIMEOUT: Duration = Duration::from_secs(60);

/// Runs Chromium headless on `url` with `extra` flags; returns (stdout, stderr).
fn chromium(profile: &Path, out: &Path, extra: &[String], url: &str) -> (String, String) {
    let stdout_path = out.join("stdout.txt");
    let stderr_path = out.join("stderr.txt");
    let mut child = Command::new(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&stdout_path).expect("stdout file"))
        .stderr(std::fs::File::create(&stderr_path).expect("stderr file"))
        .spawn()
        .expect("start chromium");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for chromium") {
            break status;
        }
        if started.elapsed() > TIMEOUT {
            child.kill().expect("kill chromium");
            child.wait().expect("reap chromium");
            panic!("chromium did not finish within {TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let stdout = std::fs::read_to_string(&stdout_path).expect("stdout");
    let stderr = std::fs::read_to_string(&stderr_path).expect("stderr");
    assert!(status.success(), "chromium failed ({status}):\n{stderr}");
    (stdout, stderr)
}

/// Fails on what would show a broken page: script errors, console
/// errors, resources that failed to load.
fn assert_clean(stderr: &str) {
    for line in stderr.lines() {
        let lower = line.to_lowercase();
        assert!(
            !line.contains("Uncaught") && !line.contains(":CONSOLE") && !lower.contains("net::err_"),
            "chromium reported: {line}"
        );
    }
}

/// Decodes an RGB(A) PNG into (width, height, RGB pixels).
fn decode(path: &Path) -> (u32, u32, Vec<[u8; 3]>) {
    let bytes = std::fs::read(path).expect("screenshot");
    assert!(
        bytes.len() > 50_000,
        "screenshot of {} bytes is too small",
        bytes.len()
    );
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "PNG signature");
    let mut decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder.read_info().expect("PNG header");
    let mut buffer = vec![0; reader.output_buffer_size()];
    let frame = reader.next_frame(&mut buffer).expect("PNG data");
    let channels = frame.color_type.samples();
    assert!(channels >= 3, "colour screenshot, got {:?}", frame.color_type);
    let pixels = buffer[..frame.buffer_size()]
        .chunks_exact(channels)
        .map(|pixel| [pixel[0], pixel[1], pixel[2]])
        .collect();
    (frame.width, frame.height, pixels)
}

/// Pixels within a small distance of `color`.
fn count_near(pixels: &[[u8; 3]], color: (u8, u8, u8)) -> usize {
    let near = |a: u8, b: u8| a.abs_diff(b) <= 12;
    pixels
        .iter()
        .filter(|pixel| near(pixel[0], color.0) && near(pixel[1], color.1) && near(pixel[2], color.2))
        .count()
}

#[test]
fn the_report_opens_in_headless_chromium_with_its_plots_drawn() {
    if !Path::new(CHROMIUM).exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{CHROMIUM} is missing under CI: scripts/install.sh installs it"
        );
        eprintln!("skipped: {CHROMIUM} not found (scripts/install.sh installs Debian's chromium)");
        return;
    }
    let dir = full_run();
    let paths = cfeval_report::write(dir.path()).expect("report");
    let scratch = tempfile::tempdir().expect("tempdir");
    let url = format!("file://{}", paths.html.display());
    let shot: PathBuf = scratch.path().join("shot.png");

    let (_, stderr) = chromium(
        &scratch.path().join("profile-shot"),
        scratch.path(),
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1400,3000".into(),
        ],
        &url,
    );
    assert_clean(&stderr);
    let (width, height, pixels) = decode(&shot);
    assert_eq!((width, height), (1400, 3000));
    let background = count_near(&pixels, (255, 255, 255));
    assert!(background < pixels.len(), "the page is not blank");
    // The first mode's slope chart, heatmap and forest plot lie within the
    // first 3000 pixels: the subjects' colours (and the heatmap's darkest
    // blue) must be on screen, not just text.
    let subject_colors = [cfeval_report::plots::PALETTE[0], cfeval_report::plots::PALETTE[1]];
    for color in subject_colors {
        assert!(
            count_near(&pixels, color) > 200,
            "too few pixels of subject colour {color:?}"
        );
    }
    let distinct: std::collections::BTreeSet<[u8; 3]> = pixels.iter().copied().collect();
    assert!(
        distinct.len() > 50,
        "only {} colours on the screenshot",
        distinct.len()
    );

    let (dom, stderr) = chromium(
        &scratch.path().join("profile-dom"),
        scratch.path(),
        &["--dump-dom".into()],
        &url,
    );
    assert_clean(&stderr);
    let per_subject = FAMILIES.len() + 1;
    for mode in ["single-shot", "agent"] {
        assert_eq!(marks(svg(&dom, &format!("slope-{mode}"))), SUBJECTS.len());
        assert_eq!(
            marks(svg(&dom, &format!("heatmap-{mode}"))),
            SUBJECTS.len() * per_subject
        );
        assert_eq!(
            marks(svg(&dom, &format!("forest-{mode}"))),
            SUBJECTS.len() * per_subject
        );
        assert_eq!(marks(svg(&dom, &format!("scatter-{mode}"))), SUBJECTS.len());
    }
}
