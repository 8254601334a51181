//! Byte Stream Split (BSS) over each miniblock chunk.
//!
//! A chunk of `n` values of `W` bytes becomes `W` streams of `n` bytes: stream `j` holds
//! byte `j` of every value, in order. Splitting is local to the chunk, so any chunk can be
//! decoded alone.
//!
//! Worked example: the f32 values `[1.0, 2.0, 3.0, 4.0]` are, little-endian,
//!
//! ```text
//! 1.0 = 00 00 80 3F    2.0 = 00 00 00 40    3.0 = 00 00 40 40    4.0 = 00 00 80 40
//! ```
//!
//! and their chunk holds stream 0 (`00 00 00 00`), stream 1 (`00 00 00 00`), stream 2
//! (`80 00 40 80`) and stream 3 (`3F 40 40 40`): the exponent bytes end up side by side,
//! which is what makes the chunk compress.
//!
//! ```
//! use miniblock::Encoding;
//! let values: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0].iter().flat_map(|v| v.to_le_bytes()).collect();
//! let mut chunk = Vec::new();
//! Encoding::Bss.compressor(32)?.compress_chunk(&values, &mut chunk, &mut Vec::new())?;
//! assert_eq!(
//!     chunk,
//!     [0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x00, 0x40, 0x80, 0x3F, 0x40, 0x40, 0x40]
//! );
//! # Ok::<(), miniblock::Error>(())
//! ```

use arrow_buffer::MutableBuffer;

use super::flat::{check_raw_chunk, check_raw_chunk_len};
use super::{
    check_uncompressed_run, uncompressed_run_chunk_len, ChunkShape, ChunkStorage,
    MiniBlockCompressor, MiniBlockDecompressor,
};
use crate::error::Result;
use crate::kernels;
use crate::proto::encodings::{array_encoding, ArrayEncoding, ByteStreamSplit};

/// Splits each chunk into byte streams.
#[derive(Debug, Clone)]
pub struct ByteStreamSplitEncoder {
    shape: ChunkShape,
}

impl ByteStreamSplitEncoder {
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

impl MiniBlockCompressor for ByteStreamSplitEncoder {
    fn value_width(&self) -> usize {
        self.shape.width
    }

    fn chunk_values(&self) -> usize {
        self.shape.chunk_values
    }

    fn array_encoding(&self) -> ArrayEncoding {
        ArrayEncoding {
            array_encoding: Some(array_encoding::ArrayEncoding::ByteStreamSplit(
                ByteStreamSplit {
                    bits_per_value: self.shape.width as u64 * 8,
                },
            )),
        }
    }

    fn compress_chunk(
        &self,
        values: &[u8],
        out: &mut Vec<u8>,
        _: &mut Vec<u8>,
    ) -> Result<ChunkStorage> {
        self.shape.check_chunk(values)?;
        kernels::split_append(values, out, self.shape.width);
        Ok(ChunkStorage::Raw)
    }

    fn compress_uncompressed_chunks(&self, values: &[u8], out: &mut Vec<u8>) -> bool {
        let chunk_len = self.shape.chunk_values * self.shape.width;
        if !values.len().is_multiple_of(chunk_len) {
            return false;
        }
        kernels::split_chunks_append(values, out, self.shape.width, chunk_len);
        true
    }
}

/// Joins the byte streams of each chunk back into values.
#[derive(Debug, Clone)]
pub struct ByteStreamSplitDecompressor {
    width: usize,
}

impl ByteStreamSplitDecompressor {
    pub(crate) fn with_width(width: usize) -> Self {
        Self { width }
    }
}

impl MiniBlockDecompressor for ByteStreamSplitDecompressor {
    fn value_width(&self) -> usize {
        self.width
    }

    fn max_expansion(&self) -> usize {
        1
    }

    fn decompress_into(
        &self,
        chunk: &[u8],
        num_values: usize,
        storage: ChunkStorage,
        out: &mut [u8],
        _: &mut Vec<u8>,
    ) -> Result<()> {
        check_raw_chunk(
            "byte_stream_split",
            chunk,
            num_values,
            storage,
            out,
            self.width,
        )?;
        kernels::unsplit(chunk, out, self.width);
        Ok(())
    }

    fn decompress_uncompressed_chunks_into(
        &self,
        chunks: &[u8],
        num_values: usize,
        out: &mut [u8],
        _: &mut Vec<u8>,
    ) -> Result<()> {
        let chunk_len = check_uncompressed_run(chunks, num_values, self.width, out)?;
        kernels::unsplit_chunks(chunks, out, self.width, chunk_len);
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
        check_raw_chunk_len("byte_stream_split", chunk, num_values, storage, self.width)?;
        kernels::unsplit_append(chunk, out, self.width);
        Ok(())
    }

    fn decompress_uncompressed_chunks_append(
        &self,
        chunks: &[u8],
        num_values: usize,
        out: &mut MutableBuffer,
        _: &mut Vec<u8>,
    ) -> Result<()> {
        let chunk_len = uncompressed_run_chunk_len(chunks, num_values, self.width)?;
        kernels::unsplit_chunks_append(chunks, out, self.width, chunk_len);
        Ok(())
    }
}
