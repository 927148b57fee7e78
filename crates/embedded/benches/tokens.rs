//! Tokens per second of the embedded model through [`EmbeddedModel::generate`], the path
//! every embedded subject and judge call takes: a fresh context per call (no reused
//! prefix), the prompt processed in batches of `BENCH_BATCH` tokens (default: cfeval's,
//! 128), then greedy generation one token at a time (sampling included).
//!
//! Prompt: a chat-templated prompt of exactly `BENCH_PROMPT` tokens (default 256),
//! timed from the first prompt batch to the last logits. Generation: `BENCH_GEN` tokens
//! (default 64) after that prompt. `BENCH_THREADS` (default 2) threads, `BENCH_REPS`
//! (default 5) timed calls after one untimed warm-up call; mean ± standard deviation of
//! the per-call rates, like `llama-bench`. `BENCH_JSON=path` also writes the figures as
//! JSON (used by `benches/embedded.sh`, which runs llama.cpp's `llama-bench` on the same
//! model in the same invocation).
//!
//! `cargo bench -p cfeval-embedded --bench tokens` (the model comes from
//! `scripts/install.sh`, or `CFEVAL_MODEL_PATH`).

use std::process::ExitCode;

use cfeval_embedded::{EmbeddedModel, Message, Options, Request};

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

/// A user message that renders to exactly `target` prompt tokens: chart-like notes and
/// an instruction that keeps a small model writing, topped up with one-token words.
fn prompt_of(model: &EmbeddedModel, target: usize) -> Result<Vec<Message>, String> {
    let note =
        "The patient is a 52-year-old woman with metastatic breast cancer, ER positive, HER2 negative. ";
    let instruction = "Write a detailed treatment plan of at least 400 words for this patient, \
                       with numbered headings for diagnosis, staging, first-line therapy, \
                       monitoring and supportive care.";
    let message = |notes: usize, pad: usize| {
        vec![Message::new(
            "user",
            format!("{}{}\n{instruction}", note.repeat(notes), " x".repeat(pad)),
        )]
    };
    let count = |notes: usize, pad: usize| {
        model
            .prompt_tokens(&message(notes, pad))
            .map_err(|error| error.to_string())
    };
    let mut notes = 0;
    while count(notes + 1, 0)? <= target {
        notes += 1;
    }
    let base = count(notes, 0)?;
    if base > target {
        return Err(format!("the instruction alone is {base} tokens, over {target}"));
    }
    let mut pad = target - base;
    // Padding words are one token each; step back if the tokenizer merged any.
    for _ in 0..64 {
        match count(notes, pad)? {
            tokens if tokens == target => return Ok(message(notes, pad)),
            tokens if tokens > target => pad -= 1,
            _ => pad += 1,
        }
    }
    Err(format!("no padding gives exactly {target} prompt tokens"))
}

fn mean_and_sd(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let variance = if values.len() > 1 {
        values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (mean, variance.sqrt())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("embedded bench: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let threads = env_number("BENCH_THREADS", 2);
    let prompt_tokens = env_number("BENCH_PROMPT", 256);
    let gen_tokens = env_number("BENCH_GEN", 64);
    let reps = env_number("BENCH_REPS", 5).max(1);
    let batch_tokens = env_number("BENCH_BATCH", Options::default().batch_tokens as usize) as u32;
    // Every call processes its whole prompt, as llama-bench does (no reused prefix).
    let options = Options {
        threads: threads as i32,
        batch_tokens,
        prefix_cache_bytes: 0,
    };
    let model = EmbeddedModel::load_default(options).map_err(|error| error.to_string())?;
    let messages = prompt_of(&model, prompt_tokens)?;
    let request = Request {
        messages,
        max_tokens: gen_tokens as u32,
        temperature: 0.0,
        seed: 0,
        grammar: None,
    };
    let generate = || model.generate(&request).map_err(|error| error.to_string());
    generate()?; // warm-up: page in the weights
    let mut prompt_rates = Vec::with_capacity(reps);
    let mut gen_rates = Vec::with_capacity(reps);
    for _ in 0..reps {
        let generation = generate()?;
        if generation.prompt_tokens != prompt_tokens {
            return Err(format!("prompt was {} tokens", generation.prompt_tokens));
        }
        if generation.completion_tokens != gen_tokens {
            return Err(format!(
                "the model stopped after {} of {gen_tokens} tokens ({})",
                generation.completion_tokens, generation.finish_reason
            ));
        }
        prompt_rates.push(prompt_tokens as f64 / generation.prompt_seconds);
        gen_rates.push(gen_tokens as f64 / generation.generation_seconds);
    }
    let (pp, pp_sd) = mean_and_sd(&prompt_rates);
    let (tg, tg_sd) = mean_and_sd(&gen_rates);
    println!(
        "model {}, threads {threads}, {reps} calls",
        model.path().display()
    );
    println!("| test | tok/s |");
    println!("| --- | --- |");
    println!("| prompt (pp{prompt_tokens}) | {pp:.1} ± {pp_sd:.1} |");
    println!("| generation (tg{gen_tokens} after the prompt) | {tg:.1} ± {tg_sd:.1} |");
    if let Ok(path) = std::env::var("BENCH_JSON") {
        let json = serde_json::json!({
            "threads": threads,
            "reps": reps,
            "pp": {"n": prompt_tokens, "avg_ts": pp, "stddev_ts": pp_sd, "samples_ts": prompt_rates},
            "tg": {"n": gen_tokens, "depth": prompt_tokens, "avg_ts": tg, "stddev_ts": tg_sd, "samples_ts": gen_rates},
        });
        std::fs::write(&path, json.to_string()).map_err(|error| format!("writing {path}: {error}"))?;
    }
    Ok(())
}
