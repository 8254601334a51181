//! A column file -> Arrow arrays, whole columns or row ranges.

use std::borrow::Cow;
use std::io::{Read, Seek, SeekFrom};
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::sync::{Mutex, OnceLock};

use arrow_array::{ArrayRef, ArrowPrimitiveType};
use arrow_buffer::{BooleanBufferBuilder, MutableBuffer, NullBuffer};
use arrow_schema::{DataType, Field, FieldRef, Schema, SchemaRef};
use prost::Message;

use super::stats::PageStats;
use super::types::column_type;
use super::{Source, FORMAT_VERSION, HEADER_LEN, MAGIC, TRAILER_LEN};
use crate::encodings::{
    checked_len, decompressor_for, unbound_decompressor, MiniBlockDecompressor,
};
use crate::error::{Error, Result};
use crate::kernels::crc::crc32c;
use crate::page::{
    build_array, output_reserve, value_width, ChunkTableFormat, PageDecoder, PageLayout,
    MAX_PAGE_BUFFERS,
};
use crate::proto::encodings::ArrayEncoding;
use crate::proto::file as pb;

/// `verify` decodes a page at most this many bytes of values at a time (or one chunk, when
/// a chunk is larger).
const VERIFY_SLICE_BYTES: usize = 16 << 20;

/// Reads a column file from a [`Source`]: any `Read + Seek` (a `File`), or bytes in
/// memory (a `Cursor` over a `Vec<u8>`, `Bytes` or memory map), whose pages are decoded
/// where they lie, not copied first.
///
/// [`open`](Self::open) reads only the header and the footer and checks them against the
/// file's size; reads then fetch only the pages, and within a page only the chunks, that
/// the asked rows overlap.
///
/// A clone (of a reader over a cloneable source) shares the checked footer and every
/// chunk table and decoder built so far or later.
#[derive(Debug, Clone)]
pub struct FileReader<R> {
    source: R,
    /// What the footer says, checked, and what reads learn of it: shared by clones, so
    /// that readers of one file on several threads parse and build each thing once.
    meta: Arc<FileMeta>,
    verify_checksums: bool,
    parallel: bool,
}

#[derive(Debug, Clone)]
struct FileMeta {
    footer: pb::Footer,
    schema: SchemaRef,
    /// Per column, the first row of each page (and the row count at the end).
    page_starts: Vec<Vec<u64>>,
    /// Per column and page, its chunk table as parsed and validated on first use: a read
    /// never parses a table twice.
    layouts: Vec<Vec<OnceLock<PageLayout>>>,
    /// Per column and page, its decompressor as built on first use (the message parsed,
    /// entropy tables checked, page buffers read and checked): a read never builds one
    /// twice.
    decoders: Vec<Vec<DecoderCell>>,
}

/// A page's decompressor, kept apart by whether its page buffers' checksums were checked:
/// clones share the cache, and a reader that verifies must never take a decompressor an
/// unverifying clone built from bytes nobody checked.
#[derive(Debug, Default, Clone)]
struct DecoderCell {
    verified: OnceLock<Arc<dyn MiniBlockDecompressor>>,
    unverified: OnceLock<Arc<dyn MiniBlockDecompressor>>,
}

impl DecoderCell {
    /// The decompressor a reader verifying or not may use, if one is built: a verified
    /// one serves both.
    fn get(&self, verify: bool) -> Option<&Arc<dyn MiniBlockDecompressor>> {
        self.verified
            .get()
            .or_else(|| if verify { None } else { self.unverified.get() })
    }

    /// The cell a decompressor built with or without checks goes in.
    fn slot(&self, verified: bool) -> &OnceLock<Arc<dyn MiniBlockDecompressor>> {
        if verified {
            &self.verified
        } else {
            &self.unverified
        }
    }
}

impl<R: Source> FileReader<R> {
    /// Opens a file: checks its magics, reads and checks its footer.
    pub fn open(mut source: R) -> Result<Self> {
        let file_len = source
            .seek(SeekFrom::End(0))
            .map_err(|e| io_error(e, "finding the file size"))?;
        let mut header = [0u8; HEADER_LEN as usize];
        let got = read_at_most(&mut source, 0, &mut header)?;
        if got < MAGIC.len() || header[..4] != MAGIC {
            if got < MAGIC.len() && header[..got] == MAGIC[..got] {
                return Err(Error::truncated(format!(
                    "file of {file_len} bytes ends inside its header"
                )));
            }
            return Err(Error::corrupt(
                "not a miniblock file (no MBLK magic at its start)",
            ));
        }
        if file_len < HEADER_LEN + TRAILER_LEN {
            return Err(Error::truncated(format!(
                "file of {file_len} bytes is shorter than a header and a trailer"
            )));
        }
        let version = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
        if version != FORMAT_VERSION {
            return Err(Error::unsupported(format!(
                "file format version {version} (this build reads version {FORMAT_VERSION})"
            )));
        }
        let mut trailer = [0u8; TRAILER_LEN as usize];
        read_exact_at(&mut source, file_len - TRAILER_LEN, &mut trailer)?;
        if trailer[8..] != MAGIC {
            return Err(Error::truncated(format!(
                "file of {file_len} bytes does not end with its footer (cut short, or still being written)"
            )));
        }
        let footer_len = u64::from(u32::from_le_bytes([
            trailer[0], trailer[1], trailer[2], trailer[3],
        ]));
        let footer_crc = u32::from_le_bytes([trailer[4], trailer[5], trailer[6], trailer[7]]);
        let footer_start = (file_len - TRAILER_LEN)
            .checked_sub(footer_len)
            .filter(|&start| start >= HEADER_LEN)
            .ok_or_else(|| {
                Error::corrupt(format!(
                    "footer length {footer_len} does not fit in a file of {file_len} bytes"
                ))
            })?;
        let mut footer_bytes = vec![0u8; footer_len as usize];
        read_exact_at(&mut source, footer_start, &mut footer_bytes)?;
        if crc32c(&footer_bytes) != footer_crc {
            return Err(Error::corrupt(
                "footer checksum mismatch: the footer is damaged",
            ));
        }
        let footer = pb::Footer::decode(footer_bytes.as_slice())
            .map_err(|e| Error::corrupt(format!("footer does not parse: {e}")))?;
        let (schema, page_starts) = validate_footer(&footer, footer_start)?;
        let layouts = page_cells(&footer);
        let decoders = footer
            .columns
            .iter()
            .map(|c| c.pages.iter().map(|_| DecoderCell::default()).collect())
            .collect();
        Ok(Self {
            source,
            meta: Arc::new(FileMeta {
                footer,
                schema,
                page_starts,
                layouts,
                decoders,
            }),
            verify_checksums: true,
            parallel: false,
        })
    }
}

/// What a reader knows without reading: its settings and the checked footer.
impl<R> FileReader<R> {
    /// Whether reads check CRC32Cs (on by default): a whole page against its page checksum,
    /// a row range against the checksums of the chunks it fetches. Turning it off
    /// is an explicit opt-out for callers who verify bytes elsewhere.
    ///
    /// Clones share what they build, but a verifying reader never uses a decompressor
    /// built from page buffers that were not checked, whichever clone built it.
    pub fn set_verify_checksums(&mut self, verify: bool) {
        self.verify_checksums = verify;
    }

    /// Whether a read of several pages decodes them on several threads (off by default):
    /// the reader's thread reads the pages' bytes in order, a few pages ahead of their
    /// decoding (as many as rayon has threads), and decodes pages itself beside rayon
    /// tasks, at most one fewer than rayon's threads. A read into an Arrow array then
    /// gathers the pages' values into it (one more copy); a read into a caller's buffer
    /// decodes each page straight into its part of it. The values are the same either
    /// way.
    pub fn set_parallel(&mut self, parallel: bool) {
        self.parallel = parallel;
    }

    /// The file's schema.
    pub fn schema(&self) -> &SchemaRef {
        &self.meta.schema
    }

    /// Rows in every column.
    pub fn num_rows(&self) -> u64 {
        self.meta.footer.num_rows
    }

    /// The footer as read.
    pub fn footer(&self) -> &pb::Footer {
        &self.meta.footer
    }

    /// The index of the column named `name`.
    pub fn column_index(&self, name: &str) -> Result<usize> {
        self.meta.schema.index_of(name).map_err(|_| {
            let names: Vec<&str> = self
                .meta
                .schema
                .fields()
                .iter()
                .map(|f| f.name().as_str())
                .collect();
            Error::invalid(format!("no column {name:?}; the file has {names:?}"))
        })
    }

    /// Where the pages of `column` start: the first row of each page, then the row
    /// count; `None` for a column the file lacks.
    pub fn page_starts(&self, column: usize) -> Option<&[u64]> {
        self.meta.page_starts.get(column).map(Vec::as_slice)
    }

    /// Bytes `column` takes in the file: its pages and their page buffers, what reading
    /// all of it fetches (chunk tables live in the footer); `None` for a column the file
    /// lacks.
    pub fn column_bytes(&self, column: usize) -> Option<u64> {
        let pages = &self.meta.footer.columns.get(column)?.pages;
        Some(
            pages
                .iter()
                .flat_map(|p| std::iter::once(p.length).chain(p.buffer_sizes.iter().copied()))
                .fold(0, u64::saturating_add),
        )
    }

    /// Rows of page `index` of `column` (both in range).
    pub(crate) fn page_rows(&self, column: usize, index: usize) -> Range<u64> {
        let starts = &self.meta.page_starts[column];
        starts[index]..starts[index + 1]
    }

    /// The statistics the footer records for page `index` of `column`, checked against
    /// the column's type and the page's value count; `None` for a page written without
    /// them.
    pub fn page_stats(&self, column: usize, index: usize) -> Result<Option<PageStats>> {
        let page = self
            .meta
            .footer
            .columns
            .get(column)
            .and_then(|c| c.pages.get(index))
            .ok_or_else(|| Error::invalid(format!("no page {index} in column {column}")))?;
        let field = self.meta.schema.field(column);
        page.statistics
            .as_ref()
            .map(|s| PageStats::from_proto(s, field.data_type(), page.num_values))
            .transpose()
            .map_err(|e| in_page(e, field, index))
    }

    /// The statistics of a whole column, folded from its pages' (no decoding); `None`
    /// when a page has none (a file written before statistics existed).
    pub fn column_stats(&self, column: usize) -> Result<Option<PageStats>> {
        let pages = self
            .meta
            .footer
            .columns
            .get(column)
            .ok_or_else(|| Error::invalid(format!("no column {column}")))?
            .pages
            .len();
        let mut total = PageStats {
            min: None,
            max: None,
            null_count: 0,
            nan_count: 0,
        };
        for index in 0..pages {
            let Some(stats) = self.page_stats(column, index)? else {
                return Ok(None);
            };
            total.merge(&stats);
        }
        Ok(Some(total))
    }
}

impl<R: Source> FileReader<R> {
    /// The validated layout of page `index` of `column`, parsed on first use.
    fn layout(&self, column: usize, index: usize, width: usize) -> Result<&PageLayout> {
        let cell = &self.meta.layouts[column][index];
        if let Some(layout) = cell.get() {
            return Ok(layout);
        }
        let layout = page_layout(&self.meta.footer.columns[column].pages[index], width)?;
        Ok(cell.get_or_init(|| layout))
    }

    /// Reads a whole column.
    pub fn read_column(&mut self, column: usize) -> Result<ArrayRef> {
        let rows = self.meta.footer.num_rows;
        self.read_column_range(column, 0..rows)
    }

    /// Reads rows `rows` of a column, fetching only the pages and chunks they overlap.
    pub fn read_column_range(&mut self, column: usize, rows: Range<u64>) -> Result<ArrayRef> {
        self.read_range(column, rows)
    }

    /// Decodes rows `rows` of `column` into `values`, a caller's buffer of exactly
    /// `rows.len()` times the column's value width bytes (the values' little-endian
    /// bytes; under a null, what the page stores, zero), fetching only the pages and
    /// chunks the rows overlap, with no other buffer of the values' size. Returns the
    /// rows' validity when some of them are null.
    ///
    /// For a column of an Arrow primitive type, [`read_values_into`](Self::read_values_into)
    /// takes a typed slice.
    pub fn read_column_range_into(
        &mut self,
        column: usize,
        rows: Range<u64>,
        values: &mut [u8],
    ) -> Result<Option<NullBuffer>> {
        let (field, plans) = self.plan(column, rows.clone())?;
        let data_type = field.data_type().clone();
        let width = value_width(&data_type)?;
        let len = usize::try_from(rows.end - rows.start)
            .map_err(|_| Error::invalid("row range does not fit in memory"))?;
        let expected = checked_len(len, width)?;
        if values.len() != expected {
            return Err(Error::invalid(format!(
                "the buffer holds {} bytes; rows {rows:?} of column {:?} ({data_type}) need {expected}",
                values.len(),
                field.name()
            )));
        }
        let mut validity = field.is_nullable().then(|| BooleanBufferBuilder::new(len));
        self.read_pages(
            column,
            &field,
            plans,
            &mut Sink::Slice(values),
            validity.as_mut(),
        )?;
        Ok(validity
            .map(|mut v| NullBuffer::new(v.finish()))
            .filter(|n| n.null_count() > 0))
    }

    /// [`read_column_range_into`](Self::read_column_range_into) for a column of the
    /// Arrow primitive type `T` (`Float64Type` for `f64` values, `Int32Type`, ...): an
    /// error for a column of any other type.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use miniblock::arrow::array::{ArrayRef, Float64Array, RecordBatch};
    /// # use miniblock::arrow::array::types::Float64Type;
    /// # use miniblock::file::{FileReader, FileWriter, WriteOptions};
    /// # let column: ArrayRef = Arc::new(Float64Array::from_iter_values((0..1000).map(f64::from)));
    /// # let batch = RecordBatch::try_from_iter([("x", column)]).unwrap();
    /// # let mut writer = FileWriter::try_new(Vec::new(), batch.schema().as_ref(), WriteOptions::default())?;
    /// # writer.write_batch(&batch)?;
    /// let mut reader = FileReader::open(std::io::Cursor::new(writer.finish()?))?;
    /// let mut values = vec![0f64; 100];
    /// let nulls = reader.read_values_into::<Float64Type>(0, 200..300, &mut values)?;
    /// assert!(nulls.is_none());
    /// assert_eq!(values[0], 200.0);
    /// # Ok::<(), miniblock::Error>(())
    /// ```
    pub fn read_values_into<T: ArrowPrimitiveType>(
        &mut self,
        column: usize,
        rows: Range<u64>,
        values: &mut [T::Native],
    ) -> Result<Option<NullBuffer>> {
        let field = self.meta.schema.fields().get(column).ok_or_else(|| {
            Error::invalid(format!(
                "column {column} of a file of {} columns",
                self.meta.schema.fields().len()
            ))
        })?;
        if field.data_type() != &T::DATA_TYPE {
            return Err(Error::invalid(format!(
                "column {:?} holds {}, not {}",
                field.name(),
                field.data_type(),
                T::DATA_TYPE
            )));
        }
        self.read_column_range_into(column, rows, crate::kernels::native_bytes_mut(values))
    }

    /// [`read_column_range`](Self::read_column_range).
    fn read_range(&mut self, column: usize, rows: Range<u64>) -> Result<ArrayRef> {
        let (field, plans) = self.plan(column, rows.clone())?;
        let data_type = field.data_type().clone();
        let width = value_width(&data_type)?;
        let len = usize::try_from(rows.end - rows.start)
            .map_err(|_| Error::invalid("row range does not fit in memory"))?;
        // As a page decoder reserves for its pages: beyond that (Zstd, or a lie) the
        // buffer grows only as chunks really decode.
        let stored: u64 = plans
            .iter()
            .map(|(index, _)| self.meta.footer.columns[column].pages[*index].length)
            .sum();
        let reserve = output_reserve(checked_len(len, width)?, stored);
        let mut values = MutableBuffer::new(reserve);
        let mut validity = field
            .is_nullable()
            .then(|| BooleanBufferBuilder::new(len.min(reserve)));
        self.read_pages(
            column,
            &field,
            plans,
            &mut Sink::Append(&mut values),
            validity.as_mut(),
        )?;
        build_array(&data_type, values, len, validity)
    }

    /// Decodes the rows `plans` name of `column`, page after page, into `sink`.
    fn read_pages(
        &mut self,
        column: usize,
        field: &Field,
        plans: Vec<PageRows>,
        sink: &mut Sink,
        mut validity: Option<&mut BooleanBufferBuilder>,
    ) -> Result<()> {
        let width = value_width(field.data_type())?;
        if self.parallel && plans.len() > 1 && rayon::current_num_threads() > 1 {
            return self.read_pages_parallel(column, field, plans, sink, validity);
        }
        let mut buffer = Vec::new();
        let mut at = 0;
        for (index, local) in plans {
            let decompressor = self.page_decoder(column, index, field)?;
            let layout = self.meta.layouts[column][index]
                .get()
                .expect("every planned page's layout was parsed before");
            let page = &self.meta.footer.columns[column].pages[index];
            let bytes = local.len() * width;
            let (range, _) = page_read_range(page, layout, &local, self.verify_checksums);
            fetch(
                &mut self.source,
                page.offset + range.start as u64,
                range.len(),
                &mut buffer,
            )
            .and_then(|stored| {
                decode_page_rows(
                    page,
                    decompressor,
                    layout,
                    self.verify_checksums,
                    local,
                    field.data_type(),
                    stored,
                    sink.part(at, bytes),
                    validity.as_deref_mut(),
                )
            })
            .map_err(|e| in_page(e, field, index))?;
            at += bytes;
        }
        Ok(())
    }

    /// [`read_pages`](Self::read_pages) with the pages decoded on several threads: this
    /// thread reads each page's bytes in order (the source is one cursor) and queues the
    /// page; rayon tasks take queued pages and decode each (building its decompressor if
    /// none is built yet) into its own part of the output. While as many pages wait as
    /// rayon has threads, and once every page is read, this thread decodes queued pages
    /// too: a rayon thread may take a while to wake, and this one is ready.
    fn read_pages_parallel(
        &mut self,
        column: usize,
        field: &Field,
        plans: Vec<PageRows>,
        sink: &mut Sink,
        validity: Option<&mut BooleanBufferBuilder>,
    ) -> Result<()> {
        let width = value_width(field.data_type())?;
        let (source, meta, verify) = (&mut self.source, &self.meta, self.verify_checksums);
        // A source holding every byte the read needs lends them to the decoding threads;
        // any other has this thread read each page into a buffer.
        let lends = plans.iter().all(|(index, local)| {
            let page = &meta.footer.columns[column].pages[*index];
            let layout = meta.layouts[column][*index]
                .get()
                .expect("every planned page's layout was parsed before");
            let (range, _) = page_read_range(page, layout, local, verify);
            lent(&*source, page.offset + range.start as u64, range.len()).is_some()
                && (meta.decoders[column][*index].get(verify).is_some()
                    || page_buffers_span(page)
                        .is_some_and(|(at, len)| lent(&*source, at, len).is_some()))
        });
        let mut source = if lends {
            PageSource::Lend(&*source)
        } else {
            PageSource::Read(source)
        };
        let nullable = validity.is_some();
        // Per page, what its decoding made: its validity, and its values when appending.
        let done: Vec<Mutex<Option<PageDone>>> = plans.iter().map(|_| Mutex::new(None)).collect();
        let mut failed = None;
        // The output parts of a read into a caller's buffer, one per page.
        let mut parts: Vec<Option<&mut [u8]>> = match sink {
            Sink::Slice(values) => {
                let mut parts = Vec::with_capacity(plans.len());
                let mut rest: &mut [u8] = values;
                for (_, local) in &plans {
                    let (part, after) = std::mem::take(&mut rest).split_at_mut(local.len() * width);
                    parts.push(Some(part));
                    rest = after;
                }
                parts
            }
            Sink::Append(_) => plans.iter().map(|_| None).collect(),
        };
        let queue = Mutex::new(std::collections::VecDeque::<QueuedPage>::with_capacity(
            plans.len(),
        ));
        // Buffers of pages decoded, for the next pages' bytes: a buffer used before costs
        // no page faults.
        let free = Mutex::new(Vec::new());
        let threads = rayon::current_num_threads();
        // Pages read and not yet taken, at most: beyond that this thread decodes rather
        // than reads, which also bounds the bytes held to a few pages'.
        let ahead = threads;

        // Decodes one queued page, if any is left; whether it did.
        let decode_next = || {
            let Some(work) = lock(&queue).pop_front() else {
                return false;
            };
            let (at, index) = (work.at, work.index);
            let page = &meta.footer.columns[column].pages[index];
            let layout = meta.layouts[column][index]
                .get()
                .expect("every planned page's layout was parsed before");
            let run = || -> Result<(Option<MutableBuffer>, Option<BooleanBufferBuilder>)> {
                let decompressor = if let Some(built) = work.built {
                    built
                } else {
                    let made = decompressor_of(page, &work.buffers, verify)?;
                    Arc::clone(
                        meta.decoders[column][index]
                            .slot(verify)
                            .get_or_init(|| made),
                    )
                };
                let mut v = nullable.then(|| BooleanBufferBuilder::new(work.local.len()));
                let mut appended = None;
                let out = match work.part {
                    Some(part) => Sink::Slice(part),
                    None => Sink::Append(appended.insert(MutableBuffer::new(0))),
                };
                decode_page_rows(
                    page,
                    decompressor,
                    layout,
                    verify,
                    work.local,
                    field.data_type(),
                    &work.bytes,
                    out,
                    v.as_mut(),
                )?;
                Ok((appended, v))
            };
            let result = run().map_err(|e| in_page(e, field, index));
            *lock(&done[at]) = Some(result);
            if let Cow::Owned(bytes) = work.bytes {
                lock(&free).push(bytes);
            }
            true
        };
        // Rayon tasks decoding queued pages until none is left, at most one fewer running
        // than rayon has threads: this thread is the last, and a thread more than the
        // cores would leave a page half decoded while it waits for one. A task is asked
        // for with every page queued while fewer run: rayon may leave a sleeping thread
        // asleep for a while, thinking another about to take the task; one that starts
        // when enough run ends at once.
        let running = AtomicUsize::new(0);
        let most_running = threads - 1;
        let help = || {
            if running.fetch_add(1, Ordering::AcqRel) < most_running {
                while decode_next() {}
            }
            running.fetch_sub(1, Ordering::AcqRel);
        };
        rayon::in_place_scope(|scope| {
            let mut pages = plans.into_iter().zip(&mut parts).enumerate();
            loop {
                if lock(&queue).len() >= ahead {
                    decode_next();
                    continue;
                }
                let Some((at, ((index, local), part))) = pages.next() else {
                    break;
                };
                let page = &meta.footer.columns[column].pages[index];
                let layout = meta.layouts[column][index]
                    .get()
                    .expect("every planned page's layout was parsed before");
                let built = meta.decoders[column][index].get(verify).cloned();
                let read = (|| {
                    // A decompressor not built yet is built by the thread that decodes
                    // the page, from buffers read (not yet checked) here.
                    let buffers = match built {
                        Some(_) => Vec::new(),
                        None => source.page_buffers(page)?,
                    };
                    let (range, _) = page_read_range(page, layout, &local, verify);
                    let bytes = source.bytes(
                        page.offset + range.start as u64,
                        range.len(),
                        lock(&free).pop().unwrap_or_default(),
                    )?;
                    Ok((buffers, bytes))
                })();
                let (buffers, bytes) = match read {
                    Ok(read) => read,
                    Err(e) => {
                        failed = Some(in_page(e, field, index));
                        break;
                    }
                };
                lock(&queue).push_back(QueuedPage {
                    at,
                    index,
                    local,
                    built,
                    buffers,
                    bytes,
                    part: part.take(),
                });
                if running.load(Ordering::Acquire) < most_running {
                    scope.spawn(|_| help());
                }
            }
            // Pages no rayon thread has taken yet are decoded here.
            while decode_next() {}
        });
        if let Some(e) = failed {
            return Err(e);
        }
        let mut validity = validity;
        for page in done.into_iter().filter_map(|d| {
            d.into_inner()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        }) {
            let (values, v) = page?;
            if let (Sink::Append(out), Some(values)) = (&mut *sink, values) {
                out.extend_from_slice(values.as_slice());
            }
            if let (Some(validity), Some(mut v)) = (validity.as_deref_mut(), v) {
                validity.append_buffer(&v.finish());
            }
        }
        Ok(())
    }

    /// Builds the decompressor of every page rows `rows` of `column` overlap (their page
    /// buffers read now, so that [`ranges_for`](Self::ranges_for) no longer needs them).
    #[cfg_attr(not(feature = "object-store"), allow(dead_code))]
    pub(crate) fn build_decoders(&mut self, column: usize, rows: Range<u64>) -> Result<()> {
        let (field, plans) = self.plan(column, rows)?;
        for (index, _) in plans {
            self.page_decoder(column, index, &field)?;
        }
        Ok(())
    }

    /// The decompressor of page `index` of `column` (whose field is `field`): the one
    /// built before, or one built now and kept.
    fn page_decoder(
        &mut self,
        column: usize,
        index: usize,
        field: &Field,
    ) -> Result<Arc<dyn MiniBlockDecompressor>> {
        let cell = &self.meta.decoders[column][index];
        if let Some(d) = cell.get(self.verify_checksums) {
            return Ok(d.clone());
        }
        let page = &self.meta.footer.columns[column].pages[index];
        let built = page_decompressor(&mut self.source, page, self.verify_checksums)
            .map_err(|e| in_page(e, field, index))?;
        Ok(cell
            .slot(self.verify_checksums)
            .get_or_init(|| built)
            .clone())
    }

    /// The byte ranges of the file that reading rows `rows` of `column` reads: the page
    /// buffers of pages whose decoder is not built yet, then per page the whole page or
    /// the chunks the rows overlap (what [`read_column_range`](Self::read_column_range)
    /// reads, for a reader that fetches them first).
    #[cfg_attr(not(feature = "object-store"), allow(dead_code))]
    pub(crate) fn ranges_for(&self, column: usize, rows: Range<u64>) -> Result<Vec<Range<u64>>> {
        let (_, plans) = self.plan(column, rows)?;
        let mut ranges = Vec::new();
        for (index, local) in plans {
            let page = &self.meta.footer.columns[column].pages[index];
            let layout = self.meta.layouts[column][index]
                .get()
                .expect("every planned page's layout was parsed");
            let buffers: u64 = page.buffer_sizes.iter().sum();
            if buffers > 0
                && self.meta.decoders[column][index]
                    .get(self.verify_checksums)
                    .is_none()
            {
                let start = page.offset + page.length;
                ranges.push(start..start + buffers);
            }
            let (bytes, _) = page_read_range(page, layout, &local, self.verify_checksums);
            ranges.push(page.offset + bytes.start as u64..page.offset + bytes.end as u64);
        }
        Ok(ranges)
    }

    /// The pages rows `rows` of `column` overlap, each with its rows to read, every one's
    /// chunk table validated against the footer; and the column's field.
    fn plan(&self, column: usize, rows: Range<u64>) -> Result<(FieldRef, Vec<PageRows>)> {
        let field = self
            .meta
            .schema
            .fields()
            .get(column)
            .cloned()
            .ok_or_else(|| {
                Error::invalid(format!(
                    "column {column} asked of a file of {} columns",
                    self.meta.schema.fields().len()
                ))
            })?;
        if rows.start > rows.end || rows.end > self.meta.footer.num_rows {
            return Err(Error::invalid(format!(
                "rows {rows:?} are outside the file's {} rows",
                self.meta.footer.num_rows
            )));
        }
        let data_type = field.data_type().clone();
        let width = value_width(&data_type)?;
        let starts = &self.meta.page_starts[column];
        let first = starts
            .partition_point(|&s| s <= rows.start)
            .saturating_sub(1);
        let end = starts[..starts.len() - 1].partition_point(|&s| s < rows.end);
        // Validate every page's chunk table before allocating the output.
        let mut plans = Vec::new();
        for index in first..end.max(first) {
            let page = &self.meta.footer.columns[column].pages[index];
            let layout = self
                .layout(column, index, width)
                .map_err(|e| in_page(e, &field, index))?;
            if !field.is_nullable() && layout.chunks().iter().any(|c| c.has_validity) {
                // Decoding would drop the nulls the chunks record: a footer that says
                // otherwise is damaged, not a reason to alter the data.
                return Err(in_page(
                    Error::corrupt("the column is not nullable but its chunks carry nulls"),
                    &field,
                    index,
                ));
            }
            if !page.chunk_crc32c.is_empty() && page.chunk_crc32c.len() != layout.num_chunks() {
                return Err(in_page(
                    Error::corrupt(format!(
                        "{} chunk checksums for {} chunks",
                        page.chunk_crc32c.len(),
                        layout.num_chunks()
                    )),
                    &field,
                    index,
                ));
            }
            if layout.data_len() as u64 != page.length {
                return Err(in_page(
                    Error::corrupt(format!(
                        "chunk table describes {} bytes, the footer says {}",
                        layout.data_len(),
                        page.length
                    )),
                    &field,
                    index,
                ));
            }
            let page_start = starts[index];
            let lo = rows.start.max(page_start) - page_start;
            let hi = rows.end.min(starts[index + 1]) - page_start;
            if lo < hi {
                plans.push((index, lo as usize..hi as usize));
            }
        }
        Ok((field, plans))
    }

    /// Checks the whole file: every page's CRC32C, every chunk's CRC32C where the footer has
    /// them, and a full decode of every page (which checks every chunk against its table
    /// and encoding), whatever [`set_verify_checksums`](Self::set_verify_checksums) says.
    /// Returns what it checked; the first damage found is the error, naming its column,
    /// page and chunk.
    pub fn verify(&mut self) -> Result<VerifySummary> {
        self.verify_with(|_| {})
    }

    /// [`verify`](Self::verify), telling `progress` what has been checked after each
    /// page (for a progress bar over the pages' bytes, `summary.bytes`).
    pub fn verify_with(
        &mut self,
        mut progress: impl FnMut(&VerifySummary),
    ) -> Result<VerifySummary> {
        let mut summary = VerifySummary::default();
        let mut buffer = Vec::new();
        for column in 0..self.meta.footer.columns.len() {
            for index in 0..self.meta.footer.columns[column].pages.len() {
                self.verify_page(column, index, &mut buffer, &mut summary)?;
                progress(&summary);
            }
            summary.columns += 1;
        }
        Ok(summary)
    }

    /// Checks page `index` of `column` as [`verify`](Self::verify) does, reading it into
    /// `buffer`, and counts what it checked in `summary` (all but `columns`).
    pub(crate) fn verify_page(
        &mut self,
        column: usize,
        index: usize,
        buffer: &mut Vec<u8>,
        summary: &mut VerifySummary,
    ) -> Result<()> {
        let field = self.meta.schema.field(column).clone();
        let width = value_width(field.data_type())?;
        let page = &self.meta.footer.columns[column].pages[index];
        let layout = page_layout(page, width).map_err(|e| in_page(e, &field, index))?;
        let checked = (|| {
            if layout.data_len() as u64 != page.length {
                return Err(Error::corrupt(format!(
                    "chunk table describes {} bytes, the footer says {}",
                    layout.data_len(),
                    page.length
                )));
            }
            if !field.is_nullable() && layout.chunks().iter().any(|c| c.has_validity) {
                return Err(Error::corrupt(
                    "the column is not nullable but its chunks carry nulls",
                ));
            }
            buffer.resize(layout.data_len(), 0);
            read_exact_at(&mut self.source, page.offset, buffer)?;
            if crc32c(buffer) != page.crc32c {
                return Err(Error::corrupt(
                    "page checksum mismatch: the page's bytes are damaged",
                ));
            }
            if !page.chunk_crc32c.is_empty() {
                if page.chunk_crc32c.len() != layout.num_chunks() {
                    return Err(Error::corrupt(format!(
                        "{} chunk checksums for {} chunks",
                        page.chunk_crc32c.len(),
                        layout.num_chunks()
                    )));
                }
                for (c, (chunk, &crc)) in layout.chunks().iter().zip(&page.chunk_crc32c).enumerate()
                {
                    let bytes = &buffer[chunk.offset..chunk.offset + chunk.num_bytes];
                    if crc32c(bytes) != crc {
                        return Err(Error::corrupt(format!(
                            "chunk {c} checksum mismatch: the chunk's bytes are damaged"
                        )));
                    }
                }
                summary.chunk_checksums += layout.num_chunks() as u64;
            }
            let encoding = page
                .encoding
                .as_ref()
                .ok_or_else(|| Error::corrupt("page has no encoding"))?;
            let chunks = layout.num_chunks() as u64;
            let page_buffers = read_page_buffers(&mut self.source, page, true)?;
            let slices: Vec<&[u8]> = page_buffers.iter().map(Vec::as_slice).collect();
            let decoder =
                PageDecoder::with_layout(decompressor_for(encoding, &slices)?, layout, buffer)?
                    .with_data_type(field.data_type())?;
            // Decoded a slice of whole chunks at a time, so a page of long
            // runs (a few bytes standing for gigabytes) is checked in the memory
            // of a slice, not of the page.
            let mut actual = PageStats::default();
            let mut first = 0;
            while first < decoder.num_chunks() {
                let start = decoder.chunk_rows(first)?.start;
                let mut end = decoder.chunk_rows(first)?.end;
                let mut next = first + 1;
                while next < decoder.num_chunks() {
                    let rows = decoder.chunk_rows(next)?;
                    if (rows.end - start).saturating_mul(width) > VERIFY_SLICE_BYTES {
                        break;
                    }
                    end = rows.end;
                    next += 1;
                }
                let array = decoder.decode_range(start..end)?;
                actual.merge(&PageStats::of(array.as_ref()));
                first = next;
            }
            if let Some(recorded) = &page.statistics {
                // Pruning and statistics-only answers trust these: a footer whose
                // figures are well formed but untrue is caught only here.
                let recorded = PageStats::from_proto(recorded, field.data_type(), page.num_values)?;
                if recorded != actual {
                    return Err(Error::corrupt(format!(
                        "page statistics disagree with the page's values: the footer records {recorded}, the values have {actual}"
                    )));
                }
                summary.page_stats += 1;
            }
            summary.nulls += actual.null_count;
            summary.chunks += chunks;
            Ok(())
        })();
        checked.map_err(|e| in_page(e, &field, index))?;
        summary.pages += 1;
        summary.bytes += page.length;
        Ok(())
    }

    /// The byte ranges [`verify_page`](Self::verify_page) reads of page `index` of
    /// `column`: its data and its buffers.
    #[cfg(feature = "object-store")]
    pub(crate) fn page_bytes(&self, column: usize, index: usize) -> Range<u64> {
        let page = &self.meta.footer.columns[column].pages[index];
        let buffers = page
            .buffer_sizes
            .iter()
            .fold(0u64, |a, &b| a.saturating_add(b));
        page.offset
            ..page
                .offset
                .saturating_add(page.length)
                .saturating_add(buffers)
    }

    /// Pages of each column.
    #[cfg(feature = "object-store")]
    pub(crate) fn page_counts(&self) -> Vec<usize> {
        self.meta
            .footer
            .columns
            .iter()
            .map(|c| c.pages.len())
            .collect()
    }

    /// The source, for a reader that fills it before each read (`ObjectStoreReader`).
    #[cfg(feature = "object-store")]
    pub(crate) fn source_mut(&mut self) -> &mut R {
        &mut self.source
    }

    /// Gives the source back.
    pub fn into_inner(self) -> R {
        self.source
    }
}

/// What [`FileReader::verify`] checked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VerifySummary {
    /// Columns checked.
    pub columns: u64,
    /// Pages whose CRC32C matched and which decoded.
    pub pages: u64,
    /// Chunks decoded.
    pub chunks: u64,
    /// Chunks whose own CRC32C matched (pages written before chunk checksums have none).
    pub chunk_checksums: u64,
    /// Page data bytes checked.
    pub bytes: u64,
    /// Nulls found.
    pub nulls: u64,
    /// Pages whose recorded statistics equal those of their decoded values (pages written
    /// before statistics have none).
    pub page_stats: u64,
}

/// Checks every count and offset in the footer; returns the schema and each column's page
/// start rows.
fn validate_footer(footer: &pb::Footer, footer_start: u64) -> Result<(SchemaRef, Vec<Vec<u64>>)> {
    // The writer refuses a schema of no column, so a footer of none is damage, and every
    // reader of the file may then take column 0 to exist.
    if footer.columns.is_empty() {
        return Err(Error::corrupt("the footer lists no column"));
    }
    let mut fields = Vec::with_capacity(footer.columns.len());
    let mut page_starts = Vec::with_capacity(footer.columns.len());
    for (c, column) in footer.columns.iter().enumerate() {
        let data_type = column_type(c, column)?;
        let mut starts = Vec::with_capacity(column.pages.len() + 1);
        let mut row = 0u64;
        for (p, page) in column.pages.iter().enumerate() {
            if page.buffer_sizes.len() > MAX_PAGE_BUFFERS
                || page.buffer_crc32c.len() != page.buffer_sizes.len()
            {
                return Err(Error::corrupt(format!(
                    "column {:?} page {p}: {} page buffers with {} checksums (at most {MAX_PAGE_BUFFERS}, one checksum each)",
                    column.name,
                    page.buffer_sizes.len(),
                    page.buffer_crc32c.len()
                )));
            }
            let end = page
                .buffer_sizes
                .iter()
                .try_fold(page.length, |end, &size| end.checked_add(size))
                .and_then(|len| page.offset.checked_add(len));
            if page.offset < HEADER_LEN || end.is_none_or(|e| e > footer_start) {
                return Err(Error::corrupt(format!(
                    "column {:?} page {p}: bytes {}+{} and buffers {:?} lie outside the file's data",
                    column.name, page.offset, page.length, page.buffer_sizes
                )));
            }
            if page.num_values == 0 {
                return Err(Error::corrupt(format!(
                    "column {:?} page {p} is empty",
                    column.name
                )));
            }
            starts.push(row);
            row = row.checked_add(page.num_values).ok_or_else(|| {
                Error::corrupt(format!("column {:?}: row count overflows", column.name))
            })?;
        }
        starts.push(row);
        if row != footer.num_rows {
            return Err(Error::corrupt(format!(
                "column {:?} has {row} rows in its pages, the file says {}",
                column.name, footer.num_rows
            )));
        }
        fields.push(
            Field::new(column.name.clone(), data_type, column.nullable).with_metadata(
                column
                    .metadata
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            ),
        );
        page_starts.push(starts);
    }
    // Duplicate names would make lookups ambiguous. One pass with a set: a footer of many
    // columns costs time in proportion to its size.
    let mut seen = std::collections::HashSet::with_capacity(fields.len());
    for f in &fields {
        if !seen.insert(f.name().as_str()) {
            return Err(Error::corrupt(format!(
                "column name {:?} appears twice",
                f.name()
            )));
        }
    }
    let metadata = footer
        .metadata
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let schema = Schema::new_with_metadata(fields, metadata);
    Ok((Arc::new(schema), page_starts))
}

/// A footer page's validated chunk table, checked against its encoding (whose width must
/// be the column's, `width` bytes).
pub fn page_layout(page: &pb::Page, width: usize) -> Result<PageLayout> {
    #[cfg(test)]
    tests::PARSES.with(|n| n.set(n.get() + 1));
    let encoding = page
        .encoding
        .as_ref()
        .ok_or_else(|| Error::corrupt("page has no encoding"))?;
    let decompressor = unbound_decompressor(encoding)?;
    if decompressor.value_width() != width {
        return Err(Error::corrupt(format!(
            "page encodes {}-byte values, the column has {width}-byte values",
            decompressor.value_width()
        )));
    }
    if decompressor.page_buffer_count() != page.buffer_sizes.len() {
        return Err(Error::corrupt(format!(
            "the page's encoding reads {} page buffers, the footer lists {}",
            decompressor.page_buffer_count(),
            page.buffer_sizes.len()
        )));
    }
    let format = ChunkTableFormat::from_entry_bytes(page.chunk_entry_bytes)?;
    PageLayout::parse(
        page.num_values,
        &page.chunk_table,
        format,
        decompressor.as_ref(),
    )
}

/// Decodes rows `local` of `page` from `buffer`, the bytes [`page_read_range`] names for
/// them (the whole page, or the chunks they overlap), checking their checksums first.
#[allow(clippy::too_many_arguments)]
fn decode_page_rows(
    page: &pb::Page,
    decompressor: Arc<dyn MiniBlockDecompressor>,
    layout: &PageLayout,
    verify_checksums: bool,
    local: Range<usize>,
    data_type: &DataType,
    buffer: &[u8],
    out: Sink,
    validity: Option<&mut BooleanBufferBuilder>,
) -> Result<()> {
    let (bytes, whole_page) = page_read_range(page, layout, &local, verify_checksums);
    if buffer.len() != bytes.len() {
        return Err(Error::invalid(format!(
            "{} bytes given for a read of {}",
            buffer.len(),
            bytes.len()
        )));
    }
    if whole_page {
        if verify_checksums && crc32c(buffer) != page.crc32c {
            return Err(Error::corrupt(
                "page checksum mismatch: the page's bytes are damaged",
            ));
        }
        let decoder =
            PageDecoder::with_layout(decompressor, layout, buffer)?.with_data_type(data_type)?;
        return out.decode(&decoder, local, validity);
    }
    let chunks = layout.chunks_for_rows(local.clone());
    if verify_checksums {
        for (index, chunk) in layout.chunks()[chunks.clone()].iter().enumerate() {
            let at = chunk.offset - bytes.start..chunk.offset - bytes.start + chunk.num_bytes;
            if crc32c(&buffer[at]) != page.chunk_crc32c[chunks.start + index] {
                return Err(Error::corrupt(format!(
                    "chunk {} checksum mismatch: the chunk's bytes are damaged",
                    chunks.start + index
                )));
            }
        }
    }
    let (first_row, sub_layout) = layout.sub_layout(chunks);
    let decoder =
        PageDecoder::with_layout(decompressor, sub_layout, buffer)?.with_data_type(data_type)?;
    out.decode(
        &decoder,
        local.start - first_row..local.end - first_row,
        validity,
    )
}

/// What a page's task in [`FileReader::read_pages_parallel`] made: the page's validity,
/// and its values when the read appends them.
type PageDone = Result<(Option<MutableBuffer>, Option<BooleanBufferBuilder>)>;

/// `mutex` locked: a task that panicked while holding it leaves nothing half changed
/// that a reader would misread (its panic ends the read anyway).
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A page read and queued in [`FileReader::read_pages_parallel`], for whichever thread
/// takes it first: its place in the read, its index and rows, its decompressor if built
/// before (else its page buffers, to build one), its bytes and its part of the output.
struct QueuedPage<'a, 's> {
    at: usize,
    index: usize,
    local: Range<usize>,
    built: Option<Arc<dyn MiniBlockDecompressor>>,
    buffers: Vec<Cow<'s, [u8]>>,
    bytes: Cow<'s, [u8]>,
    part: Option<&'a mut [u8]>,
}

/// Where [`FileReader::read_pages_parallel`] takes pages' bytes from: lent by a source
/// holding every byte the read needs, or read from one into buffers.
enum PageSource<'s, R> {
    Lend(&'s R),
    Read(&'s mut R),
}

impl<'s, R: Source> PageSource<'s, R> {
    /// The `len` bytes at `offset`, lent, or read into `buffer`.
    fn bytes(&mut self, offset: u64, len: usize, mut buffer: Vec<u8>) -> Result<Cow<'s, [u8]>> {
        match self {
            Self::Lend(source) => lent(*source, offset, len)
                .map(Cow::Borrowed)
                .ok_or_else(refused),
            Self::Read(source) => {
                read_into(*source, offset, len, &mut buffer)?;
                Ok(Cow::Owned(buffer))
            }
        }
    }

    /// `page`'s page buffers, lent or read.
    fn page_buffers(&mut self, page: &pb::Page) -> Result<Vec<Cow<'s, [u8]>>> {
        match self {
            Self::Lend(source) => lend_page_buffers(*source, page)
                .map(|lent| lent.into_iter().map(Cow::Borrowed).collect())
                .ok_or_else(refused),
            Self::Read(source) => Ok(read_page_buffers(*source, page, false)?
                .into_iter()
                .map(Cow::Owned)
                .collect()),
        }
    }
}

/// Where a read's values go: appended to a buffer that becomes an Arrow array, or into
/// a caller's buffer of exactly their size.
enum Sink<'a> {
    Append(&'a mut MutableBuffer),
    Slice(&'a mut [u8]),
}

impl Sink<'_> {
    /// Where the `len` bytes of one page's rows go, `at` bytes into the read.
    fn part(&mut self, at: usize, len: usize) -> Sink<'_> {
        match self {
            Sink::Append(values) => Sink::Append(values),
            Sink::Slice(values) => Sink::Slice(&mut values[at..at + len]),
        }
    }

    /// Decodes `rows` of a page into this part.
    fn decode(
        self,
        decoder: &PageDecoder,
        rows: Range<usize>,
        validity: Option<&mut BooleanBufferBuilder>,
    ) -> Result<()> {
        match self {
            Sink::Append(values) => decoder.decode_append(rows, values, validity),
            Sink::Slice(values) => decoder.decode_into(rows, values, validity),
        }
    }
}

/// The `len` bytes at `offset`, if `source` lends them: exactly `len` of them (a source
/// lending another length is read instead; the decoders rely on the length).
fn lent<R: Source + ?Sized>(source: &R, offset: u64, len: usize) -> Option<&[u8]> {
    source.lend(offset, len).filter(|bytes| bytes.len() == len)
}

/// The error of a source that lent bytes and, asked again, did not.
fn refused() -> Error {
    Error::invalid("the source lent these bytes once and then refused them")
}

/// The `len` bytes at `offset` of `source`: lent by a source that holds them in memory,
/// or read into `buffer`.
fn fetch<'a, R: Source>(
    source: &'a mut R,
    offset: u64,
    len: usize,
    buffer: &'a mut Vec<u8>,
) -> Result<&'a [u8]> {
    // Asked twice: returning the first answer's borrow would keep `source` borrowed on
    // the path that reads (a limit of today's borrow checker).
    if lent(&*source, offset, len).is_some() {
        let source: &'a R = source;
        return lent(source, offset, len).ok_or_else(refused);
    }
    read_into(source, offset, len, buffer)
}

/// The `len` bytes at `offset` of `source`, read into `buffer`.
fn read_into<'a, R: Read + Seek>(
    source: &'a mut R,
    offset: u64,
    len: usize,
    buffer: &'a mut Vec<u8>,
) -> Result<&'a [u8]> {
    source
        .seek(SeekFrom::Start(offset))
        .map_err(|e| io_error(e, "seeking"))?;
    buffer.clear();
    buffer.reserve_exact(len);
    // `take` + `read_to_end` fill the buffer's spare room without zeroing it first where
    // the source can (files, cursors, slices): a page's bytes are written once, not twice.
    let got = source
        .by_ref()
        .take(len as u64)
        .read_to_end(buffer)
        .map_err(|e| io_error(e, "reading"))?;
    if got != len {
        return Err(Error::truncated(format!(
            "file ends before the {len} bytes at offset {offset}"
        )));
    }
    Ok(buffer)
}

/// A page of a read, by index, and the rows of it to read.
type PageRows = (usize, Range<usize>);

/// An empty cell per page of every column.
fn page_cells<T>(footer: &pb::Footer) -> Vec<Vec<OnceLock<T>>> {
    footer
        .columns
        .iter()
        .map(|c| c.pages.iter().map(|_| OnceLock::new()).collect())
        .collect()
}

/// The bytes of `page`'s data that reading its rows `local` reads, and whether they are
/// the whole page (checked against the page's CRC32C): all rows, or a page written
/// without chunk checksums when checksums are verified (so that the page CRC32C covers
/// what is returned); otherwise the chunks the rows overlap, each checked on its own.
fn page_read_range(
    page: &pb::Page,
    layout: &PageLayout,
    local: &Range<usize>,
    verify_checksums: bool,
) -> (Range<usize>, bool) {
    let all_rows = local.start == 0 && local.end == layout.num_values();
    if all_rows || (verify_checksums && page.chunk_crc32c.is_empty()) {
        (0..layout.data_len(), true)
    } else {
        (
            layout.byte_range(layout.chunks_for_rows(local.clone())),
            false,
        )
    }
}

/// The decompressor of `page`: its message, with its page buffers read from `source`.
fn page_decompressor<R: Source>(
    source: &mut R,
    page: &pb::Page,
    verify_checksums: bool,
) -> Result<Arc<dyn MiniBlockDecompressor>> {
    #[cfg(test)]
    tests::BUILDS.with(|n| n.set(n.get() + 1));
    if let Some(lent) = lend_page_buffers(&*source, page) {
        return decompressor_of(page, &lent, verify_checksums);
    }
    let page_buffers = read_page_buffers(source, page, false)?;
    decompressor_of(page, &page_buffers, verify_checksums)
}

/// `page`'s page buffers, if `source` lends them all (their sizes were checked against
/// the file's when the footer was read).
fn lend_page_buffers<'s, R: Source>(source: &'s R, page: &pb::Page) -> Option<Vec<&'s [u8]>> {
    let (at, total) = page_buffers_span(page)?;
    let all = lent(source, at, total)?;
    let mut lent = Vec::with_capacity(page.buffer_sizes.len());
    let mut rest = all;
    for &size in &page.buffer_sizes {
        // Each size is at most `total`, the length of `all`, and so fits in a usize.
        let (buffer, after) = rest.split_at(size as usize);
        lent.push(buffer);
        rest = after;
    }
    Some(lent)
}

/// Where `page`'s page buffers lie, back to back after its data: their offset and total
/// length (`None` where that does not fit, which a checked footer rules out).
fn page_buffers_span(page: &pb::Page) -> Option<(u64, usize)> {
    let total = page
        .buffer_sizes
        .iter()
        .try_fold(0u64, |sum, &size| sum.checked_add(size))?;
    Some((
        page.offset.checked_add(page.length)?,
        usize::try_from(total).ok()?,
    ))
}

/// The decompressor of `page` from its buffers (as read), each checked against its
/// CRC32C first when `verify_checksums`.
fn decompressor_of<B: AsRef<[u8]>>(
    page: &pb::Page,
    buffers: &[B],
    verify_checksums: bool,
) -> Result<Arc<dyn MiniBlockDecompressor>> {
    let encoding: &ArrayEncoding = page
        .encoding
        .as_ref()
        .ok_or_else(|| Error::corrupt("page has no encoding"))?;
    if verify_checksums {
        for (b, (buffer, &crc)) in buffers.iter().zip(&page.buffer_crc32c).enumerate() {
            if crc32c(buffer.as_ref()) != crc {
                return Err(Error::corrupt(format!(
                    "page buffer {b} checksum mismatch: its bytes are damaged"
                )));
            }
        }
    }
    let slices: Vec<&[u8]> = buffers.iter().map(AsRef::as_ref).collect();
    Ok(decompressor_for(encoding, &slices)?.into())
}

/// Reads the buffers stored after `page`'s data (sizes checked against the file when the
/// footer was read), each checked against its CRC32C when `verify_checksums`.
fn read_page_buffers<R: Read + Seek>(
    source: &mut R,
    page: &pb::Page,
    verify_checksums: bool,
) -> Result<Vec<Vec<u8>>> {
    let mut offset = page.offset + page.length;
    let mut buffers = Vec::with_capacity(page.buffer_sizes.len());
    for (b, (&size, &crc)) in page
        .buffer_sizes
        .iter()
        .zip(&page.buffer_crc32c)
        .enumerate()
    {
        let len = usize::try_from(size)
            .map_err(|_| Error::corrupt(format!("page buffer of {size} bytes")))?;
        let mut buffer = vec![0; len];
        read_exact_at(source, offset, &mut buffer)?;
        if verify_checksums && crc32c(&buffer) != crc {
            return Err(Error::corrupt(format!(
                "page buffer {b} checksum mismatch: its bytes are damaged"
            )));
        }
        buffers.push(buffer);
        offset += size;
    }
    Ok(buffers)
}

fn in_page(e: Error, field: &Field, page: usize) -> Error {
    let context = format!("column {:?} page {page}", field.name());
    match e {
        Error::Corrupt { message } => Error::corrupt(format!("{context}: {message}")),
        Error::Truncated { message } => Error::truncated(format!("{context}: {message}")),
        Error::Unsupported { message } => Error::unsupported(format!("{context}: {message}")),
        Error::Io {
            context: doing,
            source,
        } => Error::Io {
            context: format!("{doing} {context}"),
            source,
        },
        other => other,
    }
}

fn read_exact_at<R: Read + Seek>(source: &mut R, offset: u64, buf: &mut [u8]) -> Result<()> {
    source
        .seek(SeekFrom::Start(offset))
        .map_err(|e| io_error(e, "seeking"))?;
    source.read_exact(buf).map_err(|e| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            Error::truncated(format!(
                "file ends before the {} bytes at offset {offset}",
                buf.len()
            ))
        } else {
            io_error(e, "reading")
        }
    })
}

fn read_at_most<R: Read + Seek>(source: &mut R, offset: u64, buf: &mut [u8]) -> Result<usize> {
    source
        .seek(SeekFrom::Start(offset))
        .map_err(|e| io_error(e, "seeking"))?;
    let mut got = 0;
    while got < buf.len() {
        match source.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io_error(e, "reading the header")),
        }
    }
    Ok(got)
}

pub(super) fn io_error(source: std::io::Error, context: &str) -> Error {
    Error::Io {
        context: context.to_owned(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::io::Cursor;
    use std::sync::Arc;

    use arrow_array::{Array, Float32Array, RecordBatch};

    use super::*;
    use crate::file::{FileWriter, WriteOptions};
    use crate::Encoding;

    thread_local! {
        /// Chunk tables parsed on this thread.
        pub(super) static PARSES: Cell<usize> = const { Cell::new(0) };
        /// Page decompressors built on this thread.
        pub(super) static BUILDS: Cell<usize> = const { Cell::new(0) };
    }

    #[test]
    fn each_chunk_table_and_decoder_is_built_once_however_many_reads() {
        let values: Vec<f32> = (0..10_000).map(|i| (i as f32 * 0.01).sin()).collect();
        let array = Arc::new(Float32Array::from(values.clone()));
        let batch = RecordBatch::try_from_iter([("x", array as Arc<dyn Array>)]).unwrap();
        let mut bytes = Vec::new();
        let options = WriteOptions {
            page_values: Some(4096),
            ..WriteOptions::default()
        }
        .with_strategy(Encoding::DictZstd);
        let mut writer = FileWriter::try_new(&mut bytes, &batch.schema(), options).unwrap();
        writer.write_batch(&batch).unwrap();
        writer.finish().unwrap();
        let mut reader = FileReader::open(Cursor::new(bytes)).unwrap();
        let before = PARSES.with(Cell::get);
        let built = BUILDS.with(Cell::get);
        // Ranges inside one page, across two, whole pages, the whole column, repeatedly.
        for _ in 0..3 {
            for rows in [10..20, 4000..4200, 4096..8192, 0..10_000, 9_999..10_000] {
                let got = reader.read_column_range(0, rows.clone()).unwrap();
                let got = got.as_any().downcast_ref::<Float32Array>().unwrap();
                let want = &values[rows.start as usize..rows.end as usize];
                assert!(got
                    .values()
                    .iter()
                    .zip(want)
                    .all(|(a, b)| a.to_bits() == b.to_bits()));
                assert_eq!(got.len(), want.len());
            }
        }
        // three pages, three parses, three decoders (each with its dictionary read once)
        assert_eq!(PARSES.with(Cell::get) - before, 3);
        assert_eq!(BUILDS.with(Cell::get) - built, 3);
    }
}
