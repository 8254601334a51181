//! [`EncodedPage`](super::EncodedPage) bytes -> Arrow arrays, whole or in part.

use std::ops::Range;
use std::sync::Arc;

use arrow_array::{make_array, ArrayRef, BooleanArray, Float16Array, Float32Array, Float64Array};
use arrow_buffer::{
    BooleanBuffer, BooleanBufferBuilder, Buffer, MutableBuffer, NullBuffer, ScalarBuffer,
};
use arrow_data::ArrayData;
use arrow_schema::{ArrowError, DataType};

use std::borrow::Cow;

use super::layout::{ChunkLocation, PageLayout};
use super::{value_width, ChunkTableFormat, BUFFERS_HEADER_BIT, MAX_PAGE_BUFFERS, WIDE_HEADER_BIT};
use crate::encodings::{checked_len, decompressor_for, ChunkStorage, MiniBlockDecompressor};
use crate::error::{Error, Result};
use crate::proto::encodings::ArrayEncoding;

/// Output reserved up front for decoding is at most this many times the stored bytes (plus
/// [`RESERVE_SLACK`]); past it, buffers grow as chunks really decode. Most pages fit (at
/// 4x, a temperature climatology of ratio 5.3 grew its 1 MiB output once, a copy that
/// took 3% of its decoding), and a page lying about its sizes cannot make a reader
/// reserve more than a few times its own size.
pub(crate) const RESERVE_EXPANSION: usize = 8;

/// Output reserved up front beyond [`RESERVE_EXPANSION`] times the stored bytes: a page
/// of up to 1 MiB of values decodes into one allocation however far it compresses. With
/// 64 KiB, a 1 MiB Zarr chunk of 8,760 values padded with zeros (ratio 565) grew its
/// output four times, copies and zeroing that took 40% of its decoding.
const RESERVE_SLACK: usize = 1 << 20;

/// Bytes to reserve up front for `len` bytes of values decoded from `stored` bytes: all
/// of them, unless that is more than [`RESERVE_EXPANSION`] times `stored` plus
/// [`RESERVE_SLACK`] (compressible data, or a lie), in which case the buffer grows only
/// as chunks really decode.
pub(crate) fn output_reserve(len: usize, stored: u64) -> usize {
    let bound = stored
        .saturating_mul(RESERVE_EXPANSION as u64)
        .saturating_add(RESERVE_SLACK as u64);
    len.min(usize::try_from(bound).unwrap_or(usize::MAX))
}

/// Decodes one page: whole, chunk by chunk, or a row range touching only the chunks it
/// overlaps.
///
/// Construction validates the whole chunk table against the page's value count and data
/// length (so no later step can index out of bounds or allocate more than the page's
/// declared count); every chunk is then checked again as it is decoded. A decoder is
/// `Send + Sync`: many threads may decode from one.
#[derive(Debug)]
pub struct PageDecoder<'a> {
    /// Shared with a reader's cache, or owned.
    decompressor: Arc<dyn MiniBlockDecompressor>,
    data_type: DataType,
    width: usize,
    /// Borrowed from a reader's cache, or owned when parsed here.
    layout: Cow<'a, PageLayout>,
    data: &'a [u8],
}

impl<'a> PageDecoder<'a> {
    /// A decoder over a page serialized by [`EncodedPage::to_bytes`](super::EncodedPage::to_bytes)
    /// (`u32 header | chunk table | [buffers] | data`).
    pub fn try_new(encoding: &ArrayEncoding, num_values: u64, page: &'a [u8]) -> Result<Self> {
        let header: [u8; 4] = page
            .get(..4)
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| {
                Error::truncated(format!("page of {} bytes has no chunk count", page.len()))
            })?;
        let header = u32::from_le_bytes(header);
        let format = if header & WIDE_HEADER_BIT != 0 {
            ChunkTableFormat::Wide
        } else {
            ChunkTableFormat::Narrow
        };
        let num_chunks = (header & !(WIDE_HEADER_BIT | BUFFERS_HEADER_BIT)) as usize;
        let table_len = num_chunks
            .checked_mul(format.entry_bytes())
            .ok_or_else(|| Error::corrupt(format!("chunk count {num_chunks} overflows")))?;
        let table = page.get(4..4 + table_len).ok_or_else(|| {
            Error::truncated(format!(
                "page of {} bytes ends inside its table of {num_chunks} chunks ({table_len} bytes)",
                page.len()
            ))
        })?;
        let mut rest = &page[4 + table_len..];
        let mut buffers = Vec::new();
        if header & BUFFERS_HEADER_BIT != 0 {
            let truncated = || Error::truncated("page ends inside its buffer sizes");
            let count = rest.get(..4).ok_or_else(truncated)?;
            let count = u32::from_le_bytes(count.try_into().expect("4 bytes")) as usize;
            if !(1..=MAX_PAGE_BUFFERS).contains(&count) {
                return Err(Error::corrupt(format!(
                    "page declares {count} buffers (1 to {MAX_PAGE_BUFFERS})"
                )));
            }
            let sizes = rest.get(4..4 + 8 * count).ok_or_else(truncated)?;
            rest = &rest[4 + 8 * count..];
            for size in sizes.chunks_exact(8) {
                let size = u64::from_le_bytes(size.try_into().expect("8 bytes"));
                let size = usize::try_from(size)
                    .ok()
                    .filter(|&s| s <= rest.len())
                    .ok_or_else(|| {
                        Error::truncated(format!(
                            "page buffer of {size} bytes, {} bytes left in the page",
                            rest.len()
                        ))
                    })?;
                buffers.push(&rest[..size]);
                rest = &rest[size..];
            }
        }
        Self::from_parts(encoding, &buffers, num_values, table, format, rest)
    }

    /// A decoder over a page given as its page buffers, its chunk table (entries of
    /// `format`) and its data buffer.
    pub fn from_parts(
        encoding: &ArrayEncoding,
        page_buffers: &[&[u8]],
        num_values: u64,
        chunk_table: &[u8],
        format: ChunkTableFormat,
        data: &'a [u8],
    ) -> Result<Self> {
        Self::with_decompressor(
            decompressor_for(encoding, page_buffers)?,
            num_values,
            chunk_table,
            format,
            data,
        )
    }

    /// Like [`from_parts`](Self::from_parts) with a decompressor of the caller's choice.
    pub fn with_decompressor(
        decompressor: impl Into<Arc<dyn MiniBlockDecompressor>>,
        num_values: u64,
        chunk_table: &[u8],
        format: ChunkTableFormat,
        data: &'a [u8],
    ) -> Result<Self> {
        let decompressor = decompressor.into();
        let layout = PageLayout::parse(num_values, chunk_table, format, decompressor.as_ref())?;
        Self::with_layout(decompressor, layout, data)
    }

    /// A decoder over an already validated layout and the data it describes (a file
    /// reader's cached layouts). Until [`with_data_type`](Self::with_data_type) says
    /// otherwise, arrays come out as the natural type of the width: Float16/32/64, or
    /// `FixedSizeBinary(width)`.
    pub(crate) fn with_layout(
        decompressor: impl Into<Arc<dyn MiniBlockDecompressor>>,
        layout: impl Into<Cow<'a, PageLayout>>,
        data: &'a [u8],
    ) -> Result<Self> {
        let layout = layout.into();
        let decompressor = decompressor.into();
        let width = decompressor.value_width();
        let data_type = match width {
            2 => DataType::Float16,
            4 => DataType::Float32,
            8 => DataType::Float64,
            other => DataType::FixedSizeBinary(
                i32::try_from(other)
                    .map_err(|_| Error::unsupported(format!("values of {other} bytes")))?,
            ),
        };
        if layout.data_len() > data.len() {
            return Err(Error::truncated(format!(
                "chunk table describes {} data bytes, the page holds {}",
                layout.data_len(),
                data.len()
            )));
        }
        if layout.data_len() < data.len() {
            return Err(Error::corrupt(format!(
                "page holds {} bytes after its last chunk",
                data.len() - layout.data_len()
            )));
        }
        Ok(Self {
            decompressor,
            data_type,
            width,
            layout,
            data,
        })
    }

    /// Decode to arrays of `data_type` (whose width must match the encoding's). Without
    /// it, arrays come out as the natural type of the width: Float16/32/64, or
    /// `FixedSizeBinary(width)`.
    pub fn with_data_type(mut self, data_type: &DataType) -> Result<Self> {
        let width = value_width(data_type)?;
        if width != self.width {
            return Err(Error::invalid(format!(
                "page holds {}-byte values, {data_type} has {width}-byte values",
                self.width
            )));
        }
        self.data_type = data_type.clone();
        Ok(self)
    }

    /// The validated chunk table.
    pub fn layout(&self) -> &PageLayout {
        &self.layout
    }

    /// Bytes per value: a buffer for [`decode_into`](Self::decode_into) of `rows` holds
    /// `rows.len() * value_width()` bytes.
    pub fn value_width(&self) -> usize {
        self.width
    }

    /// Values (rows) in the page.
    pub fn num_values(&self) -> usize {
        self.layout.num_values()
    }

    /// Chunks in the page.
    pub fn num_chunks(&self) -> usize {
        self.layout.num_chunks()
    }

    /// Rows held by chunk `index`.
    pub fn chunk_rows(&self, index: usize) -> Result<Range<usize>> {
        self.layout.chunk_rows(index)
    }

    /// The chunks that rows `rows` overlap.
    pub fn chunks_for_rows(&self, rows: Range<usize>) -> Range<usize> {
        self.layout.chunks_for_rows(rows)
    }

    /// Decodes the whole page to an array of the page's type.
    pub fn decode(&self) -> Result<ArrayRef> {
        self.decode_range(0..self.num_values())
    }

    /// Decodes chunk `index` alone.
    pub fn decode_chunk(&self, index: usize) -> Result<ArrayRef> {
        self.decode_range(self.chunk_rows(index)?)
    }

    /// Decodes rows `rows`, reading only the chunks they overlap.
    pub fn decode_range(&self, rows: Range<usize>) -> Result<ArrayRef> {
        let len = self.check_rows(&rows)?;
        let reserve = self.reserve_for(rows.clone())?;
        let mut values = MutableBuffer::new(reserve);
        // Validity is reserved for as many rows as the values are (its bits grow with the
        // chunks that really decode), not for the rows the page claims.
        let mut validity = self
            .has_validity(rows.clone())
            .then(|| BooleanBufferBuilder::new(len.min(reserve / self.width.max(1) + 1)));
        self.decode_append(rows, &mut values, validity.as_mut())?;
        build_array(&self.data_type, values, len, validity)
    }

    /// Whether any chunk overlapping `rows` carries validity.
    pub fn has_validity(&self, rows: Range<usize>) -> bool {
        self.layout.chunks()[self.chunks_for_rows(rows)]
            .iter()
            .any(|c| c.has_validity)
    }

    /// Bytes to reserve for decoding `rows` ([`output_reserve`]).
    pub(crate) fn reserve_for(&self, rows: Range<usize>) -> Result<usize> {
        let len = checked_len(self.check_rows(&rows)?, self.width)?;
        let stored = self.layout.byte_range(self.chunks_for_rows(rows)).len();
        Ok(output_reserve(len, stored as u64))
    }

    /// Decodes rows `rows` and appends their values to `values` (values under nulls as
    /// stored, i.e. zero) and their validity to `validity` when given. The buffer grows
    /// chunk by chunk as each decodes, so a page whose chunks lie about their size fails
    /// before more than one chunk's worth is allocated. Whole chunks are decoded straight
    /// into the buffer's spare capacity, without zeroing it first. On error, `values` and
    /// `validity` keep the length they had.
    pub fn decode_append(
        &self,
        rows: Range<usize>,
        values: &mut MutableBuffer,
        mut validity: Option<&mut BooleanBufferBuilder>,
    ) -> Result<()> {
        self.check_rows(&rows)?;
        let (values_len, validity_len) = (values.len(), validity.as_ref().map(|v| v.len()));
        let mut scratch = Vec::new();
        let mut partial = MutableBuffer::new(0);
        for piece in self.pieces(rows) {
            let appended = self.append_piece(
                &piece,
                values,
                validity.as_deref_mut(),
                &mut scratch,
                &mut partial,
            );
            if let Err(e) = appended {
                values.truncate(values_len);
                if let (Some(v), Some(len)) = (validity, validity_len) {
                    v.truncate(len);
                }
                return Err(e);
            }
        }
        Ok(())
    }

    /// Appends the values of `piece` to `values`, and their validity to `validity`.
    fn append_piece(
        &self,
        piece: &Piece,
        values: &mut MutableBuffer,
        validity: Option<&mut BooleanBufferBuilder>,
        scratch: &mut Vec<u8>,
        partial: &mut MutableBuffer,
    ) -> Result<()> {
        let chunk = &self.layout.chunks()[piece.chunks.start];
        let whole = piece.rows.len() == chunk.num_values && piece.kind == Run::Single;
        if piece.kind == Run::Plain {
            let bytes = self.run_bytes(piece);
            self.decompressor
                .decompress_uncompressed_chunks_append(bytes, chunk.num_values, values, scratch)
                .map_err(|e| in_run(e, piece))?;
            if let Some(validity) = validity {
                validity.append_n(piece.rows.len(), true);
            }
            return Ok(());
        }
        if !whole {
            let start = values.len();
            values.extend_zeros(piece.rows.len() * self.width);
            return self.decode_piece(
                piece,
                &mut values.as_slice_mut()[start..],
                validity,
                scratch,
                partial,
            );
        }
        let index = piece.chunks.start;
        let bytes = &self.data[chunk.offset..chunk.offset + chunk.num_bytes];
        let (bitmap, encoded) = split_validity(bytes, chunk, index)?;
        self.decompressor
            .decompress_append(encoded, chunk.num_values, chunk.storage, values, scratch)
            .map_err(|e| in_chunk(e, index))?;
        if let Some(validity) = validity {
            match bitmap {
                Some(bits) => validity.append_packed_range(0..chunk.num_values, bits),
                None => validity.append_n(chunk.num_values, true),
            }
        }
        Ok(())
    }

    /// Decodes rows `rows` into `values` (exactly `rows.len() * width` bytes, values under
    /// nulls as stored, i.e. zero) and appends their validity to `validity` when given.
    /// Whole chunks are decoded straight into `values`; the allocations are one scratch
    /// buffer per call, none per chunk.
    pub fn decode_into(
        &self,
        rows: Range<usize>,
        values: &mut [u8],
        mut validity: Option<&mut BooleanBufferBuilder>,
    ) -> Result<()> {
        let len = self.check_rows(&rows)?;
        let expected = checked_len(len, self.width)?;
        if values.len() != expected {
            return Err(Error::invalid(format!(
                "output holds {} bytes, rows {rows:?} need {expected}",
                values.len()
            )));
        }
        let w = self.width;
        let mut scratch = Vec::new();
        let mut partial = MutableBuffer::new(0);
        for piece in self.pieces(rows.clone()) {
            let out = (piece.rows.start - rows.start) * w..(piece.rows.end - rows.start) * w;
            self.decode_piece(
                &piece,
                &mut values[out],
                validity.as_deref_mut(),
                &mut scratch,
                &mut partial,
            )?;
        }
        Ok(())
    }

    /// What decoding rows `rows` takes, in order: runs of whole chunks of one size without
    /// validity (decoded by one decompressor call for all of them: stored uncompressed at
    /// the values' width, or as the encoding wrote them), and single chunks (possibly
    /// only some of their rows) otherwise.
    fn pieces(&self, rows: Range<usize>) -> impl Iterator<Item = Piece> + '_ {
        let chunks = self.layout.chunks();
        let touched = self.chunks_for_rows(rows.clone());
        let mut index = touched.start;
        std::iter::from_fn(move || {
            if index >= touched.end {
                return None;
            }
            let first = &chunks[index];
            // Whole chunks of one size, stored as the encoding wrote them, without
            // validity: decoded by one call, which may decode them side by side.
            let whole_coded = |c: &ChunkLocation| {
                rows.start <= c.first_row
                    && c.first_row + c.num_values <= rows.end
                    && !c.has_validity
                    && c.storage == ChunkStorage::Raw
                    && c.num_values == first.num_values
            };
            // Those of them stored at the values' width, uncompressed.
            let whole_plain = |c: &ChunkLocation| {
                whole_coded(c) && Some(c.num_bytes) == first.num_values.checked_mul(self.width)
            };
            let mut end = index;
            let mut kind = Run::Plain;
            while end < touched.end && whole_plain(&chunks[end]) {
                end += 1;
            }
            if end <= index + 1 {
                end = index;
                kind = Run::Coded;
                // A run's output is set aside before any chunk of it decodes, so a run
                // grows only while its stored bytes justify its values: a hostile
                // table's tiny chunks claiming many values decode one at a time, each
                // failing before the next is allocated.
                let (mut stored, mut values) = (0usize, 0usize);
                while end < touched.end && whole_coded(&chunks[end]) {
                    stored = stored.saturating_add(chunks[end].num_bytes);
                    values =
                        values.saturating_add(chunks[end].num_values.saturating_mul(self.width));
                    if values
                        > stored
                            .saturating_mul(RUN_EXPANSION)
                            .saturating_add(RUN_SLACK)
                    {
                        break;
                    }
                    end += 1;
                }
            }
            let piece = if end > index + 1 {
                let last = &chunks[end - 1];
                Piece {
                    chunks: index..end,
                    rows: first.first_row..last.first_row + last.num_values,
                    kind,
                }
            } else {
                end = index + 1;
                Piece {
                    chunks: index..end,
                    rows: rows.start.max(first.first_row)
                        ..rows.end.min(first.first_row + first.num_values),
                    kind: Run::Single,
                }
            };
            index = end;
            Some(piece)
        })
    }

    /// Decodes `piece` into `out` (exactly its rows' bytes).
    fn decode_piece(
        &self,
        piece: &Piece,
        out: &mut [u8],
        validity: Option<&mut BooleanBufferBuilder>,
        scratch: &mut Vec<u8>,
        partial: &mut MutableBuffer,
    ) -> Result<()> {
        if piece.kind == Run::Coded {
            let chunks: Vec<&[u8]> = self.layout.chunks()[piece.chunks.clone()]
                .iter()
                .map(|c| &self.data[c.offset..c.offset + c.num_bytes])
                .collect();
            let num_values = self.layout.chunks()[piece.chunks.start].num_values;
            self.decompressor
                .decompress_chunks_into(&chunks, num_values, out, scratch)
                .map_err(|e| in_run(e, piece))?;
            if let Some(validity) = validity {
                validity.append_n(piece.rows.len(), true);
            }
            return Ok(());
        }
        if piece.kind == Run::Single {
            return self.decode_chunk_rows(
                piece.chunks.start,
                piece.rows.clone(),
                out,
                validity,
                scratch,
                partial,
            );
        }
        let num_values = self.layout.chunks()[piece.chunks.start].num_values;
        self.decompressor
            .decompress_uncompressed_chunks_into(self.run_bytes(piece), num_values, out, scratch)
            .map_err(|e| in_run(e, piece))?;
        if let Some(validity) = validity {
            validity.append_n(piece.rows.len(), true);
        }
        Ok(())
    }

    /// The stored bytes of the run of chunks `piece`.
    fn run_bytes(&self, piece: &Piece) -> &[u8] {
        let chunks = &self.layout.chunks()[piece.chunks.clone()];
        let (first, last) = (&chunks[0], &chunks[chunks.len() - 1]);
        &self.data[first.offset..last.offset + last.num_bytes]
    }

    /// Decodes rows `rows` (all within chunk `index`) into `out`.
    fn decode_chunk_rows(
        &self,
        index: usize,
        rows: Range<usize>,
        out: &mut [u8],
        validity: Option<&mut BooleanBufferBuilder>,
        scratch: &mut Vec<u8>,
        partial: &mut MutableBuffer,
    ) -> Result<()> {
        let chunk = &self.layout.chunks()[index];
        let bytes = &self.data[chunk.offset..chunk.offset + chunk.num_bytes];
        let (bitmap, encoded) = split_validity(bytes, chunk, index)?;
        let n = chunk.num_values;
        if rows.len() == n {
            self.decompressor
                .decompress_into(encoded, n, chunk.storage, out, scratch)
                .map_err(|e| in_chunk(e, index))?;
        } else {
            let local = rows.start - chunk.first_row..rows.end - chunk.first_row;
            self.decompressor
                .decompress_rows_into(encoded, n, chunk.storage, local, out, scratch, partial)
                .map_err(|e| in_chunk(e, index))?;
        }
        if let Some(validity) = validity {
            let local = rows.start - chunk.first_row..rows.end - chunk.first_row;
            match bitmap {
                Some(bits) => validity.append_packed_range(local, bits),
                None => validity.append_n(local.len(), true),
            }
        }
        Ok(())
    }

    fn check_rows(&self, rows: &Range<usize>) -> Result<usize> {
        if rows.start > rows.end || rows.end > self.num_values() {
            return Err(Error::invalid(format!(
                "rows {rows:?} are outside the page's {} rows",
                self.num_values()
            )));
        }
        Ok(rows.end - rows.start)
    }
}

/// How many times its stored bytes, plus [`RUN_SLACK`], a run of coded chunks may decode
/// to: past it the chunks decode one at a time. Entropy-coded chunks of real series
/// take a third to a half of their values' bytes; chunks that shrink further (a constant)
/// decode fast alone.
const RUN_EXPANSION: usize = 8;

/// Bytes of values any run of coded chunks may decode to, whatever its stored bytes.
const RUN_SLACK: usize = 64 << 10;

/// Names the run of chunks in a corruption error from a run decoder.
fn in_run(e: Error, piece: &Piece) -> Error {
    match e {
        Error::Corrupt { message } => Error::corrupt(format!(
            "chunks {}..{}: {message}",
            piece.chunks.start, piece.chunks.end
        )),
        other => other,
    }
}

/// A part of a row range that is decoded by one call: a run of whole chunks, or one
/// chunk.
struct Piece {
    chunks: Range<usize>,
    rows: Range<usize>,
    kind: Run,
}

/// What a [`Piece`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Run {
    /// One chunk, or some of its rows.
    Single,
    /// Two or more whole chunks stored uncompressed at the values' width.
    Plain,
    /// Two or more other whole chunks of one size, as the encoding wrote them.
    Coded,
}

/// Builds an array of `data_type` holding `len` values from their decoded bytes and
/// optional validity; an all-valid validity is dropped.
pub(crate) fn build_array(
    data_type: &DataType,
    values: MutableBuffer,
    len: usize,
    validity: Option<BooleanBufferBuilder>,
) -> Result<ArrayRef> {
    let nulls = validity
        .map(|mut v| NullBuffer::new(v.finish()))
        .filter(|n| n.null_count() > 0);
    let width = value_width(data_type)?;
    if values.len() != checked_len(len, width)? {
        return Err(Error::invalid(format!(
            "{} bytes do not hold {len} values of {data_type}",
            values.len()
        )));
    }
    let fail = |e: ArrowError| Error::invalid(format!("building a {data_type} array: {e}"));
    // The float types directly (a quarter of a 4 KiB page's decode went to building and
    // checking a generic ArrayData); every other type through ArrayData. `values` comes
    // from a MutableBuffer, aligned for any primitive type.
    if data_type == &DataType::Boolean {
        // A byte per value in pages: anything but 0 or 1 was not written by an encoder.
        let bytes = values.as_slice();
        if let Some(at) = bytes.iter().position(|&b| b > 1) {
            return Err(Error::corrupt(format!(
                "boolean value {at} is stored as {}, not 0 or 1",
                bytes[at]
            )));
        }
        let bits = BooleanBuffer::collect_bool(len, |i| bytes[i] != 0);
        return Ok(Arc::new(BooleanArray::new(bits, nulls)));
    }
    let values: Buffer = values.into();
    match data_type {
        DataType::Float16 => Ok(Arc::new(
            Float16Array::try_new(ScalarBuffer::new(values, 0, len), nulls).map_err(fail)?,
        )),
        DataType::Float32 => Ok(Arc::new(
            Float32Array::try_new(ScalarBuffer::new(values, 0, len), nulls).map_err(fail)?,
        )),
        DataType::Float64 => Ok(Arc::new(
            Float64Array::try_new(ScalarBuffer::new(values, 0, len), nulls).map_err(fail)?,
        )),
        _ => {
            let data = ArrayData::builder(data_type.clone())
                .len(len)
                .add_buffer(values)
                .nulls(nulls)
                .build()
                .map_err(fail)?;
            Ok(make_array(data))
        }
    }
}

fn in_chunk(e: Error, index: usize) -> Error {
    match e {
        Error::Corrupt { message } => Error::corrupt(format!("chunk {index}: {message}")),
        other => other,
    }
}

/// Splits a chunk into its validity bitmap (if any) and its encoded values, checking that
/// the bitmap's padding bits are zero.
fn split_validity<'b>(
    bytes: &'b [u8],
    chunk: &ChunkLocation,
    index: usize,
) -> Result<(Option<&'b [u8]>, &'b [u8])> {
    if !chunk.has_validity {
        return Ok((None, bytes));
    }
    let n = chunk.num_values;
    let (bitmap, rest) = bytes.split_at(n.div_ceil(8));
    if !n.is_multiple_of(8) && bitmap[bitmap.len() - 1] >> (n % 8) != 0 {
        return Err(Error::corrupt(format!(
            "chunk {index}: validity padding bits are set"
        )));
    }
    Ok((Some(bitmap), rest))
}
