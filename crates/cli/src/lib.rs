//! The `cfeval` command line: one subcommand per stage, the pipeline driver,
//! and the tools to look inside a run (`show`, `status`).
//!
//! Logs go to stderr through `tracing` (`RUST_LOG`); stdout carries data only.
//! On error the process exits non-zero after one line naming the cause.

mod args;
mod inspect;

use std::process::ExitCode;

use clap::Parser;

pub use args::{Cli, Command};

/// Runs the command line; the binary's whole `main`.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            let chain: Vec<String> = error.chain().map(ToString::to_string).collect();
            eprintln!("error: {}", chain.join(": "));
            ExitCode::from(1)
        }
    }
}

fn init_tracing() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}

/// Dispatches one parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Show(args) => inspect::show(&args, &mut std::io::stdout().lock()),
        Command::Status(args) => inspect::status(&args, &mut std::io::stdout().lock()),
        Command::Cohort(_) => not_yet("cohort", 3),
        Command::Synthesize(_) => not_yet("synthesize", 3),
        Command::Perturb(_) => not_yet("perturb", 4),
        Command::Catalog(_) => not_yet("catalog check", 4),
        Command::Infer(_) => not_yet("infer", 5),
        Command::Judge(_) => not_yet("judge", 6),
        Command::Aggregate(_) => not_yet("aggregate", 7),
        Command::Run(_) => not_yet("run", 8),
    }
}

fn not_yet(command: &str, issue: u32) -> anyhow::Result<()> {
    anyhow::bail!("`cfeval {command}` is not implemented yet (it lands with issue #{issue})")
}
