//! LZ4 blocks for chunks of one repeated value, written directly instead of searched for.
//!
//! Fill values (land in an ocean grid, missing readings, zero padding) make whole chunks
//! of one value. LZ4 compresses them to a few dozen bytes, but only after hashing its way
//! through every position, and BSS+LZ4 first splits the chunk into streams as well. Here
//! the block is written from the value alone: for each segment the inner encoding makes
//! of the chunk (BSS: `width` streams, each one byte repeated; flat: the value's bytes
//! repeated), one sequence "the segment's first period as literals, then a match at the
//! period's distance for the rest", and the block's last five bytes as literals, as the
//! format requires.
//!
//! A worked example: eight f32 values `1.0` (`00 00 80 3F`), flat, 32 bytes. One segment
//! of period 4, the block's last: token `4F` (4 literals; match length code 15, extended),
//! the literals `00 00 80 3F`, the offset `04 00` (copy from 4 bytes back), the extension
//! byte `04` (match length 4 + 15 + 4 = 23 bytes, positions 4..27), then the closing
//! token `50` and five literals `3F 00 00 80 3F` (positions 27..32): 14 bytes for 32. For
//! BSS the same is done per stream with a period of one byte.
//!
//! Any LZ4 decoder reads these blocks (tests decode them with both liblz4 and lz4_flex).

/// LZ4's rule: the last match starts at least this many bytes before the block's end.
const MATCH_START_MARGIN: usize = 12;
/// LZ4's rule: the block ends with at least this many literal bytes.
const LAST_LITERALS: usize = 5;
/// Shortest match LZ4 can encode.
const MIN_MATCH: usize = 4;

/// How the inner encoding lays a chunk of one repeated value out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RepeatLayout {
    /// Values as they are: the value's bytes, repeated.
    Flat,
    /// Byte stream split: `width` streams, stream `j` byte `j` of the value repeated.
    Split,
}

/// When every value of `values` (values of `width` bytes) is the same, appends to `out`
/// the LZ4 block of what the inner encoding of `layout` makes of them and returns true.
/// Returns false, `out` untouched, when the values differ or the chunk is too short for
/// this block shape (the caller then compresses as usual).
pub(crate) fn write_repeated_value_block(
    values: &[u8],
    width: usize,
    layout: RepeatLayout,
    out: &mut Vec<u8>,
) -> bool {
    let len = values.len();
    if width == 0 || !len.is_multiple_of(width) || len < width {
        return false;
    }
    let n = len / width;
    let value = &values[..width];
    // Every value equals the first iff the bytes equal themselves shifted by one value.
    if values[width..] != values[..len - width] {
        return false;
    }
    match layout {
        RepeatLayout::Flat => {
            if width > usize::from(u16::MAX) || !fits(width, len, true) {
                return false;
            }
            write_segment(value, len, true, out);
        }
        RepeatLayout::Split => {
            if !(fits(1, n, false) && fits(1, n, true)) {
                return false;
            }
            for (j, byte) in value.iter().enumerate() {
                write_segment(std::slice::from_ref(byte), n, j + 1 == width, out);
            }
        }
    }
    true
}

/// Whether a segment of `len` bytes with a period of `period` bytes can be one literal
/// run plus one match (and, when it ends the block, the closing literals).
fn fits(period: usize, len: usize, last: bool) -> bool {
    if last {
        len >= period + MATCH_START_MARGIN && len - period - LAST_LITERALS >= MIN_MATCH
    } else {
        len >= period + MIN_MATCH
    }
}

/// Appends the sequences for `pattern` repeated to `len` bytes: the pattern as literals,
/// a match at distance `pattern.len()` for the rest, and for the block's last segment the
/// closing literals.
fn write_segment(pattern: &[u8], len: usize, last: bool, out: &mut Vec<u8>) {
    let period = pattern.len();
    let match_len = len - period - if last { LAST_LITERALS } else { 0 };
    write_token_and_literals(pattern, match_len - MIN_MATCH, out);
    out.extend_from_slice(&(period as u16).to_le_bytes());
    write_length_extension(match_len - MIN_MATCH, out);
    if last {
        // The segment's last five bytes: positions len-5..len of the repeated pattern.
        out.push((LAST_LITERALS as u8) << 4);
        out.extend((len - LAST_LITERALS..len).map(|i| pattern[i % period]));
    }
}

/// A sequence's token (literal count and match length code), then its literals.
fn write_token_and_literals(literals: &[u8], match_code: usize, out: &mut Vec<u8>) {
    let literal_code = literals.len().min(15) as u8;
    out.push((literal_code << 4) | match_code.min(15) as u8);
    write_length_extension(literals.len(), out);
    out.extend_from_slice(literals);
}

/// The bytes that extend a length whose 4-bit code in the token is 15: 255 while more
/// remains, then the rest. Nothing when the length fit in the token.
fn write_length_extension(length: usize, out: &mut Vec<u8>) {
    if length < 15 {
        return;
    }
    let mut rest = length - 15;
    while rest >= 255 {
        out.push(255);
        rest -= 255;
    }
    out.push(rest as u8);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(values: &[u8], width: usize) -> Vec<u8> {
        crate::kernels::split_reference(values, width)
    }

    /// Every width 1-16 and a large one, lengths from too short to a whole chunk, several
    /// values: the block decodes, through liblz4 and lz4_flex, to exactly what the inner
    /// encoding writes, and is small.
    #[test]
    fn blocks_decode_to_the_inner_encodings_bytes() {
        let mut written = 0;
        for width in (1..=16).chain([300]) {
            for n in [
                0usize, 1, 2, 3, 5, 8, 12, 13, 16, 17, 100, 511, 512, 1024, 4096,
            ] {
                for seed in [0u8, 0x3F, 0xA5] {
                    let value: Vec<u8> = (0..width)
                        .map(|j| seed.wrapping_mul((j as u8).wrapping_add(1)) ^ (j as u8))
                        .collect();
                    let values: Vec<u8> = value.iter().copied().cycle().take(n * width).collect();
                    for layout in [RepeatLayout::Flat, RepeatLayout::Split] {
                        let inner = match layout {
                            RepeatLayout::Flat => values.clone(),
                            RepeatLayout::Split => split(&values, width),
                        };
                        let context = format!("w{width} n{n} seed {seed} {layout:?}");
                        let long_enough = match layout {
                            RepeatLayout::Flat => n > 0 && n * width >= width + 12,
                            RepeatLayout::Split => n >= 13,
                        };
                        let mut out = vec![0xEE];
                        let wrote = write_repeated_value_block(&values, width, layout, &mut out);
                        assert_eq!(wrote, long_enough, "{context}");
                        if !wrote {
                            assert_eq!(out, [0xEE], "{context}: untouched when declined");
                            continue;
                        }
                        written += 1;
                        let block = &out[1..];
                        if n >= 512 {
                            assert!(block.len() * 32 < inner.len(), "{context}: {}", block.len());
                        }
                        let mut back = vec![0u8; inner.len()];
                        let got = lz4::block::decompress_to_buffer(
                            block,
                            Some(i32::try_from(inner.len()).unwrap()),
                            &mut back,
                        )
                        .unwrap();
                        assert_eq!(got, inner.len(), "{context}");
                        assert_eq!(back, inner, "{context}: liblz4");
                        let flex = lz4_flex::block::decompress(block, inner.len()).unwrap();
                        assert_eq!(flex, inner, "{context}: lz4_flex");
                    }
                }
            }
        }
        assert!(written > 300, "{written}");
    }

    #[test]
    fn differing_values_are_declined() {
        let mut values: Vec<u8> = [1u8, 2, 3, 4].repeat(1024);
        values[4095] = 9;
        let mut out = Vec::new();
        for layout in [RepeatLayout::Flat, RepeatLayout::Split] {
            assert!(!write_repeated_value_block(&values, 4, layout, &mut out));
            assert!(!write_repeated_value_block(
                &values[..7],
                4,
                layout,
                &mut out
            ));
        }
        assert!(out.is_empty());
    }
}
