//! `miniblock encode INPUT OUTPUT`.

use std::path::PathBuf;

use miniblock::file::{FileWriter, WriteOptions};

use miniblock::encodings::Strategy;

use super::{input, output, parse_strategy, progress, CliError, Dtype, EncoderArgs};

/// Arguments of `encode`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Input: .f32/.f64 raw little-endian floats, .npy, Arrow IPC (.arrow/.feather) or
    /// .parquet; `-` reads raw values of `--dtype` from standard input.
    input: PathBuf,
    /// The miniblock column file to write (`-`: standard output).
    output: PathBuf,
    /// Overwrite OUTPUT if it exists.
    #[arg(short = 'f', long)]
    force: bool,
    /// Encoding of the pages: auto (chosen per page by trial on a sample), auto:GAIN
    /// (a slower-decoding encoding must save GAIN, e.g. auto:0 for the smallest), or one
    /// of plain, lz4, zstd, bss, bss+lz4, bss+zstd, alp, alp+lz4, alp+zstd (the last three
    /// for 32- and 64-bit floats).
    #[arg(long, default_value = "auto", value_parser = parse_strategy)]
    encoding: Strategy,
    #[command(flatten)]
    encoder: EncoderArgs,
    /// Read INPUT as raw little-endian floats of this type, whatever its extension.
    #[arg(long, value_enum)]
    dtype: Option<Dtype>,
    /// Encode only these columns (repeatable); default: every float column.
    #[arg(long = "column", value_name = "NAME")]
    columns: Vec<String>,
    /// Values per page (default: about 1 MiB of values).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    page_values: Option<u64>,
}

/// Runs `encode`.
pub fn run(args: &Args) -> Result<(), CliError> {
    let mut columns: Vec<String> = Vec::with_capacity(args.columns.len());
    for name in &args.columns {
        if columns.contains(name) {
            return Err(CliError::new(format!(
                "--column {name:?} is given twice; a file cannot hold two columns of one name"
            )));
        }
        columns.push(name.clone());
    }
    let mut input = input::open(&args.input, args.dtype, &columns)?;
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
    let bar = progress::bar(input.file_bytes, "encoding");
    let options = WriteOptions {
        strategy: args.encoding,
        encoder: args.encoder.options()?,
        page_values: args.page_values.map(|n| n as usize),
        ..WriteOptions::default()
    };
    let schema = input.schema.clone();
    let shown = args.output.display().to_string();
    let mut rows = 0u64;
    output::write_output(&args.output, &[&args.input], args.force, |sink| {
        let mut writer = FileWriter::try_new(sink, &schema, options)
            .map_err(|e| CliError::new(format!("{}: {e}", args.input.display())))?;
        while let Some(batch) = input.next_batch() {
            let batch = batch?;
            rows += batch.num_rows() as u64;
            bar.inc(batch.get_array_memory_size() as u64);
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
    bar.finish_and_clear();
    if args.output.as_os_str() == "-" {
        // The file went to standard output: the summary must not mix with it.
        eprintln!(
            "wrote standard output: {} column(s), {rows} rows, {}",
            schema.fields().len(),
            args.encoding
        );
        return Ok(());
    }
    let written = std::fs::metadata(&args.output).map_or(0, |m| m.len());
    let raw: u64 = schema
        .fields()
        .iter()
        .map(|f| rows * miniblock::page::value_width(f.data_type()).unwrap_or(0) as u64)
        .sum();
    say!(
        "wrote {shown}: {} column(s), {rows} rows, {raw} raw bytes -> {written} bytes (ratio {:.3}), {}, pages: {}",
        schema.fields().len(),
        raw as f64 / written.max(1) as f64,
        args.encoding,
        chosen_summary(&args.output)?
    )?;
    Ok(())
}

/// How many pages of the written file use each encoding, e.g. `bss+zstd x3, lz4 x1`.
fn chosen_summary(path: &std::path::Path) -> Result<String, CliError> {
    let file = std::fs::File::open(path)
        .map_err(|e| CliError::new(format!("cannot reopen {}: {e}", path.display())))?;
    let reader = miniblock::file::FileReader::open(std::io::BufReader::new(file))
        .map_err(|e| CliError::new(format!("{}: {e}", path.display())))?;
    let counts = super::inspect::encodings_used(reader.footer());
    Ok(counts
        .iter()
        .map(|(name, n)| format!("{name} x{n}"))
        .collect::<Vec<_>>()
        .join(", "))
}
