//! miniblock column files as [DataFusion](https://datafusion.apache.org) tables.
//!
//! - [`MiniblockTable`]: a `TableProvider` over one file, a directory or a glob of files
//!   with one schema, local or in any object store. Projection, filter (pages pruned by
//!   their statistics, inexact) and limit pushdown; partitions across files and pages.
//! - [`MiniblockScanExec`]: its scan, which reads each batch's chunks in one ranged
//!   request and counts requests and bytes in its metrics.
//! - [`MiniblockCodec`]: `datafusion-proto` extension codecs for the scan and the table,
//!   so that plans with them serialize (what Ballista ships to its scheduler and
//!   executors), wrapping the codecs of the engine for its own nodes.
//! - [`enable_url_table`]: SQL names files by path, `FROM 'data/*.mb'`.
//!
//! ```
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! use std::sync::Arc;
//! use datafusion::arrow::array::{ArrayRef, Float64Array, Int32Array, RecordBatch};
//! use datafusion::prelude::SessionContext;
//! use miniblock::file::{FileWriter, WriteOptions};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let batch = RecordBatch::try_from_iter([
//!     ("station", Arc::new(Int32Array::from_iter_values((0..10_000).map(|i| i % 7))) as ArrayRef),
//!     ("temp", Arc::new(Float64Array::from_iter_values((0..10_000).map(|i| f64::from(i) / 8.0))) as ArrayRef),
//! ]).unwrap();
//! let file = std::fs::File::create(dir.path().join("weather.mb")).unwrap();
//! let mut writer = FileWriter::try_new(file, batch.schema().as_ref(), WriteOptions::default()).unwrap();
//! writer.write_batch(&batch).unwrap();
//! writer.finish().unwrap();
//!
//! let ctx = miniblock_datafusion::enable_url_table(SessionContext::new());
//! let sql = format!(
//!     "SELECT station, max(temp) AS hottest FROM '{}' GROUP BY station ORDER BY station LIMIT 2",
//!     dir.path().join("weather.mb").display()
//! );
//! let batches = ctx.sql(&sql).await.unwrap().collect().await.unwrap();
//! let hottest = batches[0].column(1).as_any().downcast_ref::<Float64Array>().unwrap();
//! assert_eq!(hottest.values(), &[1249.5, 1249.625]);
//! # });
//! ```

mod codec;
mod exec;
mod format;
mod prune;
mod stats;
mod table;
mod url;

pub use codec::MiniblockCodec;
pub use exec::MiniblockScanExec;
pub use format::{MiniblockFormat, MiniblockFormatFactory};
pub use table::MiniblockTable;
pub use url::enable_url_table;

/// The extension by which directories and SQL paths find column files.
pub const FILE_EXTENSION: &str = ".mb";
