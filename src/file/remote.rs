//! Column files in an object store (S3, GCS, Azure, a local directory, memory), through
//! the `object_store` crate: the footer first, then, for each read, just the byte ranges
//! it needs (the chunks its rows overlap, and the page buffers of pages read for the first
//! time), near ones merged, each requested on its own (eight at a time) and read into a
//! buffer a `BufferPool` kept from reads finished with.
//!
//! The decoding is [`FileReader`]'s own: the reader here runs it over [`Fetched`], the
//! bytes fetched for the read at hand, which it plans with the same code that reads them
//! (`FileReader::ranges_for`), so what is fetched is exactly what is read.

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::ops::Range;
use std::sync::{Arc, Mutex, PoisonError};

use arrow_array::{ArrayRef, RecordBatch, RecordBatchOptions};
use bytes::{Bytes, BytesMut};
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{GetOptions, GetResult, GetResultPayload, ObjectStore, ObjectStoreExt};

use super::{FileReader, HEADER_LEN, TRAILER_LEN};
use crate::error::{Error, Result};

/// Bytes read from the end of an object on open: the trailer and, usually, the whole
/// footer, in one request.
const TAIL_BYTES: u64 = 64 * 1024;

/// Ranges closer than this are fetched as one (object stores charge per request; a
/// small gap costs less than a second round trip).
const COALESCE_GAP: u64 = 64 * 1024;

/// Ranges requested at once (object stores serve each in its own round trip).
const PARALLEL_REQUESTS: usize = 8;

/// A local file's range up to this size is read on the thread that asked for it; a
/// larger one on tokio's blocking threads. Such a read is mostly a copy out of the page
/// cache: the same work on any thread, but on this one the bytes land in the cache of the
/// core that decodes them next, and no other thread is woken to do it and to wake this
/// one back (on a busy machine, two context switches a read). A scan's window of a local
/// file is about 1 MiB a column and 8 MiB in all (one batch's rows at least), a fraction
/// of a millisecond to copy; a whole column's read may be far larger.
const INLINE_READ_BYTES: usize = 8 << 20;

/// Buffers a [`BufferPool`] keeps at most, and bytes of them.
const POOL_BUFFERS: usize = 32;
const POOL_BYTES: usize = 64 << 20;

/// Buffers of fetched ranges that no read holds any more, for later fetches to fill
/// again; shared by a reader and its clones, whose windows of a scan take turns.
///
/// A scan fetches a few MiB at a time. A new buffer each time comes fresh from the
/// system (glibc maps and unmaps blocks that large), and faulting its pages in and zeroing
/// them cost about as much as decoding the values in it; a reused one costs neither.
#[derive(Debug, Default)]
struct BufferPool {
    free: Mutex<Vec<BytesMut>>,
}

impl BufferPool {
    /// A buffer with room for `len` bytes: the smallest free one that has it, holding
    /// the bytes of its last use, else a new one of `len` zeros. A reader that fills it
    /// in place resizes it to `len` (which zeroes only past its last use); one that
    /// appends clears it.
    fn take(&self, len: usize) -> BytesMut {
        let mut free = self.free.lock().unwrap_or_else(PoisonError::into_inner);
        let fit = (0..free.len())
            .filter(|&i| free[i].capacity() >= len)
            .min_by_key(|&i| free[i].capacity());
        match fit {
            Some(i) => free.swap_remove(i),
            None => BytesMut::zeroed(len),
        }
    }

    /// Keeps the buffer of `bytes` when nothing else holds it and the pool has room
    /// (the smallest buffers leave first: a window's large ranges are worth keeping).
    fn put(&self, bytes: Bytes) {
        let Ok(buf) = bytes.try_into_mut() else {
            return;
        };
        if buf.capacity() > POOL_BYTES {
            return;
        }
        let mut free = self.free.lock().unwrap_or_else(PoisonError::into_inner);
        free.push(buf);
        let mut total: usize = free.iter().map(BytesMut::capacity).sum();
        while free.len() > POOL_BUFFERS || total > POOL_BYTES {
            let smallest = (0..free.len())
                .min_by_key(|&i| free[i].capacity())
                .expect("over a bound, so not empty");
            total -= free.swap_remove(smallest).capacity();
        }
    }
}

/// The bytes of an object fetched so far, by offset, as a `Read + Seek` source; reading
/// bytes that were not fetched is an error (a plan that missed them), never a request.
///
/// What it holds goes back to its `BufferPool` when it is released or dropped.
#[derive(Debug, Clone, Default)]
pub struct Fetched {
    len: u64,
    ranges: BTreeMap<u64, Bytes>,
    position: u64,
    pool: Arc<BufferPool>,
}

impl Drop for Fetched {
    fn drop(&mut self) {
        self.release();
    }
}

impl Fetched {
    /// Nothing fetched yet of an object of `len` bytes.
    fn new(len: u64) -> Self {
        Self {
            len,
            ranges: BTreeMap::new(),
            position: 0,
            pool: Arc::default(),
        }
    }

    /// Forgets what was fetched, its buffers kept for later fetches when nothing else
    /// holds them (a clone of this reader may, for a while).
    fn release(&mut self) {
        for (_, bytes) in std::mem::take(&mut self.ranges) {
            self.pool.put(bytes);
        }
    }

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
}

/// A page's bytes are lent from the range holding them, not copied; bytes no one range
/// holds are read, which fails for bytes not fetched.
impl super::Source for Fetched {
    fn lend(&self, offset: u64, len: usize) -> Option<&[u8]> {
        self.held(offset, len)
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
        let mut fetched = Fetched::new(len);
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
        reader.source_mut().release();
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
        self.reader.source_mut().release();
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
            fetched.release();
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
            .map(|&c| self.reader.read_column_range(c, rows.clone()))
            .collect();
        // What a read fetched was for it alone: page buffers live on in the decoders
        // built from them, and a later read fetches its own chunks.
        if !prefetched {
            self.reader.source_mut().release();
        }
        result
    }

    /// Checks the whole object as [`FileReader::verify`] checks a file: every checksum, and
    /// every page decoded with its statistics compared. Pages are fetched one at a time
    /// (a request each), so memory stays at one page.
    pub async fn verify(&mut self) -> Result<super::VerifySummary> {
        let mut summary = super::VerifySummary::default();
        let mut buffer = Vec::new();
        for (column, pages) in self.reader.page_counts().into_iter().enumerate() {
            for index in 0..pages {
                let range = self.reader.page_bytes(column, index);
                self.reader.source_mut().release();
                fetch(
                    &*self.store,
                    &self.path,
                    &[range],
                    self.reader.source_mut(),
                    &mut self.count,
                )
                .await?;
                let checked = self
                    .reader
                    .verify_page(column, index, &mut buffer, &mut summary);
                self.reader.source_mut().release();
                checked?;
            }
            summary.columns += 1;
        }
        Ok(summary)
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
    let pool = &*fetched.pool;
    let parts: Vec<Bytes> = futures::stream::iter(ranges.iter().cloned())
        .map(|range| fetch_range(store, path, range, pool))
        .buffered(PARALLEL_REQUESTS)
        .try_collect()
        .await?;
    for (range, bytes) in ranges.iter().zip(parts) {
        count.requests += 1;
        count.bytes += bytes.len() as u64;
        fetched.insert(range.start, bytes);
    }
    Ok(())
}

/// Bytes `range` of the object, in a buffer from `pool` (or, from a store that returns
/// them in one piece of its own, such as an in-memory one, that piece); exactly as many
/// as asked for, or an error.
async fn fetch_range(
    store: &dyn ObjectStore,
    path: &Path,
    range: Range<u64>,
    pool: &BufferPool,
) -> Result<Bytes> {
    let options = GetOptions {
        range: Some(range.clone().into()),
        ..GetOptions::default()
    };
    let got = store
        .get_opts(path, options)
        .await
        .map_err(|e| store_error(path, &e))?;
    read_payload(got, path, range, pool).await
}

/// The bytes of `got`, the answer to a request for bytes `range` of `path`.
async fn read_payload(
    got: GetResult,
    path: &Path,
    range: Range<u64>,
    pool: &BufferPool,
) -> Result<Bytes> {
    let len = usize::try_from(range.end - range.start)
        .map_err(|_| Error::invalid(format!("{path}: bytes {range:?} do not fit in memory")))?;
    let short =
        |got: usize| Error::truncated(format!("{path}: bytes {range:?} came back as {got} bytes"));
    if got.range != range {
        let returned = got.range.end.saturating_sub(got.range.start);
        return Err(short(usize::try_from(returned).unwrap_or(usize::MAX)));
    }
    match got.payload {
        #[cfg(not(target_arch = "wasm32"))]
        GetResultPayload::File(mut file, _) => {
            let mut buf = pool.take(len);
            buf.resize(len, 0);
            let start = range.start;
            let read = move || -> std::io::Result<BytesMut> {
                file.seek(SeekFrom::Start(start))?;
                file.read_exact(&mut buf)?;
                Ok(buf)
            };
            let read = match tokio::runtime::Handle::try_current() {
                // A large blocking read, off the threads that run tasks.
                Ok(runtime) if len > INLINE_READ_BYTES => runtime
                    .spawn_blocking(read)
                    .await
                    .unwrap_or_else(|e| Err(std::io::Error::other(e))),
                _ => read(),
            };
            match read {
                Ok(buf) => Ok(buf.freeze()),
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Err(Error::truncated(
                    format!("{path}: the object ended within bytes {range:?}"),
                )),
                Err(source) => Err(Error::Io {
                    context: format!("reading bytes {range:?} of {path}"),
                    source,
                }),
            }
        }
        GetResultPayload::Stream(mut stream) => {
            let mut next = async || stream.try_next().await.map_err(|e| store_error(path, &e));
            let mut first = Bytes::new();
            while first.is_empty() {
                match next().await? {
                    Some(piece) => first = piece,
                    None => return Err(short(0)),
                }
            }
            let mut buf = if first.len() >= len {
                None
            } else {
                let mut buf = pool.take(len);
                buf.clear();
                buf.extend_from_slice(&first);
                Some(buf)
            };
            let mut got = first.len();
            while let Some(piece) = next().await? {
                got = got.saturating_add(piece.len());
                if let Some(buf) = buf.as_mut().filter(|_| got <= len) {
                    buf.extend_from_slice(&piece);
                }
            }
            if got != len {
                return Err(short(got));
            }
            Ok(buf.map_or(first, BytesMut::freeze))
        }
    }
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
    use crate::ErrorKind;
    use object_store::memory::InMemory;
    use object_store::ObjectMeta;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime")
    }

    #[test]
    fn released_buffers_are_filled_again_only_when_nothing_holds_them() {
        let pool = BufferPool::default();
        let mut buf = pool.take(1000);
        assert_eq!(buf.as_ref(), &[0u8; 1000][..]);
        buf.fill(7);
        let first = buf.freeze();
        let at = first.as_ptr();
        // Still held by a clone: not kept.
        pool.put(first.clone());
        assert!(pool.free.lock().unwrap().is_empty());
        pool.put(first);
        // Too small for 2000 bytes: a new zeroed buffer.
        let other = pool.take(2000);
        assert_ne!(other.as_ptr(), at);
        assert_eq!(other.as_ref(), &[0u8; 2000][..]);
        // The kept one, with the bytes of its last use, resized in place.
        let mut again = pool.take(600);
        assert_eq!((again.as_ptr(), again.as_ref()), (at, &[7u8; 1000][..]));
        again.resize(600, 0);
        again.resize(900, 0);
        assert_eq!(again.as_ptr(), at);
        assert!(again[..600].iter().all(|&b| b == 7) && again[600..].iter().all(|&b| b == 0));
    }

    #[test]
    fn the_pool_keeps_its_largest_buffers_within_its_bounds() {
        let pool = BufferPool::default();
        for len in 1..=POOL_BUFFERS + 8 {
            pool.put(BytesMut::zeroed(len * 1000).freeze());
        }
        pool.put(BytesMut::zeroed(POOL_BYTES + 1).freeze());
        let free = pool.free.lock().unwrap();
        assert_eq!(free.len(), POOL_BUFFERS);
        assert!(free
            .iter()
            .all(|b| b.capacity() > 8 * 1000 && b.capacity() <= POOL_BYTES));
    }

    #[test]
    fn fetched_ranges_are_the_stored_bytes_in_reused_buffers() {
        let dir = tempfile::tempdir().unwrap();
        let store = object_store::local::LocalFileSystem::new_with_prefix(dir.path()).unwrap();
        let memory = InMemory::new();
        let path = Path::from("x.bin");
        let bytes: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(dir.path().join("x.bin"), &bytes).unwrap();
        runtime().block_on(async {
            memory.put(&path, bytes.clone().into()).await.unwrap();
            for store in [&store as &dyn ObjectStore, &memory] {
                let mut fetched = Fetched::new(bytes.len() as u64);
                let mut count = FetchCount::default();
                // Large ranges, then smaller ones in the buffers they leave.
                for ranges in [[0..200_000, 250_000..300_000], [5..17, 100_001..180_000]] {
                    fetched.release();
                    fetch(store, &path, &ranges, &mut fetched, &mut count)
                        .await
                        .unwrap();
                    for r in ranges {
                        let got = fetched.held(r.start, (r.end - r.start) as usize).unwrap();
                        assert!(got == &bytes[r.start as usize..r.end as usize], "{r:?}");
                    }
                }
                assert_eq!(count.requests, 4);
                assert_eq!(count.bytes, 200_000 + 50_000 + 12 + 79_999);
                // Past the end of the object: an error, nothing kept.
                fetched.release();
                let past_the_end = 299_990..300_010;
                let e = fetch(
                    store,
                    &path,
                    std::slice::from_ref(&past_the_end),
                    &mut fetched,
                    &mut count,
                )
                .await
                .unwrap_err();
                assert!(
                    matches!(e.kind(), ErrorKind::Truncated | ErrorKind::Io),
                    "{e}"
                );
                assert!(fetched.ranges.is_empty());
            }
        });
    }

    /// The answer of a store that sends `pieces` for bytes `range`.
    fn answer(meta: &ObjectMeta, range: Range<u64>, pieces: &[&[u8]]) -> GetResult {
        let pieces: Vec<object_store::Result<Bytes>> = pieces
            .iter()
            .map(|p| Ok(Bytes::copy_from_slice(p)))
            .collect();
        GetResult {
            payload: GetResultPayload::Stream(futures::stream::iter(pieces).boxed()),
            meta: meta.clone(),
            range,
            attributes: object_store::Attributes::default(),
        }
    }

    #[test]
    fn streamed_pieces_must_make_exactly_the_range() {
        let pool = BufferPool::default();
        let path = Path::from("x");
        runtime().block_on(async {
            let store = InMemory::new();
            store.put(&path, vec![0; 100].into()).await.unwrap();
            let meta = store.head(&path).await.unwrap();
            let data: Vec<u8> = (0..10).collect();
            for cut in [
                &[&data[..]][..],
                &[&[], &data[..3], &[], &data[3..]],
                &[&data[..9], &data[9..]],
            ] {
                let got = read_payload(answer(&meta, 10..20, cut), &path, 10..20, &pool)
                    .await
                    .unwrap();
                assert_eq!(got.as_ref(), &data[..]);
            }
            let bad: [(&[&[u8]], Range<u64>); 5] = [
                (&[&data[..9]], 10..20),
                (&[&data[..], &[1]], 10..20),
                (&[&[0; 11]], 10..20),
                (&[], 10..20),
                (&[&data[..]], 10..19),
            ];
            for (pieces, returned) in bad {
                let e = read_payload(answer(&meta, returned, pieces), &path, 10..20, &pool)
                    .await
                    .unwrap_err();
                assert_eq!(e.kind(), ErrorKind::Truncated, "{e}");
            }
        });
    }

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
        let mut fetched = Fetched::new(100);
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
        use crate::file::Source;
        let mut fetched = Fetched::new(100);
        fetched.insert(10, Bytes::from_static(&[1, 2, 3]));
        fetched.insert(13, Bytes::from_static(&[4, 5]));
        assert_eq!(fetched.lend(11, 2).unwrap(), [2, 3]);
        assert_eq!(fetched.lend(13, 2).unwrap(), [4, 5]);
        assert_eq!(fetched.lend(12, 0).unwrap(), [0u8; 0]);
        // Across two ranges, past the end, before the first and past a huge length: not
        // lent, and a read of them fails.
        for (offset, len) in [(12, 2), (14, 2), (5, 1), (11, usize::MAX)] {
            assert!(fetched.lend(offset, len).is_none(), "{offset} {len}");
        }
        let mut buf = [0u8; 2];
        fetched.seek(SeekFrom::Start(14)).unwrap();
        let e = fetched.read_exact(&mut buf).unwrap_err();
        assert!(e.to_string().contains("was not fetched"), "{e}");
    }
}
