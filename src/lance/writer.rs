//! Writing Lance 2.1 files of fixed-width columns.

use std::io::Write;

use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{Schema, SchemaRef};
use prost::Message;

use crate::encodings::{CompressionScheme, Encoding};
use crate::error::{Error, Result};
use crate::proto::lance as pb;

use super::page::{encode_dictionary_page, encode_page, EncodedLancePage, LanceValues, PageSpec};
use super::{arrow_to_logical, COLUMN_ENCODING_URL, MAGIC, PAGE_LAYOUT_URL};

/// A general compression scheme and its level.
type Compression = Option<(CompressionScheme, Option<i32>)>;

/// Default page size in value bytes (Lance's writer buffers 8 MiB per column).
const PAGE_BYTES: usize = 8 << 20;

/// Page buffers start at multiples of this, as Lance's writer places them.
const BUFFER_ALIGN: u64 = 64;

/// How a page's chunks are stored in a Lance file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LanceEncoding {
    /// Every page the same way: flat or byte stream split chunks, each compressed with
    /// LZ4 or Zstd when that shrinks the page (Lance's own rule: whole pages fall back).
    Fixed {
        /// Flat or byte stream split.
        values: LanceValues,
        /// General compression of every chunk.
        compression: Option<CompressionScheme>,
    },
    /// Each page the smallest of flat and byte stream split (32- and 64-bit values), each
    /// bare, under LZ4 and under Zstd, and of a dictionary (32- and 64-bit values with at
    /// most 65536 distinct values; Lance 2.2's encoding of low-cardinality columns).
    Smallest,
}

impl LanceEncoding {
    /// The Lance form of one of miniblock's encodings: plain, lz4, zstd, bss, bss+lz4 and
    /// bss+zstd have one; the others are refused by name.
    pub fn from_encoding(encoding: Encoding) -> Result<Self> {
        let (values, compression) = match encoding {
            Encoding::Plain => (LanceValues::Flat, None),
            Encoding::Lz4 => (LanceValues::Flat, Some(CompressionScheme::Lz4)),
            Encoding::Zstd => (LanceValues::Flat, Some(CompressionScheme::Zstd)),
            Encoding::Bss => (LanceValues::Bss, None),
            Encoding::BssLz4 => (LanceValues::Bss, Some(CompressionScheme::Lz4)),
            Encoding::BssZstd => (LanceValues::Bss, Some(CompressionScheme::Zstd)),
            other => {
                return Err(Error::unsupported(format!(
                    "{other} has no Lance 2.1 equivalent; a Lance file takes plain, lz4, zstd, bss, bss+lz4, bss+zstd or auto"
                )))
            }
        };
        Ok(LanceEncoding::Fixed {
            values,
            compression,
        })
    }
}

/// How [`LanceWriter`] encodes pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LanceWriteOptions {
    /// How chunks are stored.
    pub encoding: LanceEncoding,
    /// The Zstd level (`None`: Lance's default, 3), recorded in the page description.
    pub zstd_level: Option<i32>,
    /// Values per chunk; `None` for 4 KiB of values (1024 f32, 512 f64), as Lance.
    pub chunk_values: Option<usize>,
    /// Rows per page (the last page of a column may hold fewer); `None`: 8 MiB of the
    /// widest column's values, like Lance's writer.
    pub page_rows: Option<usize>,
}

impl Default for LanceWriteOptions {
    fn default() -> Self {
        Self {
            encoding: LanceEncoding::Smallest,
            zstd_level: None,
            chunk_values: None,
            page_rows: None,
        }
    }
}

/// Writes a Lance file (format 2.1) of fixed-width columns: pages as they fill, then the
/// schema, column metadata and footer at [`finish`](Self::finish).
pub struct LanceWriter<W: Write> {
    sink: W,
    position: u64,
    schema: SchemaRef,
    options: LanceWriteOptions,
    page_rows: usize,
    columns: Vec<pb::ColumnMetadata>,
    pending: Vec<Vec<ArrayRef>>,
    pending_rows: usize,
    rows_written: u64,
}

impl<W: Write> LanceWriter<W> {
    /// Starts a file of `schema`'s columns: every one must be a fixed-width type (else the
    /// error names it).
    pub fn try_new(sink: W, schema: &Schema, options: LanceWriteOptions) -> Result<Self> {
        for field in schema.fields() {
            let width = field.data_type().primitive_width();
            if arrow_to_logical(field.data_type()).is_none() || width.is_none() {
                return Err(Error::invalid(format!(
                    "column {:?} of type {}: Lance files from miniblock hold fixed-width columns only",
                    field.name(),
                    field.data_type()
                )));
            }
            let bss = matches!(
                options.encoding,
                LanceEncoding::Fixed {
                    values: LanceValues::Bss,
                    ..
                }
            );
            if bss && !matches!(width, Some(4 | 8)) {
                return Err(Error::invalid(format!(
                    "column {:?} of type {}: Lance's byte stream split takes 32- and 64-bit values only",
                    field.name(),
                    field.data_type()
                )));
            }
        }
        let widest = schema
            .fields()
            .iter()
            .filter_map(|f| f.data_type().primitive_width())
            .max()
            .unwrap_or(8);
        let page_rows = options.page_rows.unwrap_or(PAGE_BYTES / widest);
        if page_rows == 0 {
            return Err(Error::invalid("pages of 0 rows"));
        }
        Ok(Self {
            sink,
            position: 0,
            schema: std::sync::Arc::new(schema.clone()),
            options,
            page_rows,
            columns: vec![pb::ColumnMetadata::default(); schema.fields().len()],
            pending: vec![Vec::new(); schema.fields().len()],
            pending_rows: 0,
            rows_written: 0,
        })
    }

    fn write_all(&mut self, bytes: &[u8]) -> Result<()> {
        self.sink.write_all(bytes).map_err(|source| Error::Io {
            context: "writing a Lance file".into(),
            source,
        })?;
        self.position += bytes.len() as u64;
        Ok(())
    }

    /// Adds a batch's rows (its schema must be the writer's).
    pub fn write_batch(&mut self, batch: &RecordBatch) -> Result<()> {
        if batch.schema().fields() != self.schema.fields() {
            return Err(Error::invalid("batch schema differs from the writer's"));
        }
        for (pending, column) in self.pending.iter_mut().zip(batch.columns()) {
            pending.push(column.clone());
        }
        self.pending_rows += batch.num_rows();
        while self.pending_rows >= self.page_rows {
            self.flush_page(self.page_rows)?;
        }
        Ok(())
    }

    /// Writes the first `rows` pending rows of every column as one page each.
    fn flush_page(&mut self, rows: usize) -> Result<()> {
        for c in 0..self.columns.len() {
            let arrays = std::mem::take(&mut self.pending[c]);
            let refs: Vec<&dyn Array> = arrays.iter().map(AsRef::as_ref).collect();
            let all =
                arrow_select::concat::concat(&refs).map_err(|e| Error::invalid(e.to_string()))?;
            let (page, rest) = (all.slice(0, rows), all.slice(rows, all.len() - rows));
            if !rest.is_empty() {
                self.pending[c].push(rest);
            }
            self.write_page(c, page.as_ref())?;
        }
        self.pending_rows -= rows;
        self.rows_written += rows as u64;
        Ok(())
    }

    fn write_page(&mut self, column: usize, array: &dyn Array) -> Result<()> {
        let data = array.to_data();
        let width = array
            .data_type()
            .primitive_width()
            .ok_or_else(|| Error::invalid("not fixed-width"))?;
        let start = data.offset() * width;
        let values = &data.buffers()[0].as_slice()[start..start + array.len() * width];
        let nullable = self.schema.field(column).is_nullable();
        let nulls = array.logical_nulls();
        if !nullable && nulls.as_ref().is_some_and(|n| n.null_count() > 0) {
            return Err(Error::invalid(format!(
                "column {:?} is not nullable but holds nulls",
                self.schema.field(column).name()
            )));
        }
        let nulls = if nullable {
            Some(nulls.unwrap_or_else(|| arrow_buffer::NullBuffer::new_valid(array.len())))
        } else {
            None
        };
        let level = self.options.zstd_level;
        let candidates: Vec<(LanceValues, Compression)> = match self.options.encoding {
            LanceEncoding::Fixed {
                values,
                compression,
            } => vec![(values, compression.map(|c| (c, level)))],
            LanceEncoding::Smallest => {
                let transforms: &[LanceValues] = if matches!(width, 4 | 8) {
                    &[LanceValues::Flat, LanceValues::Bss]
                } else {
                    &[LanceValues::Flat]
                };
                let schemes = [
                    None,
                    Some((CompressionScheme::Lz4, None)),
                    Some((CompressionScheme::Zstd, level)),
                ];
                transforms
                    .iter()
                    .flat_map(|&t| schemes.iter().map(move |&c| (t, c)))
                    .collect()
            }
        };
        let size = |p: &EncodedLancePage| p.buffers.iter().map(Vec::len).sum::<usize>();
        let mut best: Option<EncodedLancePage> = None;
        for (transform, compression) in candidates {
            let spec = PageSpec {
                values,
                width,
                nulls: nulls.as_ref(),
                chunk_values: self.options.chunk_values.unwrap_or(4096 / width),
                transform,
                compression,
            };
            let page = encode_page(&spec)?;
            let size =
                |p: &super::page::EncodedLancePage| p.buffers.iter().map(Vec::len).sum::<usize>();
            if best.as_ref().is_none_or(|b| size(&page) < size(b)) {
                best = Some(page);
            }
        }
        if self.options.encoding == LanceEncoding::Smallest {
            let spec = PageSpec {
                values,
                width,
                nulls: nulls.as_ref(),
                chunk_values: 1024,
                transform: LanceValues::Flat,
                compression: Some((CompressionScheme::Zstd, level)),
            };
            if let Some(page) = encode_dictionary_page(&spec)? {
                if best.as_ref().is_none_or(|b| size(&page) < size(b)) {
                    best = Some(page);
                }
            }
        }
        let encoded = best.ok_or_else(|| Error::invalid("no Lance encoding to try"))?;
        let mut offsets = Vec::with_capacity(2);
        let mut sizes = Vec::with_capacity(2);
        for buffer in &encoded.buffers {
            offsets.push(self.position);
            sizes.push(buffer.len() as u64);
            self.write_all(buffer)?;
            let padding = (BUFFER_ALIGN - self.position % BUFFER_ALIGN) % BUFFER_ALIGN;
            self.write_all(&[0u8; BUFFER_ALIGN as usize][..padding as usize])?;
        }
        let any = pb::Any {
            type_url: PAGE_LAYOUT_URL.into(),
            value: encoded.layout.encode_to_vec(),
        };
        self.columns[column].pages.push(pb::column_metadata::Page {
            buffer_offsets: offsets,
            buffer_sizes: sizes,
            length: array.len() as u64,
            encoding: Some(direct(any.encode_to_vec())),
            priority: self.rows_written,
        });
        Ok(())
    }

    /// Writes the last pages, the schema, the column metadata and the footer; returns the
    /// sink.
    pub fn finish(mut self) -> Result<W> {
        if self.pending_rows > 0 {
            self.flush_page(self.pending_rows)?;
        }
        let fields = self
            .schema
            .fields()
            .iter()
            .enumerate()
            .map(|(i, f)| pb::Field {
                r#type: 0,
                name: f.name().clone(),
                id: i32::try_from(i).unwrap_or(i32::MAX),
                parent_id: -1,
                logical_type: arrow_to_logical(f.data_type()).unwrap_or_default(),
                nullable: f.is_nullable(),
                encoding: 1,
                metadata: f
                    .metadata()
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone().into_bytes()))
                    .collect(),
            })
            .collect();
        let descriptor = pb::FileDescriptor {
            schema: Some(pb::Schema {
                fields,
                metadata: self
                    .schema
                    .metadata()
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone().into_bytes()))
                    .collect(),
            }),
            length: self.rows_written,
        }
        .encode_to_vec();
        let global = [(self.position, descriptor.len() as u64)];
        self.write_all(&descriptor)?;
        let column_encoding = pb::Any {
            type_url: COLUMN_ENCODING_URL.into(),
            value: pb::ColumnEncoding {
                column_encoding: Some(pb::column_encoding::ColumnEncoding::Values(pb::Empty {})),
            }
            .encode_to_vec(),
        }
        .encode_to_vec();
        let first_metadata = self.position;
        let mut table = Vec::with_capacity(self.columns.len());
        for mut column in std::mem::take(&mut self.columns) {
            column.encoding = Some(direct(column_encoding.clone()));
            let bytes = column.encode_to_vec();
            table.push((self.position, bytes.len() as u64));
            self.write_all(&bytes)?;
        }
        let mut footer = Vec::new();
        let column_table = self.position;
        for (pos, len) in &table {
            footer.extend_from_slice(&pos.to_le_bytes());
            footer.extend_from_slice(&len.to_le_bytes());
        }
        let global_table = column_table + footer.len() as u64;
        for (pos, len) in &global {
            footer.extend_from_slice(&pos.to_le_bytes());
            footer.extend_from_slice(&len.to_le_bytes());
        }
        footer.extend_from_slice(&first_metadata.to_le_bytes());
        footer.extend_from_slice(&column_table.to_le_bytes());
        footer.extend_from_slice(&global_table.to_le_bytes());
        footer.extend_from_slice(&(global.len() as u32).to_le_bytes());
        footer.extend_from_slice(&(table.len() as u32).to_le_bytes());
        footer.extend_from_slice(&2u16.to_le_bytes());
        footer.extend_from_slice(&1u16.to_le_bytes());
        footer.extend_from_slice(&MAGIC);
        self.write_all(&footer)?;
        self.sink.flush().map_err(|source| Error::Io {
            context: "writing a Lance file".into(),
            source,
        })?;
        Ok(self.sink)
    }
}

fn direct(encoding: Vec<u8>) -> pb::Encoding {
    pb::Encoding {
        location: Some(pb::encoding::Location::Direct(pb::DirectEncoding {
            encoding,
        })),
    }
}
