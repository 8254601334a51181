//! `miniblock._miniblock`: the Rust half of the Python package.
//!
//! Every function takes and returns plain values (bytes as numpy `uint8` arrays, dtypes as
//! `dtype.str`, Arrow data through the C data interface); `python/miniblock/` shapes them
//! into the public API. Work runs with the GIL released, and every call runs under
//! `catch_unwind`: a Rust panic reaches Python as a `MiniblockError`, never as a crash or
//! a `PanicException`.

// pyo3 extracts every argument by value; `#[pyfunction]`s cannot take references to them.
#![allow(clippy::needless_pass_by_value)]

use std::fs::File;
use std::io::{BufWriter, Write};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{make_array, Array, RecordBatch, RecordBatchReader};
use arrow_buffer::MutableBuffer;
use arrow_data::ArrayData;
use arrow_pyarrow::{PyArrowType, ToPyArrow};
use arrow_schema::Schema;
use miniblock::encodings::Strategy;
use miniblock::file::{FileReader, FileWriter, WriteOptions};
use miniblock::frame::{self, FrameDecoder, FrameOptions, FrameType};
use numpy::{PyReadonlyArray1, PyReadwriteArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};

pyo3::create_exception!(
    _miniblock,
    MiniblockError,
    PyValueError,
    "An error from miniblock: bad arguments, damaged or truncated bytes, an encoding this build does not know, or a failed read or write."
);

/// Runs `f`, turning its error and any panic into a `MiniblockError`.
fn guarded<T>(f: impl FnOnce() -> miniblock::Result<T>) -> PyResult<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(MiniblockError::new_err(e.to_string())),
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown".to_owned());
            Err(MiniblockError::new_err(format!(
                "internal error (a bug in miniblock, please report it): {what}"
            )))
        }
    }
}

/// Runs `f` with the GIL released, guarded.
fn released<T: Send>(
    py: Python<'_>,
    f: impl FnOnce() -> miniblock::Result<T> + Send,
) -> PyResult<T> {
    py.detach(|| guarded(f))
}

fn options(encoding: &str, chunk_values: Option<usize>) -> miniblock::Result<FrameOptions> {
    let strategy: Strategy = encoding.parse()?;
    FrameOptions::default()
        .with_strategy(strategy)
        .with_chunk_values(chunk_values)
}

fn invalid(message: impl Into<String>) -> PyErr {
    MiniblockError::new_err(format!("invalid argument: {}", message.into()))
}

/// Encodes raw values (`values`, a flat uint8 view of a C-contiguous array) of numpy dtype
/// `dtype` and `shape` into a frame.
#[pyfunction]
#[pyo3(signature = (values, dtype, shape, encoding, chunk_values=None))]
fn encode_raw<'py>(
    py: Python<'py>,
    values: PyReadonlyArray1<'py, u8>,
    dtype: &str,
    shape: Vec<u64>,
    encoding: &str,
    chunk_values: Option<usize>,
) -> PyResult<Bound<'py, PyBytes>> {
    let bytes = values
        .as_slice()
        .map_err(|_| invalid("values must be contiguous"))?;
    let blob = released(py, || {
        let options = options(encoding, chunk_values)?;
        let value_type = FrameType::from_numpy(dtype)?;
        frame::encode(bytes, &value_type, &shape, None, &options)
    })?;
    Ok(PyBytes::new(py, &blob))
}

/// Encodes an Arrow array (nulls kept) into a frame of one dimension.
#[pyfunction]
#[pyo3(signature = (array, encoding, chunk_values=None))]
fn encode_arrow<'py>(
    py: Python<'py>,
    array: PyArrowType<ArrayData>,
    encoding: &str,
    chunk_values: Option<usize>,
) -> PyResult<Bound<'py, PyBytes>> {
    let array = make_array(array.0);
    let blob = released(py, || {
        let options = options(encoding, chunk_values)?;
        frame::encode_array(array.as_ref(), None, &options)
    })?;
    Ok(PyBytes::new(py, &blob))
}

/// What a frame holds, checked: `(dtype, shape, num_chunks, encoding, arrow_type,
/// may_have_nulls)`.
#[pyfunction]
fn info<'py>(py: Python<'py>, blob: PyReadonlyArray1<'py, u8>) -> PyResult<Bound<'py, PyTuple>> {
    let bytes = blob
        .as_slice()
        .map_err(|_| invalid("the frame must be contiguous"))?;
    let (dtype, shape, chunks, encoding, arrow, nulls) = released(py, || {
        let frame = FrameDecoder::new(bytes)?;
        Ok((
            frame.value_type().numpy_dtype()?,
            frame.shape().to_vec(),
            frame.num_chunks(),
            frame.describe_encoding(),
            frame.value_type().data_type().to_string(),
            frame.may_have_nulls(0..frame.num_values()),
        ))
    })?;
    (dtype, shape, chunks, encoding, arrow, nulls).into_pyobject(py)
}

/// Decoded values, owned by Rust and lent to numpy through `__array_interface__`: the
/// array numpy makes of it keeps it alive, and nothing is copied.
#[pyclass(frozen, module = "miniblock._miniblock")]
struct DecodedBuffer {
    /// Owned by this object alone (never shared), so numpy may write to it.
    values: MutableBuffer,
}

#[pymethods]
impl DecodedBuffer {
    #[getter]
    fn __array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let interface = PyDict::new(py);
        interface.set_item("version", 3)?;
        interface.set_item("shape", (self.values.len(),))?;
        interface.set_item("typestr", "|u1")?;
        interface.set_item("data", (self.values.as_ptr() as usize, false))?;
        Ok(interface)
    }
}

fn row_range(
    num_values: usize,
    start: Option<usize>,
    stop: Option<usize>,
) -> miniblock::Result<std::ops::Range<usize>> {
    let start = start.unwrap_or(0);
    let stop = stop.unwrap_or(num_values).min(num_values);
    if start > stop {
        return Err(miniblock::Error::InvalidArgument {
            message: format!(
                "rows {start}..{stop} are not a range of the frame's {num_values} values"
            ),
        });
    }
    Ok(start..stop)
}

/// Decodes a frame's rows `start..stop` (all when `None`) to `(buffer, dtype, shape)`;
/// `shape` is the frame's for a whole decode, `[rows]` otherwise.
#[pyfunction]
#[pyo3(signature = (blob, start=None, stop=None))]
fn decode<'py>(
    py: Python<'py>,
    blob: PyReadonlyArray1<'py, u8>,
    start: Option<usize>,
    stop: Option<usize>,
) -> PyResult<(DecodedBuffer, String, Vec<u64>)> {
    let bytes = blob
        .as_slice()
        .map_err(|_| invalid("the frame must be contiguous"))?;
    let (values, dtype, shape) = released(py, || {
        let frame = FrameDecoder::new(bytes)?;
        let rows = row_range(frame.num_values(), start, stop)?;
        let shape = if rows.len() == frame.num_values() {
            frame.shape().to_vec()
        } else {
            vec![rows.len() as u64]
        };
        let values = frame.decode_values(rows)?;
        Ok((values, frame.value_type().numpy_dtype()?, shape))
    })?;
    let values = values
        .into_mutable()
        .map_err(|_| MiniblockError::new_err("internal error: decoded buffer is shared"))?;
    Ok((DecodedBuffer { values }, dtype, shape))
}

/// Decodes a frame's rows `start..stop` into `out` (a flat uint8 view of a C-contiguous
/// array whose dtype's `str` is `out_dtype`); returns the frame's shape.
#[pyfunction]
#[pyo3(signature = (blob, out, out_dtype, start=None, stop=None))]
fn decode_into<'py>(
    py: Python<'py>,
    blob: PyReadonlyArray1<'py, u8>,
    mut out: PyReadwriteArray1<'py, u8>,
    out_dtype: &str,
    start: Option<usize>,
    stop: Option<usize>,
) -> PyResult<Vec<u64>> {
    let bytes = blob
        .as_slice()
        .map_err(|_| invalid("the frame must be contiguous"))?;
    let out = out
        .as_slice_mut()
        .map_err(|_| invalid("out must be C-contiguous"))?;
    released(py, move || {
        let frame = FrameDecoder::new(bytes)?;
        let dtype = frame.value_type().numpy_dtype()?;
        if dtype != out_dtype {
            return Err(miniblock::Error::InvalidArgument {
                message: format!("out has dtype {out_dtype:?}, the frame holds {dtype:?}"),
            });
        }
        let rows = row_range(frame.num_values(), start, stop)?;
        let width = frame.value_type().value_width()?;
        if out.len() != rows.len() * width {
            return Err(miniblock::Error::InvalidArgument {
                message: format!(
                    "out holds {} values, the frame's rows {rows:?} are {}",
                    out.len() / width.max(1),
                    rows.len()
                ),
            });
        }
        frame.decode_into(rows, out)?;
        Ok(frame.shape().to_vec())
    })
}

/// Decodes a frame's rows to an Arrow array, nulls kept.
#[pyfunction]
#[pyo3(signature = (blob, start=None, stop=None))]
fn decode_arrow<'py>(
    py: Python<'py>,
    blob: PyReadonlyArray1<'py, u8>,
    start: Option<usize>,
    stop: Option<usize>,
) -> PyResult<Bound<'py, PyAny>> {
    let bytes = blob
        .as_slice()
        .map_err(|_| invalid("the frame must be contiguous"))?;
    let array = released(py, || {
        let frame = FrameDecoder::new(bytes)?;
        let rows = row_range(frame.num_values(), start, stop)?;
        frame.decode_array(rows)
    })?;
    array.to_data().to_pyarrow(py)
}

/// A hidden file beside `path`, renamed over it once complete.
fn temporary_beside(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let unique = format!(
        ".{name}.miniblock-{}-{:x}.tmp",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    );
    path.with_file_name(unique)
}

fn io_error(context: String) -> impl FnOnce(std::io::Error) -> miniblock::Error {
    move |source| miniblock::Error::Io { context, source }
}

/// Writes a stream of record batches to a column file at `path`: into a temporary file
/// beside it, synced, then renamed over `path`, so a failed write leaves any file
/// already there untouched.
#[pyfunction]
#[pyo3(signature = (stream, path, encoding, chunk_values=None))]
fn write_table(
    py: Python<'_>,
    stream: PyArrowType<arrow_array::ffi_stream::ArrowArrayStreamReader>,
    path: PathBuf,
    encoding: &str,
    chunk_values: Option<usize>,
) -> PyResult<u64> {
    let reader = stream.0;
    let schema: Arc<Schema> = reader.schema();
    let batches: Vec<RecordBatch> = reader
        .collect::<Result<_, _>>()
        .map_err(|e| MiniblockError::new_err(format!("reading the table: {e}")))?;
    released(py, move || {
        let strategy: Strategy = encoding.parse()?;
        let mut write = WriteOptions::default().with_strategy(strategy);
        write.encoder = write.encoder.with_chunk_values(chunk_values)?;
        let temporary = temporary_beside(&path);
        let result = (|| {
            let file = File::create(&temporary)
                .map_err(io_error(format!("creating {}", temporary.display())))?;
            let mut writer = FileWriter::try_new(BufWriter::new(file), &schema, write)?;
            for batch in &batches {
                writer.write_batch(batch)?;
            }
            let mut sink = writer.finish()?;
            sink.flush()
                .map_err(io_error(format!("writing {}", temporary.display())))?;
            let file = sink.into_inner().map_err(|e| miniblock::Error::Io {
                context: format!("writing {}", temporary.display()),
                source: e.into_error(),
            })?;
            file.sync_all()
                .map_err(io_error(format!("syncing {}", temporary.display())))?;
            let bytes = file
                .metadata()
                .map_err(io_error(format!("reading {}", temporary.display())))?
                .len();
            std::fs::rename(&temporary, &path).map_err(io_error(format!(
                "renaming the new file to {}",
                path.display()
            )))?;
            Ok(bytes)
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&temporary);
        }
        result
    })
}

/// Reads columns `columns` (all when `None`) of rows `start..stop` of the column file at
/// `path` as one record batch.
#[pyfunction]
#[pyo3(signature = (path, columns=None, start=None, stop=None))]
fn read_table(
    py: Python<'_>,
    path: PathBuf,
    columns: Option<Vec<String>>,
    start: Option<u64>,
    stop: Option<u64>,
) -> PyResult<Bound<'_, PyAny>> {
    let batch =
        released(py, move || {
            let file =
                File::open(&path).map_err(io_error(format!("opening {}", path.display())))?;
            let mut reader = FileReader::open(file)?;
            let schema = reader.schema().clone();
            let indices: Vec<usize> = match &columns {
                Some(names) => names
                    .iter()
                    .map(|n| reader.column_index(n))
                    .collect::<miniblock::Result<_>>()?,
                None => (0..schema.fields().len()).collect(),
            };
            let num_rows = reader.num_rows();
            let start = start.unwrap_or(0).min(num_rows);
            let stop = stop.unwrap_or(num_rows).min(num_rows);
            if start > stop {
                return Err(miniblock::Error::InvalidArgument {
                    message: format!(
                        "rows {start}..{stop} are not a range of the file's {num_rows} rows"
                    ),
                });
            }
            let mut arrays = Vec::with_capacity(indices.len());
            for &c in &indices {
                arrays.push(reader.read_column_range(c, start..stop)?);
            }
            let projected = Arc::new(schema.project(&indices).map_err(|e| {
                miniblock::Error::InvalidArgument {
                    message: e.to_string(),
                }
            })?);
            let options = arrow_array::RecordBatchOptions::new()
                .with_row_count(Some((stop - start) as usize));
            RecordBatch::try_new_with_options(projected, arrays, &options).map_err(|e| {
                miniblock::Error::Corrupt {
                    message: format!("columns do not form a table: {e}"),
                }
            })
        })?;
    batch.to_pyarrow(py)
}

/// For `python/bench.py`: the best of `repeats` timings, in seconds, of the Rust library
/// encoding `values` (a flat uint8 view) into a frame and decoding it back to a new
/// buffer, with no Python in the loop: the baseline the binding's own cost is measured
/// against.
#[pyfunction]
#[pyo3(signature = (values, dtype, shape, encoding, repeats))]
fn _bench_frame<'py>(
    py: Python<'py>,
    values: PyReadonlyArray1<'py, u8>,
    dtype: &str,
    shape: Vec<u64>,
    encoding: &str,
    repeats: usize,
) -> PyResult<(f64, f64)> {
    let bytes = values
        .as_slice()
        .map_err(|_| invalid("values must be contiguous"))?;
    released(py, || {
        let options = options(encoding, None)?;
        let value_type = FrameType::from_numpy(dtype)?;
        let (mut encode, mut decode) = (f64::INFINITY, f64::INFINITY);
        for _ in 0..repeats.max(1) {
            let start = std::time::Instant::now();
            let blob = frame::encode(bytes, &value_type, &shape, None, &options)?;
            encode = encode.min(start.elapsed().as_secs_f64());
            let start = std::time::Instant::now();
            let frame = FrameDecoder::new(&blob)?;
            let decoded = frame.decode_values(0..frame.num_values())?;
            decode = decode.min(start.elapsed().as_secs_f64());
            if decoded.as_slice() != bytes {
                return Err(miniblock::Error::Corrupt {
                    message: "the benchmark's round trip changed the values".to_owned(),
                });
            }
        }
        Ok((encode, decode))
    })
}

/// The SIMD kernel level this build selected on this CPU.
#[pyfunction]
fn kernel_name() -> &'static str {
    miniblock::kernel_name()
}

#[pymodule]
fn _miniblock(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("MiniblockError", m.py().get_type::<MiniblockError>())?;
    m.add("FRAME_VERSION", frame::VERSION)?;
    m.add_class::<DecodedBuffer>()?;
    m.add_function(wrap_pyfunction!(encode_raw, m)?)?;
    m.add_function(wrap_pyfunction!(encode_arrow, m)?)?;
    m.add_function(wrap_pyfunction!(info, m)?)?;
    m.add_function(wrap_pyfunction!(decode, m)?)?;
    m.add_function(wrap_pyfunction!(decode_into, m)?)?;
    m.add_function(wrap_pyfunction!(decode_arrow, m)?)?;
    m.add_function(wrap_pyfunction!(write_table, m)?)?;
    m.add_function(wrap_pyfunction!(read_table, m)?)?;
    m.add_function(wrap_pyfunction!(kernel_name, m)?)?;
    m.add_function(wrap_pyfunction!(_bench_frame, m)?)?;
    Ok(())
}
