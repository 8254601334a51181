//! Column files: pages of one or more fixed-width columns (floats, integers, temporal,
//! decimals, fixed-size binaries), streamed to any writer, with a
//! protobuf footer that lets a reader fetch only the pages and chunks a row range needs.
//!
//! # Layout
//!
//! ```text
//! "MBLK" u32 LE format version (1)            8-byte header
//! page data, page after page                   each page: its chunks back to back,
//!                                              then its page buffers, if any
//! Footer (protobuf, protos/file.proto)         schema, row count, per page: offset,
//!                                              length, value count, ArrayEncoding,
//!                                              chunk table (and its entry size),
//!                                              CRC32C of the page data and of each
//!                                              chunk, page buffer sizes and CRC32Cs
//! u32 LE footer length
//! u32 LE CRC32C of the footer bytes
//! "MBLK"
//! ```
//!
//! The reader checks both magics, the footer's CRC, every offset and count in the footer
//! against the file size, and each page's CRC when it reads the whole page (a range read
//! that fetches only some chunks cannot check the page CRC; it still validates every
//! chunk it decodes). Each page carries its own `ArrayEncoding`: with the default `auto`
//! strategy, pages of one column may use different encodings.
//!
//! ```
//! use std::sync::Arc;
//! use arrow_array::{ArrayRef, Float32Array, RecordBatch};
//! use miniblock::file::{FileReader, FileWriter, WriteOptions};
//!
//! let column: ArrayRef = Arc::new(Float32Array::from_iter_values((0..10_000).map(|i| i as f32)));
//! let batch = RecordBatch::try_from_iter([("x", column.clone())]).unwrap();
//! let mut writer = FileWriter::try_new(Vec::new(), batch.schema().as_ref(), WriteOptions::default())?;
//! writer.write_batch(&batch)?;
//! let bytes = writer.finish()?;
//!
//! let mut reader = FileReader::open(std::io::Cursor::new(bytes))?;
//! assert_eq!(reader.num_rows(), 10_000);
//! let rows = reader.read_column_range(0, 2_000..2_010)?;
//! assert_eq!(rows.as_ref(), &column.slice(2_000, 10));
//! # Ok::<(), miniblock::Error>(())
//! ```

mod reader;
#[cfg(feature = "object-store")]
mod remote;
mod scan;
mod source;
mod stats;
pub(crate) mod types;
mod writer;

pub use reader::{page_layout, FileReader, VerifySummary};
#[cfg(feature = "object-store")]
pub use remote::{FetchCount, Fetched, ObjectStoreReader};
pub use scan::{ColumnRef, FileBatches, ScanOptions, StatsFilter};
pub use source::Source;
pub use stats::{PageStats, StatValue};
pub use writer::{FileWriter, WriteOptions};

/// Magic bytes at both ends of a file.
pub const MAGIC: [u8; 4] = *b"MBLK";
/// The format version this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;
/// Header: magic + version.
pub const HEADER_LEN: u64 = 8;
/// Trailer: footer length + footer CRC + magic.
pub const TRAILER_LEN: u64 = 12;
/// Default page size in bytes of values.
pub const DEFAULT_PAGE_BYTES: usize = 1 << 20;
