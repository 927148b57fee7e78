//! The `cfeval` binary: parses arguments and hands over to the library.

fn main() -> std::process::ExitCode {
    cfeval_cli::main()
}
