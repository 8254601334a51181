//! The `miniblock` command line tool. See `miniblock --help`.

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    match cli::run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("miniblock: error: {e}");
            ExitCode::FAILURE
        }
    }
}
