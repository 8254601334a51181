//! Flat (plain) encoding: each chunk holds its values as they are, little-endian.
//!
//! `ArrayEncoding { flat: { bits_per_value: 32 } }`. Its chunking is the same as BSS's, so
//! a flat page can be read chunk by chunk too, and wrapped in general compression.

use arrow_buffer::MutableBuffer;

use super::{
    check_output, check_uncompressed_run, checked_len, uncompressed_run_chunk_len, ChunkShape,
    ChunkStorage, MiniBlockCompressor, MiniBlockDecompressor,
};
use crate::error::{Error, Result};
use crate::proto::encodings::{array_encoding, ArrayEncoding, Flat};

/// Writes chunks of values as they are.
#[derive(Debug, Clone)]
pub struct FlatEncoder {
    shape: ChunkShape,
}

impl FlatEncoder {
    /// An encoder for values of `bits_per_value` bits, a multiple of 8 (32 and 64 for
    /// floats); anything else is an error.
    pub fn try_new(bits_per_value: u64) -> Result<Self> {
        Ok(Self {
            shape: ChunkShape::from_bits(bits_per_value)?,
        })
    }

    /// The same encoder with chunks of `chunk_values` values (a power of two up to
    /// 65536) instead of the default 4 KiB.
    pub fn with_chunk_values(self, chunk_values: usize) -> Result<Self> {
        Ok(Self {
            shape: self.shape.with_chunk_values(chunk_values)?,
        })
    }
}

impl MiniBlockCompressor for FlatEncoder {
    fn value_width(&self) -> usize {
        self.shape.width
    }

    fn chunk_values(&self) -> usize {
        self.shape.chunk_values
    }

    fn array_encoding(&self) -> ArrayEncoding {
        ArrayEncoding {
            array_encoding: Some(array_encoding::ArrayEncoding::Flat(Flat {
                bits_per_value: self.shape.width as u64 * 8,
                buffer: None,
                compression: None,
            })),
        }
    }

    fn compress_chunk(
        &self,
        values: &[u8],
        out: &mut Vec<u8>,
        _: &mut Vec<u8>,
    ) -> Result<ChunkStorage> {
        self.shape.check_chunk(values)?;
        out.extend_from_slice(values);
        Ok(ChunkStorage::Raw)
    }

    fn compress_uncompressed_chunks(&self, values: &[u8], out: &mut Vec<u8>) -> bool {
        if !values
            .len()
            .is_multiple_of(self.shape.chunk_values * self.shape.width)
        {
            return false;
        }
        out.extend_from_slice(values);
        true
    }
}

/// Reads chunks written by [`FlatEncoder`].
#[derive(Debug, Clone)]
pub struct FlatDecompressor {
    width: usize,
}

impl FlatDecompressor {
    pub(crate) fn with_width(width: usize) -> Self {
        Self { width }
    }
}

/// Checks a raw chunk of a fixed-width encoding: stored raw, exactly `num_values * width`
/// bytes, and an output of the same size.
pub(crate) fn check_raw_chunk(
    name: &str,
    chunk: &[u8],
    num_values: usize,
    storage: ChunkStorage,
    out: &[u8],
    width: usize,
) -> Result<()> {
    check_output(out, num_values, width)?;
    check_raw_chunk_len(name, chunk, num_values, storage, width)
}

/// Checks a chunk of an encoding without compression: stored raw, exactly `num_values`
/// values of `width` bytes.
pub(crate) fn check_raw_chunk_len(
    name: &str,
    chunk: &[u8],
    num_values: usize,
    storage: ChunkStorage,
    width: usize,
) -> Result<()> {
    let len = checked_len(num_values, width)?;
    if storage != ChunkStorage::Raw {
        return Err(Error::corrupt(format!(
            "{name} chunk is marked compressed but the encoding has no compression"
        )));
    }
    if chunk.len() != len {
        return Err(Error::corrupt(format!(
            "{name} chunk of {num_values} values must hold {len} bytes, found {}",
            chunk.len()
        )));
    }
    Ok(())
}

impl MiniBlockDecompressor for FlatDecompressor {
    fn value_width(&self) -> usize {
        self.width
    }

    fn max_expansion(&self) -> usize {
        1
    }

    fn raw_chunks_are_values(&self) -> bool {
        true
    }

    fn decompress_into(
        &self,
        chunk: &[u8],
        num_values: usize,
        storage: ChunkStorage,
        out: &mut [u8],
        _: &mut Vec<u8>,
    ) -> Result<()> {
        check_raw_chunk("flat", chunk, num_values, storage, out, self.width)?;
        out.copy_from_slice(chunk);
        Ok(())
    }

    fn decompress_uncompressed_chunks_into(
        &self,
        chunks: &[u8],
        num_values: usize,
        out: &mut [u8],
        _: &mut Vec<u8>,
    ) -> Result<()> {
        check_uncompressed_run(chunks, num_values, self.width, out)?;
        out.copy_from_slice(chunks);
        Ok(())
    }

    fn decompress_append(
        &self,
        chunk: &[u8],
        num_values: usize,
        storage: ChunkStorage,
        out: &mut MutableBuffer,
        _: &mut Vec<u8>,
    ) -> Result<()> {
        check_raw_chunk_len("flat", chunk, num_values, storage, self.width)?;
        out.extend_from_slice(chunk);
        Ok(())
    }

    fn decompress_uncompressed_chunks_append(
        &self,
        chunks: &[u8],
        num_values: usize,
        out: &mut MutableBuffer,
        _: &mut Vec<u8>,
    ) -> Result<()> {
        uncompressed_run_chunk_len(chunks, num_values, self.width)?;
        out.extend_from_slice(chunks);
        Ok(())
    }
}
