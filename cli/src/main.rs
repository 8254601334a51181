//! The `miniblock` command line tool. See `miniblock --help`.

mod cli;

use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::Parser;

fn main() -> ExitCode {
    let args = match cli::Cli::try_parse() {
        Ok(args) => args,
        Err(e) => return argument_error(&e),
    };
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

/// `--help` and `--version` print as clap writes them; a wrong argument is one line on
/// stderr, naming the argument, and exit status 2 (docs/cli.md's convention).
fn argument_error(e: &clap::Error) -> ExitCode {
    match e.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            }
        }
        _ => {
            let rendered = e.render().to_string();
            let mut lines = rendered.lines().map(str::trim).skip_while(|l| l.is_empty());
            let first = lines.next().unwrap_or("invalid arguments");
            let first = first.strip_prefix("error: ").unwrap_or(first);
            // clap lists missing arguments on the lines after a first line ending in ':'.
            let listed: Vec<&str> = if first.ends_with(':') {
                lines.take_while(|l| !l.is_empty()).collect()
            } else {
                Vec::new()
            };
            let first = if listed.is_empty() {
                first.to_owned()
            } else {
                format!("{first} {}", listed.join(", "))
            };
            // clap's tip about `--` and similar lines follow the first; the usage is in --help.
            eprintln!("miniblock: error: {first} (see --help)");
            ExitCode::from(2)
        }
    }
}
