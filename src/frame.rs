//! Frames: one self-describing blob for one array, for codecs that are handed bytes and
//! nothing else (numcodecs' `decode`, a Zarr chunk, an HDF5 filter).
//!
//! A frame carries what a page alone does not: the value type (the Arrow type, the byte
//! order the caller's values had, and the numpy dtype where it says more), the array's
//! shape, and a checksum over every byte. Its values are one [page](crate::page): cut
//! into chunks that decode on their own, so a reader can decode a row range by touching
//! only the chunks it overlaps.
//!
//! # Layout (version 1)
//!
//! ```text
//! offset   size  field
//! 0        4     magic "MBFR" (4D 42 46 52)
//! 4        1     format version: 1
//! 5        3     reserved: zero
//! 8        4     H: header length, u32 little-endian
//! 12       H     header: protobuf `miniblock.frame.FrameHeader` (protos/frame.proto)
//! 12+H     P     page: EncodedPage::to_bytes (u32 header | chunk table | [buffers] | data)
//! 12+H+P   4     CRC32C (Castagnoli) of bytes 0..12+H+P, u32 little-endian
//! ```
//!
//! The page runs from the header's end to the checksum: its length is the frame's minus
//! `16 + H`. The header's `shape` multiplies out to its `num_values`, which is the page's
//! value count (the chunk table's counts add up to it); the page's values are
//! little-endian whatever `big_endian` says, and are swapped back to the caller's order
//! by [`FrameDecoder::decode_into`] and [`FrameDecoder::decode_values`].
//!
//! A reader checks, before it reads any value: the magic, the version, the reserved
//! bytes, the checksum, the header's type fields (as a column file's footer is checked),
//! the shape against the value count, and the whole chunk table against the page's
//! length. Decoding then allocates only what chunks really decode to, chunk by chunk
//! past a few times the frame's size, so a frame claiming 2^40 values is refused before
//! anything of that size is allocated.
//!
//! # Worked example
//!
//! The f32 array `[1.0, 2.0, 3.0, 4.0]`, shape `[4]`, encoded with `bss`, is 54 bytes:
//!
//! ```text
//! 4D 42 46 52  01  00 00 00          magic, version 1, reserved
//! 0E 00 00 00                        H = 14
//! 08 01                              field 1, value_type = FLOAT32 (1)
//! 4A 01 04                           field 9, shape = [4] (packed)
//! 50 04                              field 10, num_values = 4
//! 5A 05 AA 01 02 08 20               field 11, encoding: ArrayEncoding field 21,
//!                                      ByteStreamSplit { bits_per_value: 32 }
//! 01 00 00 00                        page: one chunk, narrow table
//! 10 00 00 00                          chunk 0: 16 bytes, the last chunk, no flags
//! 00 00 00 00 00 00 00 00              stream 0, stream 1
//! 80 00 40 80 3F 40 40 40              stream 2, stream 3
//! 10 E3 E9 BA                        CRC32C of the 50 bytes before it
//! ```
//!
//! (`tests/frame.rs` builds these bytes and checks them, the checksum included.)
//!
//! ```
//! use miniblock::frame::{self, FrameDecoder, FrameOptions, FrameType};
//! use arrow_schema::DataType;
//!
//! let values: Vec<u8> = [1.0f64, -0.0, f64::NAN, 4.0, 5.0, 6.0]
//!     .iter()
//!     .flat_map(|v| v.to_le_bytes())
//!     .collect();
//! let blob = frame::encode(
//!     &values,
//!     &FrameType::new(DataType::Float64),
//!     &[2, 3],
//!     None,
//!     &FrameOptions::default(),
//! )?;
//!
//! let frame = FrameDecoder::new(&blob)?;
//! assert_eq!(frame.shape(), &[2, 3]);
//! let mut out = vec![0u8; values.len()];
//! frame.decode_into(0..6, &mut out)?;
//! assert_eq!(out, values);
//! # Ok::<(), miniblock::Error>(())
//! ```

use std::ops::Range;

use arrow_array::ArrayRef;
use arrow_buffer::{BooleanBufferBuilder, Buffer, MutableBuffer, NullBuffer};
use arrow_schema::{DataType, TimeUnit};
use prost::Message;

use crate::encodings::{checked_len, describe, EncoderOptions, Strategy};
use crate::error::{Error, Result};
use crate::file::types::{column_type, set_column_type};
use crate::kernels::crc::crc32c;
use crate::page::{value_bytes, value_width, PageDecoder, PageEncoder};
use crate::proto::encodings::ArrayEncoding;
use crate::proto::file as file_pb;
use crate::proto::frame::FrameHeader;

/// The four bytes a frame starts with.
pub const MAGIC: [u8; 4] = *b"MBFR";

/// The frame format version this build writes and reads.
pub const VERSION: u8 = 1;

/// Bytes before the header: magic, version, reserved, header length.
const PREFIX: usize = 12;

/// Bytes of the trailing checksum.
const CRC_BYTES: usize = 4;

/// Most dimensions a frame's shape may have (numpy allows 64).
pub const MAX_RANK: usize = 64;

/// Longest numpy dtype string a frame may carry ("<M8[1000000us]" is 14).
const MAX_NUMPY_DTYPE: usize = 32;

/// A frame's value type: the Arrow type, the byte order of the caller's values, and the
/// numpy dtype they came from when it says more than the Arrow type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameType {
    data_type: DataType,
    big_endian: bool,
    numpy_dtype: Option<String>,
}

impl FrameType {
    /// Values of `data_type`, little-endian.
    pub fn new(data_type: DataType) -> Self {
        Self {
            data_type,
            big_endian: false,
            numpy_dtype: None,
        }
    }

    /// The same type with the caller's values in big-endian byte order (one-number types
    /// only: integers, floats, dates, times, timestamps, durations).
    pub fn big_endian(mut self, big_endian: bool) -> Result<Self> {
        if big_endian && !swappable(&self.data_type) {
            return Err(Error::invalid(format!(
                "{} values have no big-endian form miniblock knows",
                self.data_type
            )));
        }
        self.big_endian = big_endian;
        Ok(self)
    }

    /// The type of a numpy dtype given as its `dtype.str` (`"<f8"`, `">i4"`, `"|u1"`,
    /// `"|b1"`, `"<f2"`, `"<M8[ms]"`, `"<m8[10s]"`): floats, signed and unsigned integers, booleans,
    /// datetime64 and timedelta64 in any unit. Datetimes and timedeltas in seconds to
    /// nanoseconds are Arrow timestamps (without a time zone) and durations; in other
    /// units, 64-bit integers. Other dtypes (complex, structured, objects, strings) are
    /// refused.
    pub fn from_numpy(dtype: &str) -> Result<Self> {
        let parsed = NumpyDtype::parse(dtype)?;
        Ok(Self {
            data_type: parsed.data_type(),
            big_endian: parsed.big_endian,
            numpy_dtype: Some(dtype.to_owned()),
        })
    }

    /// The Arrow type.
    pub fn data_type(&self) -> &DataType {
        &self.data_type
    }

    /// Whether the caller's values are big-endian.
    pub fn is_big_endian(&self) -> bool {
        self.big_endian
    }

    /// Bytes per value.
    pub fn value_width(&self) -> Result<usize> {
        value_width(&self.data_type)
    }

    /// The numpy dtype (`dtype.str`) values of this type are returned as: the one they
    /// came from, or the Arrow type's: floats and integers as themselves, timestamps as
    /// `datetime64`, durations as `timedelta64` (in their unit), booleans as `bool`, Date64 as
    /// `datetime64[ms]`, Date32 and Time32 as `int32`, Time64 as `int64`, and the rest
    /// (decimals, intervals, fixed-size binaries) as raw bytes (`|V<width>`).
    pub fn numpy_dtype(&self) -> Result<String> {
        if let Some(dtype) = &self.numpy_dtype {
            return Ok(dtype.clone());
        }
        let order = if self.big_endian { '>' } else { '<' };
        let unit = |u: &TimeUnit| match u {
            TimeUnit::Second => "s",
            TimeUnit::Millisecond => "ms",
            TimeUnit::Microsecond => "us",
            TimeUnit::Nanosecond => "ns",
        };
        let width = self.value_width()?;
        Ok(match &self.data_type {
            DataType::Float16 | DataType::Float32 | DataType::Float64 => format!("{order}f{width}"),
            DataType::Int8 => "|i1".to_owned(),
            DataType::UInt8 => "|u1".to_owned(),
            DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::Date32
            | DataType::Time32(_)
            | DataType::Time64(_) => format!("{order}i{width}"),
            DataType::UInt16 | DataType::UInt32 | DataType::UInt64 => format!("{order}u{width}"),
            DataType::Timestamp(u, _) => format!("{order}M8[{}]", unit(u)),
            DataType::Duration(u) => format!("{order}m8[{}]", unit(u)),
            DataType::Date64 => format!("{order}M8[ms]"),
            DataType::Boolean => "|b1".to_owned(),
            _ => format!("|V{width}"),
        })
    }
}

/// Types whose values are one little-endian number, so that a byte swap turns them into
/// their big-endian form.
fn swappable(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Float16
            | DataType::Float32
            | DataType::Float64
            | DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::UInt8
            | DataType::UInt16
            | DataType::UInt32
            | DataType::UInt64
            | DataType::Date32
            | DataType::Date64
            | DataType::Time32(_)
            | DataType::Time64(_)
            | DataType::Timestamp(..)
            | DataType::Duration(_)
    )
}

/// numpy's datetime64/timedelta64 units.
const DATETIME_UNITS: [&str; 13] = [
    "Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "ps", "fs", "as",
];

/// A numpy dtype string, parsed.
struct NumpyDtype {
    big_endian: bool,
    kind: u8,
    size: usize,
    /// datetime64/timedelta64 only: the unit with its multiplier ("ms", "10s").
    unit: Option<String>,
}

impl NumpyDtype {
    fn parse(dtype: &str) -> Result<Self> {
        let refuse = |why: &str| {
            Error::invalid(format!(
                "numpy dtype {dtype:?}: {why}; miniblock takes floats, integers, booleans, datetime64 and timedelta64"
            ))
        };
        if dtype.len() > MAX_NUMPY_DTYPE || !dtype.is_ascii() {
            return Err(refuse("not a dtype string"));
        }
        let bytes = dtype.as_bytes();
        let (&order, rest) = bytes.split_first().ok_or_else(|| refuse("empty"))?;
        let (&kind, rest) = rest.split_first().ok_or_else(|| refuse("no kind"))?;
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        let size: usize = std::str::from_utf8(&rest[..digits])
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| refuse("no item size"))?;
        let rest = &rest[digits..];
        let unit = match (kind, rest) {
            (b'M' | b'm', [b'[', inner @ .., b']']) => {
                let unit = std::str::from_utf8(inner).map_err(|_| refuse("bad unit"))?;
                let number = unit.bytes().take_while(u8::is_ascii_digit).count();
                let (count, name) = unit.split_at(number);
                if !DATETIME_UNITS.contains(&name) || count.starts_with('0') {
                    return Err(refuse("unknown datetime unit"));
                }
                Some(unit.to_owned())
            }
            (_, []) => None,
            _ => return Err(refuse("unexpected characters after the item size")),
        };
        let valid = match kind {
            b'f' => matches!(size, 2 | 4 | 8),
            b'i' | b'u' => matches!(size, 1 | 2 | 4 | 8),
            b'b' => size == 1,
            b'M' | b'm' => size == 8 && unit.is_some(),
            b'c' => {
                return Err(refuse(
                    "complex values are not supported (view them as floats)",
                ))
            }
            _ => false,
        };
        if !valid {
            return Err(refuse("unsupported kind or size"));
        }
        let big_endian = match (order, size) {
            (b'|', 1) | (b'<', _) => false,
            (b'>', s) if s > 1 => true,
            _ => return Err(refuse("byte order must be '<' or '>' ('|' for one byte)")),
        };
        Ok(Self {
            big_endian,
            kind,
            size,
            unit,
        })
    }

    fn data_type(&self) -> DataType {
        let time_unit = match self.unit.as_deref() {
            Some("s") => Some(TimeUnit::Second),
            Some("ms") => Some(TimeUnit::Millisecond),
            Some("us") => Some(TimeUnit::Microsecond),
            Some("ns") => Some(TimeUnit::Nanosecond),
            _ => None,
        };
        match (self.kind, self.size) {
            (b'f', 2) => DataType::Float16,
            (b'f', 4) => DataType::Float32,
            (b'f', _) => DataType::Float64,
            (b'i', 1) => DataType::Int8,
            (b'i', 2) => DataType::Int16,
            (b'i', 4) => DataType::Int32,
            (b'i', _) => DataType::Int64,
            (b'u' | b'b', 1) => DataType::UInt8,
            (b'u', 2) => DataType::UInt16,
            (b'u', 4) => DataType::UInt32,
            (b'u', _) => DataType::UInt64,
            (b'M', _) => time_unit.map_or(DataType::Int64, |u| DataType::Timestamp(u, None)),
            _ => time_unit.map_or(DataType::Int64, DataType::Duration),
        }
    }
}

/// How a frame's page is encoded.
#[derive(Debug, Clone, Default)]
pub struct FrameOptions {
    strategy: Strategy,
    encoder: EncoderOptions,
}

impl FrameOptions {
    #[must_use]
    /// `strategy` (`auto` by default), as the CLI names it: `"auto"`, `"auto:0"`,
    /// `"bss+lz4"`, `"alp+ans"`, ...
    pub fn with_strategy(mut self, strategy: Strategy) -> Self {
        self.strategy = strategy;
        self
    }

    /// Values per chunk (a power of two from 256 to 65536); `None`, the default, gives 4
    /// KiB chunks.
    pub fn with_chunk_values(mut self, chunk_values: Option<usize>) -> Result<Self> {
        self.encoder = self.encoder.with_chunk_values(chunk_values)?;
        Ok(self)
    }

    /// The strategy.
    pub fn strategy(&self) -> Strategy {
        self.strategy
    }

    /// Values per chunk asked for (`None`: 4 KiB chunks).
    pub fn chunk_values(&self) -> Option<usize> {
        self.encoder.chunk_values()
    }
}

/// Encodes `values` (the caller's bytes: values of `value_type` back to back, in its
/// byte order) of an array of `shape` (C order; its product is the value count) into one
/// frame; `nulls`, when given, marks the rows that are null.
pub fn encode(
    values: &[u8],
    value_type: &FrameType,
    shape: &[u64],
    nulls: Option<&NullBuffer>,
    options: &FrameOptions,
) -> Result<Vec<u8>> {
    let width = value_type.value_width()?;
    if !values.len().is_multiple_of(width) {
        return Err(Error::invalid(format!(
            "{} bytes is not a whole number of {width}-byte {} values",
            values.len(),
            value_type.data_type
        )));
    }
    let num_values = values.len() / width;
    let shape_values = shape_product(shape)?;
    if shape_values != num_values as u64 {
        return Err(Error::invalid(format!(
            "shape {shape:?} holds {shape_values} values, the buffer {num_values}"
        )));
    }
    let mut header = FrameHeader {
        big_endian: value_type.big_endian,
        numpy_dtype: value_type.numpy_dtype.clone(),
        shape: shape.to_vec(),
        num_values: num_values as u64,
        ..FrameHeader::default()
    };
    let mut column = file_pb::Column::default();
    set_column_type(&mut column, &value_type.data_type)?;
    copy_type_to_header(&column, &mut header);
    let encoder = PageEncoder::for_strategy(options.strategy, width, &options.encoder)?;
    let page = if value_type.big_endian && width > 1 {
        let mut little = values.to_vec();
        swap_bytes(&mut little, width);
        encoder.encode_values(&little, nulls)?
    } else {
        encoder.encode_values(values, nulls)?
    };
    header.encoding = Some(page.encoding.clone());
    let header_bytes = header.encode_to_vec();
    let page_bytes = page.to_bytes();
    let header_len =
        u32::try_from(header_bytes.len()).map_err(|_| Error::invalid("frame header over 4 GiB"))?;
    let mut out = Vec::with_capacity(PREFIX + header_bytes.len() + page_bytes.len() + CRC_BYTES);
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&[VERSION, 0, 0, 0]);
    out.extend_from_slice(&header_len.to_le_bytes());
    out.extend_from_slice(&header_bytes);
    out.extend_from_slice(&page_bytes);
    let crc = crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    Ok(out)
}

/// Encodes an Arrow array (any fixed-width type, nulls kept) of `shape` (`None`: one
/// dimension) into one frame, little-endian.
pub fn encode_array(
    array: &dyn arrow_array::Array,
    shape: Option<&[u64]>,
    options: &FrameOptions,
) -> Result<Vec<u8>> {
    let data_type = array.data_type().clone();
    let width = value_width(&data_type)?;
    let data = array.to_data();
    let values = value_bytes(&data, width)?;
    let len = [array.len() as u64];
    encode(
        &values,
        &FrameType::new(data_type),
        shape.unwrap_or(&len),
        array.logical_nulls().as_ref(),
        options,
    )
}

fn copy_type_to_header(column: &file_pb::Column, header: &mut FrameHeader) {
    header.value_type = column.value_type;
    header.time_unit = column.time_unit;
    header.timezone.clone_from(&column.timezone);
    header.precision = column.precision;
    header.scale = column.scale;
    header.byte_width = column.byte_width;
}

fn shape_product(shape: &[u64]) -> Result<u64> {
    if shape.len() > MAX_RANK {
        return Err(Error::invalid(format!(
            "a shape of {} dimensions (at most {MAX_RANK})",
            shape.len()
        )));
    }
    shape.iter().try_fold(1u64, |n, &d| {
        n.checked_mul(d)
            .ok_or_else(|| Error::invalid(format!("shape {shape:?} overflows a 64-bit count")))
    })
}

/// Swaps every `width`-byte value of `bytes` end for end.
fn swap_bytes(bytes: &mut [u8], width: usize) {
    if width > 1 {
        for value in bytes.chunks_exact_mut(width) {
            value.reverse();
        }
    }
}

/// A parsed, checked frame, ready to decode whole or by row range.
#[derive(Debug)]
pub struct FrameDecoder<'a> {
    value_type: FrameType,
    shape: Vec<u64>,
    encoding: ArrayEncoding,
    page: PageDecoder<'a>,
}

impl<'a> FrameDecoder<'a> {
    /// Checks `frame` (magic, version, checksum, header, chunk table) and makes a decoder
    /// over it; nothing proportional to the claimed value count is allocated.
    pub fn new(frame: &'a [u8]) -> Result<Self> {
        if frame.len() < PREFIX + CRC_BYTES {
            return Err(Error::truncated(format!(
                "a frame of {} bytes (at least {} are needed)",
                frame.len(),
                PREFIX + CRC_BYTES
            )));
        }
        if frame[..4] != MAGIC {
            return Err(Error::corrupt(
                "not a miniblock frame (it does not start with \"MBFR\")",
            ));
        }
        if frame[4] != VERSION {
            return Err(Error::unsupported(format!(
                "frame format version {} (this build reads version {VERSION})",
                frame[4]
            )));
        }
        if frame[5..8] != [0, 0, 0] {
            return Err(Error::corrupt("frame has non-zero reserved bytes"));
        }
        let (body, crc) = frame.split_at(frame.len() - CRC_BYTES);
        let stored = u32::from_le_bytes(crc.try_into().expect("4 bytes"));
        let actual = crc32c(body);
        if stored != actual {
            return Err(Error::corrupt(format!(
                "frame checksum mismatch (stored {stored:#010x}, computed {actual:#010x}): the bytes are damaged"
            )));
        }
        let header_len = u32::from_le_bytes(frame[8..12].try_into().expect("4 bytes")) as usize;
        let header_bytes = body.get(PREFIX..PREFIX + header_len).ok_or_else(|| {
            Error::truncated(format!(
                "frame of {} bytes ends inside its header of {header_len} bytes",
                frame.len()
            ))
        })?;
        let page_bytes = &body[PREFIX + header_len..];
        let header = FrameHeader::decode(header_bytes)
            .map_err(|e| Error::corrupt(format!("frame header: {e}")))?;
        let column = file_pb::Column {
            value_type: header.value_type,
            time_unit: header.time_unit,
            timezone: header.timezone.clone(),
            precision: header.precision,
            scale: header.scale,
            byte_width: header.byte_width,
            ..file_pb::Column::default()
        };
        let data_type = column_type(0, &column)?;
        let mut value_type = FrameType::new(data_type)
            .big_endian(header.big_endian)
            .map_err(|e| Error::corrupt(format!("frame header: {e}")))?;
        if let Some(dtype) = &header.numpy_dtype {
            let numpy = NumpyDtype::parse(dtype)
                .map_err(|e| Error::corrupt(format!("frame header: {e}")))?;
            if numpy.data_type() != value_type.data_type || numpy.big_endian != header.big_endian {
                return Err(Error::corrupt(format!(
                    "frame header: numpy dtype {dtype:?} does not match {}{}",
                    value_type.data_type,
                    if header.big_endian {
                        " (big-endian)"
                    } else {
                        ""
                    }
                )));
            }
            value_type.numpy_dtype = Some(dtype.clone());
        }
        let count = shape_product(&header.shape).map_err(|e| Error::corrupt(e.to_string()))?;
        if count != header.num_values {
            return Err(Error::corrupt(format!(
                "frame shape {:?} holds {count} values, its header says {}",
                header.shape, header.num_values
            )));
        }
        let encoding = header
            .encoding
            .ok_or_else(|| Error::corrupt("frame header has no encoding"))?;
        let page = PageDecoder::try_new(&encoding, header.num_values, page_bytes)?
            .with_data_type(&value_type.data_type)?;
        Ok(Self {
            value_type,
            shape: header.shape,
            encoding,
            page,
        })
    }

    /// The value type.
    pub fn value_type(&self) -> &FrameType {
        &self.value_type
    }

    /// The array's shape, in C order.
    pub fn shape(&self) -> &[u64] {
        &self.shape
    }

    /// Values in the frame.
    pub fn num_values(&self) -> usize {
        self.page.num_values()
    }

    /// Chunks in the frame's page.
    pub fn num_chunks(&self) -> usize {
        self.page.num_chunks()
    }

    /// The page's encoding message.
    pub fn encoding(&self) -> &ArrayEncoding {
        &self.encoding
    }

    /// The encoding, described as `inspect` does ("bss+lz4", "auto" picks show theirs).
    pub fn describe_encoding(&self) -> String {
        describe(&self.encoding)
    }

    /// Whether any chunk overlapping `rows` carries validity (it may still have no null).
    pub fn may_have_nulls(&self, rows: Range<usize>) -> bool {
        self.page.has_validity(rows)
    }

    /// Decodes rows `rows` (flat indices, C order) into `out` (exactly `rows.len()` values
    /// of the frame's width) in the caller's byte order, touching only the chunks the
    /// rows overlap. Rows that are null are an error: read those with
    /// [`decode_array`](Self::decode_array).
    pub fn decode_into(&self, rows: Range<usize>, out: &mut [u8]) -> Result<()> {
        let mut validity = self
            .page
            .has_validity(rows.clone())
            .then(|| BooleanBufferBuilder::new(rows.len()));
        self.page
            .decode_into(rows.clone(), out, validity.as_mut())?;
        if let Some(mut validity) = validity {
            refuse_nulls(&validity.finish(), &rows)?;
        }
        if self.value_type.big_endian {
            swap_bytes(out, self.page.value_width());
        }
        Ok(())
    }

    /// Decodes rows `rows` into a new buffer (64-byte aligned), in the caller's byte
    /// order. The buffer grows as chunks really decode past a few times the frame's size,
    /// so a frame that lies about its sizes fails before it costs more memory than that.
    /// Rows that are null are an error, as for [`decode_into`](Self::decode_into).
    pub fn decode_values(&self, rows: Range<usize>) -> Result<Buffer> {
        let len = rows.end.saturating_sub(rows.start);
        let reserve = self.page.reserve_for(rows.clone())?;
        let mut values = MutableBuffer::new(reserve);
        let mut validity = self
            .page
            .has_validity(rows.clone())
            .then(|| BooleanBufferBuilder::new(len.min(reserve / self.page.value_width() + 1)));
        self.page
            .decode_append(rows.clone(), &mut values, validity.as_mut())?;
        if let Some(mut validity) = validity {
            refuse_nulls(&validity.finish(), &rows)?;
        }
        debug_assert_eq!(values.len(), checked_len(len, self.page.value_width())?);
        if self.value_type.big_endian {
            swap_bytes(values.as_slice_mut(), self.page.value_width());
        }
        Ok(values.into())
    }

    /// Decodes rows `rows` to an Arrow array of the frame's type, nulls kept (Arrow
    /// arrays are little-endian whatever the caller's order was).
    pub fn decode_array(&self, rows: Range<usize>) -> Result<ArrayRef> {
        self.page.decode_range(rows)
    }
}

fn refuse_nulls(validity: &arrow_buffer::BooleanBuffer, rows: &Range<usize>) -> Result<()> {
    let nulls = validity.len() - validity.count_set_bits();
    if nulls > 0 {
        return Err(Error::invalid(format!(
            "rows {rows:?} hold {nulls} nulls, which raw values cannot show: decode them as an Arrow array (FrameDecoder::decode_array; in Python, miniblock.decode_arrow)"
        )));
    }
    Ok(())
}
