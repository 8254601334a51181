//! Column files in an object store (S3, GCS, Azure, a local directory, memory), through
//! the `object_store` crate: the footer first, then, for each read, one coalesced request
//! for just the byte ranges it needs (the chunks its rows overlap, and the page buffers of
//! pages read for the first time).
//!
//! The decoding is [`FileReader`]'s own: the reader here runs it over [`Fetched`], the
//! bytes fetched for the read at hand, which it plans with the same code that reads them
//! (`FileReader::ranges_for`), so what is fetched is exactly what is read.

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::ops::Range;
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, RecordBatchOptions};
use bytes::Bytes;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};

use super::{FileReader, HEADER_LEN, TRAILER_LEN};
use crate::error::{Error, Result};

/// Bytes read from the end of an object on open: the trailer and, usually, the whole
/// footer, in one request.
const TAIL_BYTES: u64 = 64 * 1024;

/// Ranges closer than this are fetched as one (object stores charge per request; a
/// small gap costs less than a second round trip).
const COALESCE_GAP: u64 = 64 * 1024;

/// The bytes of an object fetched so far, by offset, as a `Read + Seek` source; reading
/// bytes that were not fetched is an error (a plan that missed them), never a request.
#[derive(Debug, Clone, Default)]
pub struct Fetched {
    len: u64,
    ranges: BTreeMap<u64, Bytes>,
    position: u64,
}

impl Fetched {
    fn insert(&mut self, start: u64, bytes: Bytes) {
        if !bytes.is_empty() {
            self.ranges.insert(start, bytes);
        }
    }

    /// The `len` bytes at `offset`, if one fetched range holds them all.
    fn held(&self, offset: u64, len: usize) -> Option<&[u8]> {
        let (&at, bytes) = self.ranges.range(..=offset).next_back()?;
        let skip = usize::try_from(offset - at).ok()?;
        bytes.get(skip..skip.checked_add(len)?)
    }

    /// Whether `range` lies inside one fetched range.
    fn holds(&self, range: &Range<u64>) -> bool {
        usize::try_from(range.end.saturating_sub(range.start))
            .is_ok_and(|len| self.held(range.start, len).is_some())
    }

    /// The `len` bytes at `offset`, lent from the range holding them (a page's bytes for
    /// `FileReader`, which needs no copy of them); an error if no one range does.
    pub(super) fn lend<'a>(
        &'a mut self,
        offset: u64,
        len: usize,
        _buffer: &'a mut Vec<u8>,
    ) -> Result<&'a [u8]> {
        self.held(offset, len)
            .ok_or_else(|| super::reader::io_error(not_fetched(offset), "reading"))
    }
}

impl Read for Fetched {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if buf.is_empty() || self.position >= self.len {
            return Ok(0);
        }
        let Some((&at, bytes)) = self.ranges.range(..=self.position).next_back() else {
            return Err(not_fetched(self.position));
        };
        let skip = usize::try_from(self.position - at).unwrap_or(usize::MAX);
        let Some(rest) = bytes.get(skip..).filter(|r| !r.is_empty()) else {
            return Err(not_fetched(self.position));
        };
        let n = rest.len().min(buf.len());
        buf[..n].copy_from_slice(&rest[..n]);
        self.position += n as u64;
        Ok(n)
    }
}

fn not_fetched(position: u64) -> std::io::Error {
    std::io::Error::other(format!("byte {position} of the object was not fetched"))
}

impl Seek for Fetched {
    fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
        let position = match to {
            SeekFrom::Start(p) => Some(p),
            SeekFrom::End(d) => self.len.checked_add_signed(d),
            SeekFrom::Current(d) => self.position.checked_add_signed(d),
        };
        self.position =
            position.ok_or_else(|| std::io::Error::other("seek before the start of the object"))?;
        Ok(self.position)
    }
}

/// What an [`ObjectStoreReader`] has fetched.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FetchCount {
    /// Ranges requested (one per coalesced range).
    pub requests: u64,
    /// Bytes fetched.
    pub bytes: u64,
}

/// A column file in an object store: [`FileReader`]'s reads, each fetching only the
/// ranges it needs, in one coalesced call.
///
/// A clone is a second reader of the same object (for another task or thread) that
/// shares the parsed footer, chunk tables and decoders; its fetch count starts from the
/// original's.
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use std::sync::Arc;
/// use arrow_array::{ArrayRef, Float32Array, RecordBatch};
/// use miniblock::file::{FileWriter, ObjectStoreReader, WriteOptions};
/// use object_store::{memory::InMemory, path::Path, ObjectStoreExt};
///
/// let mut state = 0x9E37_79B9_u32;
/// let column: ArrayRef = Arc::new(Float32Array::from_iter_values((0..100_000).map(|_| {
///     state ^= state << 13;
///     state ^= state >> 17;
///     state ^= state << 5;
///     f32::from_bits(state >> 2) // noise: the file is about 400 KB
/// })));
/// let batch = RecordBatch::try_from_iter([("x", column.clone())]).unwrap();
/// let mut writer = FileWriter::try_new(Vec::new(), batch.schema().as_ref(), WriteOptions::default())?;
/// writer.write_batch(&batch)?;
/// let store = Arc::new(InMemory::new());
/// let path = Path::from("data/x.mb");
/// store.put(&path, writer.finish()?.into()).await.unwrap();
///
/// let mut reader = ObjectStoreReader::open(store, path).await?;
/// let rows = reader.read_column_range(0, 50_000..50_010).await?;
/// assert_eq!(rows.as_ref(), column.slice(50_000, 10).as_ref());
/// // The header and the tail on open, then one 4 KiB chunk.
/// assert_eq!(reader.fetched().requests, 3);
/// assert!(reader.fetched().bytes < 64 * 1024 + 8 + 4096 + 64);
/// # Ok::<(), miniblock::Error>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct ObjectStoreReader {
    store: Arc<dyn ObjectStore>,
    path: Path,
    reader: FileReader<Fetched>,
    count: FetchCount,
}

impl ObjectStoreReader {
    /// Opens the column file at `path`: its size, then its tail and header (one request
    /// for both; a second for a footer larger than 64 KiB), checked as
    /// [`FileReader::open`] checks them.
    pub async fn open(store: Arc<dyn ObjectStore>, path: Path) -> Result<Self> {
        let meta = store
            .head(&path)
            .await
            .map_err(|e| store_error(&path, &e))?;
        let len = meta.size;
        let mut count = FetchCount::default();
        let mut fetched = Fetched {
            len,
            ..Fetched::default()
        };
        let tail = len.saturating_sub(TAIL_BYTES)..len;
        let head = 0..HEADER_LEN.min(tail.start);
        fetch(
            &*store,
            &path,
            &[head, tail.clone()],
            &mut fetched,
            &mut count,
        )
        .await?;
        // A footer longer than the tail: its first part.
        if tail.start > HEADER_LEN && len >= TRAILER_LEN {
            let trailer =
                &fetched.ranges[&tail.start][(tail.end - tail.start - TRAILER_LEN) as usize..];
            let footer_len = u64::from(u32::from_le_bytes(
                trailer[..4].try_into().expect("4 bytes"),
            ));
            let footer_start = (len - TRAILER_LEN)
                .saturating_sub(footer_len)
                .max(HEADER_LEN);
            if footer_start < tail.start {
                let rest = footer_start..tail.start;
                fetch(
                    &*store,
                    &path,
                    std::slice::from_ref(&rest),
                    &mut fetched,
                    &mut count,
                )
                .await?;
                let mut joined = fetched.ranges[&footer_start].to_vec();
                joined.extend_from_slice(&fetched.ranges[&tail.start]);
                fetched.ranges.remove(&tail.start);
                fetched.ranges.insert(footer_start, joined.into());
            }
        }
        let mut reader = FileReader::open(fetched)?;
        // The footer is parsed: no read needs these bytes again.
        reader.source_mut().ranges.clear();
        Ok(Self {
            store,
            path,
            reader,
            count,
        })
    }

    /// The reader over what is fetched: its schema, footer and statistics need no
    /// further request.
    pub fn reader(&self) -> &FileReader<Fetched> {
        &self.reader
    }

    /// Requests made and bytes fetched so far.
    pub fn fetched(&self) -> FetchCount {
        self.count
    }

    /// Reads rows `rows` of `column`, fetching only the ranges they need.
    pub async fn read_column_range(&mut self, column: usize, rows: Range<u64>) -> Result<ArrayRef> {
        let mut arrays = self.read_columns(&[column], rows).await?;
        Ok(arrays.remove(0))
    }

    /// Rows `rows` of `columns` (indices, in the order the batch holds them) as one
    /// record batch with the file's schema projected, every range they need fetched in
    /// one call. With [`FileReader::matching_rows`] on [`reader`](Self::reader), a scan
    /// reads only the pages a filter may match.
    pub async fn read_batch(&mut self, columns: &[usize], rows: Range<u64>) -> Result<RecordBatch> {
        let schema = self
            .reader
            .schema()
            .project(columns)
            .map_err(|e| Error::invalid(e.to_string()))?;
        let arrays = self.read_columns(columns, rows.clone()).await?;
        let row_count = usize::try_from(rows.end - rows.start)
            .map_err(|_| Error::invalid("batch does not fit in memory"))?;
        RecordBatch::try_new_with_options(
            Arc::new(schema),
            arrays,
            &RecordBatchOptions::new().with_row_count(Some(row_count)),
        )
        .map_err(|e| Error::corrupt(format!("rows {rows:?}: {e}")))
    }

    /// Fetches, in one call, what reading rows `rows` of `columns` needs, and keeps it
    /// until the next `prefetch` or a read outside it: reads within those rows then make
    /// no request. A scan cutting small batches from a large range fetches the range once
    /// this way, rather than once per batch.
    ///
    /// The decompressors of the pages these rows overlap are built here, from their page
    /// buffers: a clone's prefetch of the rows after these (a read-ahead, while these
    /// decode) then does not ask for those buffers again.
    pub async fn prefetch(&mut self, columns: &[usize], rows: Range<u64>) -> Result<()> {
        let ranges = self.ranges_for(columns, rows.clone())?;
        self.reader.source_mut().ranges.clear();
        fetch(
            &*self.store,
            &self.path,
            &coalesce(ranges),
            self.reader.source_mut(),
            &mut self.count,
        )
        .await?;
        for &column in columns {
            self.reader.build_decoders(column, rows.clone())?;
        }
        Ok(())
    }

    fn ranges_for(&self, columns: &[usize], rows: Range<u64>) -> Result<Vec<Range<u64>>> {
        let mut ranges = Vec::new();
        for &column in columns {
            ranges.extend(self.reader.ranges_for(column, rows.clone())?);
        }
        Ok(ranges)
    }

    /// Reads rows `rows` of `columns`: from what [`prefetch`](Self::prefetch) kept when
    /// it holds them, else from what one call fetches for this read alone.
    async fn read_columns(&mut self, columns: &[usize], rows: Range<u64>) -> Result<Vec<ArrayRef>> {
        let ranges = self.ranges_for(columns, rows.clone())?;
        let fetched = self.reader.source_mut();
        let prefetched = ranges.iter().all(|r| fetched.holds(r));
        if !prefetched {
            fetched.ranges.clear();
            fetch(
                &*self.store,
                &self.path,
                &coalesce(ranges),
                fetched,
                &mut self.count,
            )
            .await?;
        }
        let result = columns
            .iter()
            .map(|&c| self.reader.read_fetched_range(c, rows.clone()))
            .collect();
        // What a read fetched was for it alone: page buffers live on in the decoders
        // built from them, and a later read fetches its own chunks.
        if !prefetched {
            self.reader.source_mut().ranges.clear();
        }
        result
    }

    /// Reads a whole column.
    pub async fn read_column(&mut self, column: usize) -> Result<ArrayRef> {
        let rows = self.reader.num_rows();
        self.read_column_range(column, 0..rows).await
    }
}

/// Sorted, merged ranges: overlapping or closer than [`COALESCE_GAP`] become one.
fn coalesce(mut ranges: Vec<Range<u64>>) -> Vec<Range<u64>> {
    ranges.retain(|r| r.start < r.end);
    ranges.sort_by_key(|r| r.start);
    let mut out: Vec<Range<u64>> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match out.last_mut() {
            Some(last) if r.start <= last.end.saturating_add(COALESCE_GAP) => {
                last.end = last.end.max(r.end);
            }
            _ => out.push(r),
        }
    }
    out
}

/// Fetches `ranges` (sorted, disjoint) of the object in one call, into `fetched`.
async fn fetch(
    store: &dyn ObjectStore,
    path: &Path,
    ranges: &[Range<u64>],
    fetched: &mut Fetched,
    count: &mut FetchCount,
) -> Result<()> {
    let ranges: Vec<Range<u64>> = ranges.iter().filter(|r| r.start < r.end).cloned().collect();
    if ranges.is_empty() {
        return Ok(());
    }
    let parts = store
        .get_ranges(path, &ranges)
        .await
        .map_err(|e| store_error(path, &e))?;
    if parts.len() != ranges.len() {
        return Err(Error::truncated(format!(
            "{path}: asked for {} ranges, the store returned {}",
            ranges.len(),
            parts.len()
        )));
    }
    for (range, bytes) in ranges.iter().zip(parts) {
        if bytes.len() as u64 != range.end - range.start {
            return Err(Error::truncated(format!(
                "{path}: bytes {range:?} came back as {} bytes",
                bytes.len()
            )));
        }
        count.requests += 1;
        count.bytes += bytes.len() as u64;
        fetched.insert(range.start, bytes);
    }
    Ok(())
}

fn store_error(path: &Path, e: &object_store::Error) -> Error {
    match e {
        object_store::Error::NotFound { .. } => Error::invalid(format!("{path}: not found")),
        other => Error::Io {
            context: format!("reading {path} from the object store"),
            source: std::io::Error::other(other.to_string()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coalescing_merges_near_and_overlapping_ranges() {
        let merged = coalesce(vec![
            500_000..500_010,
            0..10,
            5..20,
            30..40,
            200_000..200_001,
            7..7,
        ]);
        assert_eq!(merged, [0..40, 200_000..200_001, 500_000..500_010]);
    }

    #[test]
    fn unfetched_bytes_are_an_error_not_a_read() {
        let mut fetched = Fetched {
            len: 100,
            ..Fetched::default()
        };
        fetched.insert(10, Bytes::from_static(&[1, 2, 3]));
        let mut buf = [0u8; 3];
        fetched.seek(SeekFrom::Start(10)).unwrap();
        fetched.read_exact(&mut buf).unwrap();
        assert_eq!(buf, [1, 2, 3]);
        assert!(fetched.read(&mut buf).is_err());
        fetched.seek(SeekFrom::Start(11)).unwrap();
        assert!(fetched.read_exact(&mut buf).is_err());
        assert!(fetched.holds(&(10..13)) && !fetched.holds(&(10..14)));
    }

    #[test]
    fn lent_bytes_are_the_fetched_ones_and_only_within_one_range() {
        let mut fetched = Fetched {
            len: 100,
            ..Fetched::default()
        };
        fetched.insert(10, Bytes::from_static(&[1, 2, 3]));
        fetched.insert(13, Bytes::from_static(&[4, 5]));
        let mut unused = Vec::new();
        assert_eq!(fetched.lend(11, 2, &mut unused).unwrap(), [2, 3]);
        assert_eq!(fetched.lend(13, 2, &mut unused).unwrap(), [4, 5]);
        assert_eq!(fetched.lend(12, 0, &mut unused).unwrap(), [0u8; 0]);
        // Across two ranges, past the end, before the first and past a huge length.
        for (offset, len) in [(12, 2), (14, 2), (5, 1), (11, usize::MAX)] {
            let e = fetched.lend(offset, len, &mut unused).unwrap_err();
            assert!(e.to_string().contains("was not fetched"), "{e}");
        }
        assert!(unused.is_empty(), "nothing is copied");
    }
}
