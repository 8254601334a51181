//! `miniblock encode INPUT OUTPUT`.

use std::path::PathBuf;

use arrow_schema::DataType;
use miniblock::file::{FileWriter, WriteOptions};

use miniblock::encodings::Strategy;
use miniblock::lance::{LanceEncoding, LanceWriteOptions, LanceWriter};

use super::progress::{Progress, Unit};
use super::{input, output, parse_strategy, quiet, CliError, Dtype, EncoderArgs, OutputArgs};

pub(super) const EXAMPLES: &str = "\
Examples:
  miniblock encode data.parquet                      writes data.mb beside it (auto)
  miniblock encode data.parquet -o t.mb --column temperature --column pressure
  miniblock encode grid.npy grid.mb --encoding alp+zstd --chunk-values 2048
  miniblock encode values.bin v.mb --dtype f64       raw little-endian doubles
  producer | miniblock encode - --dtype f32 -c > v.mb
  miniblock encode data.parquet data.lance           a Lance 2.1 file (auto: smallest Lance form)
  miniblock encode t.f64 t.lance --encoding bss+zstd Lance's own BSS + Zstd pages";

/// Arguments of `encode`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Input: .f32/.f64 raw little-endian floats, .npy, Arrow IPC (.arrow/.feather) or
    /// .parquet; `-` reads raw values of `--dtype` from standard input.
    input: PathBuf,
    /// The miniblock column file to write (default: INPUT's name with `.mb`, beside it);
    /// a name ending `.lance` writes a Lance 2.1 file instead.
    #[command(flatten)]
    output: OutputArgs,
    /// Encoding of the pages: auto (chosen per page by trial on a sample), auto:GAIN
    /// (the fastest-decoding encoding at most 1/(1-GAIN) times the smallest, e.g. auto:0
    /// for the smallest, auto:0.2 for faster scans), either followed by :nofill for no
    /// fill pages (auto:nofill, auto:0:nofill), or one
    /// of plain, lz4, zstd, bss, bss+lz4, bss+zstd, bss+zstd+dict, bitpack, delta, delta+lz4, delta+zstd,
    /// delta+ans (1-, 2-, 4- and 8-byte values), dict, dict+zstd (1- to 8-byte values), alp,
    /// alp+lz4, alp+zstd, alp+ans, alp-rd (32- and 64-bit floats).
    #[arg(long, default_value = "auto", value_parser = parse_strategy)]
    encoding: Strategy,
    #[command(flatten)]
    encoder: EncoderArgs,
    /// Read INPUT as raw little-endian floats of this type, whatever its extension.
    #[arg(long, value_enum)]
    dtype: Option<Dtype>,
    /// Take a raw input's bytes as values even when it starts like another format
    /// (netCDF, HDF5, Parquet, Arrow, .npy, gzip, ...), which is otherwise refused.
    #[arg(long)]
    raw: bool,
    /// Encode only these columns (repeatable); default: every fixed-width column (floats,
    /// integers, booleans, dates, times, timestamps, decimals, fixed-size binaries).
    #[arg(long = "column", value_name = "NAME")]
    columns: Vec<String>,
    /// A CSV or TSV column's type instead of the one inferred from its values
    /// (repeatable), in Arrow's notation: `--csv-type code=Int32`,
    /// `--csv-type when='Timestamp(ms)'`, `--csv-type price='Decimal128(10, 2)'`.
    #[arg(long = "csv-type", value_name = "NAME=TYPE", value_parser = parse_csv_type)]
    csv_types: Vec<(String, DataType)>,
    /// Values per page (default: about 1 MiB of values).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    page_values: Option<u64>,
}

/// `NAME=TYPE` of `--csv-type`, the type in Arrow's notation.
fn parse_csv_type(text: &str) -> Result<(String, DataType), String> {
    let (name, type_name) = text
        .split_once('=')
        .ok_or_else(|| format!("{text:?} is not NAME=TYPE"))?;
    let data_type: DataType = type_name
        .trim()
        .parse()
        .map_err(|e| format!("{type_name:?} is not an Arrow type ({e}); e.g. Int32, Float32, Date32, 'Timestamp(ms)', 'Decimal128(10, 2)'"))?;
    Ok((name.to_owned(), data_type))
}

/// Runs `encode`.
pub fn run(args: &Args) -> Result<(), CliError> {
    let output = match args.output.path() {
        Some(path) => path,
        None if args.input.as_os_str() == "-" => return Err(CliError::new(
            "reading standard input, name the output: OUTPUT, -o OUTPUT, or -c for standard output",
        )),
        None => args.input.with_extension("mb"),
    };
    let mut columns: Vec<String> = Vec::with_capacity(args.columns.len());
    for name in &args.columns {
        if columns.contains(name) {
            return Err(CliError::new(format!(
                "--column {name:?} is given twice; a file cannot hold two columns of one name"
            )));
        }
        columns.push(name.clone());
    }
    // Before the input is opened, so a refusal does not follow lines (`skipped: ...`)
    // that read as if the encode had run.
    output::check_output(&output, &[&args.input], args.output.force)?;
    let started = std::time::Instant::now();
    let mut input = input::open(&args.input, args.dtype, &columns, args.raw, &args.csv_types)?;
    // Checked before anything is written, so no file is left behind for it.
    let mut names = std::collections::HashSet::new();
    if let Some(twice) = input
        .schema
        .fields()
        .iter()
        .find(|f| !names.insert(f.name()))
    {
        return Err(CliError::new(format!(
            "{}: two columns are named {:?}; a miniblock file needs distinct names (pick columns with --column)",
            args.input.display(),
            twice.name()
        )));
    }
    let row_bytes: u64 = input
        .schema
        .fields()
        .iter()
        .map(|f| miniblock::page::value_width(f.data_type()).unwrap_or(0) as u64)
        .sum();
    // Bytes of values against the values' total when the input says how many rows it has,
    // else batches against its batch count (an IPC file), else nothing (a stream).
    let bar = match input.size {
        Some(input::Size::Rows(rows)) => {
            Progress::start("encoding", rows.saturating_mul(row_bytes), Unit::Bytes)
        }
        Some(input::Size::Batches(n)) => Progress::start("encoding", n, Unit::Items("batches")),
        None => Progress::start("encoding", 0, Unit::Bytes),
    };
    let by_batch = matches!(input.size, Some(input::Size::Batches(_)));
    let options = WriteOptions {
        strategy: args.encoding,
        encoder: args.encoder.options()?,
        page_values: args.page_values.map(|n| n as usize),
        ..WriteOptions::default()
    };
    let lance = output
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("lance"));
    let lance_options = if lance {
        Some(LanceWriteOptions {
            encoding: match args.encoding {
                Strategy::Auto(_) => LanceEncoding::Smallest,
                Strategy::Fixed(e) => LanceEncoding::from_encoding(e)
                    .map_err(|e| CliError::new(format!("--encoding for a .lance output: {e}")))?,
            },
            zstd_level: Some(args.encoder.zstd_level),
            chunk_values: args.encoder.chunk_values,
            page_rows: args.page_values.map(|n| n as usize),
        })
    } else {
        None
    };
    let schema = input.schema.clone();
    let shown = output.display().to_string();
    let mut rows = 0u64;
    output::write_output(&output, &[&args.input], args.output.force, |sink| {
        let fail = |e: miniblock::Error| CliError::new(format!("{}: {e}", args.input.display()));
        let mut writer = match lance_options {
            Some(o) => Writer::Lance(LanceWriter::try_new(sink, &schema, o).map_err(fail)?),
            None => Writer::Miniblock(FileWriter::try_new(sink, &schema, options).map_err(fail)?),
        };
        while let Some(batch) = input.next_batch() {
            let batch = batch?;
            rows += batch.num_rows() as u64;
            bar.inc(if by_batch {
                1
            } else {
                batch.num_rows() as u64 * row_bytes
            });
            writer
                .write_batch(&batch)
                .map_err(|e| CliError::new(format!("encoding {}: {e}", args.input.display())))?;
        }
        if rows == 0 {
            return Err(CliError::new(format!(
                "{}: the input holds no values",
                args.input.display()
            )));
        }
        writer
            .finish()
            .map_err(|e| CliError::new(format!("writing {shown}: {e}")))?;
        Ok(())
    })?;
    bar.finish();
    if quiet() {
        return Ok(());
    }
    if output.as_os_str() == "-" {
        // The file went to standard output: the summary must not mix with it.
        eprintln!(
            "wrote standard output: {} column(s), {rows} rows, {}",
            schema.fields().len(),
            args.encoding
        );
        return Ok(());
    }
    let raw = rows.saturating_mul(row_bytes);
    let seconds = started.elapsed().as_secs_f64();
    // A special file (`/dev/null`, a FIFO, a terminal) was written through: reading it
    // back for the summary would find nothing, or block on a FIFO forever.
    if !std::fs::metadata(&output).is_ok_and(|m| m.is_file()) {
        return say!(
            "wrote {shown}: {} column(s), {rows} rows, {raw} raw bytes, {}, in {seconds:.2} s",
            schema.fields().len(),
            args.encoding
        );
    }
    let written = std::fs::metadata(&output).map_or(0, |m| m.len());
    if lance {
        return say!(
            "wrote {shown}: a Lance 2.1 file, {} column(s), {rows} rows, {raw} raw bytes -> {written} bytes (ratio {:.3}), {}, in {seconds:.2} s",
            schema.fields().len(),
            raw as f64 / written.max(1) as f64,
            args.encoding
        );
    }
    say!(
        "wrote {shown}: {} column(s), {rows} rows, {raw} raw bytes -> {written} bytes (ratio {:.3}), {}, pages: {}, in {seconds:.2} s",
        schema.fields().len(),
        raw as f64 / written.max(1) as f64,
        args.encoding,
        chosen_summary(&output).inspect_err(|_| {
            // What cannot be read back must not stay under the name of a good output.
            let _ = std::fs::remove_file(&output);
        })?
    )?;
    Ok(())
}

/// The file being written: miniblock's own, or Lance (for a `.lance` output).
enum Writer<W: std::io::Write> {
    Miniblock(FileWriter<W>),
    Lance(LanceWriter<W>),
}

impl<W: std::io::Write> Writer<W> {
    fn write_batch(&mut self, batch: &arrow_array::RecordBatch) -> miniblock::Result<()> {
        match self {
            Writer::Miniblock(w) => w.write_batch(batch),
            Writer::Lance(w) => w.write_batch(batch),
        }
    }

    fn finish(self) -> miniblock::Result<()> {
        match self {
            Writer::Miniblock(w) => w.finish().map(drop),
            Writer::Lance(w) => w.finish().map(drop),
        }
    }
}

/// How many pages of the written file use each encoding, e.g. `bss+zstd x3, lz4 x1`.
fn chosen_summary(path: &std::path::Path) -> Result<String, CliError> {
    let file = std::fs::File::open(path)
        .map_err(|e| CliError::new(format!("cannot reopen {}: {e}", path.display())))?;
    let reader = miniblock::file::FileReader::open(std::io::BufReader::new(file)).map_err(|e| {
        CliError::new(format!(
            "{} was written but does not read back ({e}); removed it",
            path.display()
        ))
    })?;
    let counts = super::inspect::encodings_used(reader.footer());
    Ok(counts
        .iter()
        .map(|(name, n)| format!("{name} x{n}"))
        .collect::<Vec<_>>()
        .join(", "))
}
