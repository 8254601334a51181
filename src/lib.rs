//! # miniblock
//!
//! Encodes pages of Arrow fixed-width columns (floats first of all; also integers,
//! temporal types, decimals and fixed-size binaries) the way the Lance columnar format
//! does: cut into small power-of-two chunks ("miniblocks": by default 4 KiB, 1024 f32 or
//! 512 f64 values; 256 to 65536 values on request), each chunk's values split into byte
//! streams local to that chunk (Byte Stream Split), optionally compressed chunk by chunk
//! with LZ4 or Zstd, all chunks back to back in one buffer with a small table entry per
//! chunk. A protobuf [`ArrayEncoding`](proto::encodings::ArrayEncoding), wire-compatible
//! with Lance's, says how to decode the chunks. A reader decodes a whole page, one chunk,
//! or only the chunks a row range touches. [`Strategy::Auto`](encodings::Strategy), the
//! column writer's default, picks each page's encoding by trial-encoding a sample of it.
//!
//! ```
//! use arrow_array::{Array, Float64Array};
//! use miniblock::{encode_page, Encoding, PageDecoder};
//!
//! let column = Float64Array::from(vec![Some(1.5), None, Some(-0.0), Some(f64::NAN)]);
//! let page = encode_page(&column, Encoding::BssLz4)?;
//!
//! // A reader needs the page bytes, the encoding message and the value count.
//! let bytes = page.to_bytes();
//! let decoder = PageDecoder::try_new(&page.encoding, page.num_values, &bytes)?;
//! let decoded = decoder.decode()?;
//! let decoded = decoded.as_any().downcast_ref::<Float64Array>().unwrap();
//! assert_eq!(decoded.len(), 4);
//! assert!(decoded.is_null(1));
//! assert_eq!(decoded.value(2).to_bits(), (-0.0f64).to_bits());
//! # Ok::<(), miniblock::Error>(())
//! ```
//!
//! A column file holds many columns in pages, with checksums and page statistics; a
//! reader decodes a column, a row range of it, or a scan of chosen columns and rows:
//!
//! ```
//! use std::sync::Arc;
//! use miniblock::arrow::array::{Array, ArrayRef, Float64Array, RecordBatch};
//! use miniblock::file::{FileReader, FileWriter, WriteOptions};
//!
//! let column: ArrayRef = Arc::new(Float64Array::from_iter_values((0..10_000).map(f64::from)));
//! let batch = RecordBatch::try_from_iter([("x", column)]).unwrap();
//! let mut writer = FileWriter::try_new(Vec::new(), batch.schema().as_ref(), WriteOptions::default())?;
//! writer.write_batch(&batch)?;
//! let mut reader = FileReader::open(std::io::Cursor::new(writer.finish()?))?;
//! let rows = reader.read_column_range(0, 500..600)?; // only the chunks rows 500..600 touch
//! assert_eq!(rows.len(), 100);
//! # Ok::<(), miniblock::Error>(())
//! ```
//!
//! A frame is one array (any fixed-width type, any shape, nulls kept) in one
//! self-describing, checksummed blob: what the Python, Zarr and HDF5 codecs store.
//!
//! ```
//! use miniblock::arrow::schema::DataType;
//! use miniblock::frame::{self, FrameDecoder, FrameOptions, FrameType};
//!
//! let values: Vec<u8> = [1.5f32, -0.0, f32::NAN].iter().flat_map(|v| v.to_le_bytes()).collect();
//! let blob = frame::encode(&values, &FrameType::new(DataType::Float32), &[3], None, &FrameOptions::default())?;
//! let mut out = vec![0u8; values.len()];
//! FrameDecoder::new(&blob)?.decode_into(0..3, &mut out)?;
//! assert_eq!(out, values);
//! # Ok::<(), miniblock::Error>(())
//! ```
//!
//! Modules, one idea each: `kernels` (the byte transpose, SIMD, internal; its name is
//! [`kernel_name`]), [`shuffle`] (the whole-buffer filter), [`encodings`] (per-chunk
//! compressor and decompressor pairs, and `auto`), [`page`] (chunking, validity, the chunk table,
//! decoding), [`file`](mod@file) (column files), [`frame`] (one array in one blob),
//! [`lance`] (Lance files), [`proto`] (the protobuf messages), [`error`], [`arrow`] (the
//! Arrow crates the API uses, re-exported).

// Sizes read from files (u64 page lengths and offsets, value counts times widths) are
// converted to usize after checks written for a 64-bit usize; rather than audit every one
// for a 32-bit target, the crate refuses to build there.
#[cfg(not(target_pointer_width = "64"))]
compile_error!("miniblock supports 64-bit targets only (its size checks assume a 64-bit usize)");

pub mod encodings;
pub mod error;
pub mod file;
pub mod frame;
mod kernels;
pub mod lance;
pub mod page;
pub mod proto;
pub mod shuffle;

/// The Arrow crates this API takes and returns, re-exported at the exact versions the
/// crate was built with: a program that adds another major version of `arrow-array` to
/// its own dependencies gets "multiple different versions of crate" errors, while
/// `miniblock::arrow::array::Float64Array` always matches.
pub mod arrow {
    pub use arrow_array as array;
    pub use arrow_buffer as buffer;
    pub use arrow_schema as schema;
}

pub use encodings::Encoding;
pub use error::{Error, ErrorKind, Result};
pub use kernels::crc::crc32c;
pub use kernels::selected_name as kernel_name;
pub use kernels::{cpu_level, CpuLevel};
pub use page::{encode_page, EncodedPage, PageDecoder, PageEncoder};

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// The format page's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../docs/format.md")]
pub struct FormatDoctests;
