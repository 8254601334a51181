//! Arrow record batches -> a column file.

use std::io::Write;

use arrow_array::{Array, RecordBatch};
use arrow_buffer::{BooleanBufferBuilder, NullBuffer};
use arrow_schema::{DataType, Schema};
use prost::Message;

use rayon::prelude::*;

use super::{DEFAULT_PAGE_BYTES, FORMAT_VERSION, MAGIC};
use crate::encodings::Encoding;
use crate::error::{Error, Result};
use crate::page::{value_width, EncodedPage, PageEncoder};

/// Pages that are encoded together (in parallel when allowed) before being written.
const FLUSH_PAGES: usize = 8;
use crate::proto::file as pb;

/// How a file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteOptions {
    /// Encoding of every page.
    pub encoding: Encoding,
    /// Values per page; `None` for about 1 MiB of values (262,144 f32 or 131,072 f64).
    pub page_values: Option<usize>,
    /// Encode pages on all cores (rayon). The bytes written are the same either way.
    pub parallel: bool,
}

impl Default for WriteOptions {
    fn default() -> Self {
        Self {
            encoding: Encoding::BssLz4,
            page_values: None,
            parallel: true,
        }
    }
}

/// One column being written: rows not yet in a page, and the pages written so far.
#[derive(Debug)]
struct ColumnWriter {
    name: String,
    data_type: DataType,
    nullable: bool,
    width: usize,
    page_values: usize,
    encoder: PageEncoder,
    pending: Vec<u8>,
    pending_rows: usize,
    /// Validity of the pending rows, kept only once a null has been seen.
    pending_validity: Option<BooleanBufferBuilder>,
    pages: Vec<pb::Page>,
}

/// Writes a column file to any [`Write`]: pages as they fill, the footer on
/// [`finish`](Self::finish).
#[derive(Debug)]
pub struct FileWriter<W: Write> {
    sink: W,
    parallel: bool,
    offset: u64,
    num_rows: u64,
    columns: Vec<ColumnWriter>,
}

impl<W: Write> FileWriter<W> {
    /// Starts a file for `schema`, whose fields must all be Float32 or Float64.
    pub fn try_new(mut sink: W, schema: &Schema, options: WriteOptions) -> Result<Self> {
        if schema.fields().is_empty() {
            return Err(Error::invalid("a file needs at least one column"));
        }
        let mut columns = Vec::with_capacity(schema.fields().len());
        for field in schema.fields() {
            let width = value_width(field.data_type()).map_err(|_| {
                Error::invalid(format!(
                    "column {:?} has type {}; miniblock files hold Float32 and Float64 columns",
                    field.name(),
                    field.data_type()
                ))
            })?;
            let page_values = options.page_values.unwrap_or(DEFAULT_PAGE_BYTES / width);
            if page_values == 0 {
                return Err(Error::invalid("page_values must be at least 1"));
            }
            columns.push(ColumnWriter {
                name: field.name().clone(),
                data_type: field.data_type().clone(),
                nullable: field.is_nullable(),
                width,
                page_values,
                encoder: PageEncoder::new(options.encoding.compressor(width as u64 * 8)?),
                pending: Vec::new(),
                pending_rows: 0,
                pending_validity: None,
                pages: Vec::new(),
            });
        }
        let mut header = MAGIC.to_vec();
        header.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        sink.write_all(&header)
            .map_err(|e| io_error(e, "writing the file header"))?;
        Ok(Self {
            sink,
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
            column.append(array.as_ref())?;
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
            columns: self
                .columns
                .iter_mut()
                .map(|c| pb::Column {
                    name: c.name.clone(),
                    value_type: value_type(&c.data_type) as i32,
                    nullable: c.nullable,
                    pages: std::mem::take(&mut c.pages),
                })
                .collect(),
        };
        let bytes = footer.encode_to_vec();
        let len = u32::try_from(bytes.len()).map_err(|_| {
            Error::invalid(format!("footer of {} bytes exceeds 4 GiB", bytes.len()))
        })?;
        let mut trailer = bytes;
        trailer.extend_from_slice(&len.to_le_bytes());
        trailer.extend_from_slice(&crc32c::crc32c(&trailer[..len as usize]).to_le_bytes());
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

    /// Encodes and writes the full pages (and, at the end, the partial last ones) once
    /// [`FLUSH_PAGES`] are ready, so that they can be encoded in parallel. The rule does not
    /// depend on the thread count, so parallel and serial writers write the same bytes.
    fn flush(&mut self, last: bool) -> Result<()> {
        let ready: usize = self.columns.iter().map(|c| c.ready_pages(last)).sum();
        if ready == 0 || (!last && ready < FLUSH_PAGES) {
            return Ok(());
        }
        let encoded: Vec<Vec<EncodedPage>> = if self.parallel {
            self.columns
                .par_iter_mut()
                .map(|c| c.take_pages(last, true))
                .collect::<Result<_>>()?
        } else {
            self.columns
                .iter_mut()
                .map(|c| c.take_pages(last, false))
                .collect::<Result<_>>()?
        };
        for (column, pages) in self.columns.iter_mut().zip(encoded) {
            for page in pages {
                let length = page.data.len() as u64;
                self.sink.write_all(&page.data).map_err(|e| {
                    io_error(e, &format!("writing a page of column {:?}", column.name))
                })?;
                column.pages.push(pb::Page {
                    offset: self.offset,
                    length,
                    num_values: page.num_values,
                    encoding: Some(page.encoding.clone()),
                    chunk_table: page.chunk_table(),
                    crc32c: crc32c::crc32c(&page.data),
                });
                self.offset += length;
            }
        }
        Ok(())
    }
}

impl ColumnWriter {
    fn append(&mut self, array: &dyn Array) -> Result<()> {
        let data = array.to_data();
        let start = data.offset() * self.width;
        let values = data
            .buffers()
            .first()
            .and_then(|b| b.as_slice().get(start..start + data.len() * self.width))
            .ok_or_else(|| Error::invalid("array values buffer is shorter than its length"))?;
        let nulls = array.nulls().filter(|n| n.null_count() > 0);
        if let Some(nulls) = nulls {
            if !self.nullable {
                return Err(Error::invalid(format!(
                    "column {:?} is not nullable but the batch has {} nulls",
                    self.name,
                    nulls.null_count()
                )));
            }
            let rows = self.pending_rows;
            let validity = self.pending_validity.get_or_insert_with(|| {
                let mut b = BooleanBufferBuilder::new(rows + array.len());
                b.append_n(rows, true);
                b
            });
            validity.append_buffer(nulls.inner());
        } else if let Some(validity) = &mut self.pending_validity {
            validity.append_n(array.len(), true);
        }
        self.pending.extend_from_slice(values);
        self.pending_rows += array.len();
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

    /// Encodes the ready pages, in parallel when asked.
    fn take_pages(&mut self, last: bool, parallel: bool) -> Result<Vec<EncodedPage>> {
        let pv = self.page_values;
        let full = self.ready_pages(last);
        if full == 0 {
            return Ok(Vec::new());
        }
        let validity = self.pending_validity.take().map(|mut b| b.finish());
        let (pending, rows, width, encoder) =
            (&self.pending, self.pending_rows, self.width, &self.encoder);
        let encode = |p: usize| {
            let start = p * pv;
            let end = (start + pv).min(rows);
            let nulls = validity
                .as_ref()
                .map(|v| NullBuffer::new(v.slice(start, end - start)));
            encoder.encode_values(&pending[start * width..end * width], nulls.as_ref())
        };
        let pages: Vec<EncodedPage> = if parallel {
            (0..full)
                .into_par_iter()
                .map(encode)
                .collect::<Result<_>>()?
        } else {
            (0..full).map(encode).collect::<Result<_>>()?
        };
        let done = (full * pv).min(self.pending_rows);
        self.pending.drain(..done * self.width);
        self.pending_rows -= done;
        if let Some(validity) = validity {
            if self.pending_rows > 0 {
                let mut rest = BooleanBufferBuilder::new(self.pending_rows);
                rest.append_buffer(&validity.slice(done, self.pending_rows));
                self.pending_validity = Some(rest);
            }
        }
        Ok(pages)
    }
}

fn value_type(data_type: &DataType) -> pb::ValueType {
    match data_type {
        DataType::Float32 => pb::ValueType::Float32,
        _ => pb::ValueType::Float64,
    }
}

fn io_error(source: std::io::Error, context: &str) -> Error {
    Error::Io {
        context: context.to_owned(),
        source,
    }
}
