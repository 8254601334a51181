//! Entropy coding of one byte stream with its own table: table-based asymmetric numeral
//! systems (tANS, Duda 2013; the coder inside Zstd's FSE), chunk-local.
//!
//! A general compressor over a 4 KiB chunk pays for a frame, a block and a Huffman table
//! in every chunk, and Huffman codes spend at least one bit per byte: on the integer
//! streams of a low-entropy series (hourly pressure in whole millibars: differences of
//! -2..2, about 1.5 bits each) that is more than the payload. tANS codes each byte in
//! its information content, fractions of a bit included, and its table for a handful of
//! symbols takes a dozen bytes.
//!
//! ```text
//! stream of n bytes, as written (self-delimiting: a reader knows n)
//!   byte 0   mode: 0 raw, 1 constant, 2 tANS
//!   raw      n bytes as they are
//!   constant 1 byte: the value of every byte
//!   tANS     byte  L: table log, 5..=12 (the table has 2^L states)
//!            byte  k - 1: k symbols, 2..=256
//!            k bytes: the symbols, strictly increasing
//!            ceil(k*L/8) bytes: their counts, L bits each, LSB first; each at least 1,
//!                   summing to 2^L
//!            u16 LE: P, the bytes of the bit stream
//!            P bytes: the bit stream, LSB first: the two final encoder states (L
//!                   bits each, lane 0 then lane 1), then the bits each symbol shed,
//!                   first symbol first; byte i is coded in lane i % 2, and the last
//!                   byte of each lane sheds nothing
//! ```
//!
//! Symbols are spread over the states as Zstd's FSE spreads them (step `5/8 * 2^L + 3`),
//! so the table follows from the counts alone. Decoding one symbol is one table lookup and
//! one read of at most L bits; a stream decodes without any other.
//!
//! Worked example: 32 bytes, `01 01 01 02 01 01 01 01` four times (28 ones, 4 twos),
//! take 13 bytes:
//!
//! ```text
//! 02        tANS
//! 05        L = 5: 32 states
//! 01        k - 1: two symbols
//! 01 02     the symbols
//! 9C 00     their counts, 28 and 4, in 5 bits each (11100, 00100, LSB first)
//! 04 00        P = 4
//! 20 BB BE 02  final states 0 and 25 (5 bits each), then the bits the other 30
//!              symbols shed
//! ```

use crate::error::{Error, Result};

const MODE_RAW: u8 = 0;
const MODE_CONSTANT: u8 = 1;
const MODE_TANS: u8 = 2;

/// Interleaved coder states: byte i is coded in state i % LANES, so a decoder's table
/// lookups for neighbouring bytes do not wait for each other.
const LANES: usize = 2;

/// Largest table log: 4096 states.
pub const MAX_TABLE_LOG: u32 = 12;

/// Smallest table log: 32 states. From 16 states up the spread's step is odd, so it
/// visits every state; at 8 it would be 8 and put every symbol in state 0.
pub const MIN_TABLE_LOG: u32 = 5;

/// Longest stream the coder takes: its bit stream's length must fit a u16.
pub const MAX_STREAM: usize = 1 << 16;

/// Bytes a coded stream of `n` bytes can take at most (a raw stream and its mode byte).
pub fn max_coded_len(n: usize) -> usize {
    n + 1
}

/// The table log for `n` bytes of `k` distinct symbols: a state for every four bytes
/// (finer tables code a chunk's few hundred bytes no better, and every chunk builds its
/// own), at least two for every symbol, from 5 to [`MAX_TABLE_LOG`].
fn table_log(n: usize, k: usize) -> u32 {
    let wanted = (n / 4)
        .max(1)
        .ilog2()
        .clamp(MIN_TABLE_LOG, MAX_TABLE_LOG - 1);
    wanted
        .max((2 * k).next_power_of_two().trailing_zeros())
        .min(MAX_TABLE_LOG)
}

/// Scales `counts` (of `n` bytes in all) to sum to `2^log`, every present symbol at least
/// 1: the rounding error goes to (or comes from) the largest counts.
fn normalize(counts: &[u32; 256], n: usize, log: u32) -> Vec<(u8, u32)> {
    let total = 1u64 << log;
    let mut norm: Vec<(u8, u32)> = counts
        .iter()
        .enumerate()
        .filter(|(_, &c)| c > 0)
        .map(|(s, &c)| {
            let scaled = (u64::from(c) * total + n as u64 / 2) / n as u64;
            (s as u8, scaled.max(1) as u32)
        })
        .collect();
    let mut sum: i64 = norm.iter().map(|&(_, c)| i64::from(c)).sum();
    let mut order: Vec<usize> = (0..norm.len()).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(norm[i].1), norm[i].0));
    let target = total.cast_signed();
    // Too many: take from the largest counts, one at a time, never below 1.
    while sum > target {
        let mut moved = false;
        for &i in &order {
            if sum == target {
                break;
            }
            if norm[i].1 > 1 {
                norm[i].1 -= 1;
                sum -= 1;
                moved = true;
            }
        }
        assert!(moved, "2^log states hold every symbol");
    }
    if sum < target {
        norm[order[0]].1 += (target - sum) as u32;
    }
    norm
}

/// Where each state's symbol is: Zstd's spread, a fixed step that visits every state
/// (odd from 16 states up). Hands `place` each state and its symbol.
fn spread(norm: &[(u8, u32)], log: u32, mut place: impl FnMut(usize, u8)) {
    let size = 1usize << log;
    let mask = size - 1;
    let step = (size >> 1) + (size >> 3) + 3;
    let mut pos = 0usize;
    for &(symbol, count) in norm {
        for _ in 0..count {
            place(pos, symbol);
            pos = (pos + step) & mask;
        }
    }
}

/// One decoding state: the symbol it yields, how many bits to read and the base of the
/// next state.
#[derive(Debug, Clone, Copy, Default)]
struct DecodeEntry {
    symbol: u8,
    bits: u8,
    base: u16,
}

/// The decoding table: the spread, then each state's step, in one allocation of `2^log`
/// entries.
fn decode_table(norm: &[(u8, u32)], log: u32) -> Vec<DecodeEntry> {
    let size = 1usize << log;
    let mut table = vec![DecodeEntry::default(); size];
    spread(norm, log, |state, symbol| table[state].symbol = symbol);
    let mut next = [0u32; 256];
    for &(symbol, count) in norm {
        next[usize::from(symbol)] = count;
    }
    for entry in &mut table {
        let x = next[usize::from(entry.symbol)];
        next[usize::from(entry.symbol)] += 1;
        let bits = log - x.ilog2();
        entry.bits = bits as u8;
        entry.base = ((x << bits) - size as u32) as u16;
    }
    table
}

/// Appends bits LSB first.
struct BitWriter<'a> {
    out: &'a mut Vec<u8>,
    acc: u64,
    len: u32,
}

impl BitWriter<'_> {
    fn put(&mut self, value: u32, bits: u32) {
        self.acc |= u64::from(value) << self.len;
        self.len += bits;
        while self.len >= 8 {
            self.out.push(self.acc as u8);
            self.acc >>= 8;
            self.len -= 8;
        }
    }

    fn finish(self) {
        if self.len > 0 {
            self.out.push(self.acc as u8);
        }
    }
}

/// Reads bits LSB first; past the end it reads zeros and remembers that it did.
struct BitReader<'a> {
    bytes: &'a [u8],
    at: usize,
    acc: u64,
    len: u32,
    overrun: bool,
}

impl<'a> BitReader<'a> {
    /// Tops the accumulator up with whole bytes: eight at a time while they last, then
    /// one at a time; past the end, zeros, and the overrun is remembered.
    #[inline(never)]
    fn refill(&mut self, bits: u32) {
        if let Some(word) = self.bytes.get(self.at..self.at + 8) {
            let word = u64::from_le_bytes(word.try_into().expect("8 bytes"));
            let take = (63 - self.len) / 8;
            self.acc |= (word & ((1u64 << (8 * take)) - 1)) << self.len;
            self.at += take as usize;
            self.len += 8 * take;
            return;
        }
        while self.len <= 56 {
            let Some(&b) = self.bytes.get(self.at) else {
                break;
            };
            self.acc |= u64::from(b) << self.len;
            self.at += 1;
            self.len += 8;
        }
        if self.len < bits {
            self.overrun = true;
            self.len = bits;
        }
    }

    fn new(bytes: &'a [u8]) -> Self {
        Self {
            bytes,
            at: 0,
            acc: 0,
            len: 0,
            overrun: false,
        }
    }

    #[inline]
    fn get(&mut self, bits: u32) -> u32 {
        if self.len < bits {
            self.refill(bits);
        }
        let value = (self.acc & ((1u64 << bits) - 1)) as u32;
        self.acc >>= bits;
        self.len -= bits;
        value
    }
}

/// Appends the coded form of `stream` to `out`: tANS, or a constant or raw stream when
/// that is smaller.
pub fn encode(stream: &[u8], out: &mut Vec<u8>) -> Result<()> {
    let n = stream.len();
    if n > MAX_STREAM {
        return Err(Error::invalid(format!(
            "entropy-coded streams hold at most {MAX_STREAM} bytes, got {n}"
        )));
    }
    let mut counts = [0u32; 256];
    for &b in stream {
        counts[usize::from(b)] += 1;
    }
    let k = counts.iter().filter(|&&c| c > 0).count();
    if k == 1 {
        out.extend_from_slice(&[MODE_CONSTANT, stream[0]]);
        return Ok(());
    }
    let start = out.len();
    if k >= 2 && encode_tans(stream, &counts, k, out) && out.len() - start < 1 + n {
        return Ok(());
    }
    out.truncate(start);
    out.push(MODE_RAW);
    out.extend_from_slice(stream);
    Ok(())
}

/// Writes the tANS form; false when its bit stream would not fit a u16 length.
fn encode_tans(stream: &[u8], counts: &[u32; 256], k: usize, out: &mut Vec<u8>) -> bool {
    let log = table_log(stream.len(), k);
    let norm = normalize(counts, stream.len(), log);
    let size = 1u32 << log;
    // Encoding table: for symbol s with count c, the state for each x in c..2c.
    let mut first = [0usize; 256];
    let mut states = Vec::with_capacity(size as usize);
    let mut count_of = [0u32; 256];
    for &(symbol, count) in &norm {
        first[usize::from(symbol)] = states.len();
        count_of[usize::from(symbol)] = count;
        states.resize(states.len() + count as usize, 0u32);
    }
    // States in increasing order, each symbol's x counting up from its count.
    let mut symbols = vec![0u8; size as usize];
    spread(&norm, log, |state, symbol| symbols[state] = symbol);
    let mut next = count_of;
    for (u, &symbol) in symbols.iter().enumerate() {
        let s = usize::from(symbol);
        let x = next[s];
        next[s] += 1;
        states[first[s] + (x - count_of[s]) as usize] = size + u as u32;
    }
    // Symbols last to first, byte i in lane i % LANES; the first one coded into a lane
    // (its last byte) starts the lane from the first of its states and sheds nothing, as
    // the decoder makes no step after it. The stream has two symbols or more, so every
    // lane has a byte.
    let n = stream.len();
    let mut shed: Vec<(u32, u32)> = Vec::with_capacity(n);
    let mut state = [0u32; LANES];
    for (i, &symbol) in stream.iter().enumerate().rev() {
        let s = usize::from(symbol);
        let lane = &mut state[i % LANES];
        if i + LANES >= n {
            *lane = states[first[s]];
            continue;
        }
        let c = count_of[s];
        let mut bits = lane.ilog2() - c.ilog2();
        if (*lane >> bits) < c {
            bits -= 1;
        }
        shed.push((*lane & ((1 << bits) - 1), bits));
        *lane = states[first[s] + ((*lane >> bits) - c) as usize];
    }
    let mut bitstream = Vec::with_capacity(n / 2 + 8);
    let mut writer = BitWriter {
        out: &mut bitstream,
        acc: 0,
        len: 0,
    };
    for lane in state {
        writer.put(lane - size, log);
    }
    for &(value, bits) in shed.iter().rev() {
        writer.put(value, bits);
    }
    writer.finish();
    let Ok(len) = u16::try_from(bitstream.len()) else {
        return false;
    };
    out.extend_from_slice(&[MODE_TANS, log as u8, (k - 1) as u8]);
    out.extend(norm.iter().map(|&(s, _)| s));
    let mut table = BitWriter {
        out,
        acc: 0,
        len: 0,
    };
    for &(_, count) in &norm {
        table.put(count, log);
    }
    table.finish();
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&bitstream);
    true
}

/// Decodes one coded stream of `out.len()` bytes from the start of `input` into `out`;
/// returns the bytes of `input` it took. Every field is checked: a table that does not
/// sum to its states, symbols out of order, a bit stream shorter or longer than its
/// symbols need are corrupt.
pub fn decode(input: &[u8], out: &mut [u8]) -> Result<usize> {
    let n = out.len();
    let corrupt =
        |what: String| Error::corrupt(format!("entropy-coded stream of {n} bytes: {what}"));
    let (&mode, rest) = input
        .split_first()
        .ok_or_else(|| corrupt("no mode byte".to_owned()))?;
    match mode {
        MODE_RAW => {
            let raw = rest
                .get(..n)
                .ok_or_else(|| corrupt(format!("{} raw bytes", rest.len())))?;
            out.copy_from_slice(raw);
            Ok(1 + n)
        }
        MODE_CONSTANT => {
            let &value = rest
                .first()
                .ok_or_else(|| corrupt("no constant".to_owned()))?;
            out.fill(value);
            Ok(2)
        }
        MODE_TANS => {
            let [log, k1, ..] = *rest else {
                return Err(corrupt("cut inside its table header".to_owned()));
            };
            let log = u32::from(log);
            let k = usize::from(k1) + 1;
            if !(MIN_TABLE_LOG..=MAX_TABLE_LOG).contains(&log) || k < 2 || k > 1 << log {
                return Err(corrupt(format!("table log {log} with {k} symbols")));
            }
            let symbols = rest
                .get(2..2 + k)
                .ok_or_else(|| corrupt("cut inside its symbols".to_owned()))?;
            if symbols.windows(2).any(|w| w[0] >= w[1]) {
                return Err(corrupt("symbols not strictly increasing".to_owned()));
            }
            let counts_len = (k * log as usize).div_ceil(8);
            let at = 2 + k;
            let count_bytes = rest
                .get(at..at + counts_len)
                .ok_or_else(|| corrupt("cut inside its counts".to_owned()))?;
            let mut reader = BitReader::new(count_bytes);
            let mut norm = [(0u8, 0u32); 256];
            let mut sum = 0u32;
            for (i, &symbol) in symbols.iter().enumerate() {
                let count = reader.get(log);
                if count == 0 {
                    return Err(corrupt(format!("symbol {symbol} with count 0")));
                }
                sum += count;
                norm[i] = (symbol, count);
            }
            if sum != 1 << log {
                return Err(corrupt(format!("counts sum to {sum}, not {}", 1u32 << log)));
            }
            let at = at + counts_len;
            let len = rest
                .get(at..at + 2)
                .map(|b| usize::from(u16::from_le_bytes([b[0], b[1]])))
                .ok_or_else(|| corrupt("cut before its bit stream length".to_owned()))?;
            let bits = rest
                .get(at + 2..at + 2 + len)
                .ok_or_else(|| corrupt(format!("a bit stream of {len} bytes cut short")))?;
            let table = decode_table(&norm[..k], log);
            let mut reader = BitReader::new(bits);
            let mut state = [0usize; LANES];
            for lane in &mut state {
                *lane = reader.get(log) as usize;
            }
            // Two lanes, whose table lookups do not wait for each other; the bits are
            // read in byte order, lane 0's before lane 1's. The last byte of each lane
            // makes no step.
            let steps = n.saturating_sub(LANES);
            let (body, tail) = out.split_at_mut(steps);
            let mut pairs = body.chunks_exact_mut(LANES);
            for pair in &mut pairs {
                let (e0, e1) = (table[state[0]], table[state[1]]);
                pair[0] = e0.symbol;
                pair[1] = e1.symbol;
                state[0] = usize::from(e0.base) + reader.get(u32::from(e0.bits)) as usize;
                state[1] = usize::from(e1.base) + reader.get(u32::from(e1.bits)) as usize;
            }
            if let [slot] = pairs.into_remainder() {
                let entry = table[state[0]];
                *slot = entry.symbol;
                state[0] = usize::from(entry.base) + reader.get(u32::from(entry.bits)) as usize;
            }
            // The remainder's byte was in lane 0, so the tail starts in lane 1 then.
            let first_lane = steps % LANES;
            for (i, slot) in tail.iter_mut().enumerate() {
                *slot = table[state[(first_lane + i) % LANES]].symbol;
            }
            // Every byte of the bit stream used, none read past its end.
            let used = (reader.at * 8).saturating_sub(reader.len as usize);
            if reader.overrun || used.div_ceil(8) != len {
                return Err(corrupt(format!(
                    "a bit stream of {len} bytes for {used} bits"
                )));
            }
            Ok(1 + at + 2 + len)
        }
        other => Err(corrupt(format!("unknown mode {other}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(stream: &[u8]) -> Vec<u8> {
        let mut coded = vec![0xAB];
        encode(stream, &mut coded).unwrap();
        coded.push(0xCD);
        let mut back = vec![0; stream.len()];
        let used = decode(&coded[1..], &mut back).unwrap();
        assert_eq!(used, coded.len() - 2, "{} bytes", stream.len());
        assert_eq!(back, stream);
        coded[1..coded.len() - 1].to_vec()
    }

    fn xorshift(x: &mut u64) -> u64 {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        *x
    }

    #[test]
    fn worked_example() {
        let stream: Vec<u8> = (0..32).map(|i| if i % 8 == 3 { 2 } else { 1 }).collect();
        let coded = round_trip(&stream);
        assert_eq!(
            coded,
            [2, 5, 1, 1, 2, 0x9C, 0x00, 4, 0, 0x20, 0xBB, 0xBE, 0x02]
        );
    }

    /// Every length, skewed and uniform, few and all symbols: back byte for byte, and
    /// near the order-0 entropy when the stream is long enough to pay for its table.
    #[test]
    fn streams_round_trip_near_their_entropy() {
        let mut x = 0x9E37_79B9_7F4A_7C15_u64;
        for n in (0..300).chain([511, 512, 1024, 4096, 65536]) {
            for kind in 0..5 {
                let stream: Vec<u8> = (0..n)
                    .map(|i| match kind {
                        0 => 7,
                        1 => u8::from(xorshift(&mut x).is_multiple_of(10)),
                        2 => [0, 0, 0, 1, 255, 2, 0, 254][(xorshift(&mut x) % 8) as usize],
                        3 => xorshift(&mut x) as u8,
                        _ => (i % 251) as u8,
                    })
                    .collect();
                let coded = round_trip(&stream);
                assert!(coded.len() <= max_coded_len(n).max(2), "{kind} {n}");
                if n >= 4096 && kind != 3 {
                    // Within 5% of the order-0 entropy, plus the table.
                    let mut counts = [0usize; 256];
                    for &b in &stream {
                        counts[usize::from(b)] += 1;
                    }
                    let bits: f64 = counts
                        .iter()
                        .filter(|&&c| c > 0)
                        .map(|&c| -(c as f64) * (c as f64 / n as f64).log2())
                        .sum();
                    let table = 6.0 + 256.0 * 2.0;
                    assert!(
                        (coded.len() as f64) <= bits / 8.0 * 1.05 + table,
                        "kind {kind}, {n} bytes: {} coded, entropy {:.0} bytes",
                        coded.len(),
                        bits / 8.0
                    );
                }
            }
        }
    }

    /// For every table log the decoder accepts, the spread visits every state once: each
    /// symbol holds exactly its count of states.
    #[test]
    fn spreads_are_permutations() {
        for log in MIN_TABLE_LOG..=MAX_TABLE_LOG {
            let size = 1u32 << log;
            let norm = [(3u8, 1), (7, size / 2 - 1), (9, size / 2)];
            let mut visits = vec![0u32; size as usize];
            let mut held = [0u32; 256];
            spread(&norm, log, |state, symbol| {
                visits[state] += 1;
                held[usize::from(symbol)] += 1;
            });
            assert!(visits.iter().all(|&v| v == 1), "log {log}");
            for (symbol, count) in norm {
                assert_eq!(
                    held[usize::from(symbol)],
                    count,
                    "log {log}, symbol {symbol}"
                );
            }
        }
    }

    #[test]
    fn hostile_streams_are_corrupt_never_a_panic() {
        let mut x = 42u64;
        let stream: Vec<u8> = (0..700)
            .map(|_| [3u8, 3, 3, 4, 9, 200][(xorshift(&mut x) % 6) as usize])
            .collect();
        let mut coded = Vec::new();
        encode(&stream, &mut coded).unwrap();
        assert_eq!(coded[0], MODE_TANS);
        let mut out = vec![0; stream.len()];
        for len in 0..coded.len() {
            assert!(
                decode(&coded[..len], &mut out).is_err(),
                "{len}-byte prefix"
            );
        }
        for at in 0..coded.len() {
            for byte in [0, 1, 2, 0x7F, 0x80, 0xFF] {
                let mut bad = coded.clone();
                bad[at] = byte;
                let _ = decode(&bad, &mut out);
            }
        }
        let mut bad = |f: &dyn Fn(&mut Vec<u8>), what: &str| {
            let mut bad = coded.clone();
            f(&mut bad);
            let err = decode(&bad, &mut out).expect_err(what);
            assert_eq!(err.kind(), crate::error::ErrorKind::Corrupt, "{what}");
        };
        bad(&|c| c[0] = 3, "unknown mode");
        bad(&|c| c[1] = 13, "table log 13");
        bad(&|c| c[1] = 0, "table log 0");
        bad(
            &|c| c[1] = 3,
            "table log 3, whose spread would not be a permutation",
        );
        bad(&|c| c.swap(3, 4), "symbols out of order");
        bad(&|c| c[4] = c[3], "a symbol twice");
        bad(
            &|c| {
                let k = usize::from(c[2]) + 1;
                let at = 3 + k + (k * usize::from(c[1])).div_ceil(8);
                let len = u16::from_le_bytes([c[at], c[at + 1]]) + 1;
                c[at..at + 2].copy_from_slice(&len.to_le_bytes());
                c.push(0);
            },
            "a byte past the bits the symbols need",
        );
    }
}
