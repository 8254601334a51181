//! Structure-aware pages that lie: a chunk table built from a few arbitrary entries
//! repeated up to 100,000 times (large claimed counts, log values up to 16, validity and
//! compressed flags, narrow or wide entries), a u64 value count, any encoding of widths 1
//! to 65,536 bytes, and chunk bytes that may start with a Zstd frame header claiming a
//! size; any of them may be wrapped in a fill of a value of the page's width, whose 5-byte
//! chunks can stand for a whole chunk of runs. Decoding must return Ok or Err, never panic, and never allocate more than the
//! bytes present justify (the run's -malloc_limit_mb catches that): one row per chunk is
//! asked for, and the whole page only when its claimed output is small.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use miniblock::{Encoding, PageDecoder};

#[derive(Debug, Arbitrary)]
struct Entry {
    num_bytes: u32,
    log_num_values: u8,
    flags: u8,
    /// Start the chunk's bytes with a Zstd frame header claiming this many bytes.
    zstd_claim: Option<u64>,
}

#[derive(Debug, Arbitrary)]
struct Claim {
    encoding: u8,
    width: u8,
    wide: bool,
    num_values: u64,
    entries: Vec<Entry>,
    repeat: u16,
    fill: Vec<u8>,
    /// Wrap the encoding in a fill of this byte repeated to the page's width.
    fill_value: Option<u8>,
}

const WIDTHS: [u64; 9] = [1, 2, 4, 8, 5, 16, 300, 16_384, 65_536];
/// Data bytes at most: the legitimate expansion of what is present (LZ4 256x, with a
/// partial chunk decoded through scratch) stays well under the malloc limit.
const MAX_DATA: usize = 256 * 1024;

fuzz_target!(|claim: Claim| {
    let encoding = Encoding::ALL[usize::from(claim.encoding) % Encoding::ALL.len()];
    let bits = WIDTHS[usize::from(claim.width) % WIDTHS.len()] * 8;
    let Ok(compressor) = encoding.compressor(bits) else {
        return;
    };
    let message = match claim.fill_value {
        None => compressor.array_encoding(),
        Some(byte) => {
            let value = vec![byte; compressor.value_width()];
            match miniblock::encodings::FillCompressor::new(value, compressor) {
                Ok(fill) => miniblock::encodings::MiniBlockCompressor::array_encoding(&fill),
                Err(_) => return,
            }
        }
    };
    if claim.entries.is_empty() {
        return;
    }
    let chunks = (usize::from(claim.repeat) % 100_000 + 1) * claim.entries.len();
    let chunks = chunks.min(100_000);
    let mut table = Vec::new();
    let mut data = Vec::new();
    for i in 0..chunks {
        let entry = &claim.entries[i % claim.entries.len()];
        let cap = if claim.wide { 1 << 20 } else { 0xFFFF };
        let size = (entry.num_bytes as usize % (cap + 1)).min(MAX_DATA - data.len().min(MAX_DATA));
        let start = data.len();
        if let Some(claimed) = entry.zstd_claim {
            data.extend_from_slice(&[0x28, 0xB5, 0x2F, 0xFD, 0xE0]);
            data.extend_from_slice(&claimed.to_le_bytes());
        }
        while data.len() < start + size {
            let at = data.len() % claim.fill.len().max(1);
            data.push(claim.fill.get(at).copied().unwrap_or(0));
        }
        data.truncate(start + size);
        let flags = entry.flags & 3;
        if claim.wide {
            table.extend_from_slice(&(size as u32).to_le_bytes());
            table.extend_from_slice(&[entry.log_num_values % 18, flags, 0, 0]);
        } else {
            table.extend_from_slice(&(size as u16).to_le_bytes());
            table.extend_from_slice(&[entry.log_num_values % 18, flags]);
        }
    }
    let header = chunks as u32 | if claim.wide { 1 << 31 } else { 0 };
    let mut page = header.to_le_bytes().to_vec();
    page.extend_from_slice(&table);
    page.extend_from_slice(&data);
    let Ok(decoder) = PageDecoder::try_new(&message, claim.num_values, &page) else {
        return;
    };
    for c in 0..decoder.num_chunks().min(64) {
        if let Ok(rows) = decoder.chunk_rows(c) {
            let _ = decoder.decode_range(rows.start..rows.start + 1);
        }
    }
    let output = decoder.num_values().saturating_mul(decoder.value_width());
    if output <= 64 << 20 {
        let _ = decoder.decode();
    }
});
