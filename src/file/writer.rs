//! Arrow record batches -> a column file.

use std::collections::VecDeque;
use std::io::Write;

use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, Schema};
use prost::Message;

use rayon::prelude::*;

use super::stats::PageStats;
use super::types::set_column_type;
use super::{DEFAULT_PAGE_BYTES, FORMAT_VERSION, MAGIC};
use crate::encodings::{EncoderOptions, Strategy};
use crate::error::{Error, Result};
use crate::kernels::crc::crc32c;
use crate::page::{value_width, ChunkTableFormat, EncodedPage, PageEncoder};

/// Pages that are encoded together (in parallel when allowed) before being written.
const FLUSH_PAGES: usize = 16;
use crate::proto::file as pb;

/// How a file is written.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WriteOptions {
    /// How each page's encoding is chosen: `auto` (the default) or a fixed encoding.
    pub strategy: Strategy,
    /// Chunk size and Zstd level.
    pub encoder: EncoderOptions,
    /// Values per page; `None` for about 1 MiB of values (262,144 f32 or 131,072 f64).
    pub page_values: Option<usize>,
    /// Encode pages on all cores (rayon). The bytes written are the same either way.
    pub parallel: bool,
}

impl Default for WriteOptions {
    fn default() -> Self {
        Self {
            strategy: Strategy::default(),
            encoder: EncoderOptions::default(),
            page_values: None,
            parallel: true,
        }
    }
}

impl WriteOptions {
    /// These options with `strategy` (an [`Encoding`](crate::Encoding) or `auto`).
    #[must_use]
    pub fn with_strategy(mut self, strategy: impl Into<Strategy>) -> Self {
        self.strategy = strategy.into();
        self
    }
}

/// One column being written: rows not yet in a page (the caller's arrays, not copied),
/// and the pages written so far.
#[derive(Debug)]
struct ColumnWriter {
    /// The footer's column message, pages not yet filled in.
    described: pb::Column,
    name: String,
    data_type: DataType,
    nullable: bool,
    page_values: usize,
    encoder: PageEncoder,
    pending: VecDeque<ArrayRef>,
    pending_rows: usize,
    pages: Vec<pb::Page>,
}

/// Writes a column file to any [`Write`]: pages as they fill, the footer on
/// [`finish`](Self::finish).
#[derive(Debug)]
pub struct FileWriter<W: Write> {
    sink: W,
    /// The schema's metadata, for the footer.
    metadata: std::collections::HashMap<String, String>,
    parallel: bool,
    offset: u64,
    num_rows: u64,
    columns: Vec<ColumnWriter>,
}

impl<W: Write> FileWriter<W> {
    /// Starts a file for `schema`, whose fields must all be fixed-width types.
    pub fn try_new(mut sink: W, schema: &Schema, options: WriteOptions) -> Result<Self> {
        if schema.fields().is_empty() {
            return Err(Error::invalid("a file needs at least one column"));
        }
        let mut names = std::collections::HashSet::with_capacity(schema.fields().len());
        if let Some(twice) = schema.fields().iter().find(|f| !names.insert(f.name())) {
            // A reader could not tell the columns apart, and refuses such a file.
            return Err(Error::invalid(format!(
                "column name {:?} appears twice",
                twice.name()
            )));
        }
        let mut columns = Vec::with_capacity(schema.fields().len());
        for field in schema.fields() {
            let mut described = pb::Column {
                name: field.name().clone(),
                metadata: field.metadata().clone().into_iter().collect(),
                ..pb::Column::default()
            };
            set_column_type(&mut described, field.data_type())?;
            let width = value_width(field.data_type())?;
            let page_values = options.page_values.unwrap_or(DEFAULT_PAGE_BYTES / width);
            if page_values == 0 {
                return Err(Error::invalid("page_values must be at least 1"));
            }
            columns.push(ColumnWriter {
                described,
                name: field.name().clone(),
                data_type: field.data_type().clone(),
                nullable: field.is_nullable(),
                page_values,
                encoder: PageEncoder::for_strategy(options.strategy, width, &options.encoder)?,
                pending: VecDeque::new(),
                pending_rows: 0,
                pages: Vec::new(),
            });
        }
        let mut header = MAGIC.to_vec();
        header.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        sink.write_all(&header)
            .map_err(|e| io_error(e, "writing the file header"))?;
        Ok(Self {
            sink,
            metadata: schema.metadata().clone(),
            parallel: options.parallel,
            offset: header.len() as u64,
            num_rows: 0,
            columns,
        })
    }

    /// Appends a batch; its schema must match the file's (names and types, in order).
    pub fn write_batch(&mut self, batch: &RecordBatch) -> Result<()> {
        self.check_schema(batch)?;
        for (column, array) in self.columns.iter_mut().zip(batch.columns()) {
            column.append(array)?;
        }
        self.num_rows += batch.num_rows() as u64;
        self.flush(false)
    }

    /// Writes what is pending and the footer, and returns the sink.
    pub fn finish(mut self) -> Result<W> {
        self.flush(true)?;
        let footer = pb::Footer {
            format_version: FORMAT_VERSION,
            num_rows: self.num_rows,
            metadata: std::mem::take(&mut self.metadata),
            columns: self
                .columns
                .iter_mut()
                .map(|c| pb::Column {
                    nullable: c.nullable,
                    pages: std::mem::take(&mut c.pages),
                    ..c.described.clone()
                })
                .collect(),
        };
        let bytes = footer.encode_to_vec();
        let len = u32::try_from(bytes.len()).map_err(|_| {
            Error::invalid(format!("footer of {} bytes exceeds 4 GiB", bytes.len()))
        })?;
        let mut trailer = bytes;
        trailer.extend_from_slice(&len.to_le_bytes());
        trailer.extend_from_slice(&crc32c(&trailer[..len as usize]).to_le_bytes());
        trailer.extend_from_slice(&MAGIC);
        self.sink
            .write_all(&trailer)
            .and_then(|()| self.sink.flush())
            .map_err(|e| io_error(e, "writing the footer"))?;
        Ok(self.sink)
    }

    fn check_schema(&self, batch: &RecordBatch) -> Result<()> {
        let fields = batch.schema_ref().fields();
        let same = fields.len() == self.columns.len()
            && fields
                .iter()
                .zip(&self.columns)
                .all(|(f, c)| f.name() == &c.name && f.data_type() == &c.data_type);
        if !same {
            let names: Vec<String> = fields
                .iter()
                .map(|f| format!("{}: {}", f.name(), f.data_type()))
                .collect();
            let expected: Vec<String> = self
                .columns
                .iter()
                .map(|c| format!("{}: {}", c.name, c.data_type))
                .collect();
            return Err(Error::invalid(format!(
                "batch columns [{}] do not match the file's [{}]",
                names.join(", "),
                expected.join(", ")
            )));
        }
        Ok(())
    }

    /// Encodes and writes pages [`FLUSH_PAGES`] at a time (all that remain when `last`), so
    /// that a round can be encoded in parallel while memory stays bounded. The rule does
    /// not depend on the thread count, so parallel and serial writers write the same bytes.
    fn flush(&mut self, last: bool) -> Result<()> {
        loop {
            let ready: usize = self.columns.iter().map(|c| c.ready_pages(last)).sum();
            if ready == 0 || (!last && ready < FLUSH_PAGES) {
                return Ok(());
            }
            // This round: up to FLUSH_PAGES pages, taken from the columns in order.
            let mut budget = FLUSH_PAGES;
            let mut inputs: Vec<Vec<ArrayRef>> = Vec::with_capacity(self.columns.len());
            for column in &mut self.columns {
                let take = column.ready_pages(last).min(budget);
                budget -= take;
                inputs.push(
                    (0..take)
                        .map(|_| column.next_page())
                        .collect::<Result<_>>()?,
                );
            }
            // Each page with the CRC32C of each chunk and of its whole data, and its
            // statistics.
            #[allow(clippy::items_after_statements)]
            type Checked = (EncodedPage, (Vec<u32>, u32), PageStats);
            let encode_one = |column: &ColumnWriter, page: &ArrayRef| {
                column.encoder.encode(page.as_ref()).map(|p| {
                    let crcs = p.checksums();
                    (p, crcs, PageStats::of(page.as_ref()))
                })
            };
            let encode =
                |(column, pages): (&ColumnWriter, &Vec<ArrayRef>)| -> Result<Vec<Checked>> {
                    if self.parallel {
                        pages.par_iter().map(|p| encode_one(column, p)).collect()
                    } else {
                        pages.iter().map(|p| encode_one(column, p)).collect()
                    }
                };
            let encoded: Vec<Vec<Checked>> = if self.parallel {
                self.columns
                    .par_iter()
                    .zip(&inputs)
                    .map(encode)
                    .collect::<Result<_>>()?
            } else {
                self.columns
                    .iter()
                    .zip(&inputs)
                    .map(encode)
                    .collect::<Result<_>>()?
            };
            for (column, pages) in self.columns.iter_mut().zip(encoded) {
                for (page, (chunk_crc32c, page_crc32c), stats) in pages {
                    let length = page.data.len() as u64;
                    self.sink.write_all(&page.data).map_err(|e| {
                        io_error(e, &format!("writing a page of column {:?}", column.name))
                    })?;
                    for buffer in &page.buffers {
                        self.sink.write_all(buffer).map_err(|e| {
                            io_error(e, &format!("writing a page of column {:?}", column.name))
                        })?;
                    }
                    column.pages.push(pb::Page {
                        offset: self.offset,
                        length,
                        num_values: page.num_values,
                        encoding: Some(page.encoding.clone()),
                        chunk_table: page.chunk_table(),
                        crc32c: page_crc32c,
                        chunk_entry_bytes: match page.table_format() {
                            ChunkTableFormat::Narrow => 0,
                            format @ ChunkTableFormat::Wide => format.entry_bytes() as u32,
                        },
                        chunk_crc32c,
                        buffer_sizes: page.buffers.iter().map(|b| b.len() as u64).collect(),
                        buffer_crc32c: page.buffers.iter().map(|b| crc32c(b)).collect(),
                        statistics: Some(stats.to_proto(&column.data_type)),
                    });
                    self.offset +=
                        length + page.buffers.iter().map(|b| b.len() as u64).sum::<u64>();
                }
            }
        }
    }
}

impl ColumnWriter {
    fn append(&mut self, array: &ArrayRef) -> Result<()> {
        if !self.nullable && array.null_count() > 0 {
            return Err(Error::invalid(format!(
                "column {:?} is not nullable but the batch has {} nulls",
                self.name,
                array.null_count()
            )));
        }
        if !array.is_empty() {
            self.pending_rows += array.len();
            self.pending.push_back(array.clone());
        }
        Ok(())
    }

    /// Pages ready to encode: the full ones (and the partial last one when `last`).
    fn ready_pages(&self, last: bool) -> usize {
        if last {
            self.pending_rows.div_ceil(self.page_values)
        } else {
            self.pending_rows / self.page_values
        }
    }

    /// The next page's rows: a zero-copy slice when one pending array holds them all, else
    /// the pieces concatenated.
    fn next_page(&mut self) -> Result<ArrayRef> {
        let rows = self.page_values.min(self.pending_rows);
        let mut parts: Vec<ArrayRef> = Vec::new();
        let mut need = rows;
        while need > 0 {
            let Some(front) = self.pending.pop_front() else {
                return Err(Error::invalid("pending rows miscounted"));
            };
            if front.len() <= need {
                need -= front.len();
                parts.push(front);
            } else {
                parts.push(front.slice(0, need));
                self.pending
                    .push_front(front.slice(need, front.len() - need));
                need = 0;
            }
        }
        self.pending_rows -= rows;
        if parts.len() == 1 {
            return Ok(parts.swap_remove(0));
        }
        let refs: Vec<&dyn Array> = parts.iter().map(AsRef::as_ref).collect();
        arrow_select::concat::concat(&refs)
            .map_err(|e| Error::invalid(format!("joining batches: {e}")))
    }
}
fn io_error(source: std::io::Error, context: &str) -> Error {
    Error::Io {
        context: context.to_owned(),
        source,
    }
}
