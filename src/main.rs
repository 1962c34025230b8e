//! Thin entry point: parse the command line, hand over to the library, map errors to exit codes.

use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = synlab::cli::Cli::parse();
    synlab::run(cli)
}
