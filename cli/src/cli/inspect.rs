//! `miniblock inspect FILE`.

use std::fmt::Write;
use std::fs::File;
use std::io::BufReader;
use std::path::PathBuf;

use std::collections::BTreeMap;

use miniblock::encodings::{describe, short_name, ChunkStorage};
use miniblock::file::{page_layout, FileReader};
use miniblock::page::value_width;
use miniblock::proto::file::{Column, Footer};
use prost::Message;
use serde_json::json;

use super::stats::ColumnStats;
use super::CliError;
use miniblock::file::PageStats;

pub(super) const EXAMPLES: &str = "\
Examples:
  miniblock inspect data.mb                  columns, pages, encodings, min/max, nulls, NaNs
  miniblock inspect data.mb --json | jq '.columns[] | {name, min, max, nans}'
  miniblock inspect data.parquet             what a Parquet/Arrow/.npy file holds, and what
                                             of it miniblock can encode";

/// Arguments of `inspect`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A miniblock column file (or a Parquet, Arrow IPC, .npy or raw float file, whose
    /// columns are listed).
    file: PathBuf,
    /// Print one JSON object (with each page's ArrayEncoding as protobuf hex) instead of text.
    #[arg(long)]
    json: bool,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// Runs `inspect`.
pub fn run(args: &Args) -> Result<(), CliError> {
    let shown = args.file.display().to_string();
    let file =
        File::open(&args.file).map_err(|e| CliError::new(format!("cannot open {shown}: {e}")))?;
    let file_bytes = file.metadata().map_or(0, |m| m.len());
    if let Some(foreign) = super::input::foreign(&args.file)? {
        return describe_foreign(args, &foreign, file_bytes);
    }
    // A netCDF, HDF5 or compressed file is named, with what to do with it, rather than
    // reported as a damaged miniblock file.
    match super::input::other_format(&args.file)? {
        Some((format, advice)) if format != "a miniblock file" => {
            return if args.json {
                say!(
                    "{}",
                    json!({"file": shown, "file_bytes": file_bytes, "format": format, "miniblock": false, "advice": advice})
                )
            } else {
                say!("{shown}: {format}, not a miniblock file ({file_bytes} bytes): {advice}")
            };
        }
        _ => {}
    }
    let mut reader = FileReader::open(BufReader::new(file))
        .map_err(|e| CliError::new(format!("{shown}: {e}")))?;
    let stats = (0..reader.schema().fields().len())
        .map(|c| column_stats(&mut reader, c))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| CliError::new(format!("{shown}: {e}")))?;
    let footer = reader.footer();
    let mut columns_json = Vec::new();
    let mut text = format!(
        "{shown}: {file_bytes} bytes, {} rows, {} column(s)\n",
        footer.num_rows,
        footer.columns.len()
    );
    for (c, ((field, column), stats)) in reader
        .schema()
        .fields()
        .iter()
        .zip(&footer.columns)
        .zip(&stats)
        .enumerate()
    {
        let width = value_width(field.data_type()).unwrap_or(1);
        let raw = footer.num_rows * width as u64;
        let encoded: u64 = column.pages.iter().map(stored_bytes).sum();
        let _ = write!(
            text,
            "\ncolumn {:?}: {}{}, {} page(s), {raw} raw bytes -> {encoded} bytes (data + chunk tables + page buffers), ratio {:.3}\n",
            field.name(),
            field.data_type(),
            if field.is_nullable() { ", nullable" } else { "" },
            column.pages.len(),
            raw as f64 / encoded.max(1) as f64
        );
        let _ = writeln!(
            text,
            "  values: min {}, max {}, {} null(s){}",
            stats.min().as_deref().unwrap_or("-"),
            stats.max().as_deref().unwrap_or("-"),
            stats.nulls(),
            stats
                .nans()
                .map_or_else(String::new, |n| format!(", {n} NaN(s)"))
        );
        let mut pages_json = Vec::new();
        for (index, page) in column.pages.iter().enumerate() {
            let layout = page_layout(page, width).map_err(|e| {
                CliError::new(format!(
                    "{shown}: column {:?} page {index}: {e}",
                    field.name()
                ))
            })?;
            let sizes: Vec<u32> = layout.chunk_metas().map(|c| c.num_bytes).collect();
            let compressed = layout
                .chunk_metas()
                .filter(|c| c.storage == ChunkStorage::Compressed)
                .count();
            let with_nulls = layout.chunk_metas().filter(|c| c.has_validity).count();
            let (min, max) = (
                sizes.iter().min().copied().unwrap_or(0),
                sizes.iter().max().copied().unwrap_or(0),
            );
            let mean = page.length as f64 / sizes.len().max(1) as f64;
            let page_raw = page.num_values * width as u64;
            let encoding = page.encoding.clone().unwrap_or_default();
            let words = describe(&encoding);
            let ratio = page_raw as f64 / stored_bytes(page).max(1) as f64;
            let mut extremes = ColumnStats::new(field.data_type());
            if let Some(s) = reader
                .page_stats(c, index)
                .map_err(|e| CliError::new(format!("{shown}: {e}")))?
            {
                extremes.add(&s);
            }
            let (page_min, page_max) = (extremes.min(), extremes.max());
            let span = page_min
                .as_deref()
                .zip(page_max.as_deref())
                .map_or_else(String::new, |(lo, hi)| format!(", values {lo} to {hi}"));
            let buffers = if page.buffer_sizes.is_empty() {
                String::new()
            } else {
                let sizes: Vec<String> = page.buffer_sizes.iter().map(u64::to_string).collect();
                format!("+{}", sizes.join("+"))
            };
            let _ = writeln!(
                text,
                "  page {index}: rows {}, bytes {}+{}{buffers} at offset {}, {words}, {} chunks (bytes min {min} / mean {mean:.0} / max {max}; {compressed} compressed, {with_nulls} with nulls), ratio {ratio:.3}{span}",
                page.num_values,
                page.length,
                page.chunk_table.len(),
                page.offset,
                sizes.len(),
            );
            pages_json.push(json!({
                "index": index,
                "offset": page.offset,
                "length": page.length,
                "num_values": page.num_values,
                "encoding": words,
                "encoding_hex": hex(&encoding.encode_to_vec()),
                "chunks": sizes.len(),
                "chunk_bytes": sizes,
                "compressed_chunks": compressed,
                "chunks_with_nulls": with_nulls,
                "crc32c": page.crc32c,
                "buffer_bytes": page.buffer_sizes,
                "min": page_min,
                "max": page_max,
                "ratio": ratio,
            }));
        }
        let chosen = column_encodings(column);
        let _ = writeln!(
            text,
            "  encodings: {}",
            chosen
                .iter()
                .map(|(name, n)| format!("{name} x{n}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        columns_json.push(json!({
            "name": field.name(),
            "chosen": chosen,
            "type": field.data_type().to_string(),
            "nullable": field.is_nullable(),
            "raw_bytes": raw,
            "encoded_bytes": encoded,
            "ratio": raw as f64 / encoded.max(1) as f64,
            "min": stats.min(),
            "max": stats.max(),
            "nulls": stats.nulls(),
            "nans": stats.nans(),
            "pages": pages_json,
        }));
    }
    if args.json {
        let doc = json!({
            "file": shown,
            "file_bytes": file_bytes,
            "format_version": footer.format_version,
            "num_rows": footer.num_rows,
            "columns": columns_json,
        });
        say!("{doc}")?;
    } else {
        use std::io::Write as _;
        std::io::stdout()
            .lock()
            .write_all(text.as_bytes())
            .map_err(|e| super::output::write_error(std::path::Path::new("standard output"), &e))?;
    }
    Ok(())
}

/// A column's statistics: from the footer's page statistics, or, in a file written
/// before they existed, from its pages decoded one at a time.
fn column_stats<R: miniblock::file::Source>(
    reader: &mut FileReader<R>,
    c: usize,
) -> miniblock::Result<ColumnStats> {
    let mut stats = ColumnStats::new(reader.schema().field(c).data_type());
    if let Some(total) = reader.column_stats(c)? {
        stats.add(&total);
        return Ok(stats);
    }
    let pages: Vec<u64> = reader.footer().columns[c]
        .pages
        .iter()
        .map(|p| p.num_values)
        .collect();
    let mut row = 0;
    for n in pages {
        stats.add(&PageStats::of(
            reader.read_column_range(c, row..row + n)?.as_ref(),
        ));
        row += n;
    }
    Ok(stats)
}

/// `inspect` of a Parquet, Arrow IPC, `.npy` or raw file: its format, rows and columns,
/// and which of them `encode` takes.
fn describe_foreign(
    args: &Args,
    foreign: &super::input::Foreign,
    file_bytes: u64,
) -> Result<(), CliError> {
    let shown = args.file.display().to_string();
    let rows = foreign
        .rows
        .map_or_else(String::new, |n| format!("{n} rows, "));
    let encoded_name = args.file.with_extension("mb");
    if args.json {
        let columns: Vec<_> = foreign
            .schema
            .fields()
            .iter()
            .map(|f| {
                json!({
                    "name": f.name(),
                    "type": f.data_type().to_string(),
                    "nullable": f.is_nullable(),
                })
            })
            .collect();
        say!(
            "{}",
            json!({
                "file": shown,
                "file_bytes": file_bytes,
                "format": foreign.format,
                "values_verifiable": !foreign.format.starts_with("Lance"),
                "num_rows": foreign.rows,
                "columns": columns,
                "page_layouts": foreign.layouts.iter().map(|(name, counts)| json!({
                    "column": name,
                    "layouts": counts.iter().map(|(t, n)| json!({"layout": t, "pages": n})).collect::<Vec<_>>(),
                })).collect::<Vec<_>>(),
            })
        )
    } else {
        let mut layouts = String::new();
        for (name, counts) in &foreign.layouts {
            for (text, n) in counts {
                let _ = writeln!(layouts, "  column {name:?}: {n} page(s): {text}");
            }
        }
        // "a Parquet file", "an Arrow IPC stream": formats named with their article.
        if foreign.format.starts_with("Lance") {
            super::input::note_lance_unverified(&shown);
        }
        let named = match foreign.format {
            f if f.starts_with("Arrow") => format!("an {f}"),
            f => format!("a {f} file"),
        };
        say!(
            "{shown}: {named}, not a miniblock file: {file_bytes} bytes, {rows}{} column(s): {}\n{layouts}`miniblock encode {shown}` writes its fixed-width columns to {}",
            foreign.schema.fields().len(),
            super::input::describe_fields(&foreign.schema),
            encoded_name.display()
        )
    }
}

/// Pages per encoding name in one column.
fn column_encodings(column: &Column) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for page in &column.pages {
        let name = page
            .encoding
            .as_ref()
            .map_or_else(|| "(none)".to_owned(), short_name);
        *counts.entry(name).or_insert(0) += 1;
    }
    counts
}

/// Pages per encoding name over every column of a file.
pub fn encodings_used(footer: &Footer) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for column in &footer.columns {
        for (name, n) in column_encodings(column) {
            *counts.entry(name).or_insert(0) += n;
        }
    }
    counts
}

/// Bytes a page takes in the file and its footer's chunk table: data, table and page
/// buffers.
fn stored_bytes(page: &miniblock::proto::file::Page) -> u64 {
    page.length + page.chunk_table.len() as u64 + page.buffer_sizes.iter().sum::<u64>()
}
