//! Reading fixed-width columns of Lance files (format 2.1 and 2.2).

use std::io::{Read, Seek, SeekFrom};
use std::sync::Arc;

use arrow_array::{make_array, ArrayRef};
use arrow_buffer::Buffer;
use arrow_data::ArrayData;
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use prost::Message;

use crate::error::{Error, Result};
use crate::proto::lance as pb;

use super::page::decode_page;
use super::{logical_to_arrow, FOOTER_LEN, MAGIC, PAGE_LAYOUT_URL};

/// Most column metadata bytes a reader accepts per column (a page entry is tens of bytes).
const MAX_METADATA: u64 = 256 << 20;

/// Most rows a constant page (no buffers, one value) is expanded to.
const MAX_CONSTANT_ROWS: usize = 1 << 24;

/// One field of a Lance file's schema.
#[derive(Debug, Clone)]
pub struct LanceField {
    /// Its name.
    pub name: String,
    /// Lance's logical type ("float", "double", "string", ...).
    pub logical_type: String,
    /// Its Arrow type, when it is a fixed-width type this reader decodes.
    pub data_type: Option<DataType>,
    /// Whether it may hold nulls.
    pub nullable: bool,
    /// The column holding its values, when the schema is flat up to it.
    column: Option<usize>,
}

/// A Lance file opened for reading: its footer, schema and column metadata, parsed and
/// checked once.
pub struct LanceReader<R> {
    source: R,
    len: u64,
    version: (u16, u16),
    fields: Vec<LanceField>,
    columns: Vec<pb::ColumnMetadata>,
    rows: u64,
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

impl<R: Read + Seek> LanceReader<R> {
    /// Opens a Lance file: reads its footer, its schema (global buffer 0) and every
    /// column's metadata.
    pub fn open(mut source: R) -> Result<Self> {
        let io = |what: &str| {
            let what = what.to_owned();
            move |source: std::io::Error| Error::Io {
                context: what,
                source,
            }
        };
        let len = source
            .seek(SeekFrom::End(0))
            .map_err(io("finding the file's size"))?;
        if len < FOOTER_LEN as u64 {
            return Err(Error::truncated(format!(
                "a Lance file of {len} bytes has no footer"
            )));
        }
        let mut footer = [0u8; FOOTER_LEN];
        source
            .seek(SeekFrom::Start(len - FOOTER_LEN as u64))
            .map_err(io("reading the footer"))?;
        source
            .read_exact(&mut footer)
            .map_err(io("reading the footer"))?;
        if footer[36..40] != MAGIC {
            return Err(Error::corrupt("not a Lance file (no LANC at its end)"));
        }
        let major = u16::from_le_bytes([footer[32], footer[33]]);
        let minor = u16::from_le_bytes([footer[34], footer[35]]);
        match (major, minor) {
            (2, 1 | 2) => {}
            _ => {
                return Err(Error::unsupported(format!(
                    "Lance file format {major}.{minor} (this reader reads 2.1 and 2.2)"
                )))
            }
        }
        let cmo = u64_at(&footer, 8);
        let gbo = u64_at(&footer, 16);
        let num_global = u64::from(u32::from_le_bytes(
            footer[24..28].try_into().expect("4 bytes"),
        ));
        let num_columns = u64::from(u32::from_le_bytes(
            footer[28..32].try_into().expect("4 bytes"),
        ));
        let body = len - FOOTER_LEN as u64;
        let read_range = |source: &mut R, pos: u64, size: u64, what: &str| -> Result<Vec<u8>> {
            if pos.checked_add(size).is_none_or(|end| end > body) {
                return Err(Error::corrupt(format!(
                    "Lance {what} at {pos}+{size} passes the file's {body} bytes"
                )));
            }
            let mut buf = vec![0u8; size as usize];
            source.seek(SeekFrom::Start(pos)).map_err(io(what))?;
            source.read_exact(&mut buf).map_err(io(what))?;
            Ok(buf)
        };
        if num_global == 0 {
            return Err(Error::corrupt("Lance file without its schema buffer"));
        }
        let table = read_range(
            &mut source,
            gbo,
            num_global.saturating_mul(16),
            "global buffer table",
        )?;
        let (schema_pos, schema_len) = (u64_at(&table, 0), u64_at(&table, 8));
        let descriptor = read_range(&mut source, schema_pos, schema_len, "schema")?;
        let descriptor = pb::FileDescriptor::decode(descriptor.as_slice())
            .map_err(|e| Error::corrupt(format!("Lance schema does not parse: {e}")))?;
        let schema = descriptor.schema.unwrap_or_default();
        let table = read_range(
            &mut source,
            cmo,
            num_columns.saturating_mul(16),
            "column metadata table",
        )?;
        let mut columns = Vec::with_capacity(num_columns as usize);
        for c in 0..num_columns as usize {
            let (pos, size) = (u64_at(&table, c * 16), u64_at(&table, c * 16 + 8));
            if size > MAX_METADATA {
                return Err(Error::corrupt(format!(
                    "Lance column {c} metadata of {size} bytes"
                )));
            }
            let bytes = read_range(&mut source, pos, size, "column metadata")?;
            columns.push(pb::ColumnMetadata::decode(bytes.as_slice()).map_err(|e| {
                Error::corrupt(format!("Lance column {c} metadata does not parse: {e}"))
            })?);
        }
        // Columns follow the leaf fields in order; a flat schema of primitive and
        // variable-width fields has one column each. Past a nested field the mapping
        // would need Lance's structural rules: those fields are listed, not read.
        let mut fields = Vec::new();
        let mut next_column = Some(0usize);
        // The ids that some field names as its parent, gathered once: a schema of many
        // fields must open in time linear in their count, not quadratic.
        let parents: std::collections::HashSet<i32> = schema
            .fields
            .iter()
            .filter(|g| g.parent_id != -1)
            .map(|g| g.parent_id)
            .collect();
        for f in &schema.fields {
            let is_child = f.parent_id != -1;
            let has_children = parents.contains(&f.id);
            if is_child {
                continue;
            }
            let data_type = logical_to_arrow(&f.logical_type);
            let nested = has_children
                || f.logical_type.starts_with("struct")
                || f.logical_type.starts_with("list")
                || f.logical_type.starts_with("large_list")
                || f.logical_type.starts_with("fixed_size_list");
            let column = if nested { None } else { next_column };
            if nested {
                next_column = None;
            } else if let Some(c) = next_column.as_mut() {
                *c += 1;
            }
            fields.push(LanceField {
                name: f.name.clone(),
                logical_type: f.logical_type.clone(),
                data_type,
                nullable: f.nullable,
                column,
            });
        }
        if let Some(f) = fields
            .iter()
            .find(|f| f.column.is_some_and(|c| c >= columns.len()))
        {
            return Err(Error::corrupt(format!(
                "Lance field {:?} has no column: the file has {}",
                f.name,
                columns.len()
            )));
        }
        if let Some(used) = next_column {
            if used != columns.len() {
                return Err(Error::corrupt(format!(
                    "Lance schema has {used} columns, the file {}",
                    columns.len()
                )));
            }
        }
        Ok(Self {
            source,
            len,
            version: (major, minor),
            fields,
            columns,
            rows: descriptor.length,
        })
    }

    /// The format version, (2, 1) or (2, 2).
    pub fn version(&self) -> (u16, u16) {
        self.version
    }

    /// Every top-level field, decodable or not.
    pub fn fields(&self) -> &[LanceField] {
        &self.fields
    }

    /// Rows in the file.
    pub fn num_rows(&self) -> u64 {
        self.rows
    }

    /// The Arrow schema of the fields this reader decodes.
    pub fn schema(&self) -> SchemaRef {
        Arc::new(Schema::new(
            self.fields
                .iter()
                .filter(|f| f.column.is_some())
                .filter_map(|f| {
                    f.data_type
                        .clone()
                        .map(|t| Field::new(&f.name, t, f.nullable))
                })
                .collect::<Vec<_>>(),
        ))
    }

    /// The index in [`fields`](Self::fields) of the field named `name`.
    pub fn field_index(&self, name: &str) -> Result<usize> {
        self.fields
            .iter()
            .position(|f| f.name == name)
            .ok_or_else(|| {
                Error::invalid(format!(
                    "no field {name:?} in the Lance file (it has {})",
                    self.fields
                        .iter()
                        .map(|f| f.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })
    }

    /// Pages in field `field`'s column.
    pub fn num_pages(&self, field: usize) -> Result<usize> {
        Ok(self.columns[self.column_of(field)?.0].pages.len())
    }

    fn column_of(&self, field: usize) -> Result<(usize, DataType)> {
        let f = self
            .fields
            .get(field)
            .ok_or_else(|| Error::invalid(format!("no field {field}")))?;
        let data_type = f.data_type.clone().ok_or_else(|| {
            Error::unsupported(format!(
                "Lance field {:?} of type {}: not a fixed-width type",
                f.name, f.logical_type
            ))
        })?;
        let column = f.column.ok_or_else(|| {
            Error::unsupported(format!(
                "Lance field {:?}: fields at or after a nested field are not read",
                f.name
            ))
        })?;
        Ok((column, data_type))
    }

    /// The layout of page `page` of field `field`, parsed from its metadata.
    pub fn page_layout(&self, field: usize, page: usize) -> Result<pb::PageLayout> {
        let (column, _) = self.column_of(field)?;
        let meta = self.columns[column]
            .pages
            .get(page)
            .ok_or_else(|| Error::invalid(format!("no page {page}")))?;
        parse_layout(meta)
    }

    /// Decodes page `page` of field `field`.
    pub fn read_page(&mut self, field: usize, page: usize) -> Result<ArrayRef> {
        let (column, data_type) = self.column_of(field)?;
        let width = data_type
            .primitive_width()
            .ok_or_else(|| Error::unsupported(format!("{data_type} is not fixed-width")))?;
        let meta = self.columns[column]
            .pages
            .get(page)
            .ok_or_else(|| Error::invalid(format!("no page {page}")))?
            .clone();
        let layout = parse_layout(&meta)?;
        if meta.buffer_offsets.len() != meta.buffer_sizes.len() {
            return Err(Error::corrupt(
                "Lance page with unequal buffer offset and size lists",
            ));
        }
        let rows = usize::try_from(meta.length).map_err(|_| Error::corrupt("page length"))?;
        let total: u64 = meta
            .buffer_sizes
            .iter()
            .fold(0u64, |a, &b| a.saturating_add(b));
        if total > self.len {
            return Err(Error::corrupt(format!(
                "Lance page buffers of {total} bytes in a {}-byte file",
                self.len
            )));
        }
        // A constant page has no buffers to bound its rows: the file's row count does.
        // Other pages are bounded by their chunks (at most 32768 values per 8 bytes), and
        // their decoded values grow as chunks decode, not by the rows claimed.
        let is_constant = matches!(
            layout.layout,
            Some(pb::page_layout::Layout::ConstantLayout(_))
        );
        if is_constant && (rows as u64 > self.rows || rows > MAX_CONSTANT_ROWS) {
            return Err(Error::unsupported(format!(
                "a Lance constant page of {rows} rows (this reader expands at most {MAX_CONSTANT_ROWS} rows per page, and no more than the file's {})",
                self.rows
            )));
        }
        let mut buffers = Vec::with_capacity(meta.buffer_offsets.len());
        for (&pos, &size) in meta.buffer_offsets.iter().zip(&meta.buffer_sizes) {
            if pos.checked_add(size).is_none_or(|end| end > self.len) {
                return Err(Error::corrupt(format!(
                    "Lance page buffer at {pos}+{size} passes the file's end"
                )));
            }
            let mut buf = vec![0u8; size as usize];
            let io = |source| Error::Io {
                context: "reading a Lance page".into(),
                source,
            };
            self.source.seek(SeekFrom::Start(pos)).map_err(io)?;
            self.source.read_exact(&mut buf).map_err(io)?;
            buffers.push(buf);
        }
        let views: Vec<&[u8]> = buffers.iter().map(Vec::as_slice).collect();
        let decoded = decode_page(&layout, &views, rows, width)?;
        let data = ArrayData::builder(data_type)
            .len(rows)
            .add_buffer(Buffer::from_vec(decoded.values))
            .nulls(decoded.nulls)
            .align_buffers(true)
            .build()
            .map_err(|e| Error::corrupt(format!("decoded Lance page: {e}")))?;
        Ok(make_array(data))
    }

    /// Decodes every page of field `field` into one array.
    pub fn read_column(&mut self, field: usize) -> Result<ArrayRef> {
        let pages = self.num_pages(field)?;
        let arrays = (0..pages)
            .map(|p| self.read_page(field, p))
            .collect::<Result<Vec<_>>>()?;
        let (_, data_type) = self.column_of(field)?;
        if arrays.is_empty() {
            return Ok(arrow_array::new_empty_array(&data_type));
        }
        let refs: Vec<&dyn arrow_array::Array> = arrays.iter().map(AsRef::as_ref).collect();
        arrow_select::concat::concat(&refs).map_err(|e| Error::invalid(e.to_string()))
    }
}

impl<R: Read + Seek> LanceReader<R> {
    /// Streams `fields` (indices into [`fields`](Self::fields), in that order) as record
    /// batches of at most `batch_rows` rows over `rows`. Each column's pages decode one at
    /// a time as the batches reach them (pages need not line up across columns), so memory
    /// stays at about one page per column.
    pub fn scan(
        self,
        fields: &[usize],
        batch_rows: usize,
        rows: std::ops::Range<u64>,
    ) -> Result<LanceScan<R>> {
        if batch_rows == 0 {
            return Err(Error::invalid("batches of 0 rows"));
        }
        if rows.start > rows.end || rows.end > self.rows {
            return Err(Error::invalid(format!(
                "rows {}..{} of a file of {}",
                rows.start, rows.end, self.rows
            )));
        }
        let mut columns = Vec::with_capacity(fields.len());
        let mut schema_fields = Vec::with_capacity(fields.len());
        for &field in fields {
            let (column, data_type) = self.column_of(field)?;
            let mut starts = Vec::with_capacity(self.columns[column].pages.len() + 1);
            let mut total = 0u64;
            starts.push(0);
            for page in &self.columns[column].pages {
                total = total
                    .checked_add(page.length)
                    .filter(|&t| t <= self.rows)
                    .ok_or_else(|| {
                        Error::corrupt(format!(
                            "Lance column {column}'s pages hold more than the file's {} rows",
                            self.rows
                        ))
                    })?;
                starts.push(total);
            }
            if total != self.rows {
                return Err(Error::corrupt(format!(
                    "Lance column {column}'s pages hold {total} rows, the file {}",
                    self.rows
                )));
            }
            let f = &self.fields[field];
            schema_fields.push(Field::new(&f.name, data_type, f.nullable));
            columns.push(ScanColumn {
                field,
                starts,
                page: None,
            });
        }
        let schema = Arc::new(Schema::new(schema_fields));
        Ok(LanceScan {
            reader: self,
            schema,
            columns,
            next: rows.start,
            end: rows.end,
            batch_rows,
        })
    }
}

struct ScanColumn {
    field: usize,
    /// The first row of each page, and the total last.
    starts: Vec<u64>,
    /// The decoded page in hand: its index and values.
    page: Option<(usize, ArrayRef)>,
}

/// Record batches of a Lance file, from [`LanceReader::scan`]. An error ends the stream.
pub struct LanceScan<R> {
    reader: LanceReader<R>,
    schema: SchemaRef,
    columns: Vec<ScanColumn>,
    next: u64,
    end: u64,
    batch_rows: usize,
}

impl<R: Read + Seek> LanceScan<R> {
    /// The batches' schema.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn batch(&mut self, from: u64, len: usize) -> Result<arrow_array::RecordBatch> {
        let mut arrays = Vec::with_capacity(self.columns.len());
        for column in &mut self.columns {
            let mut parts: Vec<ArrayRef> = Vec::new();
            let (mut row, end) = (from, from + len as u64);
            while row < end {
                // The page holding `row`: the last one starting at or before it.
                let page = column.starts.partition_point(|&s| s <= row) - 1;
                if column.page.as_ref().is_none_or(|(p, _)| *p != page) {
                    let array = self.reader.read_page(column.field, page)?;
                    column.page = Some((page, array));
                }
                let (_, array) = column.page.as_ref().expect("decoded above");
                let offset = (row - column.starts[page]) as usize;
                let take =
                    ((end.min(column.starts[page + 1]) - row) as usize).min(array.len() - offset);
                if take == 0 {
                    return Err(Error::corrupt(
                        "a Lance page decoded to fewer rows than it claims",
                    ));
                }
                parts.push(array.slice(offset, take));
                row += take as u64;
            }
            arrays.push(if parts.len() == 1 {
                parts.pop().expect("one part")
            } else {
                let refs: Vec<&dyn arrow_array::Array> = parts.iter().map(AsRef::as_ref).collect();
                arrow_select::concat::concat(&refs).map_err(|e| Error::invalid(e.to_string()))?
            });
        }
        arrow_array::RecordBatch::try_new(self.schema.clone(), arrays)
            .map_err(|e| Error::invalid(e.to_string()))
    }
}

impl<R: Read + Seek> Iterator for LanceScan<R> {
    type Item = Result<arrow_array::RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.next >= self.end {
            return None;
        }
        let len = (self.end - self.next).min(self.batch_rows as u64) as usize;
        let from = self.next;
        match self.batch(from, len) {
            Ok(batch) => {
                self.next += len as u64;
                Some(Ok(batch))
            }
            Err(e) => {
                self.next = self.end;
                Some(Err(e))
            }
        }
    }
}

/// A page's `PageLayout`, unwrapped from its `Any`.
fn parse_layout(meta: &pb::column_metadata::Page) -> Result<pb::PageLayout> {
    let encoding = match meta.encoding.as_ref().and_then(|e| e.location.as_ref()) {
        Some(pb::encoding::Location::Direct(direct)) => &direct.encoding,
        _ => {
            return Err(Error::unsupported(
                "a Lance page whose encoding is not stored inline",
            ))
        }
    };
    let any = pb::Any::decode(encoding.as_slice())
        .map_err(|e| Error::corrupt(format!("Lance page encoding does not parse: {e}")))?;
    if any.type_url != PAGE_LAYOUT_URL {
        return Err(Error::unsupported(format!(
            "a Lance page encoded as {} (this reader reads {PAGE_LAYOUT_URL})",
            any.type_url
        )));
    }
    pb::PageLayout::decode(any.value.as_slice())
        .map_err(|e| Error::corrupt(format!("Lance page layout does not parse: {e}")))
}
