//! Bit-packing: unsigned integers of `bits` bits (0 to 64) laid end to end, LSB first.
//!
//! Value `i` occupies bits `i * bits .. (i + 1) * bits` of the packed bytes, read as one
//! little-endian bit string; the last byte's unused high bits are zero. A block of 64
//! values therefore takes exactly `8 * bits` bytes (`bits` little-endian words), and the
//! kernels work a block at a time: the width is a const generic, so each of the 65
//! monomorphized block loops is straight-line shifts and masks over fixed word indices.
//! A partial last block is copied into a zeroed block first, so no kernel reads past its
//! slice. Safe code only: the bounds are fixed by the block size.
//!
//! Worked example: 3-bit values `[1, 2, 7]` pack to bits `001 010 111` (value 0 first,
//! each value LSB first), that is `0b1101_0001 0b0000_0001` = bytes `D1 01`.

/// Values per block.
pub(crate) const BLOCK: usize = 64;

/// Bytes that `n` values of `bits` bits take packed.
pub(crate) fn packed_len(n: usize, bits: u8) -> usize {
    (n * usize::from(bits)).div_ceil(8)
}

/// Appends `values` packed at `bits` bits to `out`. Every value must fit in `bits` bits
/// (higher bits are dropped).
pub(crate) fn pack(values: &[u64], bits: u8, out: &mut Vec<u8>) {
    assert!(bits <= 64, "bit width {bits} over 64");
    let total = packed_len(values.len(), bits);
    let start = out.len();
    let mut words = [0u64; BLOCK];
    for block in values.chunks(BLOCK) {
        let mut full = [0u64; BLOCK];
        full[..block.len()].copy_from_slice(block);
        dispatch_pack(bits, &full, &mut words);
        for word in &words[..usize::from(bits)] {
            out.extend_from_slice(&word.to_le_bytes());
        }
    }
    // Whole blocks were written: drop the bytes past the last value (all zero).
    out.truncate(start + total);
}

/// Unpacks `n` values of `bits` bits from `packed` (exactly [`packed_len`] bytes), handing
/// them to `sink` a block of up to 64 at a time, in order. Inlined, so that `sink`
/// compiles under its caller's target features (ALP's `kernels::with_wide_vectors`).
#[allow(clippy::inline_always)]
#[inline(always)]
pub(crate) fn unpack(packed: &[u8], n: usize, bits: u8, mut sink: impl FnMut(&[u64])) {
    check_packed(packed, n, bits);
    let mut words = [0u64; BLOCK];
    let mut values = [0u64; BLOCK];
    let mut done = 0;
    while done < n {
        let count = (n - done).min(BLOCK);
        load_block(packed, bits, done / BLOCK, &mut words);
        dispatch_unpack(bits, &words, &mut values);
        sink(&values[..count]);
        done += count;
    }
}

/// [`unpack`] of two packed streams of `n` values each, `a` at `bits_a` bits and `b` at
/// `bits_b`, handing `sink` their blocks side by side.
pub(crate) fn unpack_pair(
    (a, bits_a): (&[u8], u8),
    (b, bits_b): (&[u8], u8),
    n: usize,
    mut sink: impl FnMut(&[u64], &[u64]),
) {
    check_packed(a, n, bits_a);
    check_packed(b, n, bits_b);
    let mut words = [0u64; BLOCK];
    let (mut values_a, mut values_b) = ([0u64; BLOCK], [0u64; BLOCK]);
    let mut done = 0;
    while done < n {
        let count = (n - done).min(BLOCK);
        load_block(a, bits_a, done / BLOCK, &mut words);
        dispatch_unpack(bits_a, &words, &mut values_a);
        load_block(b, bits_b, done / BLOCK, &mut words);
        dispatch_unpack(bits_b, &words, &mut values_b);
        sink(&values_a[..count], &values_b[..count]);
        done += count;
    }
}

fn check_packed(packed: &[u8], n: usize, bits: u8) {
    assert!(bits <= 64, "bit width {bits} over 64");
    assert_eq!(
        packed.len(),
        packed_len(n, bits),
        "packed bytes for {n} values of {bits} bits"
    );
}

/// The `bits` words of block `block` of `packed`, zero past its end.
#[inline]
fn load_block(packed: &[u8], bits: u8, block: usize, words: &mut [u64; BLOCK]) {
    let block_bytes = 8 * usize::from(bits);
    let offset = block * block_bytes;
    let bytes = &packed[offset..(offset + block_bytes).min(packed.len())];
    if bytes.len() == block_bytes {
        // A whole block: word loads, no copy of a length known only at run time.
        for (word, chunk) in words.iter_mut().zip(bytes.chunks_exact(8)) {
            *word = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        }
    } else {
        words[..usize::from(bits)].fill(0);
        for (word, chunk) in words.iter_mut().zip(bytes.chunks(8)) {
            let mut le = [0u8; 8];
            le[..chunk.len()].copy_from_slice(chunk);
            *word = u64::from_le_bytes(le);
        }
    }
}

/// Packs one block of 64 values at `B` bits into `B` words.
#[inline]
fn pack_block<const B: usize>(values: &[u64; BLOCK], words: &mut [u64; BLOCK]) {
    if B == 0 {
        return;
    }
    let mask = if B == 64 { u64::MAX } else { (1u64 << B) - 1 };
    words[..B].fill(0);
    for (i, &value) in values.iter().enumerate() {
        let bit = i * B;
        let (word, shift) = (bit / 64, bit % 64);
        let value = value & mask;
        words[word] |= value << shift;
        if shift + B > 64 {
            words[word + 1] |= value >> (64 - shift);
        }
    }
}

/// Unpacks one block of 64 values of `B` bits from `B` words.
#[inline]
fn unpack_block<const B: usize>(words: &[u64; BLOCK], values: &mut [u64; BLOCK]) {
    if B == 0 {
        values.fill(0);
        return;
    }
    let mask = if B == 64 { u64::MAX } else { (1u64 << B) - 1 };
    for (i, value) in values.iter_mut().enumerate() {
        let bit = i * B;
        let (word, shift) = (bit / 64, bit % 64);
        let mut v = words[word] >> shift;
        if shift + B > 64 {
            v |= words[word + 1] << (64 - shift);
        }
        *value = v & mask;
    }
}

macro_rules! dispatch {
    ($name:ident, $kernel:ident, [$($b:literal)*]) => {
        fn $name(bits: u8, input: &[u64; BLOCK], output: &mut [u64; BLOCK]) {
            match bits {
                $($b => $kernel::<$b>(input, output),)*
                _ => unreachable!("bit width checked by the caller"),
            }
        }
    };
}

dispatch!(dispatch_pack, pack_block, [
    0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32
    33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62
    63 64
]);
dispatch!(dispatch_unpack, unpack_block, [
    0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32
    33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62
    63 64
]);

/// Bits needed for `value` (0 for 0).
pub(crate) fn bit_width(value: u64) -> u8 {
    (64 - value.leading_zeros()) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scalar definition: bit `j` of value `i` is bit `i * bits + j` of the string.
    fn reference_pack(values: &[u64], bits: u8) -> Vec<u8> {
        let bits = usize::from(bits);
        let mut out = vec![0u8; (values.len() * bits).div_ceil(8)];
        for (i, &v) in values.iter().enumerate() {
            for j in 0..bits {
                if v >> j & 1 == 1 {
                    let bit = i * bits + j;
                    out[bit / 8] |= 1 << (bit % 8);
                }
            }
        }
        out
    }

    #[test]
    fn worked_example() {
        let mut out = Vec::new();
        pack(&[1, 2, 7], 3, &mut out);
        assert_eq!(out, [0xD1, 0x01]);
    }

    /// Every width, lengths around the block size, against the bit-by-bit reference, and
    /// back.
    #[test]
    fn pack_and_unpack_match_the_reference() {
        let mut x = 0x9E37_79B9_7F4A_7C15_u64;
        let lengths: &[usize] = if cfg!(miri) {
            &[0, 1, 63, 65]
        } else {
            &[0, 1, 2, 7, 63, 64, 65, 127, 128, 129, 1000, 1024]
        };
        for bits in 0..=64u8 {
            let mask = if bits == 64 {
                u64::MAX
            } else {
                (1 << bits) - 1
            };
            for &n in lengths {
                let values: Vec<u64> = (0..n)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        x & mask
                    })
                    .collect();
                let mut out = vec![0xAB];
                pack(&values, bits, &mut out);
                assert_eq!(out[1..], reference_pack(&values, bits), "{bits} bits, {n}");
                let mut back = Vec::new();
                unpack(&out[1..], n, bits, |block| back.extend_from_slice(block));
                assert_eq!(back, values, "{bits} bits, {n}");
            }
        }
    }
}
