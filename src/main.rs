//! The `miniblock` command line tool. See `miniblock --help`.

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    match cli::run(args) {
        Ok(()) => ExitCode::SUCCESS,
        // A reader that closed standard output (`| head`) ends the command quietly, with
        // the status a shell reports for a process ended by SIGPIPE.
        Err(e) if e.is_broken_pipe() => ExitCode::from(141),
        Err(e) => {
            eprintln!("miniblock: error: {e}");
            ExitCode::FAILURE
        }
    }
}
