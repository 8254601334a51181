//! Reading columns from the files a user has: raw little-endian floats, `.npy`,
//! Arrow IPC and Parquet. Every reader streams record batches of the selected fixed-width
//! columns, so large inputs never sit in memory twice.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, Float32Array, Float64Array, RecordBatch, RecordBatchReader};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::{CliError, Dtype};

/// Values per batch for raw and `.npy` inputs (1 MiB of f32).
const BATCH_VALUES: usize = 1 << 18;

/// How much an input holds, known before its batches are read (for progress).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Size {
    /// This many rows (raw, `.npy`, Parquet).
    Rows(u64),
    /// This many record batches (an Arrow IPC file).
    Batches(u64),
}

/// An opened input: its name, the schema of the columns taken, and their batches.
pub struct Input {
    /// The columns taken from it.
    pub schema: SchemaRef,
    /// How much the batches hold, when the input says so before it is read.
    pub size: Option<Size>,
    batches: Box<dyn Iterator<Item = Result<RecordBatch, CliError>>>,
}

impl Input {
    /// The next batch, if any.
    pub fn next_batch(&mut self) -> Option<Result<RecordBatch, CliError>> {
        self.batches.next()
    }
}

/// Opens `path`, choosing the reader by extension (`--dtype` makes any file raw); `-` is
/// standard input, raw values of `--dtype`.
pub fn open(
    path: &Path,
    dtype: Option<Dtype>,
    wanted: &[String],
    raw_anyway: bool,
    csv_types: &[(String, DataType)],
) -> Result<Input, CliError> {
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    if !csv_types.is_empty() && (dtype.is_some() || !matches!(ext.as_str(), "csv" | "tsv")) {
        return Err(CliError::new(format!(
            "--csv-type applies to CSV and TSV inputs; {} is not one",
            path.display()
        )));
    }
    if path.as_os_str() == "-" {
        return stdin(dtype, wanted);
    }
    let shown = path.display().to_string();
    let file = File::open(path).map_err(|e| CliError::new(format!("cannot open {shown}: {e}")))?;
    let file_bytes = file
        .metadata()
        .map_err(|e| CliError::new(format!("cannot read {shown}: {e}")))?
        .len();
    let name = path
        .file_stem()
        .map_or_else(|| shown.clone(), |s| s.to_string_lossy().into_owned());
    let raw_dtype = dtype.or(match ext.as_str() {
        "f32" => Some(Dtype::F32),
        "f64" => Some(Dtype::F64),
        _ => None,
    });
    let (schema, size, batches) = if let Some(dtype) = raw_dtype {
        // A file of a known format read as raw values would encode its headers as floats.
        if !raw_anyway {
            if let Some((format, advice)) = other_format(path)? {
                return Err(CliError::new(format!(
                    "{shown} is {format}, not raw {} values: {advice} (--raw takes its bytes as values anyway)",
                    dtype.name()
                )));
            }
        }
        single_column_only(&name, wanted, &shown)?;
        raw(file, file_bytes, dtype, &name, &shown)?
    } else {
        match ext.as_str() {
            "npy" => {
                single_column_only(&name, wanted, &shown)?;
                npy(file, file_bytes, &name, &shown)?
            }
            "arrow" | "arrows" | "feather" | "ipc" => ipc(file, wanted, &shown)?,
            "parquet" | "pq" => parquet(file, wanted, &shown)?,
            "csv" | "tsv" => csv(path, ext == "tsv", wanted, csv_types, &shown)?,
            _ if is_lance(path)? => {
                note_lance_unverified(&shown);
                lance(file, wanted, &shown)?
            }
            _ => {
                if let Some((format, advice)) = other_format(path)? {
                    return Err(CliError::new(format!("{shown} is {format}: {advice}")));
                }
                return Err(CliError::new(format!(
                    "{shown}: unknown extension {ext:?}; expected .f32, .f64, .npy, .arrow, .arrows, .feather, .parquet, .csv, .tsv or a Lance file (or --dtype for raw floats)"
                )));
            }
        }
    };
    if file_bytes == 0 {
        return Err(CliError::new(format!("{shown}: the file is empty")));
    }
    Ok(Input {
        schema,
        size,
        batches,
    })
}

type Batches = Box<dyn Iterator<Item = Result<RecordBatch, CliError>>>;

/// What a reader of one format returns: the schema taken, its size if known, its batches.
type Opened = (SchemaRef, Option<Size>, Batches);

fn single_column_only(name: &str, wanted: &[String], shown: &str) -> Result<(), CliError> {
    match wanted {
        [] => Ok(()),
        [one] if one == name => Ok(()),
        _ => Err(CliError::new(format!(
            "{shown} holds one column named {name:?}; --column {wanted:?} does not match"
        ))),
    }
}

fn one_column_schema(name: &str, dtype: Dtype) -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new(
        name,
        dtype.data_type(),
        false,
    )]))
}

/// Turns little-endian value bytes into a one-column batch.
fn batch_from_le(schema: &SchemaRef, dtype: Dtype, bytes: &[u8]) -> Result<RecordBatch, CliError> {
    let array: ArrayRef = match dtype {
        Dtype::F32 => Arc::new(Float32Array::from_iter_values(
            bytes
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes(b.try_into().unwrap_or_default())),
        )),
        Dtype::F64 => Arc::new(Float64Array::from_iter_values(
            bytes
                .chunks_exact(8)
                .map(|b| f64::from_le_bytes(b.try_into().unwrap_or_default())),
        )),
    };
    RecordBatch::try_new(schema.clone(), vec![array]).map_err(|e| CliError::new(e.to_string()))
}

/// Streams `len` bytes of values from `reader` as batches.
fn value_stream<R: Read + 'static>(
    mut reader: R,
    len: u64,
    schema: SchemaRef,
    dtype: Dtype,
    shown: String,
) -> Batches {
    let mut left = len;
    let mut buf = Vec::new();
    Box::new(std::iter::from_fn(move || {
        if left == 0 {
            return None;
        }
        let take = left.min((BATCH_VALUES * dtype.width()) as u64) as usize;
        buf.resize(take, 0);
        if let Err(e) = reader.read_exact(&mut buf) {
            left = 0;
            return Some(Err(CliError::new(format!("reading {shown}: {e}"))));
        }
        left -= take as u64;
        Some(batch_from_le(&schema, dtype, &buf))
    }))
}

/// Raw little-endian values of `dtype` from standard input, until it ends.
fn stdin(dtype: Option<Dtype>, wanted: &[String]) -> Result<Input, CliError> {
    let dtype = dtype.ok_or_else(|| {
        CliError::new("reading standard input (-) needs --dtype f32 or f64: its values are raw")
    })?;
    let name = "stdin".to_owned();
    single_column_only(&name, wanted, "standard input")?;
    let schema = one_column_schema(&name, dtype);
    let batch_schema = schema.clone();
    let mut reader = BufReader::new(std::io::stdin());
    let mut buf = Vec::new();
    let mut done = false;
    let batches = Box::new(std::iter::from_fn(move || {
        if done {
            return None;
        }
        buf.clear();
        let want = (BATCH_VALUES * dtype.width()) as u64;
        if let Err(e) = (&mut reader).take(want).read_to_end(&mut buf) {
            done = true;
            return Some(Err(CliError::new(format!("reading standard input: {e}"))));
        }
        if (buf.len() as u64) < want {
            done = true;
        }
        if !buf.len().is_multiple_of(dtype.width()) {
            return Some(Err(CliError::new(format!(
                "standard input ends inside a {}-byte {} value",
                dtype.width(),
                dtype.name()
            ))));
        }
        if buf.is_empty() {
            return None;
        }
        Some(batch_from_le(&batch_schema, dtype, &buf))
    }));
    Ok(Input {
        schema,
        size: None,
        batches,
    })
}

fn raw(file: File, len: u64, dtype: Dtype, name: &str, shown: &str) -> Result<Opened, CliError> {
    if !len.is_multiple_of(dtype.width() as u64) {
        return Err(CliError::new(format!(
            "{shown}: {len} bytes is not a whole number of {}-byte {} values",
            dtype.width(),
            dtype.name()
        )));
    }
    let schema = one_column_schema(name, dtype);
    let batches = value_stream(
        BufReader::new(file),
        len,
        schema.clone(),
        dtype,
        shown.to_owned(),
    );
    Ok((
        schema,
        Some(Size::Rows(len / dtype.width() as u64)),
        batches,
    ))
}

/// A numpy dtype string (`<f4`, `>i8`, `|u1`, `<M8[us]`, ...) as the Arrow type it holds,
/// its width, and whether its bytes are big-endian; a clear error for what has no
/// fixed-width Arrow type (structured dtypes, strings, objects, complex numbers).
fn npy_dtype(descr: &str, shown: &str) -> Result<(DataType, usize, bool), CliError> {
    use arrow_schema::TimeUnit;
    let refuse = |why: &str| CliError::new(format!("{shown}: .npy dtype {descr} {why}"));
    if descr.starts_with('[') {
        return Err(refuse(
            "is a structured dtype; save each field as its own array (or use Arrow/Parquet)",
        ));
    }
    let text = descr.trim_matches(|c| c == '\'' || c == '"');
    let (order, rest) = text.split_at(text.len().min(1));
    let swap = match order {
        "<" | "|" | "=" => false,
        ">" => true,
        _ => return Err(refuse("has no byte order")),
    };
    let (kind, size) = rest.split_at(rest.len().min(1));
    let (size, unit) = match size.split_once('[') {
        Some((size, unit)) => (size, unit.strip_suffix(']')),
        None => (size, None),
    };
    let width: usize = size.parse().map_err(|_| refuse("is not understood"))?;
    let time_unit = |unit: Option<&str>| match unit {
        Some("s") => Ok(TimeUnit::Second),
        Some("ms") => Ok(TimeUnit::Millisecond),
        Some("us") => Ok(TimeUnit::Microsecond),
        Some("ns") => Ok(TimeUnit::Nanosecond),
        _ => Err(refuse(
            "has a time unit Arrow has no type for (s, ms, us and ns are read)",
        )),
    };
    let data_type = match (kind, width) {
        ("b", 1) => DataType::Boolean,
        ("f", 2) => DataType::Float16,
        ("f", 4) => DataType::Float32,
        ("f", 8) => DataType::Float64,
        ("i", 1) => DataType::Int8,
        ("i", 2) => DataType::Int16,
        ("i", 4) => DataType::Int32,
        ("i", 8) => DataType::Int64,
        ("u", 1) => DataType::UInt8,
        ("u", 2) => DataType::UInt16,
        ("u", 4) => DataType::UInt32,
        ("u", 8) => DataType::UInt64,
        ("M", 8) => DataType::Timestamp(time_unit(unit)?, None),
        ("m", 8) => DataType::Duration(time_unit(unit)?),
        _ => {
            return Err(refuse(
                "is not a fixed-width number, bool, datetime64 or timedelta64 (strings, objects and complex numbers cannot be encoded)",
            ))
        }
    };
    Ok((data_type, width, swap && width > 1))
}

/// `.npy` version 1, 2 or 3 of any fixed-width numeric, bool, datetime64 or timedelta64 dtype in
/// either byte order (big-endian converted), any shape in C order (values in file order;
/// a Fortran-order array of more than one dimension is refused).
fn npy(file: File, file_len: u64, name: &str, shown: &str) -> Result<Opened, CliError> {
    let bad = |what: &str| CliError::new(format!("{shown}: not a valid .npy file: {what}"));
    let mut reader = BufReader::new(file);
    let mut magic = [0u8; 8];
    reader
        .read_exact(&mut magic)
        .map_err(|_| bad("shorter than its magic"))?;
    if &magic[..6] != b"\x93NUMPY" {
        return Err(bad("no \\x93NUMPY magic"));
    }
    let header_len = match magic[6] {
        1 => {
            let mut n = [0u8; 2];
            reader
                .read_exact(&mut n)
                .map_err(|_| bad("truncated header"))?;
            u64::from(u16::from_le_bytes(n))
        }
        2 | 3 => {
            let mut n = [0u8; 4];
            reader
                .read_exact(&mut n)
                .map_err(|_| bad("truncated header"))?;
            u64::from(u32::from_le_bytes(n))
        }
        v => return Err(bad(&format!("version {v}"))),
    };
    let prefix = if magic[6] == 1 { 10 } else { 12 };
    if header_len > file_len.saturating_sub(prefix) || header_len > 1 << 20 {
        return Err(bad("header longer than the file"));
    }
    let mut header = vec![0u8; header_len as usize];
    reader
        .read_exact(&mut header)
        .map_err(|_| bad("truncated header"))?;
    let header = String::from_utf8_lossy(&header);
    let descr = dict_value(&header, "descr").ok_or_else(|| bad("no descr"))?;
    let (data_type, width, swap) = npy_dtype(descr, shown)?;
    let shape = dict_value(&header, "shape").ok_or_else(|| bad("no shape"))?;
    let mut count: u64 = 1;
    let mut dims = 0;
    for dim in shape
        .trim_matches(|c| c == '(' || c == ')')
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
    {
        let dim: u64 = dim.parse().map_err(|_| bad(&format!("shape {shape}")))?;
        count = count
            .checked_mul(dim)
            .ok_or_else(|| bad("shape overflows"))?;
        dims += 1;
    }
    if dims > 1 && dict_value(&header, "fortran_order").is_some_and(|v| v == "True") {
        return Err(CliError::new(format!(
            "{shown}: a Fortran-order array of shape {shape}; save it in C order (numpy.ascontiguousarray) so its values read in order"
        )));
    }
    let data_len = count
        .checked_mul(width as u64)
        .ok_or_else(|| bad("shape overflows"))?;
    let needed = prefix
        .checked_add(header_len)
        .and_then(|n| n.checked_add(data_len))
        .ok_or_else(|| bad("shape overflows"))?;
    if needed != file_len {
        return Err(bad(&format!(
            "shape {shape} needs {data_len} data bytes, the file holds {}",
            file_len - prefix - header_len
        )));
    }
    let schema = Arc::new(Schema::new(vec![Field::new(
        name,
        data_type.clone(),
        false,
    )]));
    let batch_schema = schema.clone();
    let mut left = data_len;
    let mut buf = Vec::new();
    let shown = shown.to_owned();
    let batches = Box::new(std::iter::from_fn(move || {
        if left == 0 {
            return None;
        }
        let take = left.min((BATCH_VALUES * width) as u64) as usize;
        buf.resize(take, 0);
        if let Err(e) = reader.read_exact(&mut buf) {
            left = 0;
            return Some(Err(CliError::new(format!("reading {shown}: {e}"))));
        }
        left -= take as u64;
        if swap {
            for value in buf.chunks_exact_mut(width) {
                value.reverse();
            }
        }
        let array = if data_type == DataType::Boolean {
            // numpy's bool: a byte per value, any non-zero byte true (as numpy reads it).
            let bits: arrow_array::BooleanArray = buf.iter().map(|&b| Some(b != 0)).collect();
            Ok(Arc::new(bits) as ArrayRef)
        } else {
            arrow_data::ArrayData::builder(data_type.clone())
                .len(take / width)
                .add_buffer(arrow_buffer::Buffer::from(buf.as_slice()))
                .build()
                .map(arrow_array::make_array)
        };
        Some(
            array
                .and_then(|a| RecordBatch::try_new(batch_schema.clone(), vec![a]))
                .map_err(|e| CliError::new(format!("reading {shown}: {e}"))),
        )
    }));
    Ok((schema, Some(Size::Rows(count)), batches))
}

/// The text after `'key':` in a Python dict literal, up to the next top-level comma.
fn dict_value<'h>(header: &'h str, key: &str) -> Option<&'h str> {
    let start = header.find(&format!("'{key}'"))? + key.len() + 2;
    let rest = header[start..].trim_start().strip_prefix(':')?.trim_start();
    let mut depth = 0i32;
    for (i, c) in rest.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' | '}' if depth <= 0 => return Some(rest[..i].trim()),
            _ => {}
        }
    }
    None
}

/// The type a column is encoded as: its own when fixed-width, its values' type for a
/// dictionary of fixed-width values (decoded to values on reading), else none.
fn encodable_type(t: &DataType) -> Option<DataType> {
    match t {
        DataType::Dictionary(_, values) => encodable_type(values),
        t => miniblock::page::value_width(t).is_ok().then(|| t.clone()),
    }
}

/// Picks the columns of `schema` miniblock can encode, the fixed-width ones and
/// dictionaries of fixed-width values (all of them, or those named in `wanted`). Columns
/// left out are named on stderr, with how many were taken.
fn fixed_width_columns(
    schema: &Schema,
    wanted: &[String],
    shown: &str,
) -> Result<Vec<usize>, CliError> {
    if wanted.is_empty() {
        let found: Vec<usize> = (0..schema.fields().len())
            .filter(|&i| encodable_type(schema.field(i).data_type()).is_some())
            .collect();
        if found.is_empty() {
            return Err(CliError::new(format!(
                "{shown} has no fixed-width column (it has {})",
                describe_fields(schema)
            )));
        }
        if found.len() < schema.fields().len() {
            for field in schema.fields() {
                if encodable_type(field.data_type()).is_none() {
                    eprintln!("skipped: {} ({})", field.name(), field.data_type());
                }
            }
            eprintln!(
                "{shown}: took {} of {} columns (only fixed-width columns can be encoded)",
                found.len(),
                schema.fields().len()
            );
        }
        return Ok(found);
    }
    wanted
        .iter()
        .map(|name| {
            let i = schema.index_of(name).map_err(|_| {
                CliError::new(format!(
                    "{shown} has no column {name:?}; its columns: {}",
                    describe_fields(schema)
                ))
            })?;
            let t = schema.field(i).data_type();
            if encodable_type(t).is_some() {
                Ok(i)
            } else {
                Err(CliError::new(format!(
                    "column {name:?} of {shown} has type {t}; only fixed-width columns (numbers, temporal, decimals, fixed-size binary, dictionaries of them) can be encoded"
                )))
            }
        })
        .collect()
}

/// `name (Type), ...` for every field, with ` (not encodable)` after those that cannot be.
pub fn describe_fields(schema: &Schema) -> String {
    schema
        .fields()
        .iter()
        .map(|f| {
            let note = if encodable_type(f.data_type()).is_some() {
                ""
            } else {
                ", not encodable"
            };
            format!("{} ({}{note})", f.name(), f.data_type())
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// `schema` with dictionary columns as their values' type.
fn decoded_schema(schema: &Schema) -> SchemaRef {
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| {
            let t = encodable_type(f.data_type()).unwrap_or_else(|| f.data_type().clone());
            f.as_ref().clone().with_data_type(t)
        })
        .collect();
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

/// `batch` with its dictionary columns decoded to their values, under `schema`.
fn decode_dictionaries(batch: &RecordBatch, schema: &SchemaRef) -> Result<RecordBatch, CliError> {
    let fail = |e: arrow_schema::ArrowError| CliError::new(format!("decoding a dictionary: {e}"));
    let columns = batch
        .columns()
        .iter()
        .map(|column| match column.as_any_dictionary_opt() {
            None => Ok(column.clone()),
            Some(dictionary) => {
                let keys = dictionary.normalized_keys();
                let indices = arrow_array::UInt32Array::from_iter(
                    keys.iter()
                        .enumerate()
                        .map(|(i, &k)| column.is_valid(i).then_some(k as u32)),
                );
                arrow_select::take::take(dictionary.values().as_ref(), &indices, None).map_err(fail)
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    RecordBatch::try_new(schema.clone(), columns).map_err(fail)
}

/// Arrow IPC, a file or a stream, told apart by content (a file starts with `ARROW1`),
/// compressed (LZ4 or Zstd, as pandas and pyarrow write Feather by default) or not.
fn ipc(mut file: File, wanted: &[String], shown: &str) -> Result<Opened, CliError> {
    use std::io::{Seek, SeekFrom};
    let mut magic = [0u8; 6];
    let is_file = file.read_exact(&mut magic).is_ok() && &magic == b"ARROW1";
    file.seek(SeekFrom::Start(0))
        .map_err(|e| CliError::new(format!("{shown}: {e}")))?;
    let mut size = None;
    let reader: Box<dyn RecordBatchReader> = if is_file {
        let reader = arrow_ipc::reader::FileReader::try_new(BufReader::new(file), None)
            .map_err(|e| CliError::new(format!("{shown}: not a readable Arrow IPC file: {e}")))?;
        size = Some(Size::Batches(reader.num_batches() as u64));
        Box::new(reader)
    } else {
        Box::new(
            arrow_ipc::reader::StreamReader::try_new(BufReader::new(file), None).map_err(|e| {
                CliError::new(format!(
                    "{shown}: neither an Arrow IPC file nor an IPC stream: {e}"
                ))
            })?,
        )
    };
    let indices = fixed_width_columns(&reader.schema(), wanted, shown)?;
    let projected = reader
        .schema()
        .project(&indices)
        .map_err(|e| CliError::new(e.to_string()))?;
    let schema = decoded_schema(&projected);
    let shown = shown.to_owned();
    let batch_schema = schema.clone();
    let batches = reader.map(move |b| {
        b.and_then(|b| b.project(&indices))
            .map_err(|e| CliError::new(format!("reading {shown}: {e}")))
            .and_then(|b| decode_dictionaries(&b, &batch_schema))
    });
    Ok((schema, size, Box::new(batches)))
}

fn parquet(file: File, wanted: &[String], shown: &str) -> Result<Opened, CliError> {
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use parquet::arrow::ProjectionMask;
    let builder = ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(|e| CliError::new(format!("{shown}: not a readable Parquet file: {e}")))?;
    let indices = fixed_width_columns(builder.schema(), wanted, shown)?;
    let rows = u64::try_from(builder.metadata().file_metadata().num_rows()).ok();
    // The file's schema metadata (pandas' `pandas` key, for one) is on the builder's
    // schema; the projected reader's schema may come without it.
    let metadata = builder.schema().metadata().clone();
    let mask = ProjectionMask::roots(builder.parquet_schema(), indices.clone());
    let reader = builder
        .with_projection(mask)
        .with_batch_size(BATCH_VALUES)
        .build()
        .map_err(|e| CliError::new(format!("{shown}: {e}")))?;
    let schema = reader.schema();
    // Parquet yields projected columns in file order; keep the order the user named them in.
    let order: Vec<usize> = {
        let mut sorted = indices.clone();
        sorted.sort_unstable();
        indices
            .iter()
            .map(|i| sorted.iter().position(|s| s == i).unwrap_or(0))
            .collect()
    };
    let projected = schema
        .project(&order)
        .map_err(|e| CliError::new(e.to_string()))?;
    let schema = decoded_schema(&Schema::new_with_metadata(
        projected.fields().clone(),
        metadata,
    ));
    let shown = shown.to_owned();
    let batch_schema = schema.clone();
    let batches = reader.map(move |b| {
        b.and_then(|b| b.project(&order))
            .map_err(|e| CliError::new(format!("reading {shown}: {e}")))
            .and_then(|b| decode_dictionaries(&b, &batch_schema))
    });
    Ok((schema, rows.map(Size::Rows), Box::new(batches)))
}

/// CSV (or, with `tab`, TSV) with a header line, typed by arrow-csv's inference over the
/// whole file (integers, floats, booleans, dates and timestamps; a column inferred from
/// its first rows alone could meet a value of another type later), then read again.
fn csv(
    path: &Path,
    tab: bool,
    wanted: &[String],
    types: &[(String, DataType)],
    shown: &str,
) -> Result<Opened, CliError> {
    let bad = |e: arrow_schema::ArrowError| {
        CliError::new(format!("{shown}: not a readable CSV file: {e}"))
    };
    let open = || File::open(path).map_err(|e| CliError::new(format!("cannot open {shown}: {e}")));
    let mut format = arrow_csv::reader::Format::default().with_header(true);
    if tab {
        format = format.with_delimiter(b'\t');
    }
    let (inferred, _) = format
        .clone()
        .infer_schema(BufReader::new(open()?), None)
        .map_err(bad)?;
    // The types the user named replace the inferred ones (a code of digits as Int32, a
    // time of day as Time32, ...); a value that does not parse as its type is an error.
    let mut fields: Vec<Field> = inferred
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    for (name, data_type) in types {
        let field = fields
            .iter_mut()
            .find(|f| f.name() == name)
            .ok_or_else(|| {
                CliError::new(format!(
                    "--csv-type {name}: {shown} has no such column (it has {})",
                    inferred
                        .fields()
                        .iter()
                        .map(|f| format!("{:?}", f.name()))
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })?;
        *field = field.clone().with_data_type(data_type.clone());
    }
    let schema = Schema::new_with_metadata(fields, inferred.metadata().clone());
    let indices = fixed_width_columns(&schema, wanted, shown)?;
    let reader = arrow_csv::ReaderBuilder::new(Arc::new(schema.clone()))
        .with_format(format)
        .with_batch_size(BATCH_VALUES)
        .with_projection(indices.clone())
        .build(BufReader::new(open()?))
        .map_err(bad)?;
    let projected = schema
        .project(&indices)
        .map_err(|e| CliError::new(e.to_string()))?;
    let schema = decoded_schema(&projected);
    let shown = shown.to_owned();
    let batches =
        reader.map(move |b| b.map_err(|e| CliError::new(format!("reading {shown}: {e}"))));
    Ok((schema, None, Box::new(batches)))
}

/// What every command says once of a Lance input: its values cannot be checked.
pub const LANCE_UNVERIFIED: &str =
    "Lance files carry no checksums: damaged values cannot be detected, only damaged structure";

/// The Lance files a command read, for the note it ends with.
static LANCE_READ: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Records that `shown` is a Lance file, for [`say_lance_notes`].
pub fn note_lance_unverified(shown: &str) {
    let mut read = LANCE_READ
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !read.iter().any(|r| r == shown) {
        read.push(shown.to_owned());
    }
}

/// Says [`LANCE_UNVERIFIED`] on stderr, once for each Lance file the command read (unless
/// `-q`): after its work, so that an error stays the one line it is.
pub fn say_lance_notes() {
    let read = LANCE_READ
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !super::quiet() {
        for shown in read.iter() {
            eprintln!("note: {shown} is a Lance file: {LANCE_UNVERIFIED}");
        }
    }
}

/// Whether `path` is a Lance file: it ends with Lance's magic `LANC`.
pub fn is_lance(path: &Path) -> Result<bool, CliError> {
    use std::io::{Seek, SeekFrom};
    let shown = path.display().to_string();
    let mut file =
        File::open(path).map_err(|e| CliError::new(format!("cannot open {shown}: {e}")))?;
    let len = file
        .seek(SeekFrom::End(0))
        .map_err(|e| CliError::new(format!("cannot read {shown}: {e}")))?;
    if len < 40 {
        return Ok(false);
    }
    let mut magic = [0u8; 4];
    file.seek(SeekFrom::End(-4))
        .and_then(|_| file.read_exact(&mut magic))
        .map_err(|e| CliError::new(format!("cannot read {shown}: {e}")))?;
    Ok(magic == miniblock::lance::MAGIC)
}

/// A Lance file's fixed-width columns (`wanted`, or all), read column by column and
/// handed out in batches.
fn lance(file: File, wanted: &[String], shown: &str) -> Result<Opened, CliError> {
    let fail = |e: miniblock::Error| CliError::new(format!("{shown}: {e}"));
    let reader = miniblock::lance::LanceReader::open(BufReader::new(file)).map_err(fail)?;
    let names: Vec<String> = if wanted.is_empty() {
        let readable = reader.schema();
        let all = reader.fields();
        if readable.fields().len() < all.len() {
            for field in all.iter().filter(|f| readable.index_of(&f.name).is_err()) {
                eprintln!("skipped: {} ({})", field.name, field.logical_type);
            }
            eprintln!(
                "{shown}: took {} of {} columns (only fixed-width columns can be encoded)",
                readable.fields().len(),
                all.len()
            );
        }
        readable.fields().iter().map(|f| f.name().clone()).collect()
    } else {
        wanted.to_vec()
    };
    let mut indices = Vec::with_capacity(names.len());
    for name in &names {
        let index = reader.field_index(name).map_err(fail)?;
        let field = &reader.fields()[index];
        if field.data_type.is_none() {
            return Err(CliError::new(format!(
                "{shown}: column {name:?} is {}, not a fixed-width column",
                field.logical_type
            )));
        }
        indices.push(index);
    }
    if indices.is_empty() {
        return Err(CliError::new(format!("{shown}: no fixed-width columns")));
    }
    let rows = reader.num_rows();
    let scan = reader.scan(&indices, BATCH_VALUES, 0..rows).map_err(fail)?;
    let schema = scan.schema();
    let shown = shown.to_owned();
    let batches = scan.map(move |b| b.map_err(|e| CliError::new(format!("{shown}: {e}"))));
    Ok((schema, Some(Size::Rows(rows)), Box::new(batches)))
}

/// The rows of an Arrow IPC file, from its footer's list of record batches and each
/// batch's message header (a small read each; no batch body is read). `None` when the
/// file does not hold together.
fn ipc_file_rows(file: &mut File) -> Option<u64> {
    use std::io::{Seek, SeekFrom};
    let len = file.seek(SeekFrom::End(0)).ok()?;
    let mut read_at = |at: u64, n: usize| -> Option<Vec<u8>> {
        // Footers and message headers are small: a claim past 16 MiB is damage.
        if n > 16 << 20 || at.checked_add(n as u64)? > len {
            return None;
        }
        let mut bytes = vec![0u8; n];
        file.seek(SeekFrom::Start(at)).ok()?;
        file.read_exact(&mut bytes).ok()?;
        Some(bytes)
    };
    let tail = read_at(len.checked_sub(10)?, 10)?;
    if &tail[4..] != b"ARROW1" {
        return None;
    }
    let footer_len = u64::try_from(i32::from_le_bytes(tail[..4].try_into().ok()?)).ok()?;
    let footer_bytes = read_at(len.checked_sub(10 + footer_len)?, footer_len as usize)?;
    let footer = arrow_ipc::root_as_footer(&footer_bytes).ok()?;
    let mut rows = 0u64;
    for block in footer.recordBatches()? {
        let header = read_at(
            u64::try_from(block.offset()).ok()?,
            usize::try_from(block.metaDataLength()).ok()?,
        )?;
        // A continuation marker and a length, then the message (older files: no marker).
        let body = if header.starts_with(&[0xFF; 4]) {
            header.get(8..)?
        } else {
            header.get(4..)?
        };
        let message = arrow_ipc::root_as_message(body).ok()?;
        rows = rows.checked_add(u64::try_from(message.header_as_record_batch()?.length()).ok()?)?;
    }
    Some(rows)
}

/// A file of another format than miniblock's, as `inspect` describes it.
pub struct Foreign {
    /// "Parquet", "Arrow IPC file", ...
    pub format: &'static str,
    /// Every column it has, encodable or not.
    pub schema: Schema,
    /// Its rows, when the format says so without reading the data.
    pub rows: Option<u64>,
    /// Per column, how its pages are stored (Lance files: each distinct page layout and
    /// how many pages use it); empty where the format is not looked into.
    pub layouts: Vec<(String, Vec<(String, usize)>)>,
}

/// Where an HDF5 file's signature may stand: at 0, or after a user block of 512 bytes
/// times a power of two.
const HDF5_SIGNATURE_OFFSETS: [u64; 6] = [0, 512, 1024, 2048, 4096, 8192];

/// The format of a file that has a signature of its own (netCDF, HDF5, Parquet, Arrow,
/// `.npy`, miniblock, Lance, gzip, Zstandard), with what to do with it instead of taking
/// its bytes as raw values; `None` for a file with no known signature.
pub fn other_format(path: &Path) -> Result<Option<(&'static str, String)>, CliError> {
    let shown = path.display().to_string();
    let cannot = |e: std::io::Error| CliError::new(format!("cannot read {shown}: {e}"));
    let mut file =
        File::open(path).map_err(|e| CliError::new(format!("cannot open {shown}: {e}")))?;
    let mut head = Vec::with_capacity(8);
    (&mut file).take(8).read_to_end(&mut head).map_err(cannot)?;
    let hdf5_advice = format!(
        "compress its datasets with miniblock's HDF5 filter (id 409) instead: \
         `h5repack -f UD=409,0,1,0 {shown} OUT` or `nccopy -F \"*,409,0\" {shown} OUT`, \
         with HDF5_PLUGIN_PATH set (docs/hdf5.md)"
    );
    if head.starts_with(b"CDF\x01") || head.starts_with(b"CDF\x02") || head.starts_with(b"CDF\x05")
    {
        return Ok(Some((
            "a netCDF classic file",
            format!(
                "compress its variables with miniblock's HDF5 filter (id 409) instead: \
                 `nccopy -k nc4 -F \"*,409,0\" {shown} OUT.nc`, with HDF5_PLUGIN_PATH set (docs/hdf5.md)"
            ),
        )));
    }
    for offset in HDF5_SIGNATURE_OFFSETS {
        let mut signature = [0u8; 8];
        let found = std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(offset)).is_ok()
            && file.read_exact(&mut signature).is_ok()
            && &signature == b"\x89HDF\r\n\x1a\n";
        if found {
            return Ok(Some(("an HDF5 (or netCDF-4) file", hdf5_advice)));
        }
    }
    let named: [(&[u8], &'static str, &str); 6] = [
        (
            &miniblock::file::MAGIC,
            "a miniblock file",
            "`miniblock decode` reads it",
        ),
        (
            b"PAR1",
            "a Parquet file",
            "leave out --dtype and name it .parquet: miniblock reads Parquet",
        ),
        (
            b"ARROW1",
            "an Arrow IPC file",
            "leave out --dtype and name it .arrow: miniblock reads Arrow IPC",
        ),
        (
            b"\x93NUMPY",
            "a .npy file",
            "leave out --dtype and name it .npy: miniblock reads its dtype and shape",
        ),
        (b"\x1f\x8b", "a gzip file", "decompress it first"),
        (
            b"\x28\xb5\x2f\xfd",
            "a Zstandard file",
            "decompress it first",
        ),
    ];
    for (magic, format, advice) in named {
        if head.starts_with(magic) {
            return Ok(Some((format, advice.to_owned())));
        }
    }
    if is_lance(path)? {
        return Ok(Some((
            "a Lance file",
            "leave out --dtype: miniblock reads Lance files".to_owned(),
        )));
    }
    Ok(None)
}

/// What `path` is when it is a Parquet, Arrow IPC, `.npy` or raw float file, told by its
/// first bytes (by extension for raw floats and IPC streams, which have no magic);
/// `None` for anything else, a miniblock file included.
pub fn foreign(path: &Path) -> Result<Option<Foreign>, CliError> {
    let shown = path.display().to_string();
    let mut file =
        File::open(path).map_err(|e| CliError::new(format!("cannot open {shown}: {e}")))?;
    let mut magic = Vec::with_capacity(8);
    (&mut file)
        .take(8)
        .read_to_end(&mut magic)
        .map_err(|e| CliError::new(format!("cannot read {shown}: {e}")))?;
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    if magic.starts_with(&miniblock::file::MAGIC) {
        return Ok(None);
    }
    if is_lance(path)? {
        let reader = miniblock::lance::LanceReader::open(BufReader::new(file))
            .map_err(|e| CliError::new(format!("{shown}: {e}")))?;
        let fields: Vec<Field> = reader
            .fields()
            .iter()
            .map(|f| {
                let data_type = f
                    .data_type
                    .clone()
                    .unwrap_or(match f.logical_type.as_str() {
                        "string" => DataType::Utf8,
                        "large_string" => DataType::LargeUtf8,
                        "binary" => DataType::Binary,
                        "large_binary" => DataType::LargeBinary,
                        "bool" => DataType::Boolean,
                        _ => DataType::Null,
                    });
                Field::new(&f.name, data_type, f.nullable)
            })
            .collect();
        let layouts = (0..reader.fields().len())
            .filter_map(|f| {
                let pages = reader.num_pages(f).ok()?;
                let mut counts: Vec<(String, usize)> = Vec::new();
                for p in 0..pages {
                    let text = reader.page_layout(f, p).map_or_else(
                        |e| format!("unreadable: {e}"),
                        |l| miniblock::lance::page::describe(&l),
                    );
                    match counts.iter_mut().find(|(t, _)| *t == text) {
                        Some((_, n)) => *n += 1,
                        None => counts.push((text, 1)),
                    }
                }
                Some((reader.fields()[f].name.clone(), counts))
            })
            .collect();
        let format = match reader.version() {
            (2, 1) => "Lance (format 2.1)",
            _ => "Lance (format 2.2)",
        };
        return Ok(Some(Foreign {
            format,
            schema: Schema::new(fields),
            rows: Some(reader.num_rows()),
            layouts,
        }));
    }
    std::io::Seek::rewind(&mut file)
        .map_err(|e| CliError::new(format!("cannot read {shown}: {e}")))?;
    if magic.starts_with(b"PAR1") {
        use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
        let builder = ParquetRecordBatchReaderBuilder::try_new(file)
            .map_err(|e| CliError::new(format!("{shown}: a damaged Parquet file: {e}")))?;
        return Ok(Some(Foreign {
            format: "Parquet",
            schema: builder.schema().as_ref().clone(),
            rows: u64::try_from(builder.metadata().file_metadata().num_rows()).ok(),
            layouts: Vec::new(),
        }));
    }
    let ipc_by_name = matches!(ext.as_str(), "arrow" | "arrows" | "feather" | "ipc");
    if magic.starts_with(b"ARROW1") || ipc_by_name {
        let (format, schema, rows) = if magic.starts_with(b"ARROW1") {
            let rows = ipc_file_rows(&mut file);
            let reader = arrow_ipc::reader::FileReader::try_new(BufReader::new(file), None)
                .map_err(|e| CliError::new(format!("{shown}: a damaged Arrow IPC file: {e}")))?;
            ("Arrow IPC file", reader.schema(), rows)
        } else {
            let reader = arrow_ipc::reader::StreamReader::try_new(BufReader::new(file), None)
                .map_err(|e| {
                    CliError::new(format!(
                        "{shown}: neither a miniblock file nor an Arrow IPC stream: {e}"
                    ))
                })?;
            ("Arrow IPC stream", reader.schema(), None)
        };
        return Ok(Some(Foreign {
            format,
            schema: schema.as_ref().clone(),
            rows,
            layouts: Vec::new(),
        }));
    }
    let raw = matches!(ext.as_str(), "f32" | "f64");
    if magic.starts_with(b"\x93NUMPY") || raw {
        let input = open(path, None, &[], false, &[])?;
        let rows = match input.size {
            Some(Size::Rows(n)) => Some(n),
            _ => None,
        };
        return Ok(Some(Foreign {
            format: if raw {
                "raw little-endian float"
            } else {
                ".npy"
            },
            schema: input.schema.as_ref().clone(),
            rows,
            layouts: Vec::new(),
        }));
    }
    Ok(None)
}
