//! Wall time of multi-turn consultations on the embedded model, with processed prompt
//! prefixes reused ([`Options::prefix_cache_bytes`], the default) and without (every
//! call processes its whole prompt, as before the cache), in the same run on the same
//! model. Two agents talk as the dialogue mode's doctor and patient do: each turn, each
//! side is sent its whole view of the conversation so far and answers in up to
//! `BENCH_GEN` tokens (default 48), for `BENCH_TURNS` turns (default 6, the dialogue
//! demo's N) and `BENCH_DIALOGUES` openings (default 3). The two passes must produce the
//! same conversations word for word (the bench fails otherwise).
//!
//! `cargo bench -p cfeval-embedded --bench dialogue` (the model comes from
//! `scripts/install.sh`, or `CFEVAL_MODEL_PATH`); `BENCH_THREADS` (default 2),
//! `BENCH_BATCH` (prompt batch tokens, default [`Options`]'s), `BENCH_ONLY`
//! (`reused` or `not-reused`: that pass alone, to measure its memory), `BENCH_PREFIX_MIB`
//! (the reused pass's [`Options::prefix_cache_bytes`] in MiB, default [`Options`]'s).

use std::process::ExitCode;
use std::time::Instant;

use cfeval_embedded::{EmbeddedModel, Message, Options, Request};

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

const DOCTOR: &str = "You are a doctor in a consultation. Ask the patient one question at a time \
    about the history of the complaint, past illnesses, medicines, allergies, family and social \
    history. You may request a test by writing REQUEST TEST: and its name. When you are sure, \
    write DIAGNOSIS READY: and the single most likely diagnosis. Keep every turn to one or two \
    sentences and do not repeat questions that were already answered.";
const PATIENT: &str = "You are a patient seeing a doctor. Answer only what the doctor asks, in \
    one to three plain sentences, as a person without medical training would. You have had \
    crushing chest pain for two hours that spreads to your left arm and jaw, with sweating and \
    nausea. You smoke twenty cigarettes a day, you have high blood pressure and your father had \
    a heart attack at 52. Never name a disease; describe only what you feel.";
const OPENINGS: [&str; 3] = [
    "Doctor, I have a pain in my chest that will not go away and I feel awful.",
    "I came in because my chest feels tight and heavy, and my arm is aching.",
    "My wife made me come. I have had this pressure in my chest since lunch.",
];

/// One pass: its conversations, the wall time they took and their prompt tokens.
struct Pass {
    transcripts: Vec<String>,
    seconds: f64,
    prompt_tokens: usize,
    reused_tokens: usize,
    calls: usize,
}

fn converse(model: &EmbeddedModel, dialogues: usize, turns: usize, max_tokens: u32) -> Result<Pass, String> {
    let mut pass = Pass {
        transcripts: Vec::new(),
        seconds: 0.0,
        prompt_tokens: 0,
        reused_tokens: 0,
        calls: 0,
    };
    let started = Instant::now();
    for opening in OPENINGS.iter().cycle().take(dialogues) {
        // (speaker is the doctor, text)
        let mut said: Vec<(bool, String)> = vec![(false, opening.to_string())];
        for _ in 0..turns {
            for doctor in [true, false] {
                let system = if doctor { DOCTOR } else { PATIENT };
                let mut messages = vec![Message::new("system", system)];
                for (by_doctor, text) in &said {
                    let role = if *by_doctor == doctor { "assistant" } else { "user" };
                    messages.push(Message::new(role, text.clone()));
                }
                let generation = model
                    .generate(&Request {
                        messages,
                        max_tokens,
                        temperature: 0.0,
                        seed: 0,
                        grammar: None,
                    })
                    .map_err(|error| error.to_string())?;
                pass.calls += 1;
                pass.prompt_tokens += generation.prompt_tokens;
                pass.reused_tokens += generation.reused_prompt_tokens;
                said.push((doctor, generation.text));
            }
        }
        pass.transcripts.push(
            said.iter()
                .map(|(by_doctor, text)| format!("{}: {text}", if *by_doctor { "D" } else { "P" }))
                .collect::<Vec<_>>()
                .join("\n"),
        );
    }
    pass.seconds = started.elapsed().as_secs_f64();
    Ok(pass)
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("dialogue bench: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let threads = env_number("BENCH_THREADS", 2) as i32;
    let turns = env_number("BENCH_TURNS", 6);
    let dialogues = env_number("BENCH_DIALOGUES", 3);
    let max_tokens = env_number("BENCH_GEN", 48) as u32;
    let batch_tokens = env_number("BENCH_BATCH", Options::default().batch_tokens as usize) as u32;
    let load = |prefix_cache_bytes| {
        EmbeddedModel::load_default(Options {
            threads,
            batch_tokens,
            prefix_cache_bytes,
        })
        .map_err(|error| error.to_string())
    };
    // `BENCH_ONLY=reused` or `not-reused` runs one pass (for its memory, under `time -v`).
    let only = std::env::var("BENCH_ONLY").unwrap_or_default();
    let capacity = env_number("BENCH_PREFIX_MIB", Options::default().prefix_cache_bytes >> 20) << 20;
    match only.as_str() {
        "" => {}
        "reused" | "not-reused" => {
            let bytes = if only == "reused" { capacity } else { 0 };
            let pass = converse(&load(bytes)?, dialogues, turns, max_tokens)?;
            println!(
                "{only}: {} calls, {} prompt tokens, {} reused, {:.1} s",
                pass.calls, pass.prompt_tokens, pass.reused_tokens, pass.seconds
            );
            return Ok(());
        }
        other => return Err(format!("BENCH_ONLY is `{other}`: `reused` or `not-reused`")),
    }
    let without = converse(&load(0)?, dialogues, turns, max_tokens)?;
    let with = converse(&load(capacity)?, dialogues, turns, max_tokens)?;
    if with.transcripts != without.transcripts {
        return Err("the conversations differ with and without prefix reuse".into());
    }
    println!(
        "{dialogues} dialogues x {turns} turns x 2 agents = {} calls, up to {max_tokens} tokens each, \
         {threads} threads, prompt batches of {batch_tokens} tokens",
        with.calls
    );
    println!("| prefixes | prompt tokens | reused | seconds |");
    println!("| --- | --- | --- | --- |");
    for (name, pass) in [("not reused", &without), ("reused", &with)] {
        println!(
            "| {name} | {} | {} | {:.1} |",
            pass.prompt_tokens, pass.reused_tokens, pass.seconds
        );
    }
    println!(
        "speed-up {:.2}x; the conversations are identical",
        without.seconds / with.seconds
    );
    Ok(())
}
