//! Progress of long stages: indicatif bars with rate and ETA on a terminal,
//! plain periodic lines on stderr otherwise (logs, CI, `nohup`).

use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use cfeval_schema::Progress;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Where the bars of one `cfeval run` are drawn.
pub struct Bars {
    multi: Option<MultiProgress>,
    /// Seconds between two plain progress lines.
    interval: Duration,
}

impl Bars {
    /// Bars on a terminal stderr, plain lines otherwise (`CFEVAL_PROGRESS=plain`
    /// forces plain lines, `CFEVAL_PROGRESS_SECS` sets their interval).
    pub fn new() -> Self {
        let plain = std::env::var("CFEVAL_PROGRESS").is_ok_and(|value| value == "plain");
        let multi = (!plain && std::io::stderr().is_terminal())
            .then(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr()));
        let interval = std::env::var("CFEVAL_PROGRESS_SECS")
            .ok()
            .and_then(|value| value.parse::<f64>().ok())
            .filter(|secs| secs.is_finite() && *secs >= 0.0)
            .map_or(Duration::from_secs(10), Duration::from_secs_f64);
        Bars { multi, interval }
    }

    /// A bar for `label` with `total` items (`None`: unknown).
    pub fn bar(&self, label: &str, total: Option<u64>) -> Bar {
        let bar = self.multi.as_ref().map(|multi| {
            let bar = multi.add(ProgressBar::new(total.unwrap_or(0)));
            let template = if total.is_some() {
                "{prefix:>40} [{bar:30}] {pos}/{len} {per_sec} ETA {eta}"
            } else {
                "{prefix:>40} {spinner} {pos} {per_sec}"
            };
            if let Ok(style) = ProgressStyle::with_template(template) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_prefix(label.to_string());
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        Bar {
            inner: Arc::new(BarInner {
                bar,
                label: label.to_string(),
                total,
                done: AtomicU64::new(0),
                start: Instant::now(),
                last_line: Mutex::new(Instant::now()),
                interval: self.interval,
            }),
        }
    }
}

struct BarInner {
    bar: Option<ProgressBar>,
    label: String,
    total: Option<u64>,
    done: AtomicU64,
    start: Instant,
    last_line: Mutex<Instant>,
    interval: Duration,
}

impl BarInner {
    fn add(&self, items: u64) {
        let done = self.done.fetch_add(items, Ordering::Relaxed) + items;
        match &self.bar {
            Some(bar) => bar.inc(items),
            None => {
                let Ok(mut last) = self.last_line.lock() else {
                    return;
                };
                if last.elapsed() >= self.interval {
                    *last = Instant::now();
                    eprintln!("{}", self.line(done, false));
                }
            }
        }
    }

    fn line(&self, done: u64, finished: bool) -> String {
        let secs = self.start.elapsed().as_secs_f64();
        let rate = if secs > 0.0 { done as f64 / secs } else { 0.0 };
        let mut line = match self.total {
            Some(total) => format!("{}: {done}/{total}", self.label),
            None => format!("{}: {done}", self.label),
        };
        if finished {
            line.push_str(&format!(" done in {secs:.1} s ({rate:.1}/s)"));
        } else {
            line.push_str(&format!(" ({rate:.1}/s"));
            if let Some(total) = self.total
                && rate > 0.0
            {
                let left = total.saturating_sub(done) as f64 / rate;
                line.push_str(&format!(", ETA {left:.0} s"));
            }
            line.push(')');
        }
        line
    }
}

/// One stage's (or unit's) bar; cloning shares it.
#[derive(Clone)]
pub struct Bar {
    inner: Arc<BarInner>,
}

impl Bar {
    /// The callback a stage reports finished items to.
    pub fn progress(&self) -> Progress {
        let inner = Arc::clone(&self.inner);
        Progress::new(move |items| inner.add(items))
    }

    /// Ends the bar with a final line.
    pub fn finish(&self, note: &str) {
        let done = self.inner.done.load(Ordering::Relaxed);
        match &self.inner.bar {
            Some(bar) => {
                bar.set_message(note.to_string());
                bar.finish();
            }
            None => {
                let line = self.inner.line(done, true);
                if note.is_empty() {
                    eprintln!("{line}");
                } else {
                    eprintln!("{line} {note}");
                }
            }
        }
    }
}
