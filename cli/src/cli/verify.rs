//! `miniblock verify FILE`: every checksum checked, every page decoded, and every page's
//! statistics compared with its values.

use std::io::BufReader;
use std::path::PathBuf;

use miniblock::file::FileReader;

use arrow_array::Array;

use super::progress::{Progress, Unit};
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
        if super::input::is_lance(path)? {
            verify_lance(path)?;
            continue;
        }
        let shown = path.display();
        let file = std::fs::File::open(path)
            .map_err(|e| CliError::new(format!("cannot open {shown}: {e}")))?;
        let mut reader = FileReader::open(BufReader::new(file))
            .map_err(|e| CliError::new(format!("{shown}: {e}")))?;
        // The bar counts the pages' bytes, each checked, decoded and compared in turn.
        let total: u64 = reader
            .footer()
            .columns
            .iter()
            .flat_map(|c| &c.pages)
            .map(|p| p.length)
            .sum();
        let bar = Progress::start("verifying", total, Unit::Bytes);
        let mut shown_bytes = 0;
        let summary = reader
            .verify_with(|done| {
                bar.inc(done.bytes - shown_bytes);
                shown_bytes = done.bytes;
            })
            .map_err(|e| CliError::new(format!("{shown}: {e}")))?;
        bar.finish();
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

/// `verify` of a Lance file: what can be checked is (the footer, the schema, every
/// page's layout and a full decode of every column miniblock reads), and the line says
/// that the values themselves cannot be: Lance stores no checksums.
fn verify_lance(path: &std::path::Path) -> Result<(), CliError> {
    let shown = path.display().to_string();
    let file = std::fs::File::open(path)
        .map_err(|e| CliError::new(format!("cannot open {shown}: {e}")))?;
    let fail = |e: miniblock::Error| CliError::new(format!("{shown}: {e}"));
    let mut reader = miniblock::lance::LanceReader::open(BufReader::new(file)).map_err(fail)?;
    let (mut columns, mut pages, mut skipped) = (0usize, 0usize, Vec::new());
    for field in 0..reader.fields().len() {
        let name = reader.fields()[field].name.clone();
        // Fields of other types, or after a nested one, are not read: listed, not checked.
        let count = match reader.num_pages(field) {
            Ok(count) => count,
            Err(e) if e.kind() == miniblock::ErrorKind::Unsupported => {
                skipped.push(name);
                continue;
            }
            Err(e) => return Err(fail(e)),
        };
        let mut rows = 0u64;
        for page in 0..count {
            let array = reader.read_page(field, page).map_err(|e| {
                CliError::new(format!("{shown}: column {name:?}, page {page}: {e}"))
            })?;
            rows += array.len() as u64;
        }
        if rows != reader.num_rows() {
            return Err(CliError::new(format!(
                "{shown}: column {name:?} decodes to {rows} rows, the file says {}",
                reader.num_rows()
            )));
        }
        columns += 1;
        pages += count;
    }
    if quiet() {
        return Ok(());
    }
    let skipped = if skipped.is_empty() {
        String::new()
    } else {
        format!(
            ", {} column(s) miniblock does not decode ({})",
            skipped.len(),
            skipped.join(", ")
        )
    };
    say!(
        "{shown}: structure ok: a Lance file, {columns} column(s), {pages} page(s), {} rows decoded{skipped}; values not verifiable: {}",
        reader.num_rows(),
        super::input::LANCE_UNVERIFIED
    )
}
