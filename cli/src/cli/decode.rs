//! `miniblock decode INPUT OUTPUT`.

use std::fs::File;
use std::io::BufReader;
use std::ops::Range;
use std::path::PathBuf;

use arrow_array::{Array, RecordBatch, RecordBatchReader};
use arrow_schema::DataType;
use clap::ValueEnum;
use miniblock::file::{FileReader, ScanOptions};
use miniblock::page::value_width;

use super::progress::{Progress, Unit};
use super::{output, quiet, CliError, OutputArgs};

pub(super) const EXAMPLES: &str = "\
Examples:
  miniblock decode data.mb out.parquet               every column, types, nulls, metadata kept
  miniblock decode data.mb -o t.f32 --column temperature
  miniblock decode data.mb rows.npy --rows 1000..2000
  miniblock decode data.mb -c --column t | od -f     raw little-endian values to stdout
  miniblock decode data.lance t.f64 --column t       a column of a Lance file";

/// Output formats of `decode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// The values as little-endian bytes (nulls written as NaN for floats, NaT for
    /// timestamps and durations, zero for other types).
    Raw,
    /// A 1-D .npy array (nulls written as NaN, NaT or zero, as for raw).
    Npy,
    /// An Arrow IPC file: the named columns or the whole table, types, nulls and metadata
    /// kept.
    Arrow,
    /// A Parquet file (Zstd): the named columns or the whole table, types, nulls and
    /// metadata kept.
    Parquet,
}

/// Rows per batch when writing a table.
const TABLE_STEP_ROWS: usize = 1 << 17;

/// Arguments of `decode`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A miniblock column file, or a Lance file (format 2.1 or 2.2).
    input: PathBuf,
    /// Where to write the values.
    #[command(flatten)]
    output: OutputArgs,
    /// A column to decode (repeatable). Raw and .npy outputs hold one column, which may be
    /// left out when the file has one; .arrow/.feather/.parquet outputs hold the named
    /// columns, or every column when none is named.
    #[arg(long = "column", value_name = "NAME")]
    columns: Vec<String>,
    /// Only rows START..END (END exclusive; either side may be left out).
    #[arg(long, value_name = "START..END")]
    rows: Option<String>,
    /// Output format (default: from OUTPUT's extension: .npy, .arrow/.feather, .parquet, or
    /// raw for .bin/.raw/.f16/.f32/.f64 and `-`).
    #[arg(long, value_enum)]
    format: Option<Format>,
}

fn parse_rows(text: &str, num_rows: u64) -> Result<Range<u64>, CliError> {
    let bad = || CliError::new(format!("--rows {text:?} is not START..END"));
    let (start, end) = text.split_once("..").ok_or_else(bad)?;
    let start = if start.is_empty() {
        0
    } else {
        start.trim().parse().map_err(|_| bad())?
    };
    let end = if end.is_empty() {
        num_rows
    } else {
        end.trim().parse().map_err(|_| bad())?
    };
    if start > end {
        return Err(CliError::new(format!(
            "--rows {start}..{end} is reversed: START must not be after END"
        )));
    }
    if end > num_rows {
        return Err(CliError::new(format!(
            "--rows {start}..{end} is outside the file's {num_rows} rows"
        )));
    }
    Ok(start..end)
}

/// The numpy dtype of a column: numbers and booleans by name, timestamps and durations as
/// `datetime64`/`timedelta64` of their unit (a time zone is dropped: the values are UTC),
/// 32- and 64-bit decimals as their storage integers (with a note on stderr saying so),
/// anything else (dates, times, wider decimals, fixed-size binary) as raw `V<width>`
/// records of its little-endian bytes.
fn npy_descr(data_type: &DataType, width: usize) -> String {
    use arrow_schema::TimeUnit;
    let unit = |u: &TimeUnit| match u {
        TimeUnit::Second => "s",
        TimeUnit::Millisecond => "ms",
        TimeUnit::Microsecond => "us",
        TimeUnit::Nanosecond => "ns",
    };
    match data_type {
        DataType::Float16 => "<f2".into(),
        DataType::Float32 => "<f4".into(),
        DataType::Float64 => "<f8".into(),
        DataType::Boolean => "|b1".into(),
        DataType::Int8 => "|i1".into(),
        DataType::UInt8 => "|u1".into(),
        DataType::Int16 | DataType::Int32 | DataType::Int64 => format!("<i{width}"),
        DataType::UInt16 | DataType::UInt32 | DataType::UInt64 => format!("<u{width}"),
        DataType::Timestamp(u, _) => format!("<M8[{}]", unit(u)),
        DataType::Date64 => "<M8[ms]".into(),
        DataType::Duration(u) => format!("<m8[{}]", unit(u)),
        DataType::Decimal32(_, scale) | DataType::Decimal64(_, scale) => {
            eprintln!(
                "note: {data_type} values are written as their storage integers (value = integer / 10^{scale})"
            );
            format!("<i{width}")
        }
        _ => format!("|V{width}"),
    }
}

/// What raw and `.npy` outputs write in place of a null, and its name for the summary:
/// NaN for floats and NaT (`i64::MIN`) for timestamps, 64-bit dates and durations, as
/// pandas' `to_numpy` gives them; zero for types with no such value.
fn null_fill(data_type: &DataType, width: usize) -> (Vec<u8>, &'static str) {
    match data_type {
        // The quiet NaN of each width, as numpy writes `np.nan`.
        DataType::Float16 => (0x7e00u16.to_le_bytes().to_vec(), "NaN"),
        DataType::Float32 => (f32::NAN.to_le_bytes().to_vec(), "NaN"),
        DataType::Float64 => (f64::NAN.to_le_bytes().to_vec(), "NaN"),
        DataType::Timestamp(..) | DataType::Date64 | DataType::Duration(_) => {
            (i64::MIN.to_le_bytes().to_vec(), "NaT")
        }
        _ => (vec![0; width], "zero"),
    }
}

/// The values of a fixed-width array as little-endian bytes, `fill` under nulls.
fn le_bytes(array: &dyn Array, fill: &[u8]) -> Vec<u8> {
    let width = value_width(array.data_type()).unwrap_or(1);
    let mut bytes = if let Some(bools) = array.as_any().downcast_ref::<arrow_array::BooleanArray>()
    {
        // numpy's bool: a byte per value, 0 or 1.
        bools.values().iter().map(u8::from).collect()
    } else {
        let data = array.to_data();
        let start = data.offset() * width;
        data.buffers()[0].as_slice()[start..start + data.len() * width].to_vec()
    };
    if let Some(nulls) = array.nulls() {
        for (value, valid) in bytes.chunks_exact_mut(width).zip(nulls.iter()) {
            if !valid {
                value.copy_from_slice(fill);
            }
        }
    }
    bytes
}

/// The output format: `--format`, or from OUTPUT's extension. An extension `decode` does
/// not write is refused rather than given raw bytes, and so is a float extension of
/// another width than the column's (f32 values in a `.f64` file would be misread).
fn output_format(
    args: &Args,
    output: &std::path::Path,
    data_type: &DataType,
) -> Result<Format, CliError> {
    if let Some(format) = args.format {
        return Ok(format);
    }
    if output.as_os_str() == "-" {
        return Ok(Format::Raw);
    }
    let ext = output
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let float = match ext.as_str() {
        "f16" => Some(DataType::Float16),
        "f32" => Some(DataType::Float32),
        "f64" => Some(DataType::Float64),
        _ => None,
    };
    if let Some(float) = float {
        if &float != data_type {
            return Err(CliError::new(format!(
                "the column is {data_type}, not {float}: a .{ext} name would mislabel its values; name the output .bin (or pass --format raw)"
            )));
        }
    }
    match ext.as_str() {
        "npy" => Ok(Format::Npy),
        "arrow" | "arrows" | "feather" | "ipc" => Ok(Format::Arrow),
        "parquet" | "pq" => Ok(Format::Parquet),
        "f16" | "f32" | "f64" | "bin" | "raw" | "" => Ok(Format::Raw),
        other => Err(CliError::new(format!(
            "decode does not write .{other} files; name the output .bin/.f32/.f64 (raw), .npy, .arrow/.feather or .parquet, or pass --format raw|npy|arrow|parquet"
        ))),
    }
}

/// A file `decode` reads: miniblock's own, or a Lance file (told by its last bytes).
enum Source {
    Miniblock(FileReader<BufReader<File>>),
    Lance {
        reader: miniblock::lance::LanceReader<BufReader<File>>,
        schema: arrow_schema::SchemaRef,
    },
}

impl Source {
    fn open(path: &std::path::Path) -> Result<Self, CliError> {
        let shown = path.display().to_string();
        let file =
            File::open(path).map_err(|e| CliError::new(format!("cannot open {shown}: {e}")))?;
        let fail = |e: miniblock::Error| CliError::new(format!("{shown}: {e}"));
        if super::input::is_lance(path)? {
            super::input::note_lance_unverified(&shown);
            let reader = miniblock::lance::LanceReader::open(BufReader::new(file)).map_err(fail)?;
            let schema = reader.schema();
            return Ok(Source::Lance { reader, schema });
        }
        Ok(Source::Miniblock(
            FileReader::open(BufReader::new(file)).map_err(fail)?,
        ))
    }

    fn schema(&self) -> arrow_schema::SchemaRef {
        match self {
            Source::Miniblock(r) => r.schema().clone(),
            Source::Lance { schema, .. } => schema.clone(),
        }
    }

    fn num_rows(&self) -> u64 {
        match self {
            Source::Miniblock(r) => r.num_rows(),
            Source::Lance { reader, .. } => reader.num_rows(),
        }
    }

    fn column_index(&self, name: &str) -> miniblock::Result<usize> {
        match self {
            Source::Miniblock(r) => r.column_index(name),
            Source::Lance { reader, schema } => match schema.index_of(name) {
                Ok(i) => Ok(i),
                // Name the field's type when it exists but is not fixed-width.
                Err(_) => reader.field_index(name).and_then(|f| {
                    Err(miniblock::Error::Unsupported {
                        message: format!(
                            "field {name:?} is {}, not a fixed-width column",
                            reader.fields()[f].logical_type
                        ),
                    })
                }),
            },
        }
    }

    /// Batches of the given columns over `rows`, decoded page by page as they come.
    fn scan(
        self,
        columns: &[usize],
        rows: Range<u64>,
    ) -> miniblock::Result<Box<dyn RecordBatchReader>> {
        match self {
            Source::Miniblock(r) => Ok(Box::new(r.scan(&ScanOptions {
                columns: Some(columns.iter().map(|&c| c.into()).collect()),
                batch_rows: TABLE_STEP_ROWS,
                rows: Some(rows),
                filter: None,
            })?)),
            Source::Lance { reader, schema } => {
                let fields = columns
                    .iter()
                    .map(|&c| reader.field_index(schema.field(c).name()))
                    .collect::<miniblock::Result<Vec<_>>>()?;
                let scan = reader.scan(&fields, TABLE_STEP_ROWS, rows)?;
                let projected = scan.schema();
                let batches = scan
                    .map(|b| b.map_err(|e| arrow_schema::ArrowError::ExternalError(Box::new(e))));
                Ok(Box::new(arrow_array::RecordBatchIterator::new(
                    batches, projected,
                )))
            }
        }
    }
}

/// Runs `decode`.
pub fn run(args: &Args) -> Result<(), CliError> {
    let output = args.output.path().ok_or_else(|| {
        CliError::new("name the output: OUTPUT, -o OUTPUT, or -c for standard output")
    })?;
    let shown = args.input.display().to_string();
    let reader = Source::open(&args.input)?;
    let schema = reader.schema().clone();
    // A Lance file of only string columns, or a footer listing no column, has nothing
    // to decode: an error, not an index past the end.
    if schema.fields().is_empty() {
        return Err(CliError::new(format!(
            "{shown} holds no column miniblock decodes (`miniblock inspect {shown}` lists what it holds)"
        )));
    }
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    let mut columns = Vec::new();
    for name in &args.columns {
        let index = reader
            .column_index(name)
            .map_err(|e| CliError::new(format!("{shown}: {e}")))?;
        if columns.contains(&index) {
            return Err(CliError::new(format!("--column {name:?} is given twice")));
        }
        columns.push(index);
    }
    let first_type = schema
        .field(columns.first().copied().unwrap_or(0))
        .data_type();
    let format = output_format(args, &output, first_type)?;
    let table = matches!(format, Format::Arrow | Format::Parquet);
    if columns.is_empty() && (table || names.len() == 1) {
        columns = (0..names.len()).collect();
    }
    if !table && columns.len() != 1 {
        return Err(CliError::new(format!(
            "{shown} has {} columns ({}); a {format:?} output holds one: name it with --column, or write .arrow/.parquet for several",
            names.len(),
            names.join(", ")
        )));
    }
    let rows = match &args.rows {
        Some(text) => parse_rows(text, reader.num_rows())?,
        None => 0..reader.num_rows(),
    };
    let widths = columns
        .iter()
        .map(|&c| value_width(schema.field(c).data_type()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| CliError::new(e.to_string()))?;
    let row_bytes: u64 = widths.iter().map(|&w| w as u64).sum();
    // The bar counts decoded bytes against the decoded total.
    let bar = Progress::start(
        "decoding",
        (rows.end - rows.start).saturating_mul(row_bytes),
        Unit::Bytes,
    );
    let len =
        usize::try_from(rows.end - rows.start).map_err(|_| CliError::new("row range too large"))?;
    // Decoded in batches of rows, so memory stays at one batch whatever the file's size.
    let mut batches = reader
        .scan(&columns, rows.clone())
        .map_err(|e| CliError::new(format!("{shown}: {e}")))?;
    let out_schema = batches.schema();
    let out_shown = output.display().to_string();
    let write_err = |e: &dyn std::fmt::Display| CliError::new(format!("writing {out_shown}: {e}"));
    let mut nulls_filled = 0usize;
    let mut fill_name = "zero";
    output::write_output(&output, &[&args.input], args.output.force, |sink| {
        let mut next = || -> Option<Result<RecordBatch, CliError>> {
            let batch = batches.next()?.map_err(|e| match e {
                arrow_schema::ArrowError::ExternalError(inner) => {
                    CliError::new(format!("{shown}: {inner}"))
                }
                other => CliError::new(format!("{shown}: {other}")),
            });
            if let Ok(batch) = &batch {
                bar.inc(batch.num_rows() as u64 * row_bytes);
            }
            Some(batch)
        };
        match format {
            Format::Raw | Format::Npy => {
                if format == Format::Npy {
                    let descr = npy_descr(out_schema.field(0).data_type(), widths[0]);
                    sink.write_all(&output::npy_header(&descr, len))
                        .map_err(|e| output::write_error(&output, &e))?;
                }
                let (fill, name) = null_fill(out_schema.field(0).data_type(), widths[0]);
                fill_name = name;
                while let Some(batch) = next() {
                    let batch = batch?;
                    let array = batch.column(0);
                    nulls_filled += array.null_count();
                    sink.write_all(&le_bytes(array.as_ref(), &fill))
                        .map_err(|e| output::write_error(&output, &e))?;
                }
            }
            Format::Arrow => {
                let mut writer = arrow_ipc::writer::FileWriter::try_new(&mut *sink, &out_schema)
                    .map_err(|e| write_err(&e))?;
                while let Some(batch) = next() {
                    writer.write(&batch?).map_err(|e| write_err(&e))?;
                }
                writer.finish().map_err(|e| write_err(&e))?;
            }
            Format::Parquet => {
                let props = parquet::file::properties::WriterProperties::builder()
                    .set_compression(parquet::basic::Compression::ZSTD(
                        parquet::basic::ZstdLevel::default(),
                    ))
                    .build();
                let mut writer = parquet::arrow::ArrowWriter::try_new(
                    &mut *sink,
                    out_schema.clone(),
                    Some(props),
                )
                .map_err(|e| write_err(&e))?;
                while let Some(batch) = next() {
                    writer.write(&batch?).map_err(|e| write_err(&e))?;
                }
                writer.close().map_err(|e| write_err(&e))?;
            }
        }
        Ok(())
    })?;
    bar.finish();
    if quiet() {
        return Ok(());
    }
    let what = if columns.len() == 1 {
        format!("column {:?}", out_schema.field(0).name())
    } else {
        format!("{} columns", columns.len())
    };
    let mut line = format!(
        "wrote {out_shown}: {what}, rows {}..{} ({len} rows, {format:?})",
        rows.start, rows.end
    );
    if nulls_filled > 0 {
        use std::fmt::Write as _;
        let _ = write!(line, ", {nulls_filled} null(s) written as {fill_name}");
    }
    // Values went to standard output: the summary must not mix with them.
    if output.as_os_str() == "-" {
        eprintln!("{line}");
        Ok(())
    } else {
        say!("{line}")
    }
}
