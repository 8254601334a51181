//! Fill: a page's dominant value (a grid's land mask, a sensor's "missing" marker) kept
//! out of the inner encoding, each chunk storing where its runs of it lie.
//!
//! Gridded climate and ocean data mark what has no value with one sentinel: `-1e34` over
//! land in an air temperature grid, `-1e10` under the sea floor in an ocean temperature
//! one. Such a value can fill almost half a page, in runs of a few dozen values between
//! real ones. Every encoding pays for it value by value: an entropy coder decodes a symbol
//! for each, ALP widens its integers to reach it. Here the value is named once, in the
//! message, and each chunk lists its runs of it; the inner encoding (any encoding but
//! another fill) codes only the values between the runs, back to back, as one shorter
//! chunk. Decoding the inner chunk is the work; putting the runs back is a copy.
//!
//! A value is the fill when its bytes equal the message's `value` exactly, so a NaN fill
//! matches only its own payload and `-0.0` never stands for `0.0`.
//!
//! ```text
//! fill chunk of n values of W bytes
//!   varint R                  how many runs of the fill value the chunk holds
//!   R times:
//!     varint gap              values before the run since the previous run's end (or the
//!                             chunk's start); at least 1 after the first run
//!     varint len              the run's length, at least 1
//!   inner chunk               the inner encoding's chunk of the n - (sum of len) other
//!                             values, in order; nothing when there are none
//! ```
//!
//! Varints are LEB128 (7 bits a byte, low first, at most 3 bytes: a chunk holds at most
//! 65536 values). The chunk table's compressed flag is the inner chunk's.
//!
//! The inner chunk may hold the fill value too: a chunk of no runs (`R` = 0) is the inner
//! encoding's chunk of all its values. The encoder writes one where that is smaller,
//! which happens where the fill is also an ordinary value of the series (`0.0` among
//! temperatures that cross it): taken out, each short run costs two header bytes and
//! breaks the differences the inner encoding codes. It tries it only on chunks of at most
//! four runs, or of short runs whose header is a sixteenth of the chunk or more
//! ([`worth_keeping_fills`]), so that grids whose sentinel comes in long runs are encoded
//! once a chunk.
//!
//! Worked example: the f32 values `[-1e34, -1e34, 1.0, 2.0, -1e34, 3.0]` with the fill
//! `-1e34` (`0xF7F684DF`, bytes `DF 84 F6 F7`) and BSS inside are the runs (gap 0, len 2)
//! and (gap 2, len 1), then BSS over `[1.0, 2.0, 3.0]`:
//!
//! ```text
//! 02 | 00 02 | 02 01 | 00 00 00 | 00 00 00 | 80 00 40 | 3F 40 40
//! R    run 0   run 1   stream 0   stream 1   stream 2   stream 3
//! ```
//!
//! (the unit test `worked_example` checks these bytes).
//!
//! A page whose runs are regular (the night hours of irradiance, 13 zeros then 11 values)
//! is a `coded_fill` page instead: its message carries entropy tables built from every
//! chunk's run header (`Fill.run_tables`), and each chunk's first varint is the run count
//! doubled, plus one when the pairs that follow are a coded stream (their byte count as a
//! varint, then the stream, in [`entropy`]'s format) rather than varints as above; the
//! encoder writes whichever is smaller. docs/format.md ("Fill pages") has the layout and
//! a worked example (the unit test `coded_header_worked_example` checks its bytes).

use std::fmt;

use arrow_buffer::MutableBuffer;

use super::entropy::{self, PageTables};
use super::{
    check_chunks_output, check_output, in_run_chunk, ChunkStorage, MiniBlockCompressor,
    MiniBlockDecompressor, MAX_CHUNK_BYTES, MAX_CHUNK_VALUES,
};
use super::{put_varint, varint_len};
use crate::error::{Error, Result};
use crate::proto::encodings::{array_encoding, ArrayEncoding, Fill};

/// A value is worth taking out of a page when it is at least this share of its values
/// (below, the runs' bytes and the trial of a second encoding rarely pay).
pub(crate) const MIN_SHARE: f64 = 0.125;

/// Values sampled, spread over the page, to find a candidate fill value.
const SAMPLE_VALUES: usize = 1024;

/// A chunk whose values take at most this many bytes is appended as any chunk is (its
/// claim cannot allocate much); a larger one has its runs and other values checked first.
const SMALL_CHUNK_BYTES: usize = 1 << 20;

/// Most bytes a varint of a count within a chunk takes.
const MAX_VARINT_BYTES: usize = 3;

/// The page's most frequent value (its bytes) when it makes up at least `min_share` of
/// the page's values of `width` bytes; found from a sample, its share counted exactly.
pub(crate) fn dominant(values: &[u8], width: usize, min_share: f64) -> Option<Vec<u8>> {
    if width == 0 || values.len() < width {
        return None;
    }
    let n = values.len() / width;
    let step = n.div_ceil(SAMPLE_VALUES).max(1);
    let mut sample: Vec<&[u8]> = (0..n)
        .step_by(step)
        .map(|i| &values[i * width..(i + 1) * width])
        .collect();
    sample.sort_unstable();
    let (mut best, mut best_count) = (sample[0], 0);
    for run in sample.chunk_by(|a, b| a == b) {
        if run.len() > best_count {
            (best, best_count) = (run[0], run.len());
        }
    }
    // A value below half the share in the sample is very unlikely to reach it in the page.
    if (best_count as f64) < min_share / 2.0 * sample.len() as f64 {
        return None;
    }
    let mut count = 0;
    each_value(values, best, |is_fill, _| count += usize::from(is_fill));
    (count as f64 >= min_share * n as f64).then(|| best.to_vec())
}

/// The mean length of the runs of `fill` in `values` (0 when there are none).
pub(crate) fn mean_run(values: &[u8], fill: &[u8]) -> f64 {
    let (mut fills, mut runs, mut previous) = (0usize, 0usize, false);
    each_value(values, fill, |is_fill, _| {
        fills += usize::from(is_fill);
        runs += usize::from(is_fill && !previous);
        previous = is_fill;
    });
    if runs == 0 {
        0.0
    } else {
        fills as f64 / runs as f64
    }
}

/// Calls `each(is_fill, value)` for each value of `values` (of `fill.len()` bytes), in
/// order. For widths of 1, 2, 4 and 8 bytes the compare is one of integers the loop
/// inlines: comparing slices calls `memcmp` for every value, which took a sixth of the
/// time `auto` spent encoding a page of a gridded field with a land mask.
#[inline]
fn each_value(values: &[u8], fill: &[u8], mut each: impl FnMut(bool, &[u8])) {
    #[inline]
    fn of_width<const W: usize>(values: &[u8], fill: &[u8], each: &mut impl FnMut(bool, &[u8])) {
        let Ok(fill) = <[u8; W]>::try_from(fill) else {
            return;
        };
        for v in values.chunks_exact(W) {
            // `chunks_exact(W)` gives `W` bytes: the conversion never falls back.
            let value = <[u8; W]>::try_from(v).unwrap_or([0; W]);
            each(value == fill, v);
        }
    }
    match fill.len() {
        1 => of_width::<1>(values, fill, &mut each),
        2 => of_width::<2>(values, fill, &mut each),
        4 => of_width::<4>(values, fill, &mut each),
        8 => of_width::<8>(values, fill, &mut each),
        0 => {}
        width => {
            for v in values.chunks_exact(width) {
                each(v == fill, v);
            }
        }
    }
}

/// The values of `values` other than `fill`, in order.
pub(crate) fn without(values: &[u8], fill: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(values.len());
    others_into(values, fill, &mut out);
    out
}

/// Appends the values of `values` other than `fill` to `out`, in order. Every value is
/// written, and the write position moves past it only when it is kept: no branch per
/// value, which a land mask's irregular runs would mispredict.
fn others_into(values: &[u8], fill: &[u8], out: &mut Vec<u8>) {
    #[inline]
    fn of_width<const W: usize>(values: &[u8], fill: &[u8], out: &mut Vec<u8>) {
        let Ok(fill) = <[u8; W]>::try_from(fill) else {
            return;
        };
        let start = out.len();
        out.resize(start + values.len(), 0);
        let kept = &mut out[start..];
        let mut at = 0;
        for v in values.chunks_exact(W) {
            let value = <[u8; W]>::try_from(v).unwrap_or([0; W]);
            // `at` is at most the bytes read so far, so the slot is always there.
            if let Some(slot) = kept.get_mut(at..at + W) {
                slot.copy_from_slice(&value);
            }
            at += W * usize::from(value != fill);
        }
        out.truncate(start + at);
    }
    match fill.len() {
        1 => of_width::<1>(values, fill, out),
        2 => of_width::<2>(values, fill, out),
        4 => of_width::<4>(values, fill, out),
        8 => of_width::<8>(values, fill, out),
        _ => {
            out.reserve(values.len());
            each_value(values, fill, |is_fill, v| {
                if !is_fill {
                    out.extend_from_slice(v);
                }
            });
        }
    }
}

/// Which values of `values` are `fill`, into `mask` (cleared first): bit `i % 64` of word
/// `i / 64` for value `i`, the bits past the last value clear. Runs are then found a word
/// at a time, by bit scans, rather than by a branch per value.
fn fill_mask(values: &[u8], fill: &[u8], mask: &mut Vec<u64>) {
    #[allow(clippy::inline_always)]
    #[inline(always)]
    fn of_width<const W: usize>(values: &[u8], fill: &[u8], mask: &mut Vec<u64>) {
        let Ok(fill) = <[u8; W]>::try_from(fill) else {
            return;
        };
        for group in values.chunks(64 * W) {
            let mut word = 0u64;
            for (i, v) in group.chunks_exact(W).enumerate() {
                let value = <[u8; W]>::try_from(v).unwrap_or([0; W]);
                word |= u64::from(value == fill) << i;
            }
            mask.push(word);
        }
    }
    mask.clear();
    match fill.len() {
        1 => of_width::<1>(values, fill, mask),
        2 => of_width::<2>(values, fill, mask),
        // Compares and bit gathers the compiler vectorises wider with AVX2 or AVX-512.
        4 => crate::kernels::with_wide_vectors(
            #[inline(always)]
            || of_width::<4>(values, fill, mask),
        ),
        8 => crate::kernels::with_wide_vectors(
            #[inline(always)]
            || of_width::<8>(values, fill, mask),
        ),
        0 => {}
        width => {
            for group in values.chunks(64 * width) {
                let mut word = 0u64;
                for (i, v) in group.chunks_exact(width).enumerate() {
                    word |= u64::from(v == fill) << i;
                }
                mask.push(word);
            }
        }
    }
}

/// The first value at or after `from`, of the `n` that `mask` covers, whose bit is `set`.
fn next_bit(mask: &[u64], from: usize, set: bool, n: usize) -> Option<usize> {
    let flip = if set { 0 } else { u64::MAX };
    let mut k = from / 64;
    let mut word = (mask.get(k)? ^ flip) & (u64::MAX << (from % 64));
    loop {
        if word != 0 {
            let at = k * 64 + word.trailing_zeros() as usize;
            return (at < n).then_some(at);
        }
        k += 1;
        word = mask.get(k)? ^ flip;
    }
}

/// How many runs of set bits `mask` holds.
fn run_count(mask: &[u64]) -> usize {
    let mut previous = 0u64;
    mask.iter()
        .map(|&word| {
            // A run starts where a bit is set and the one before it is not.
            let starts = word & !((word << 1) | (previous >> 63));
            previous = word;
            starts.count_ones() as usize
        })
        .sum()
}

/// The bytes the run headers of a page of `values`, cut into chunks of `chunk_values`
/// values, take with `fill` taken out (counted, not written).
pub(crate) fn header_bytes(values: &[u8], fill: &[u8], chunk_values: usize) -> usize {
    let mut mask = Vec::new();
    values
        .chunks(chunk_values.max(1) * fill.len().max(1))
        .map(|chunk| {
            fill_mask(chunk, fill, &mut mask);
            let mut bytes = varint_len(run_count(&mask));
            for_each_run(&mask, chunk.len() / fill.len().max(1), |gap, len| {
                bytes += varint_len(gap) + varint_len(len);
            });
            bytes
        })
        .sum()
}

/// Calls `run(gap, len)` for each run of set bits of `mask` (of `n` values), in order:
/// `gap` values since the last run's end (or the start), then `len` set ones.
fn for_each_run(mask: &[u64], n: usize, mut run: impl FnMut(usize, usize)) {
    let mut end = 0;
    while let Some(start) = next_bit(mask, end, true, n) {
        let stop = next_bit(mask, start, false, n).unwrap_or(n);
        run(start - end, stop - start);
        end = stop;
    }
}

/// Appends `chunk`'s run header to `out` (plain, or entropy-coded with `tables` where
/// that is smaller) and its values other than `fill` to `others`; returns its run count.
/// `mask`, `pairs` and `coded` are working space.
fn write_runs(
    chunk: &[u8],
    fill: &[u8],
    tables: Option<&PageTables>,
    out: &mut Vec<u8>,
    others: &mut Vec<u8>,
    work: &mut Work,
) -> Result<usize> {
    let runs = run_pairs(chunk, fill, &mut work.mask, &mut work.pairs);
    write_header(runs, &work.pairs, tables, out, &mut work.coded)?;
    others_into(chunk, fill, others);
    Ok(runs)
}

/// An encoder's working space for run headers.
#[derive(Default)]
struct Work {
    /// Which values of the chunk are the fill ([`fill_mask`]).
    mask: Vec<u64>,
    /// The varints of the chunk's (gap, length) pairs.
    pairs: Vec<u8>,
    /// Those pairs entropy-coded.
    coded: Vec<u8>,
}

/// Writes the varints of the (gap, length) pairs of `chunk`'s runs of `fill` to `pairs`;
/// returns how many runs there are.
fn run_pairs(chunk: &[u8], fill: &[u8], mask: &mut Vec<u64>, pairs: &mut Vec<u8>) -> usize {
    fill_mask(chunk, fill, mask);
    pairs.clear();
    let mut runs = 0;
    for_each_run(mask, chunk.len() / fill.len().max(1), |gap, len| {
        put_varint(pairs, gap);
        put_varint(pairs, len);
        runs += 1;
    });
    runs
}

/// A coded run header's pairs take at most this many times the bytes of their coded
/// stream: a decoder allocates no more for them than the chunk's bytes justify.
const MAX_HEADER_EXPANSION: usize = 32;

/// Appends the run header of `runs` runs whose pairs' varints are `pairs`: on a page
/// without run tables (`tables` is `None`) the count and the pairs; with them, the
/// count doubled (plus one when coded), then the pairs as they are, or their byte count
/// and their entropy-coded stream, whichever is smaller.
fn write_header(
    runs: usize,
    pairs: &[u8],
    tables: Option<&PageTables>,
    out: &mut Vec<u8>,
    coded: &mut Vec<u8>,
) -> Result<()> {
    let Some(tables) = tables else {
        put_varint(out, runs);
        out.extend_from_slice(pairs);
        return Ok(());
    };
    if runs > 0 && pairs.len() <= entropy::MAX_STREAM {
        coded.clear();
        entropy::encode(pairs, tables, coded)?;
        let coded_len = varint_len(2 * runs + 1) + varint_len(pairs.len()) + coded.len();
        if coded_len < varint_len(2 * runs) + pairs.len()
            && pairs.len() <= MAX_HEADER_EXPANSION * coded.len()
        {
            put_varint(out, 2 * runs + 1);
            put_varint(out, pairs.len());
            out.extend_from_slice(coded);
            return Ok(());
        }
    }
    put_varint(out, 2 * runs);
    out.extend_from_slice(pairs);
    Ok(())
}

/// Entropy tables for the run headers of `values` (a page, in chunks of `chunk_values`
/// values), or `None` when no table would make them smaller.
fn run_tables(values: &[u8], fill: &[u8], chunk_values: usize) -> Option<PageTables> {
    let mut work = Work::default();
    let mut streams = Vec::new();
    for chunk in values.chunks(chunk_values.max(1) * fill.len().max(1)) {
        if run_pairs(chunk, fill, &mut work.mask, &mut work.pairs) > 0 {
            let mut histogram = [0u32; 256];
            entropy::count(&work.pairs, &mut histogram);
            streams.push((0, histogram));
        }
    }
    let tables = PageTables::from_streams(&streams, 1.0);
    (!tables.is_empty()).then_some(tables)
}

/// Whether a chunk with `runs` runs of the fill (`filled` values in all), whose run
/// header took `header` of its `chunk` bytes, is worth encoding again with its fill
/// values left in: when its runs are few, or short (under 8 values on average) and their
/// header a sixteenth of the chunk or more. Those rules kept 99.9% of the bytes that
/// trying every chunk saved on `tmy3_all_cols` and the Levitus grid, for a third and a
/// tenth of the extra encoding; long runs of a sentinel far from the other values (the
/// land in the COADS grids) never gained.
fn worth_keeping_fills(runs: usize, filled: usize, header: usize, chunk: usize) -> bool {
    runs > 0 && (runs <= 4 || (filled < 8 * runs && header * 16 >= chunk))
}

/// Reads a varint of at most [`MAX_VARINT_BYTES`] at `*at`, moving past it.
fn read_varint(bytes: &[u8], at: &mut usize) -> Result<usize> {
    let mut v = 0usize;
    for i in 0..MAX_VARINT_BYTES {
        let b = *bytes
            .get(*at)
            .ok_or_else(|| Error::corrupt("fill chunk cut inside its run header"))?;
        *at += 1;
        v |= usize::from(b & 0x7F) << (7 * i);
        if b & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(Error::corrupt(format!(
        "fill chunk has a varint longer than {MAX_VARINT_BYTES} bytes"
    )))
}

/// A chunk's run header, read and checked against its value count: where its runs lie in
/// a list of runs that the chunks decoded together share.
struct Runs {
    /// Its runs in the list: indices of (gap, length) pairs, in values.
    at: std::ops::Range<usize>,
    /// Values in runs.
    filled: usize,
}

impl Runs {
    /// Parses the header at the start of `chunk` (of `num_values` values), appending its
    /// runs to `list`; returns it and the inner chunk after it. `tables` are a coded fill
    /// page's run tables (`None` on a plain fill page); `header` holds a coded header's
    /// decoded pairs.
    fn parse<'c>(
        chunk: &'c [u8],
        num_values: usize,
        tables: Option<&PageTables>,
        list: &mut Vec<(u32, u32)>,
        header: &mut Vec<u8>,
    ) -> Result<(Self, &'c [u8])> {
        let mut at = 0;
        let first = read_varint(chunk, &mut at)?;
        let (count, coded) = match tables {
            None => (first, false),
            Some(_) => (first >> 1, first & 1 == 1),
        };
        if count > num_values {
            return Err(Error::corrupt(format!(
                "fill chunk of {num_values} values claims {count} runs"
            )));
        }
        let Some(tables) = tables.filter(|_| coded) else {
            let (runs, used) = Self::read_pairs(&chunk[at..], count, num_values, list)?;
            return Ok((runs, &chunk[at + used..]));
        };
        let bytes = read_varint(chunk, &mut at)?;
        // A coded header holds at least one run (the encoder writes none coded).
        if count == 0 || bytes < 2 * count || bytes > 2 * MAX_VARINT_BYTES * count {
            return Err(Error::corrupt(format!(
                "fill chunk's coded header claims {bytes} bytes for {count} runs"
            )));
        }
        let stream = &chunk[at..];
        let coded_len = entropy::coded_len(stream, bytes)?;
        if bytes > MAX_HEADER_EXPANSION * coded_len {
            return Err(Error::corrupt(format!(
                "fill chunk's coded header of {coded_len} bytes claims {bytes} (at most \
                 {MAX_HEADER_EXPANSION} times its bytes)"
            )));
        }
        header.clear();
        header.resize(bytes, 0);
        let used = entropy::decode(stream, header, tables)?;
        let (runs, read) = Self::read_pairs(header, count, num_values, list)?;
        if read != bytes {
            return Err(Error::corrupt(format!(
                "fill chunk's coded header holds {bytes} bytes, its {count} runs take {read}"
            )));
        }
        Ok((runs, &stream[used..]))
    }

    /// Reads `count` (gap, length) pairs from the start of `bytes`, appending them to
    /// `list`; returns the runs and the bytes they took.
    fn read_pairs(
        bytes: &[u8],
        count: usize,
        num_values: usize,
        list: &mut Vec<(u32, u32)>,
    ) -> Result<(Self, usize)> {
        let mut at = 0;
        // A run takes at least two bytes: no more is reserved than the bytes can hold.
        list.reserve(count.min(bytes.len() / 2));
        let start = list.len();
        let (mut row, mut filled) = (0usize, 0usize);
        for r in 0..count {
            // Most gaps and runs are under 128 values: two one-byte varints.
            let (gap, len) = match bytes.get(at..at + 2) {
                Some(&[g, l]) if (g | l) & 0x80 == 0 => {
                    at += 2;
                    (usize::from(g), usize::from(l))
                }
                _ => (read_varint(bytes, &mut at)?, read_varint(bytes, &mut at)?),
            };
            if len == 0 || (r > 0 && gap == 0) {
                return Err(Error::corrupt(format!(
                    "fill chunk run {r} has gap {gap} and length {len} (runs are apart and not empty)"
                )));
            }
            row += gap + len;
            filled += len;
            // Both below 2^21 (three varint bytes).
            list.push((gap as u32, len as u32));
            if row > num_values {
                return Err(Error::corrupt(format!(
                    "fill chunk of {num_values} values has runs past its end (run {r} ends at {row})"
                )));
            }
        }
        let runs = Runs {
            at: start..list.len(),
            filled,
        };
        Ok((runs, at))
    }

    /// Writes `others` (the inner chunk's values, in order) into `out` with the runs of
    /// `fill` between them.
    fn expand(&self, list: &[(u32, u32)], fill: &[u8], others: &[u8], out: &mut [u8]) {
        let runs = &list[self.at.clone()];
        match fill.len() {
            4 => expand_width::<4>(runs, fill, others, out),
            8 => expand_width::<8>(runs, fill, others, out),
            2 => expand_width::<2>(runs, fill, others, out),
            _ => expand_width::<0>(runs, fill, others, out),
        }
    }
}

/// [`Runs::expand`] for values of `W` bytes (0: any width). Gaps and runs are a few dozen
/// values: a call to `memcpy` for each costs more than the copy, so for widths that divide
/// [`BLOCK`] both are written in whole blocks (one fixed copy of [`SHORT`] bytes when
/// they fit in it), each overshooting into the next gap or run, which overwrites it
/// (writes go strictly forward, and `others` is apart from `out`); near the end of either
/// buffer, value by value.
fn expand_width<const W: usize>(runs: &[(u32, u32)], fill: &[u8], others: &[u8], out: &mut [u8]) {
    let width = if W == 0 { fill.len() } else { W };
    let blocks = W != 0 && BLOCK.is_multiple_of(W);
    let mut pattern = [0u8; BLOCK];
    if blocks {
        for v in pattern.chunks_exact_mut(W) {
            v.copy_from_slice(fill);
        }
    }
    let (mut to, mut from) = (0, 0);
    // `parse` checked that the runs and gaps fit `out`.
    for &(gap, len) in runs {
        let (gap, len) = (gap as usize * width, len as usize * width);
        let (end, mut t, mut f) = (to + gap, to, from);
        if blocks && gap <= SHORT && t + SHORT <= out.len() && f + SHORT <= others.len() {
            // A short gap (most are): one copy of a fixed length, whatever the gap's, so
            // there is no loop exit to mispredict.
            out[t..t + SHORT].copy_from_slice(&others[f..f + SHORT]);
            t = end;
        }
        if blocks {
            while t < end && t + BLOCK <= out.len() && f + BLOCK <= others.len() {
                out[t..t + BLOCK].copy_from_slice(&others[f..f + BLOCK]);
                t += BLOCK;
                f += BLOCK;
            }
        }
        if t < end {
            out[t..end].copy_from_slice(&others[f..f + (end - t)]);
        }
        from += gap;
        to = end;
        let end = to + len;
        let mut t = to;
        if blocks && len <= SHORT && t + SHORT <= out.len() {
            for block in out[t..t + SHORT].chunks_exact_mut(BLOCK) {
                block.copy_from_slice(&pattern);
            }
            t = end;
        }
        if blocks {
            while t < end && t + BLOCK <= out.len() {
                out[t..t + BLOCK].copy_from_slice(&pattern);
                t += BLOCK;
            }
        }
        // `t` is past `end` or at a multiple of the width from `to`.
        for v in out[t.min(end)..end].chunks_exact_mut(width) {
            v.copy_from_slice(fill);
        }
        to = end;
    }
    out[to..].copy_from_slice(&others[from..]);
}

/// Bytes [`expand_width`] copies at a time.
const BLOCK: usize = 32;

/// Gaps and runs of at most this many bytes are written by one fixed copy of this many.
const SHORT: usize = 128;

/// A thread's buffers for fill chunks.
#[derive(Default)]
struct Buffers {
    /// The values other than the fill: while a chunk encodes, those taken out of it;
    /// while chunks decode, the inner chunks' values, apart from `out`, so that spreading
    /// them is a copy between buffers (moving them within `out` makes overlapping copies
    /// a few bytes apart, which run far slower), and apart from the caller's scratch
    /// space, which the inner encoding uses.
    others: Vec<u8>,
    /// The runs of the chunks being decoded.
    runs: Vec<(u32, u32)>,
    /// The run header of the chunk being encoded, and working space for it.
    work: Work,
    /// A chunk being encoded with its fill values left in.
    whole: Vec<u8>,
    /// The decoded run header of a chunk with a coded one.
    header: Vec<u8>,
}

thread_local! {
    static BUFFERS: std::cell::RefCell<Buffers> = std::cell::RefCell::default();
}

/// Encodes chunks with a page's fill value out of the inner encoding's way.
pub struct FillCompressor {
    fill: Vec<u8>,
    inner: Box<dyn MiniBlockCompressor>,
    /// Entropy tables for the chunks' run headers (a `coded_fill` page), when any pay.
    run_tables: Option<PageTables>,
}

impl fmt::Debug for FillCompressor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FillCompressor")
            .field("fill", &self.fill)
            .field("inner", &self.inner)
            .field("run_tables", &self.run_tables.as_ref().map(PageTables::len))
            .finish()
    }
}

impl FillCompressor {
    /// Takes `fill` (one value of the inner encoding's width) out of each chunk before
    /// `inner` encodes it.
    pub fn new(fill: Vec<u8>, inner: Box<dyn MiniBlockCompressor>) -> Result<Self> {
        if fill.len() != inner.value_width() {
            return Err(Error::invalid(format!(
                "a fill value of {} bytes for {}-byte values",
                fill.len(),
                inner.value_width()
            )));
        }
        Ok(Self {
            fill,
            inner,
            run_tables: None,
        })
    }

    /// [`FillCompressor::new`] for the page `values`, with entropy tables for its chunks'
    /// run headers when they make the page smaller (a fill that comes in runs as regular
    /// as the night hours of irradiance, 13 zeros then 11 values, codes its headers in a
    /// bit or two a run rather than two bytes).
    pub fn for_page(
        fill: Vec<u8>,
        inner: Box<dyn MiniBlockCompressor>,
        values: &[u8],
    ) -> Result<Self> {
        let mut this = Self::new(fill, inner)?;
        this.run_tables = run_tables(values, &this.fill, this.chunk_values());
        Ok(this)
    }
}

impl MiniBlockCompressor for FillCompressor {
    fn value_width(&self) -> usize {
        self.inner.value_width()
    }

    fn chunk_values(&self) -> usize {
        self.inner.chunk_values()
    }

    fn array_encoding(&self) -> ArrayEncoding {
        let fill = Box::new(Fill {
            value: self.fill.clone(),
            inner: Some(Box::new(self.inner.array_encoding())),
            run_tables: self
                .run_tables
                .as_ref()
                .map_or_else(Vec::new, PageTables::to_bytes),
        });
        ArrayEncoding {
            array_encoding: Some(if self.run_tables.is_some() {
                array_encoding::ArrayEncoding::CodedFill(fill)
            } else {
                array_encoding::ArrayEncoding::Fill(fill)
            }),
        }
    }

    fn compress_chunk(
        &self,
        values: &[u8],
        out: &mut Vec<u8>,
        scratch: &mut Vec<u8>,
    ) -> Result<ChunkStorage> {
        let width = self.value_width();
        if !values.len().is_multiple_of(width) || values.len() / width > self.chunk_values() {
            return Err(Error::invalid(format!(
                "a fill chunk takes up to {} values of {width} bytes, got {} bytes",
                self.chunk_values(),
                values.len()
            )));
        }
        BUFFERS.with_borrow_mut(|buffers| {
            let Buffers {
                others,
                work,
                whole,
                ..
            } = buffers;
            others.clear();
            let start = out.len();
            let tables = self.run_tables.as_ref();
            let runs = write_runs(values, &self.fill, tables, out, others, work)?;
            if others.is_empty() {
                return Ok(ChunkStorage::Raw);
            }
            let header = out.len() - start;
            let storage = self.inner.compress_chunk(others, out, scratch)?;
            let filled = (values.len() - others.len()) / width;
            if !worth_keeping_fills(runs, filled, header, out.len() - start) {
                return Ok(storage);
            }
            // The chunk with its fill values left in, behind a header of no runs: where
            // the fill is also an ordinary value among the others (0.0 in a temperature
            // series), taking it out breaks the runs and differences the inner encoding
            // codes best, and costs a header entry a value.
            whole.clear();
            write_header(0, &[], tables, whole, &mut work.coded)?;
            match self.inner.compress_chunk(values, whole, scratch) {
                Ok(whole_storage) if whole.len() < out.len() - start => {
                    out.truncate(start);
                    out.extend_from_slice(whole);
                    Ok(whole_storage)
                }
                _ => Ok(storage),
            }
        })
    }

    fn page_buffers(&self) -> &[Vec<u8>] {
        self.inner.page_buffers()
    }
}

/// Decodes chunks written by [`FillCompressor`].
pub struct FillDecompressor {
    fill: Vec<u8>,
    inner: Box<dyn MiniBlockDecompressor>,
    /// A `coded_fill` page's run tables.
    run_tables: Option<PageTables>,
}

impl fmt::Debug for FillDecompressor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FillDecompressor")
            .field("fill", &self.fill)
            .field("inner", &self.inner)
            .field("run_tables", &self.run_tables.as_ref().map(PageTables::len))
            .finish()
    }
}

impl FillDecompressor {
    /// A decoder for `message`'s fill value around `inner`, the decoder of its inner
    /// encoding; `coded` for a `coded_fill` page, whose run headers may be entropy-coded
    /// with the message's run tables (a plain fill page has none).
    pub(crate) fn new(
        message: &Fill,
        coded: bool,
        inner: Box<dyn MiniBlockDecompressor>,
    ) -> Result<Self> {
        if message.value.len() != inner.value_width() {
            return Err(Error::corrupt(format!(
                "fill value of {} bytes for {}-byte values",
                message.value.len(),
                inner.value_width()
            )));
        }
        let run_tables = if coded {
            Some(PageTables::parse(&message.run_tables)?)
        } else if message.run_tables.is_empty() {
            None
        } else {
            return Err(Error::corrupt(
                "a fill page (not coded_fill) with run tables",
            ));
        };
        Ok(Self {
            fill: message.value.clone(),
            inner,
            run_tables,
        })
    }
}

impl FillDecompressor {
    /// Parses the run header of `chunk` (of `num_values` values) into `list` and decodes
    /// the other values into a buffer of their own, which the inner encoding grows only
    /// as its bytes prove them: nothing of the chunk's claimed size is allocated here.
    fn runs_and_others(
        &self,
        chunk: &[u8],
        num_values: usize,
        storage: ChunkStorage,
        list: &mut Vec<(u32, u32)>,
        scratch: &mut Vec<u8>,
    ) -> Result<(Runs, MutableBuffer)> {
        if num_values > MAX_CHUNK_VALUES {
            return Err(Error::corrupt(format!(
                "fill chunk of {num_values} values, more than {MAX_CHUNK_VALUES}"
            )));
        }
        let mut header = Vec::new();
        let tables = self.run_tables.as_ref();
        let (runs, inner) = Runs::parse(chunk, num_values, tables, list, &mut header)?;
        let others = num_values - runs.filled;
        let mut values = MutableBuffer::new(0);
        if others == 0 {
            if !inner.is_empty() {
                return Err(Error::corrupt(format!(
                    "fill chunk of {num_values} fill values has {} bytes after its runs",
                    inner.len()
                )));
            }
        } else {
            self.inner
                .decompress_append(inner, others, storage, &mut values, scratch)?;
        }
        Ok((runs, values))
    }
}

impl MiniBlockDecompressor for FillDecompressor {
    fn value_width(&self) -> usize {
        self.inner.value_width()
    }

    fn max_expansion(&self) -> usize {
        // A chunk's runs decode to any share of it: the per-chunk bound is the chunk's.
        if self.inner.max_expansion() <= 1 {
            1
        } else {
            MAX_CHUNK_BYTES
        }
    }

    fn raw_len_range(&self, num_values: usize) -> Option<(usize, usize)> {
        // At least the run count; at most a header of a run every other value plus the
        // inner chunk of all of them.
        let header = MAX_VARINT_BYTES * (1 + 2 * num_values.div_ceil(2));
        let inner = match self.inner.raw_len_range(num_values) {
            Some((_, max)) => max,
            None => num_values.saturating_mul(self.value_width()),
        };
        Some((1, header.saturating_add(inner)))
    }

    fn raw_expansion(&self) -> usize {
        MAX_CHUNK_BYTES
    }

    fn page_buffer_count(&self) -> usize {
        self.inner.page_buffer_count()
    }

    fn bind_page_buffers(&mut self, buffers: &[&[u8]]) -> Result<()> {
        self.inner.bind_page_buffers(buffers)
    }

    fn decompress_into(
        &self,
        chunk: &[u8],
        num_values: usize,
        storage: ChunkStorage,
        out: &mut [u8],
        scratch: &mut Vec<u8>,
    ) -> Result<()> {
        let width = self.value_width();
        check_output(out, num_values, width)?;
        if num_values > MAX_CHUNK_VALUES {
            return Err(Error::corrupt(format!(
                "fill chunk of {num_values} values, more than {MAX_CHUNK_VALUES}"
            )));
        }
        BUFFERS.with_borrow_mut(|buffers| {
            buffers.runs.clear();
            let tables = self.run_tables.as_ref();
            let (runs, inner) = Runs::parse(
                chunk,
                num_values,
                tables,
                &mut buffers.runs,
                &mut buffers.header,
            )?;
            let others = num_values - runs.filled;
            if others == 0 {
                if !inner.is_empty() {
                    return Err(Error::corrupt(format!(
                        "fill chunk of {num_values} fill values has {} bytes after its runs",
                        inner.len()
                    )));
                }
                runs.expand(&buffers.runs, &self.fill, &[], out);
                return Ok(());
            }
            let values = super::overwritten(&mut buffers.others, others * width);
            self.inner
                .decompress_into(inner, others, storage, values, scratch)?;
            runs.expand(&buffers.runs, &self.fill, values, out);
            Ok(())
        })
    }

    /// Checks the run header and decodes the inner chunk (which checks its own bytes)
    /// before the chunk's output is allocated: a few header bytes claiming runs of a wide
    /// value over a whole chunk must not allocate the chunk before the lie shows.
    fn decompress_append(
        &self,
        chunk: &[u8],
        num_values: usize,
        storage: ChunkStorage,
        out: &mut MutableBuffer,
        scratch: &mut Vec<u8>,
    ) -> Result<()> {
        let len = super::checked_len(num_values, self.value_width())?;
        if len <= SMALL_CHUNK_BYTES {
            // What the chunk can claim is small: decoded as any chunk is, through the
            // thread's buffers, with no allocation of its own.
            return super::append_zeroed(out, len, |dst| {
                self.decompress_into(chunk, num_values, storage, dst, scratch)
            });
        }
        let mut list = Vec::new();
        let (runs, values) =
            self.runs_and_others(chunk, num_values, storage, &mut list, scratch)?;
        super::append_zeroed(out, len, |dst| {
            runs.expand(&list, &self.fill, values.as_slice(), dst);
            Ok(())
        })
    }

    /// Only the values other than the fill are decoded whole; the rows asked for are
    /// then laid out from the runs, so ten rows of a chunk that is one long run cost ten
    /// rows, not the chunk.
    fn decompress_rows_into(
        &self,
        chunk: &[u8],
        num_values: usize,
        storage: ChunkStorage,
        rows: std::ops::Range<usize>,
        out: &mut [u8],
        scratch: &mut Vec<u8>,
        _partial: &mut MutableBuffer,
    ) -> Result<()> {
        let width = self.value_width();
        if rows.start > rows.end || rows.end > num_values {
            return Err(Error::invalid(format!(
                "rows {rows:?} of a fill chunk of {num_values} values"
            )));
        }
        check_output(out, rows.len(), width)?;
        let mut list = Vec::new();
        let (runs, values) =
            self.runs_and_others(chunk, num_values, storage, &mut list, scratch)?;
        let others = num_values - runs.filled;
        // Segments in order: `gap` values of `values`, then `len` of the fill; the rest
        // of the chunk after the last run is of `values`.
        let segments = list[runs.at.clone()]
            .iter()
            .flat_map(|&(gap, len)| [(gap as usize, false), (len as usize, true)])
            .chain([(others, false)]);
        let (mut row, mut from) = (0usize, 0usize);
        for (count, is_fill) in segments {
            let count = if is_fill {
                count
            } else {
                count.min(num_values - row)
            };
            let (lo, hi) = (row.max(rows.start), (row + count).min(rows.end));
            if lo < hi {
                let dst = &mut out[(lo - rows.start) * width..(hi - rows.start) * width];
                if is_fill {
                    for v in dst.chunks_exact_mut(width) {
                        v.copy_from_slice(&self.fill);
                    }
                } else {
                    let at = (from + lo - row) * width;
                    dst.copy_from_slice(&values.as_slice()[at..at + (hi - lo) * width]);
                }
            }
            if !is_fill {
                from += count;
            }
            row += count;
            if row >= rows.end {
                break;
            }
        }
        Ok(())
    }

    fn decompress_chunks_into(
        &self,
        chunks: &[&[u8]],
        num_values: usize,
        out: &mut [u8],
        scratch: &mut Vec<u8>,
    ) -> Result<()> {
        let width = self.value_width();
        let len = check_chunks_output(chunks.len(), num_values, width, out)?;
        if num_values > MAX_CHUNK_VALUES {
            return Err(Error::corrupt(format!(
                "fill chunks of {num_values} values, more than {MAX_CHUNK_VALUES}"
            )));
        }
        // Every chunk's runs first; then the inner chunks, of as many values as each
        // chunk has besides its runs, decoded together (an entropy-coded inner encoding
        // decodes their streams side by side).
        BUFFERS.with_borrow_mut(|buffers| {
            buffers.runs.clear();
            let mut parsed = Vec::with_capacity(chunks.len());
            let (mut inner, mut counts) = (Vec::new(), Vec::new());
            for (k, chunk) in chunks.iter().enumerate() {
                let (runs, rest) = Runs::parse(
                    chunk,
                    num_values,
                    self.run_tables.as_ref(),
                    &mut buffers.runs,
                    &mut buffers.header,
                )
                .map_err(|e| in_run_chunk(e, k))?;
                let others = num_values - runs.filled;
                if others == 0 {
                    if !rest.is_empty() {
                        return Err(in_run_chunk(
                            Error::corrupt(format!(
                                "fill chunk of {num_values} fill values has {} bytes after its runs",
                                rest.len()
                            )),
                            k,
                        ));
                    }
                } else {
                    inner.push(rest);
                    counts.push(others);
                }
                parsed.push(runs);
            }
            let total: usize = counts.iter().sum();
            let values = super::overwritten(&mut buffers.others, total * width);
            self.inner
                .decompress_counted_chunks_into(&inner, &counts, values, scratch)?;
            let mut from = 0;
            for (runs, out) in parsed.iter().zip(out.chunks_exact_mut(len)) {
                let others = (num_values - runs.filled) * width;
                runs.expand(&buffers.runs, &self.fill, &values[from..from + others], out);
                from += others;
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encodings::Encoding;

    fn f32s(values: &[f32]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    fn compressor(fill: f32, inner: Encoding) -> FillCompressor {
        FillCompressor::new(fill.to_le_bytes().to_vec(), inner.compressor(32).unwrap()).unwrap()
    }

    fn decompressor(c: &FillCompressor) -> Box<dyn MiniBlockDecompressor> {
        super::super::decompressor_for(&c.array_encoding(), &[]).unwrap()
    }

    #[test]
    fn worked_example() {
        let values = f32s(&[-1e34, -1e34, 1.0, 2.0, -1e34, 3.0]);
        let c = compressor(-1e34, Encoding::Bss);
        let mut out = Vec::new();
        let storage = c
            .compress_chunk(&values, &mut out, &mut Vec::new())
            .unwrap();
        assert_eq!(storage, ChunkStorage::Raw);
        assert_eq!(
            out,
            [0x02, 0x00, 0x02, 0x02, 0x01, 0, 0, 0, 0, 0, 0, 0x80, 0x00, 0x40, 0x3F, 0x40, 0x40]
        );
        assert_eq!((-1e34f32).to_le_bytes(), [0xDF, 0x84, 0xF6, 0xF7]);
        let back = decompressor(&c).decompress(&out, 6, storage).unwrap();
        assert_eq!(back, values);
    }

    /// The runs, their count and the other values found a word of bits at a time match a
    /// value-by-value scan, for every width and for runs across word boundaries, at the
    /// ends, alone or filling everything.
    #[test]
    fn runs_from_bits_match_a_scan_of_each_value() {
        let mut seed = 11u64;
        let mut mask = Vec::new();
        for width in [1usize, 2, 3, 4, 8] {
            let fill: Vec<u8> = (0..width).map(|i| 0xA0 + i as u8).collect();
            for n in [0usize, 1, 2, 63, 64, 65, 127, 128, 129, 1000, 1024] {
                for density in [0u64, 3, 50, 97, 100] {
                    let mut values = Vec::new();
                    for _ in 0..n {
                        let r = super::super::xorshift(&mut seed) % 100;
                        if r < density {
                            values.extend_from_slice(&fill);
                        } else {
                            // Look-alikes differing in one byte.
                            let mut other = fill.clone();
                            other[(r as usize) % width] ^= 1 << (r % 8);
                            values.extend_from_slice(&other);
                        }
                    }
                    let is_fill: Vec<bool> = values
                        .chunks_exact(width)
                        .map(|v| v == fill.as_slice())
                        .collect();
                    let (mut expected, mut gap, mut len) = (Vec::new(), 0, 0);
                    for &f in &is_fill {
                        if f {
                            len += 1;
                        } else {
                            if len > 0 {
                                expected.push((gap, len));
                                (gap, len) = (0, 0);
                            }
                            gap += 1;
                        }
                    }
                    if len > 0 {
                        expected.push((gap, len));
                    }
                    fill_mask(&values, &fill, &mut mask);
                    let mut runs = Vec::new();
                    for_each_run(&mask, n, |gap, len| runs.push((gap, len)));
                    let what = format!("width {width} n {n} density {density}");
                    assert_eq!(runs, expected, "{what}");
                    assert_eq!(run_count(&mask), expected.len(), "{what}");
                    let mut others = vec![0xEE];
                    others_into(&values, &fill, &mut others);
                    let kept: Vec<u8> = values
                        .chunks_exact(width)
                        .filter(|v| *v != fill.as_slice())
                        .flatten()
                        .copied()
                        .collect();
                    assert_eq!(others[0], 0xEE, "{what}");
                    assert_eq!(others[1..], kept[..], "{what}");
                }
            }
        }
    }

    /// Chunks of every mix of runs (none, all, at either end, single values, NaN and -0.0
    /// fills beside their look-alikes) come back bit for bit through each inner encoding.
    #[test]
    fn round_trips_every_run_shape() {
        let nan = f32::from_bits(0x7FC0_1234);
        let mut seed = 7u64;
        for fill in [-1e34f32, nan, -0.0, 0.0] {
            for inner in [
                Encoding::Bss,
                Encoding::BssLz4,
                Encoding::DeltaAns,
                Encoding::Alp,
            ] {
                for n in [1usize, 2, 3, 7, 64, 1000, 1024] {
                    for (density, coded) in [0u64, 1, 50, 90, 100]
                        .into_iter()
                        .flat_map(|d| [(d, false), (d, true)])
                    {
                        let values: Vec<f32> = (0..n)
                            .map(|i| {
                                let r = super::super::xorshift(&mut seed) % 100;
                                if r < density {
                                    fill
                                } else if r.is_multiple_of(7) {
                                    // look-alikes that must not be taken for the fill
                                    [
                                        f32::NAN,
                                        -0.0,
                                        0.0,
                                        f32::from_bits((-1e34f32).to_bits() + 1),
                                    ][i % 4]
                                } else {
                                    (i as f32 * 0.37).sin() * 20.0
                                }
                            })
                            .collect();
                        let bytes = f32s(&values);
                        // Coded: run tables learnt from the chunk itself, where they pay.
                        let c = if coded {
                            FillCompressor::for_page(
                                fill.to_le_bytes().to_vec(),
                                inner.compressor(32).unwrap(),
                                &bytes,
                            )
                            .unwrap()
                        } else {
                            compressor(fill, inner)
                        };
                        let d = decompressor(&c);
                        let mut out = Vec::new();
                        let storage = c.compress_chunk(&bytes, &mut out, &mut Vec::new()).unwrap();
                        let back = d.decompress(&out, n, storage).unwrap();
                        assert_eq!(
                            back, bytes,
                            "{inner:?} fill {fill} n {n} density {density} coded {coded}"
                        );
                        // Row ranges: every start and end near both edges and the middle.
                        let edges = [0, 1, n / 2, n.saturating_sub(1), n];
                        for &start in &edges {
                            for &end in edges.iter().filter(|&&e| e >= start) {
                                let mut rows = vec![0u8; (end - start) * 4];
                                d.decompress_rows_into(
                                    &out,
                                    n,
                                    storage,
                                    start..end,
                                    &mut rows,
                                    &mut Vec::new(),
                                    &mut MutableBuffer::new(0),
                                )
                                .unwrap();
                                assert_eq!(
                                    rows,
                                    bytes[start * 4..end * 4],
                                    "{inner:?} {n} {start}..{end}"
                                );
                            }
                        }
                        let (min, max) = d.raw_len_range(n).unwrap();
                        if storage == ChunkStorage::Raw {
                            assert!((min..=max).contains(&out.len()), "{inner:?} {n}");
                        }
                    }
                }
            }
        }
    }

    /// A fill value that is also an ordinary value of the series (0.0 among temperatures
    /// that cross it) is left in a chunk where taking it out would cost more: the chunk
    /// then has no runs and the inner encoding codes all its values. Where the fill comes
    /// in long runs it is still taken out.
    #[test]
    fn an_ordinary_fill_value_stays_in_where_that_is_smaller() {
        let c = compressor(0.0, Encoding::Alp);
        let d = decompressor(&c);
        // Tenths of a degree wandering around zero, 0.0 among them now and then.
        let mut seed = 11u64;
        let mut tenths = 0i64;
        let values: Vec<f32> = (0..1024)
            .map(|_| {
                tenths = (tenths + (super::super::xorshift(&mut seed) % 3).cast_signed() - 1)
                    .clamp(-6, 6);
                tenths as f32 / 10.0
            })
            .collect();
        let zeros = values.iter().filter(|&&v| v == 0.0).count();
        assert!(zeros > 32 && zeros < 400, "{zeros}");
        let bytes = f32s(&values);
        let mut out = Vec::new();
        let storage = c.compress_chunk(&bytes, &mut out, &mut Vec::new()).unwrap();
        assert_eq!(out[0], 0, "no runs: the zeros stay in the inner chunk");
        assert_eq!(d.decompress(&out, 1024, storage).unwrap(), bytes);
        // What taking them out costs: the runs' header and the inner chunk of the others.
        let mut runs = Vec::new();
        let mut others = Vec::new();
        write_runs(
            &bytes,
            &0f32.to_le_bytes(),
            None,
            &mut runs,
            &mut others,
            &mut Work::default(),
        )
        .unwrap();
        c.inner
            .compress_chunk(&others, &mut runs, &mut Vec::new())
            .unwrap();
        assert!(out.len() < runs.len(), "{} vs {}", out.len(), runs.len());
        // Long runs of the fill are taken out.
        let mut night = values.clone();
        for (i, v) in night.iter_mut().enumerate() {
            if i % 128 >= 64 {
                *v = 0.0;
            }
        }
        let bytes = f32s(&night);
        let mut out = Vec::new();
        let storage = c.compress_chunk(&bytes, &mut out, &mut Vec::new()).unwrap();
        assert!(out[0] >= 8, "runs kept: {}", out[0]);
        assert_eq!(d.decompress(&out, 1024, storage).unwrap(), bytes);
    }

    /// A coded fill page in chunks of 65,536 values, one of them alternating between the
    /// fill and other values (32,768 runs, the longest header a chunk can have) and one
    /// with a long gap: both encode and come back.
    #[test]
    fn the_longest_run_headers_round_trip_coded() {
        let options = super::super::EncoderOptions::default()
            .with_chunk_values(Some(65_536))
            .unwrap();
        let values: Vec<f32> = (0..2 * 65_536)
            .map(|i| match (i / 65_536, i % 2, i % 65_536) {
                (0, 0, _) => -1e34,
                (1, _, j) if j > 300 && j % 7 == 0 => -1e34,
                _ => i as f32,
            })
            .collect();
        let bytes = f32s(&values);
        let inner = Encoding::Bss.compressor_with(4, &options).unwrap();
        let c = FillCompressor::for_page((-1e34f32).to_le_bytes().to_vec(), inner, &bytes).unwrap();
        let d = decompressor(&c);
        for chunk in bytes.chunks(65_536 * 4) {
            let mut out = Vec::new();
            let storage = c.compress_chunk(chunk, &mut out, &mut Vec::new()).unwrap();
            assert_eq!(d.decompress(&out, 65_536, storage).unwrap(), chunk);
        }
    }

    /// docs/format.md's coded run header: eight nights of 13 zeros, 11 hours apart, in
    /// a page whose chunks all have such headers (its one run table: log 5, symbols 0x00,
    /// 0x0B, 0x0D, counts 2, 14, 16).
    #[test]
    fn coded_header_worked_example() {
        let mut pairs = vec![0x00, 0x0D];
        for _ in 1..8 {
            pairs.extend_from_slice(&[0x0B, 0x0D]);
        }
        let mut histogram = [0u32; 256];
        entropy::count(&pairs, &mut histogram);
        let tables = PageTables::from_streams(&[(0, histogram); 8], 1.0);
        assert_eq!(
            tables.to_bytes(),
            [0x01, 0x05, 0x02, 0x05, 0x00, 0x0B, 0x0D, 0xC2, 0x41]
        );
        let (mut out, mut coded) = (Vec::new(), Vec::new());
        write_header(8, &pairs, Some(&tables), &mut out, &mut coded).unwrap();
        assert_eq!(out, [0x11, 0x10, 0x10, 0x04, 0x20, 0x49, 0x9A, 0x0D]);
        let mut list = Vec::new();
        let (runs, rest) =
            Runs::parse(&out, 192, Some(&tables), &mut list, &mut Vec::new()).unwrap();
        assert!(rest.is_empty());
        assert_eq!(runs.filled, 8 * 13);
        assert_eq!(list[..2], [(0, 13), (11, 13)]);
    }

    /// Runs as regular as the night hours of irradiance (13 fill values, 11 others, over
    /// and over): a page's chunks share run tables, each chunk's header is coded (an odd
    /// first varint) in a fraction of its plain bytes, and every way of decoding gives
    /// the values back.
    #[test]
    fn regular_runs_take_coded_headers() {
        let day: Vec<f32> = (0..8 * 1024)
            .map(|i| {
                if i % 24 < 13 {
                    0.0
                } else {
                    (i % 24) as f32 * 10.0 + (i / 24 % 7) as f32
                }
            })
            .collect();
        let page = f32s(&day);
        let inner = || Encoding::Alp.compressor(32).unwrap();
        let c = FillCompressor::for_page(0f32.to_le_bytes().to_vec(), inner(), &page).unwrap();
        let plain = FillCompressor::new(0f32.to_le_bytes().to_vec(), inner()).unwrap();
        assert!(c.run_tables.is_some());
        assert!(matches!(
            c.array_encoding().array_encoding,
            Some(array_encoding::ArrayEncoding::CodedFill(_))
        ));
        let d = decompressor(&c);
        let mut chunks = Vec::new();
        for chunk in page.chunks(4096) {
            let (mut out, mut plain_out) = (Vec::new(), Vec::new());
            let storage = c.compress_chunk(chunk, &mut out, &mut Vec::new()).unwrap();
            plain
                .compress_chunk(chunk, &mut plain_out, &mut Vec::new())
                .unwrap();
            assert_eq!(out[0] & 1, 1, "a coded header");
            let mut at = 0;
            let runs = read_varint(&out, &mut at).unwrap() >> 1;
            let pairs = read_varint(&out, &mut at).unwrap();
            let coded = entropy::coded_len(&out[at..], pairs).unwrap();
            assert!(
                coded * 4 < pairs,
                "{runs} runs: {coded} coded bytes for {pairs}"
            );
            assert!(out.len() < plain_out.len());
            assert_eq!(storage, ChunkStorage::Raw);
            assert_eq!(d.decompress(&out, 1024, storage).unwrap(), chunk);
            chunks.push(out);
        }
        // All chunks together (the path a page's decoder takes), then row ranges.
        let refs: Vec<&[u8]> = chunks.iter().map(Vec::as_slice).collect();
        let mut all = vec![0u8; page.len()];
        d.decompress_chunks_into(&refs, 1024, &mut all, &mut Vec::new())
            .unwrap();
        assert_eq!(all, page);
        for rows in [0..1, 5..30, 1000..1024] {
            let mut out = vec![0u8; rows.len() * 4];
            d.decompress_rows_into(
                &chunks[1],
                1024,
                ChunkStorage::Raw,
                rows.clone(),
                &mut out,
                &mut Vec::new(),
                &mut MutableBuffer::new(0),
            )
            .unwrap();
            assert_eq!(out, page[4096 + rows.start * 4..4096 + rows.end * 4]);
        }
        // A plain fill message never carries run tables, and a coded one's are checked.
        let mut message = c.array_encoding();
        if let Some(array_encoding::ArrayEncoding::CodedFill(fill)) = message.array_encoding.take()
        {
            let bad = ArrayEncoding {
                array_encoding: Some(array_encoding::ArrayEncoding::Fill(fill.clone())),
            };
            assert!(super::super::decompressor_for(&bad, &[]).is_err());
            let mut cut = fill;
            cut.run_tables.truncate(cut.run_tables.len() - 1);
            let bad = ArrayEncoding {
                array_encoding: Some(array_encoding::ArrayEncoding::CodedFill(cut)),
            };
            assert!(super::super::decompressor_for(&bad, &[]).is_err());
        }
        // Hostile coded headers: every prefix and every flipped byte of a chunk are
        // errors or decode to something, never a panic; a claim of more pair bytes than
        // the stream justifies is an error.
        let chunk = &chunks[0];
        for end in 0..chunk.len() {
            let _ = d.decompress(&chunk[..end], 1024, ChunkStorage::Raw);
        }
        for i in 0..chunk.len() {
            let mut bad = chunk.clone();
            bad[i] ^= 0x5A;
            let _ = d.decompress(&bad, 1024, ChunkStorage::Raw);
        }
        let mut at = 0;
        let first = read_varint(chunk, &mut at).unwrap();
        let mut big = Vec::new();
        put_varint(&mut big, first);
        put_varint(&mut big, 6 * (first >> 1));
        big.extend_from_slice(&chunk[at + 1..]);
        assert!(d.decompress(&big, 1024, ChunkStorage::Raw).is_err());
    }

    /// Gaps and runs on either side of every limit the decoder treats apart: one-byte
    /// varints (up to 127 values) and two-byte ones, fixed 128-byte copies (32 f32
    /// values) and longer loops, near the chunk's end and away from it.
    #[test]
    fn long_and_short_gaps_and_runs_round_trip() {
        let fill = -1e34f32;
        for inner in [Encoding::Bss, Encoding::DeltaAns, Encoding::Alp] {
            let c = compressor(fill, inner);
            let d = decompressor(&c);
            for lens in [
                [31usize, 32, 33, 127, 128, 129, 1, 300],
                [300, 1, 129, 128, 127, 33, 32, 31],
                [1, 2, 3, 4, 5, 6, 7, 8],
                [0, 40, 1, 40, 2, 40, 3, 40],
            ] {
                // Alternating gaps and runs of these lengths, a gap first.
                let mut values = Vec::new();
                for (k, &len) in lens.iter().enumerate() {
                    for v in 0..len {
                        values.push(if k % 2 == 1 {
                            fill
                        } else {
                            (k * 1000 + v) as f32
                        });
                    }
                }
                let bytes = f32s(&values);
                let mut out = Vec::new();
                let storage = c.compress_chunk(&bytes, &mut out, &mut Vec::new()).unwrap();
                let back = d.decompress(&out, values.len(), storage).unwrap();
                assert_eq!(back, bytes, "{inner:?} {lens:?}");
                let mut many = vec![0u8; 2 * bytes.len()];
                d.decompress_chunks_into(&[&out, &out], values.len(), &mut many, &mut Vec::new())
                    .unwrap();
                assert_eq!(many, [bytes.clone(), bytes].concat(), "{inner:?} {lens:?}");
            }
        }
    }

    /// Every prefix of a chunk, and every byte changed, is an error or some decoding, never
    /// a panic.
    #[test]
    fn hostile_chunks_are_errors() {
        let values: Vec<f32> = (0..256)
            .map(|i| if i % 5 < 2 { -1e34 } else { i as f32 })
            .collect();
        let bytes = f32s(&values);
        for inner in [Encoding::Bss, Encoding::DeltaAns, Encoding::BssZstd] {
            let c = compressor(-1e34, inner);
            let d = decompressor(&c);
            let mut out = Vec::new();
            let storage = c.compress_chunk(&bytes, &mut out, &mut Vec::new()).unwrap();
            for cut in 0..out.len() {
                assert!(
                    d.decompress(&out[..cut], 256, storage).is_err(),
                    "{inner:?} cut {cut}"
                );
            }
            for i in 0..out.len() {
                for flip in [0x01u8, 0x80, 0xFF] {
                    let mut bad = out.clone();
                    bad[i] ^= flip;
                    let _ = d.decompress(&bad, 256, storage);
                }
            }
            // More or fewer values than the runs and the inner chunk hold.
            for n in [255, 257] {
                assert!(d.decompress(&out, n, storage).is_err(), "{inner:?} {n}");
            }
        }
        let d = decompressor(&compressor(-1e34, Encoding::Bss));
        for (bad, n) in [
            (&[0x05u8, 0, 1][..], 4),             // five runs declared, one present
            (&[0x01, 0x00, 0x05], 4),             // a run past the end
            (&[0x01, 0x00, 0x00], 4),             // an empty run
            (&[0x02, 0x00, 0x01, 0x00, 0x01], 4), // runs not apart
            (&[0x01, 0x80, 0x80, 0x80, 0x01], 4), // an overlong varint
            (&[0x01, 0x00, 0x02, 0xAA], 2),       // bytes after a chunk of fill alone
            (&[0x09], 4),                         // more runs than values
        ] {
            assert!(d.decompress(bad, n, ChunkStorage::Raw).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn finds_a_dominant_value_by_its_exact_share() {
        let width = 4;
        let page = |every: usize| {
            f32s(
                &(0..100_000)
                    .map(|i| if i % every == 0 { -1e34 } else { i as f32 })
                    .collect::<Vec<_>>(),
            )
        };
        assert_eq!(
            dominant(&page(2), width, MIN_SHARE),
            Some((-1e34f32).to_le_bytes().to_vec())
        );
        assert_eq!(
            dominant(&page(8), width, MIN_SHARE),
            Some((-1e34f32).to_le_bytes().to_vec())
        );
        assert_eq!(dominant(&page(9), width, MIN_SHARE), None);
        assert_eq!(dominant(&[], width, MIN_SHARE), None);
        let back = without(&page(2), &(-1e34f32).to_le_bytes());
        assert_eq!(back.len(), 50_000 * width);
    }
}
