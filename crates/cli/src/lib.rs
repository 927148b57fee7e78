//! The `cfeval` command line: one subcommand per stage, the pipeline driver,
//! and the tools to look inside a run (`show`, `status`, `verify`), which
//! never write to the run (an archived, read-only run can be inspected).
//!
//! Logs go to stderr through `tracing` (`RUST_LOG`); stdout carries data only.
//! On error the process exits non-zero after one line naming the cause.

mod aggregate_cmd;
mod args;
mod cache_cmd;
mod compare_cmd;
mod driver;
mod export_inspect;
mod import_cmd;
mod import_inspect;
mod infer_cmd;
mod inspect;
mod judge_cmd;
mod labels_cmd;
mod labels_rubric;
mod pack_cmd;
mod perturb_cmd;
pub mod pipeline;
mod power_cmd;
mod status;
mod subjects;
mod synthesize_cmd;
mod verify_cmd;

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
            if error.downcast_ref::<driver::IncompleteRun>().is_some() {
                ExitCode::from(driver::IncompleteRun::EXIT_CODE)
            } else {
                ExitCode::from(1)
            }
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
    cfeval_schema::set_verify_reads(!cli.no_verify);
    match cli.command {
        Command::Show(args) => inspect::show(&args, &mut std::io::stdout().lock()),
        Command::Labels(args) => labels_cmd::labels(&args.command, &mut std::io::stdout().lock()),
        Command::Status(args) => status::status(&args, &mut std::io::stdout().lock()),
        Command::Verify(args) => verify_cmd::verify(&args, &mut std::io::stdout().lock()),
        Command::Cohort(args) => synthesize_cmd::cohort(&args, &mut std::io::stdout().lock()),
        Command::Synthesize(args) => synthesize_cmd::synthesize(&args, &mut std::io::stdout().lock()),
        Command::Perturb(args) => perturb_cmd::perturb(&args, &mut std::io::stdout().lock()),
        Command::Catalog(args) => perturb_cmd::catalog(&args, &mut std::io::stdout().lock()),
        Command::Rubric(args) => judge_cmd::rubric(&args, &mut std::io::stdout().lock()),
        Command::Pack(args) => pack_cmd::pack(&args, &mut std::io::stdout().lock()),
        Command::Import(args) => match &args.command {
            args::ImportCommand::Responses(args) => {
                import_cmd::import_responses(args, &mut std::io::stdout().lock())
            }
        },
        Command::Infer(args) => infer_cmd::infer(&args, &mut std::io::stdout().lock()),
        Command::Judge(args) => judge_cmd::judge(&args, &mut std::io::stdout().lock()),
        Command::Aggregate(args) => aggregate_cmd::aggregate(&args, &mut std::io::stdout().lock()),
        Command::Compare(args) => compare_cmd::compare(&args, &mut std::io::stdout().lock()),
        Command::Power(args) => power_cmd::power(&args, &mut std::io::stdout().lock()),
        Command::Cache(args) => cache_cmd::cache(&args, &mut std::io::stdout().lock()),
        Command::Export(args) => match &args.command {
            args::ExportCommand::Inspect(args) => export_inspect::export(args, &mut std::io::stdout().lock()),
        },
        Command::Run(args) => driver::run(&args, &mut std::io::stdout().lock()),
    }
}
