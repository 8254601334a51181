//! Shared by the DataFusion tests: a real table written both as column files and as
//! Parquet, and an object store that counts what is read of it.

#![allow(dead_code)]

use std::fmt;
use std::ops::Range;
use std::path::Path as FsPath;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use datafusion::arrow::array::{ArrayRef, Float64Array, Int32Array, Int64Array, RecordBatch};
use futures::stream::BoxStream;
use miniblock::file::{FileWriter, WriteOptions};
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::properties::WriterProperties;

/// Every numeric column of a typical meteorological year (pvlib's TMY3 file, 25 columns
/// of 8,760 hours, `data/tmy3_all_cols.f64`) as one long table: `series` (which column,
/// null for one series in seven hours), `hour` (sorted within a series), `value` (null
/// every 97th row).
pub fn weather() -> RecordBatch {
    let bytes = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../data/tmy3_all_cols.f64"
    ))
    .expect("the bundled sample");
    let values: Vec<f64> = bytes
        .chunks_exact(8)
        .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
        .collect();
    let n = values.len();
    let series: Int32Array = (0..n)
        .map(|i| Some(i32::try_from(i / 8760).unwrap()).filter(|_| (i / 8760) != 3 || i % 7 != 0))
        .collect();
    let hour: Int64Array = (0..n)
        .map(|i| Some(i64::try_from(i % 8760).unwrap()))
        .collect();
    let value: Float64Array = values
        .iter()
        .enumerate()
        .map(|(i, &v)| Some(v).filter(|_| i % 97 != 5))
        .collect();
    RecordBatch::try_from_iter([
        ("series", Arc::new(series) as ArrayRef),
        ("hour", Arc::new(hour) as ArrayRef),
        ("value", Arc::new(value) as ArrayRef),
    ])
    .unwrap()
}

/// Writes `batch` as `parts` column files `part-N.mb` in `dir`.
pub fn write_mb(dir: &FsPath, batch: &RecordBatch, parts: usize, options: WriteOptions) {
    std::fs::create_dir_all(dir).unwrap();
    for (i, rows) in cut(batch.num_rows(), parts).into_iter().enumerate() {
        let part = batch.slice(rows.start, rows.end - rows.start);
        write_file(&dir.join(format!("part-{i}.mb")), &part, options);
    }
}

/// Writes `batch` as the column file `path`.
pub fn write_file(path: &FsPath, batch: &RecordBatch, options: WriteOptions) {
    let file = std::fs::File::create(path).unwrap();
    let mut writer = FileWriter::try_new(file, batch.schema().as_ref(), options).unwrap();
    writer.write_batch(batch).unwrap();
    writer.finish().unwrap();
}

/// Writes `batch` as `parts` Parquet files with BYTE_STREAM_SPLIT and Zstd (level 3).
pub fn write_parquet(dir: &FsPath, batch: &RecordBatch, parts: usize) {
    std::fs::create_dir_all(dir).unwrap();
    let props = WriterProperties::builder()
        .set_dictionary_enabled(false)
        .set_encoding(Encoding::BYTE_STREAM_SPLIT)
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(3).unwrap()))
        .build();
    for (i, rows) in cut(batch.num_rows(), parts).into_iter().enumerate() {
        let file = std::fs::File::create(dir.join(format!("part-{i}.parquet"))).unwrap();
        let mut writer = ArrowWriter::try_new(file, batch.schema(), Some(props.clone())).unwrap();
        writer
            .write(&batch.slice(rows.start, rows.end - rows.start))
            .unwrap();
        writer.close().unwrap();
    }
}

fn cut(rows: usize, parts: usize) -> Vec<Range<usize>> {
    let share = rows.div_ceil(parts);
    (0..parts)
        .map(|i| (i * share).min(rows)..((i + 1) * share).min(rows))
        .collect()
}

/// An object store that counts the ranged reads made of it and their bytes.
#[derive(Debug)]
pub struct Counting {
    inner: Arc<dyn ObjectStore>,
    pub requests: AtomicU64,
    pub bytes: AtomicU64,
}

impl Counting {
    pub fn new(inner: Arc<dyn ObjectStore>) -> Self {
        Self {
            inner,
            requests: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
        }
    }

    pub fn reset(&self) {
        self.requests.store(0, Ordering::SeqCst);
        self.bytes.store(0, Ordering::SeqCst);
    }

    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::SeqCst)
    }

    fn count(&self, ranges: u64, bytes: u64) {
        self.requests.fetch_add(ranges, Ordering::SeqCst);
        self.bytes.fetch_add(bytes, Ordering::SeqCst);
    }
}

impl fmt::Display for Counting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Counting({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for Counting {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let head = options.head;
        let result = self.inner.get_opts(location, options).await?;
        if !head {
            self.count(1, result.range.end - result.range.start);
        }
        Ok(result)
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        let parts = self.inner.get_ranges(location, ranges).await?;
        self.count(
            ranges.len() as u64,
            parts.iter().map(|b| b.len() as u64).sum(),
        );
        Ok(parts)
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}
