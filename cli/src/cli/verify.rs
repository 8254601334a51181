//! `miniblock verify FILE`: every checksum checked, every page decoded, and every page's
//! statistics compared with its values.

use std::io::BufReader;
use std::path::PathBuf;

use miniblock::file::FileReader;

use super::{quiet, CliError};

pub(super) const EXAMPLES: &str = "\
Examples:
  miniblock verify data.mb                  one line per good file; the first damage is the error
  miniblock verify -q archive/*.mb && echo intact";

/// Arguments of `verify`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Miniblock column files to check.
    #[arg(required = true)]
    files: Vec<PathBuf>,
}

/// Runs `verify`: a line per good file; the first damage found is the error.
pub fn run(args: &Args) -> Result<(), CliError> {
    for path in &args.files {
        let shown = path.display();
        let file = std::fs::File::open(path)
            .map_err(|e| CliError::new(format!("cannot open {shown}: {e}")))?;
        let summary = FileReader::open(BufReader::new(file))
            .and_then(|mut reader| reader.verify())
            .map_err(|e| CliError::new(format!("{shown}: {e}")))?;
        if quiet() {
            continue;
        }
        say!(
            "{shown}: ok: {} column(s), {} page(s), {} chunk(s) decoded, {} bytes and {} chunk checksum(s) verified, {} page statistics matched, {} null(s)",
            summary.columns,
            summary.pages,
            summary.chunks,
            summary.bytes,
            summary.chunk_checksums,
            summary.page_stats,
            summary.nulls
        )?;
    }
    Ok(())
}
