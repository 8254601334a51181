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
//!   byte 0   mode: 0 raw, 1 constant, 2 tANS, 4 tANS in 4 lanes, 0x10 + t and
//!            0x20 + t shared (below; 3 and 5 in earlier files)
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
//!   tANS in 4 lanes  as tANS, with four final states (lane 0 first) and byte i in
//!                   lane i % 4; at least 4 bytes
//! ```
//!
//! Four lanes keep twice the table lookups in flight when decoding, for two more states
//! in the stream (up to 3 bytes): the encoder takes them where that costs under 1/64 of
//! the stream's share of its chunk or under a byte for every 200 of its symbols, every
//! stream of a chunk alike.
//!
//! A page may also carry **page tables** (in its encoding message, [`PageTables`]): a
//! table per kind of stream, built from the page's own streams, so that a chunk's stream
//! names a table instead of carrying one. On 4 KiB chunks a table is a large part of a
//! stream's bytes (a fifth of them on hourly weather series), and a page table is
//! written once, built from more data, and turned into its decoding form once per page,
//! where a table of a chunk's own is built by every decoder of that chunk. Where a kind's
//! streams are unlike (a grid's rows over land and over sea, a table's columns one after
//! another), more tables are made for it, each fitted to the streams nearest it (k-means
//! over their histograms), while that makes the page smaller by estimate (past four for
//! a kind, by at least 0.2% a table), up to [`MAX_PAGE_TABLES`] in all: a chunk's stream
//! takes the page table that codes it smallest, or a table of its own when that is
//! smaller still.
//!
//! ```text
//!   shared   byte  0x10 + t (0x20 + t in 4 lanes): t the page table, below the page's
//!                  table count
//!            varint P (1 to 3 bytes, at most 65535, no needless byte), then P bytes
//!                  of bit stream, as for tANS (in 4 lanes)
//!   shared, as earlier files hold it: byte 3 (5 for 4 lanes), byte t, u16 LE P, then
//!            the bit stream
//!
//! page tables (the bytes of `Alp.page_tables` and `Delta.page_tables`)
//!   byte     T: table count, 1..=16
//!   T times  byte L (5..=12), byte k - 1, byte B (bits per count, 1..=L), the symbols
//!            (k bytes strictly increasing, or for k > 32 a 32-byte set, bit s % 8 of
//!            byte s / 8 for symbol s), then the k counts in B bits each, LSB first
//!            (each at least 1, summing to 2^L)
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

use std::cell::OnceCell;

use crate::error::{Error, Result};
use crate::kernels;
use crate::kernels::tans::{Cursor, DecodeEntry};

const MODE_RAW: u8 = 0;
const MODE_CONSTANT: u8 = 1;
const MODE_TANS: u8 = 2;
const MODE_SHARED: u8 = 3;
const MODE_TANS4: u8 = 4;
const MODE_SHARED4: u8 = 5;
/// Modes `0x10 + t` and `0x20 + t`: a page table `t` (below 16) in two or four lanes, the
/// bit stream's length a varint; the compact forms of modes 3 and 5 (which the encoder
/// no longer writes), two bytes smaller on the short streams of small chunks.
const MODE_TABLE: u8 = 0x10;
const MODE_TABLE4: u8 = 0x20;

/// The table of a compact shared mode, and whether it is in four lanes.
fn compact_shared(mode: u8) -> Option<(usize, bool)> {
    match mode & 0xF0 {
        MODE_TABLE => Some((usize::from(mode & 0x0F), false)),
        MODE_TABLE4 => Some((usize::from(mode & 0x0F), true)),
        _ => None,
    }
}

/// The header of a compact shared stream whose bit stream takes about `bytes`: its mode
/// byte and its length's varint.
fn shared_header(bytes: f32) -> f32 {
    1.0 + super::varint_len(bytes.max(0.0) as usize) as f32
}

/// The length `P` of a bit stream at the start of `bytes` (a `u16`, or a varint when
/// `varint`) and the bytes that hold it.
#[inline]
fn stream_len(bytes: &[u8], varint: bool) -> std::result::Result<(usize, usize), String> {
    if varint {
        return read_stream_len(bytes);
    }
    bytes
        .get(..2)
        .map(|b| (usize::from(u16::from_le_bytes([b[0], b[1]])), 2))
        .ok_or_else(|| "cut before its bit stream length".to_owned())
}

/// Reads the varint length of a compact shared stream's bit stream: at most three bytes,
/// no byte after the first zero, the value at most [`u16::MAX`]; returns it and its bytes.
fn read_stream_len(bytes: &[u8]) -> std::result::Result<(usize, usize), String> {
    let mut value = 0usize;
    for (i, &b) in bytes.iter().take(3).enumerate() {
        value |= usize::from(b & 0x7F) << (7 * i);
        if b & 0x80 == 0 {
            if i > 0 && b == 0 {
                return Err("a bit stream length with a needless byte".to_owned());
            }
            if value > usize::from(u16::MAX) {
                return Err(format!(
                    "a bit stream of {value} bytes, more than {}",
                    u16::MAX
                ));
            }
            return Ok((value, i + 1));
        }
    }
    Err("cut inside its bit stream length, or a length of more than three bytes".to_owned())
}

/// Most page tables a page carries: a compact shared stream names its table in the low
/// four bits of its mode.
pub const MAX_PAGE_TABLES: usize = 16;
const _: () = assert!(MAX_PAGE_TABLES <= 16);

/// Interleaved coder states of modes 2, 3 and 0x10 + t: byte i is coded in state
/// i % LANES, so a decoder's table lookups for neighbouring bytes do not wait for each
/// other.
const LANES: usize = 2;

/// Interleaved states of modes 4, 5 and 0x20 + t, written for long streams: twice the
/// lookups in flight, for two more final states in the stream.
const WIDE_LANES: usize = 4;

/// A stream is coded in [`WIDE_LANES`] lanes when the two extra final states cost at most
/// this fraction of its estimated bytes, ...
const WIDE_MAX_COST: f32 = 1.0 / 64.0;

/// ... or at most this many bytes per symbol: decoding time goes with the symbols (two
/// lanes take about twice as long a symbol as four), the states' cost with the table, so
/// only short streams keep two lanes, and nearly constant ones of few symbols.
const WIDE_PER_SYMBOL: f32 = 1.0 / 200.0;

/// How much larger by estimate binned integers may be than two or more byte streams that
/// are not constant, and still be picked: bins decode in one pass of one coded symbol a
/// value, such streams in two passes or more, a coded symbol or a copied byte a value
/// each, and then a pass that interleaves them.
pub(crate) const BIN_MARGIN: f32 = BIN_MARGIN_1024 as f32 / 1024.0;

/// [`BIN_MARGIN`] in 1/1024ths.
pub(crate) const BIN_MARGIN_1024: u32 = 32;

/// Whether the extra states of [`WIDE_LANES`] lanes in a table of `2^log` states cost
/// little against `bytes`, a stream's share of its chunk, or against its `n` symbols.
fn cheap_to_widen(bytes: f32, n: usize, log: u32) -> bool {
    let extra = ((WIDE_LANES - LANES) as u32 * log) as f32 / 8.0;
    extra <= bytes * WIDE_MAX_COST || extra <= n as f32 * WIDE_PER_SYMBOL
}

/// How [`IntForms`] code a chunk's integers with the page's tables.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Plan<'a> {
    /// The tables the choices below were made with, and are coded with.
    tables: &'a PageTables,
    /// Binned, not byte streams.
    pub(crate) binned: bool,
    /// Every coded stream in [`WIDE_LANES`] lanes.
    pub(crate) wide: bool,
    /// The coding of each byte stream and of the bin symbols, as estimated for the
    /// plan, so that coding them does not estimate again.
    streams: [Choice; 8],
    bins: Choice,
}

/// How a stream is best coded by estimate: with the best page table (its index and
/// estimated bytes) or a table of its own (its estimated bytes), for `k` symbols.
#[derive(Debug, Clone, Copy, Default)]
struct Choice {
    shared: Option<(usize, f32)>,
    own: f32,
    k: usize,
}

impl Choice {
    fn of(present: &Present, tables: &PageTables) -> Self {
        Self::with_own(present, tables, || own_estimate(present))
    }

    /// [`of`](Self::of), with the estimate of a table of its own from `own`.
    fn with_own(present: &Present, tables: &PageTables, own: impl FnOnce() -> f32) -> Self {
        if present.len() <= 1 {
            return Self {
                k: present.len(),
                ..Self::default()
            };
        }
        Self {
            shared: tables
                .coders
                .iter()
                .enumerate()
                .map(|(t, coder)| {
                    let bytes = coder.estimate(present);
                    (t, shared_header(bytes) + bytes)
                })
                .min_by(|a, b| a.1.total_cmp(&b.1)),
            own: own(),
            k: present.len(),
        }
    }

    /// The estimated bytes of the smaller coding.
    fn len(&self) -> f32 {
        if self.k <= 1 {
            return 2.0;
        }
        self.shared
            .map_or(self.own, |(_, shared)| shared.min(self.own))
    }
}

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
    order.sort_unstable_by_key(|&i| (std::cmp::Reverse(norm[i].1), norm[i].0));
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
    // The k-th state placed is `k * step` (mod the size): a product per state rather
    // than a running sum, so no state waits for the one before.
    let mut k = 0usize;
    for &(symbol, count) in norm {
        for _ in 0..count {
            place(k.wrapping_mul(step) & mask, symbol);
            k += 1;
        }
    }
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
    let fill = |entry: &mut DecodeEntry, x: u32| {
        let bits = log - x.ilog2();
        entry.bits = bits as u8;
        entry.base = ((x << bits) - size as u32) as u16;
    };
    // Each state takes its symbol's next count. Four states at a time, their counts all
    // read before any is written back (a state counts the equal symbols before it in
    // the four): a symbol's count then waits on its store once per four states, not
    // once per state.
    let mut quads = table.chunks_exact_mut(4);
    for quad in &mut quads {
        let [a, b, c, d] = [0, 1, 2, 3].map(|i| usize::from(quad[i].symbol));
        let xa = next[a];
        let xb = next[b] + u32::from(a == b);
        let xc = next[c] + u32::from(a == c) + u32::from(b == c);
        let xd = next[d] + u32::from(a == d) + u32::from(b == d) + u32::from(c == d);
        next[a] = xa + 1;
        next[b] = xb + 1;
        next[c] = xc + 1;
        next[d] = xd + 1;
        for (entry, x) in quad.iter_mut().zip([xa, xb, xc, xd]) {
            fill(entry, x);
        }
    }
    for entry in quads.into_remainder() {
        let x = next[usize::from(entry.symbol)];
        next[usize::from(entry.symbol)] += 1;
        fill(entry, x);
    }
    table
}

/// Puts bits LSB first into a region [`write_bits`] sized for them.
pub(crate) struct BitWriter<'a> {
    buf: &'a mut [u8],
    pos: usize,
    acc: u64,
    len: u32,
}

/// Appends to `out` the `bits` bits that `write` puts through a [`BitWriter`], the last
/// byte padded with zeros. The region is sized once, so a put is a shift, an or and now
/// and then a 4-byte store, with no check of the vector's capacity; `write` must put no
/// more than `bits` bits (a put past them panics).
pub(crate) fn write_bits(out: &mut Vec<u8>, bits: usize, write: impl FnOnce(&mut BitWriter)) {
    let at = out.len();
    out.resize(at + bits.div_ceil(8), 0);
    let mut writer = BitWriter {
        buf: &mut out[at..],
        pos: 0,
        acc: 0,
        len: 0,
    };
    write(&mut writer);
    let end = writer.finish();
    out.truncate(at + end);
}

impl BitWriter<'_> {
    /// Appends the low `bits` bits of `value` (any count up to 64).
    #[inline]
    pub(crate) fn put_wide(&mut self, value: u64, bits: u32) {
        if bits <= 32 {
            self.put((value & mask(bits)) as u32, bits);
        } else {
            self.put(value as u32, 32);
            self.put((value >> 32 & mask(bits - 32)) as u32, bits - 32);
        }
    }

    /// Appends `value`, which must fit `bits` (at most 32) bits. Fewer than 32 bits are
    /// pending between calls, so the accumulator never overflows.
    #[inline]
    fn put(&mut self, value: u32, bits: u32) {
        self.acc |= u64::from(value) << self.len;
        self.len += bits;
        if self.len >= 32 {
            self.buf[self.pos..self.pos + 4].copy_from_slice(&(self.acc as u32).to_le_bytes());
            self.pos += 4;
            self.acc >>= 32;
            self.len -= 32;
        }
    }

    /// Writes the pending bits; returns the bytes written in all.
    fn finish(self) -> usize {
        let bytes = self.len.div_ceil(8) as usize;
        self.buf[self.pos..self.pos + bytes].copy_from_slice(&self.acc.to_le_bytes()[..bytes]);
        self.pos + bytes
    }
}

/// Appends a table as tANS streams and page tables write it: `L`, `k - 1`, the symbols
/// and the counts.
fn write_table(norm: &[(u8, u32)], log: u32, out: &mut Vec<u8>) {
    out.extend_from_slice(&[log as u8, (norm.len() - 1) as u8]);
    out.extend(norm.iter().map(|&(s, _)| s));
    write_counts(norm, log, out);
}

/// Appends the counts of `norm` in `bits` bits each, LSB first.
fn write_counts(norm: &[(u8, u32)], bits: u32, out: &mut Vec<u8>) {
    write_bits(out, norm.len() * bits as usize, |counts| {
        for &(_, count) in norm {
            counts.put(count, bits);
        }
    });
}

/// Bytes [`write_table`] writes.
fn table_len(k: usize, log: u32) -> usize {
    2 + k + (k * log as usize).div_ceil(8)
}

/// A table as read: its symbols and counts, its log, and the bytes it took.
type ReadTable = (Vec<(u8, u32)>, u32, usize);

/// Reads a table from the start of `bytes`; returns its counts, its log and its length.
/// Every field is checked: the log in range, 2 or more symbols strictly increasing,
/// counts of at least 1 summing to `2^L`.
fn read_table(bytes: &[u8]) -> std::result::Result<ReadTable, String> {
    let [log, k1, ..] = *bytes else {
        return Err("cut inside its table header".to_owned());
    };
    let log = u32::from(log);
    let k = usize::from(k1) + 1;
    if !(MIN_TABLE_LOG..=MAX_TABLE_LOG).contains(&log) || k < 2 || k > 1 << log {
        return Err(format!("table log {log} with {k} symbols"));
    }
    let symbols = bytes
        .get(2..2 + k)
        .ok_or_else(|| "cut inside its symbols".to_owned())?;
    if symbols.windows(2).any(|w| w[0] >= w[1]) {
        return Err("symbols not strictly increasing".to_owned());
    }
    let len = table_len(k, log);
    let count_bytes = bytes
        .get(2 + k..len)
        .ok_or_else(|| "cut inside its counts".to_owned())?;
    let norm = read_counts(symbols, count_bytes, log, log)?;
    Ok((norm, log, len))
}

/// How the encoder steps a state for one symbol.
#[derive(Debug, Clone, Copy, Default)]
struct SymbolStep {
    /// `(most << 16) - (count << most)`, `most` the symbol's most bits shed, so that a
    /// state x sheds `(x + delta) >> 16` bits (Zstd's FSE: one add and a shift where
    /// comparing x with `count << most` would branch).
    delta: u32,
    /// `first - count` (wrapping): a state x of the symbol, shifted down into
    /// `count..2 * count`, plus this is its index in the states.
    offset: u32,
}

/// The encoding side of a table: the encoder's states and each symbol's cost in bits.
#[derive(Debug, Clone)]
struct Coder {
    log: u32,
    norm: Vec<(u8, u32)>,
    /// For symbol s with count c, its states for x in c..2c start at `first[s]`.
    first: [u16; 256],
    /// Each symbol's step, in one 8-byte load.
    steps: [SymbolStep; 256],
    states: Vec<u16>,
    /// What each symbol costs, once filled in by [`with_costs`](Self::with_costs).
    costs: Costs,
}

/// The cost of each symbol in a table, for estimates.
#[derive(Debug, Clone)]
struct Costs {
    log: u32,
    /// Bits per occurrence, `log - log2(count)`; [`MISSING`] for symbols the table lacks
    /// (finite, so that an absent symbol's count of 0 weighs 0 in an estimate).
    bits: [f32; 256],
}

impl Costs {
    /// Every symbol missing.
    fn none(log: u32) -> Self {
        Self {
            log,
            bits: [MISSING; 256],
        }
    }

    fn of(norm: &[(u8, u32)], log: u32) -> Self {
        let mut costs = Self::none(log);
        for &(symbol, count) in norm {
            costs.bits[usize::from(symbol)] = log as f32 - log2(count);
        }
        costs
    }

    /// Estimated bytes of the bit stream coding a stream of these symbol counts: the
    /// information content plus the lanes' final states; infinite when a symbol is
    /// missing from the table.
    fn estimate(&self, present: &Present) -> f32 {
        let bits = present.sum(|s, c| c as f32 * self.bits[s]);
        if bits >= MISSING {
            return f32::INFINITY;
        }
        (bits + (LANES as u32 * self.log) as f32) / 8.0
    }
}

impl Coder {
    fn new(norm: Vec<(u8, u32)>, log: u32) -> Self {
        let size = 1usize << log;
        let mut first = [0u16; 256];
        let mut count_of = [0u32; 256];
        let mut at = 0usize;
        for &(symbol, count) in &norm {
            let s = usize::from(symbol);
            // At most 2^12 states: every offset fits a u16.
            first[s] = at as u16;
            count_of[s] = count;
            at += count as usize;
        }
        let mut symbols = vec![0u8; size];
        spread(&norm, log, |state, symbol| symbols[state] = symbol);
        // States in increasing order, each symbol's x counting up from its count.
        let mut states = vec![0u16; size];
        let mut next = count_of;
        for (u, &symbol) in symbols.iter().enumerate() {
            let s = usize::from(symbol);
            let x = next[s];
            next[s] += 1;
            // `size + u` is below 2^13.
            states[usize::from(first[s]) + (x - count_of[s]) as usize] = (size + u) as u16;
        }
        let mut steps = [SymbolStep::default(); 256];
        for &(symbol, count) in &norm {
            let most = log - count.ilog2();
            let s = usize::from(symbol);
            steps[s] = SymbolStep {
                // States lie in [2^log, 2^(log+1)): (most << 16) + 2^(log+1) fits a u32.
                delta: (most << 16).wrapping_sub(count << most),
                offset: u32::from(first[s]).wrapping_sub(count),
            };
        }
        Self {
            log,
            norm,
            first,
            steps,
            states,
            costs: Costs::none(log),
        }
    }

    /// The same coder with each symbol's cost filled in, for [`estimate`](Self::estimate).
    fn with_costs(mut self) -> Self {
        self.costs = Costs::of(&self.norm, self.log);
        self
    }

    /// [`Costs::estimate`] with this coder's table.
    fn estimate(&self, present: &Present) -> f32 {
        self.costs.estimate(present)
    }

    /// Appends the length `P` (a `u16`, or a varint when `varint`) and the P bytes of the
    /// bit stream coding `stream` in `L` lanes (`L` or more bytes, every one a symbol of
    /// the table); false, having appended nothing, when P would exceed [`u16::MAX`].
    fn encode_bits<const L: usize>(&self, stream: &[u8], varint: bool, out: &mut Vec<u8>) -> bool {
        // Symbols last to first, byte i in lane i % L; the first one coded into a lane
        // (its last byte) starts the lane from the first of its states and sheds
        // nothing, as the decoder makes no step after it.
        let n = stream.len();
        let size = 1u32 << self.log;
        let mut state = [0u32; L];
        let start = n.saturating_sub(L);
        for (i, &symbol) in stream.iter().enumerate().skip(start) {
            state[i % L] = u32::from(self.states[usize::from(self.first[usize::from(symbol)])]);
        }
        // What each byte below `start` sheds, by its position.
        let mut shed = vec![(0u32, 0u32); start];
        let mut total = L * self.log as usize;
        let mut step = |lane: &mut u32, symbol: u8, shed: &mut (u32, u32)| {
            let code = self.steps[usize::from(symbol)];
            let bits = lane.wrapping_add(code.delta) >> 16;
            total += bits as usize;
            *shed = (*lane & ((1 << bits) - 1), bits);
            *lane = u32::from(self.states[((*lane >> bits).wrapping_add(code.offset)) as usize]);
        };
        // The bytes above the last whole group of L one by one, then whole groups, whose
        // lanes are fixed positions (so the states stay in registers).
        let whole = start - start % L;
        for i in (whole..start).rev() {
            step(&mut state[i % L], stream[i], &mut shed[i]);
        }
        let groups = stream[..whole]
            .chunks_exact(L)
            .zip(shed[..whole].chunks_exact_mut(L));
        for (group, shed) in groups.rev() {
            for k in (0..L).rev() {
                step(&mut state[k], group[k], &mut shed[k]);
            }
        }
        // The bit stream's length is known before its bits are written.
        let Ok(len) = u16::try_from(total.div_ceil(8)) else {
            return false;
        };
        if varint {
            super::put_varint(out, usize::from(len));
        } else {
            out.extend_from_slice(&len.to_le_bytes());
        }
        write_bits(out, total, |writer| {
            for lane in state {
                writer.put(lane - size, self.log);
            }
            for &(value, bits) in &shed {
                writer.put(value, bits);
            }
        });
        true
    }
}

/// The cost of a symbol a table lacks: more bits than any stream of symbols it has
/// takes (at most [`MAX_STREAM`] symbols of at most [`MAX_TABLE_LOG`] bits), so that an
/// estimate of at least this is one the table cannot code.
const MISSING: f32 = (1 << 24) as f32;

/// The start of a bit stream, as [`Decoder::start`] reads it.
struct Start<'r, const L: usize> {
    /// The bit stream and the bytes after it.
    bits: &'r [u8],
    /// Its length `P` in bytes.
    len: usize,
    /// The bytes that held `P`.
    head: usize,
    /// The lanes' first states.
    states: [usize; L],
}

/// The table a four-lane stream of [`decode_many`] decodes with.
#[derive(Clone, Copy)]
enum StreamTable {
    /// Its own, built in `decode_many`'s list: the index there.
    Own(usize),
    /// A page table, and whether the stream's length is a varint.
    Page(usize, bool),
}

/// The decoding side of a table.
#[derive(Debug, Clone)]
struct Decoder {
    log: u32,
    entries: Vec<DecodeEntry>,
    /// Each symbol's count in the table: the `x` of the state every lane of a stream ends
    /// at (the encoder starts each lane at the first state of its last symbol).
    counts: [u16; 256],
}

impl Decoder {
    fn new(norm: &[(u8, u32)], log: u32) -> Self {
        let mut counts = [0u16; 256];
        for &(symbol, count) in norm {
            // At most 2^MAX_TABLE_LOG.
            counts[usize::from(symbol)] = count as u16;
        }
        Self {
            log,
            entries: decode_table(norm, log),
            counts,
        }
    }

    /// Whether state `state` (an index of the table) is the first state of its symbol,
    /// where a lane of a whole stream ends: its `x`, `(base + size) >> bits`, is the
    /// symbol's count. A stream decoded to more or fewer bytes than were coded ends
    /// elsewhere, but for a chance of about (symbols / states) a lane.
    fn is_first_state(&self, state: usize) -> bool {
        let entry = self.entries[state];
        let x = (usize::from(entry.base) + self.entries.len()) >> entry.bits;
        x == usize::from(self.counts[usize::from(entry.symbol)])
    }

    /// Decodes `out.len()` bytes from `rest`, which starts with the length `P` (a `u16`,
    /// or a varint when `varint`) and the bit stream in `L` lanes (2 or 4); returns the
    /// bytes of `rest` taken.
    // Inlined into each `kernels::with_bmi2` closure, to be compiled for BMI2 there.
    #[allow(clippy::inline_always)]
    #[inline(always)]
    fn decode_bits<const L: usize>(
        &self,
        rest: &[u8],
        varint: bool,
        out: &mut [u8],
    ) -> std::result::Result<usize, String> {
        let Start {
            bits,
            len,
            head,
            states: state,
        } = self.start::<L>(rest, varint)?;
        let mut cursor = Cursor {
            table: &self.entries,
            bits,
            out,
            states: [0; 4],
            pos: L * self.log as usize,
        };
        cursor.states[..L].copy_from_slice(&state);
        Ok(head + self.finish::<L>(&mut cursor, 0, len)?)
    }

    /// The start of a bit stream in `L` lanes, from `rest`, which starts with its length
    /// `P` (a `u16`, or a varint when `varint`): the bit stream (and the bytes after it),
    /// `P`, the bytes that held `P`, and the lanes' first states, read from its first
    /// bits.
    #[allow(clippy::inline_always)]
    #[inline(always)]
    fn start<'r, const L: usize>(
        &self,
        rest: &'r [u8],
        varint: bool,
    ) -> std::result::Result<Start<'r, L>, String> {
        let (len, head) = stream_len(rest, varint)?;
        if rest.len() - head < len {
            return Err(format!("a bit stream of {len} bytes cut short"));
        }
        // Peeks see the bytes after the stream too; a valid stream takes none of their
        // bits, and one that does fails the check at the end.
        let bits = &rest[head..];
        let log = self.log;
        // The final states take at most 48 bits, which one peek (at least 57 bits) covers.
        let first = peek(bits, 0);
        let state = std::array::from_fn(|l| (first >> (l as u32 * log) & mask(log)) as usize);
        Ok(Start {
            bits,
            len,
            head,
            states: state,
        })
    }

    /// Decodes the bytes of `cursor.out` from step `from` on (a multiple of four), with
    /// the lanes' states and the bit position after step `from - 1`, and checks that the
    /// stream's `len` bytes were all used and no more; returns `len`.
    #[allow(clippy::inline_always)]
    #[inline(always)]
    fn finish<const L: usize>(
        &self,
        cursor: &mut Cursor,
        from: usize,
        len: usize,
    ) -> std::result::Result<usize, String> {
        let (bits, out) = (cursor.bits, &mut *cursor.out);
        let n = out.len();
        let table = &self.entries[..];
        // Bits are tracked by position: each step peeks a word there, so a refill is one
        // unaligned load and no branch on the accumulator; past the end zeros are read,
        // and a position past the end is an overrun, checked once at the end.
        let mut state: [usize; L] = std::array::from_fn(|l| cursor.states[l]);
        let mut pos = cursor.pos;
        // L lanes, whose table lookups do not wait for each other; the bits are read in
        // byte order, lane 0's first. The last byte of each lane makes no step.
        let steps = n.saturating_sub(L);
        let (body, tail) = out.split_at_mut(steps);
        // Four steps take at most 48 bits: one peek. Groups start at multiples of four,
        // so step j of a group is in lane j % L.
        let mut groups = body[from.min(steps)..].chunks_exact_mut(4);
        for group in &mut groups {
            let mut word = peek(bits, pos);
            let mut used = 0u32;
            for (j, slot) in group.iter_mut().enumerate() {
                let entry = table[state[j % L]];
                *slot = entry.symbol;
                let b = u32::from(entry.bits);
                state[j % L] = usize::from(entry.base) + (word & mask(b)) as usize;
                word >>= b;
                used += b;
            }
            pos += used as usize;
        }
        for (i, slot) in groups.into_remainder().iter_mut().enumerate() {
            let entry = table[state[i % L]];
            *slot = entry.symbol;
            let b = u32::from(entry.bits);
            state[i % L] = usize::from(entry.base) + (peek(bits, pos) & mask(b)) as usize;
            pos += b as usize;
        }
        // Byte `steps` on is the tail: each lane's last byte, from its state, which must
        // be the state the encoder started that lane at.
        for (i, slot) in tail.iter_mut().enumerate() {
            let lane = state[(steps + i) % L];
            *slot = table[lane].symbol;
            if !self.is_first_state(lane) {
                return Err(format!(
                    "lane {} of a stream of {n} bytes does not end where its coding began (a count that is not the stream's?)",
                    (steps + i) % L
                ));
            }
        }
        // Every byte of the bit stream used, none read past its end.
        if pos > 8 * len || pos.div_ceil(8) != len {
            return Err(format!("a bit stream of {len} bytes for {pos} bits"));
        }
        Ok(len)
    }
}

/// The low `bits` (below 64) bits set.
#[inline]
fn mask(bits: u32) -> u64 {
    (1u64 << bits) - 1
}

/// The bits of `bytes` from bit `pos` on, LSB first: at least 57 of them, zeros past the
/// end of `bytes`.
#[inline]
fn peek(bytes: &[u8], pos: usize) -> u64 {
    let at = pos / 8;
    match bytes.get(at..at + 8) {
        Some(word) => u64::from_le_bytes(word.try_into().expect("8 bytes")) >> (pos % 8),
        None => peek_tail(bytes, pos),
    }
}

/// [`peek`] within the last eight bytes or past them.
#[cold]
#[inline(never)]
fn peek_tail(bytes: &[u8], pos: usize) -> u64 {
    let at = pos / 8;
    if let Some(last) = bytes.last_chunk::<8>() {
        if at >= bytes.len() {
            return 0;
        }
        // The last eight bytes, shifted down past the `at + 8 - len` (1 to 7) bytes
        // before `at`; zeros come in from above.
        let skip = at + 8 - bytes.len();
        return (u64::from_le_bytes(*last) >> (8 * skip)) >> (pos % 8);
    }
    let mut word = 0u64;
    for (i, &b) in bytes.iter().skip(pos / 8).take(8).enumerate() {
        word |= u64::from(b) << (8 * i);
    }
    word >> (pos % 8)
}

/// How often each byte value occurs in a stream.
pub type Histogram = [u32; 256];

/// Adds the bytes of `stream` to `histogram`.
pub fn count(stream: &[u8], histogram: &mut Histogram) {
    for &b in stream {
        histogram[usize::from(b)] += 1;
    }
}

/// `n` decoders, none built yet.
fn unbuilt(n: usize) -> Box<[std::sync::OnceLock<Decoder>]> {
    (0..n).map(|_| std::sync::OnceLock::new()).collect()
}

/// The tables a page's chunks share: built by the encoder from histograms of the page's
/// streams (ready to encode with), carried as bytes in the page's encoding, and parsed
/// (validated) once per page by the decoder (ready to decode with).
#[derive(Debug, Clone, Default)]
pub struct PageTables {
    /// Each table's symbols and counts, and its log.
    norms: Vec<(Vec<(u8, u32)>, u32)>,
    /// Built by [`from_streams`](Self::from_streams) only.
    coders: Vec<Coder>,
    /// Each table's decoder, built from `norms` when a stream first names it
    /// ([`decoder`](Self::decoder)): a page's layout is checked with a decompressor that
    /// never decodes, building one is a step per state (up to 4096), and a read of a
    /// few chunks needs only the tables their streams name, not the page's sixteen.
    decoders: Box<[std::sync::OnceLock<Decoder>]>,
    /// Set by [`from_streams`](Self::from_streams): whether the sample it was given likely
    /// missed what the rest of the page holds ([`sample_misses`](Self::sample_misses)).
    sample_missed: bool,
}

/// Symbol counts of one stream, and its kind (which byte of which integers it is).
pub type KindHistogram = (usize, Histogram);

impl PageTables {
    /// Tables for the kinds of stream in `streams` (histograms of a sample of a page's
    /// streams, each standing for `scale` streams of the page), at most
    /// [`MAX_PAGE_TABLES`]: first a table per kind of two or more symbols, kept when the
    /// streams that would use it save more bytes than it takes; then, kind by kind while
    /// tables are left, further tables for the streams of a kind that a table of their own
    /// still codes smaller (see [`cluster`]); a state for every eight counted bytes, up to
    /// [`MAX_TABLE_LOG`]. (Every decoder builds a page's tables before its first chunk,
    /// a step per state: on small pages, finer tables cost a good part of the decoding
    /// time and code their symbols no better.)
    pub fn from_streams(streams: &[KindHistogram], scale: f64) -> Self {
        let mut kinds: Vec<usize> = streams.iter().map(|&(kind, _)| kind).collect();
        kinds.sort_unstable();
        kinds.dedup();
        // Per kind, its streams of two or more symbols and their cost with a table of
        // their own (or raw), and its tables so far.
        let mut per_kind: Vec<(Vec<Member>, Vec<Built>)> = Vec::new();
        let mut count = 0;
        for kind in kinds {
            if count == MAX_PAGE_TABLES {
                break;
            }
            let members: Vec<Member> = streams
                .iter()
                .filter(|(k, _)| *k == kind)
                .map(|(_, h)| Present::of(h))
                .filter(|present| present.len() >= 2)
                .map(|present| Member {
                    own: f64::from(own_estimate(&present)),
                    present,
                })
                .collect();
            let all: Vec<usize> = (0..members.len()).collect();
            let Some(table) = Built::from(&members, &all) else {
                continue;
            };
            // One table for the kind, or when that does not pay (its streams too unlike
            // for one table to code them all well), two.
            let mut tables = vec![table];
            let none = cost(&members, &[], scale);
            if cost(&members, &tables, scale) >= none && count + 2 <= MAX_PAGE_TABLES {
                if let Some(two) = cluster(&members, &tables, scale) {
                    tables = two;
                }
            }
            if cost(&members, &tables, scale) < none {
                count += tables.len();
                per_kind.push((members, tables));
            }
        }
        for (members, tables) in &mut per_kind {
            while count < MAX_PAGE_TABLES {
                let Some(better) = cluster(members, tables, scale) else {
                    break;
                };
                // Each further table costs a search like this one and every decoder a
                // table to build: past four, stop once one saves little.
                let small = better.len() > 4
                    && cost(members, &better, scale)
                        > cost(members, tables, scale) * (1.0 - MIN_TABLE_SAVING);
                count += better.len() - tables.len();
                *tables = better;
                if small {
                    break;
                }
            }
        }
        // A sample of every stream of the page (each standing for itself) missed nothing.
        let sample_missed = scale > 1.0 && Self::sample_misses(&per_kind);
        Self {
            sample_missed,
            ..Self::for_encoding(
                per_kind
                    .into_iter()
                    .flat_map(|(_, tables)| tables)
                    .map(|t| (t.norm, t.log))
                    .collect(),
            )
        }
    }

    fn for_encoding(norms: Vec<(Vec<(u8, u32)>, u32)>) -> Self {
        Self {
            coders: norms
                .iter()
                .map(|(norm, log)| Coder::new(norm.clone(), *log).with_costs())
                .collect(),
            decoders: unbuilt(norms.len()),
            norms,
            sample_missed: false,
        }
    }

    /// Whether tables fitted to the sampled streams `per_kind` (each kind's members and
    /// tables) would likely code the rest of the page worse than tables made from all of
    /// it: some sampled stream is left to a table of its own (the page holds streams
    /// unlike its kind's), or the symbols the sample saw once say that the page's other
    /// streams hold symbols the tables lack often enough to cost [`MISSED_SHARE`] of the
    /// estimate. The share of a kind's symbols seen once estimates how often a symbol is
    /// one the sample never saw (Good-Turing); a stream of `n` symbols then has one with
    /// probability `1 - (1 - share)^n`, and costs a table of its own instead of a shared one.
    fn sample_misses(per_kind: &[(Vec<Member>, Vec<Built>)]) -> bool {
        let (mut missed, mut total) = (0.0, 0.0);
        for (members, tables) in per_kind {
            let counts = pooled(members);
            let n: u64 = counts.iter().map(|&c| u64::from(c)).sum();
            let once = counts.iter().filter(|&&c| c == 1).count();
            let per_stream = n as f64 / members.len().max(1) as f64;
            let hit = 1.0 - (1.0 - once as f64 / n.max(1) as f64).powf(per_stream);
            for m in 0..members.len() {
                let (table, cost) = best_table(m, members, tables);
                if table.is_none() {
                    return true;
                }
                total += cost;
                missed += hit * (members[m].own - cost).max(0.0);
            }
        }
        missed >= MISSED_SHARE * total
    }

    /// Whether the streams these tables were made from likely missed what the rest of
    /// their page holds, so that tables made from the whole page would code it smaller.
    pub(crate) fn sample_missed(&self) -> bool {
        self.sample_missed
    }

    /// How many tables there are.
    pub fn len(&self) -> usize {
        self.norms.len()
    }

    /// Whether there is no table.
    pub fn is_empty(&self) -> bool {
        self.norms.is_empty()
    }

    /// The tables as a page's encoding carries them; empty when there is none.
    pub fn to_bytes(&self) -> Vec<u8> {
        if self.norms.is_empty() {
            return Vec::new();
        }
        let mut out = vec![self.norms.len() as u8];
        for (norm, log) in &self.norms {
            write_page_table(norm, *log, &mut out);
        }
        out
    }

    /// The decoder of table `t`, named by a stream: built on first use.
    fn decoder(&self, t: usize) -> std::result::Result<&Decoder, String> {
        match (self.decoders.get(t), self.norms.get(t)) {
            (Some(cell), Some((norm, log))) => Ok(cell.get_or_init(|| Decoder::new(norm, *log))),
            _ => Err(format!(
                "page table {t}, but the page has {}",
                self.norms.len()
            )),
        }
    }

    /// Parses and validates page tables; empty bytes are no tables.
    pub fn parse(bytes: &[u8]) -> Result<Self> {
        let corrupt = |what: String| Error::corrupt(format!("page entropy tables: {what}"));
        let Some((&count, mut rest)) = bytes.split_first() else {
            return Ok(Self::default());
        };
        let count = usize::from(count);
        if !(1..=MAX_PAGE_TABLES).contains(&count) {
            return Err(corrupt(format!(
                "{count} tables (1 to {MAX_PAGE_TABLES} are allowed)"
            )));
        }
        let mut tables = Vec::with_capacity(count);
        for i in 0..count {
            let (norm, log, used) =
                read_page_table(rest).map_err(|what| corrupt(format!("table {i}: {what}")))?;
            tables.push((norm, log));
            rest = &rest[used..];
        }
        if !rest.is_empty() {
            return Err(corrupt(format!("{} bytes after the tables", rest.len())));
        }
        Ok(Self {
            decoders: unbuilt(tables.len()),
            norms: tables,
            coders: Vec::new(),
            sample_missed: false,
        })
    }
}

/// Share of a page's estimated bytes that tables made from a sample must be expected to
/// lose to symbols it missed before [`PageTables::sample_misses`] says so. The estimate
/// charges each stream it expects to hold a missing symbol the whole gap between its
/// shared table and a table of its own, more than such a stream usually costs (a rare
/// symbol in a noisy stream is coded nearly as well raw), hence a bar of a percent: below
/// it, making the tables again from the whole page would cost encoding time for a few
/// bytes.
const MISSED_SHARE: f64 = 0.01;

/// Past four tables for a kind, a further one is searched for only while the last made
/// its streams' estimated bytes at least this much smaller: there most additions save
/// 0.05-0.2% (COADS, Levitus) and each costs a search and every decoder a table to
/// build; the tables that pay on `tmy3_all_cols` (15 columns a page) save 1-2% each.
const MIN_TABLE_SAVING: f64 = 0.002;

/// A sampled stream of one kind: its symbol counts, and its estimated bytes with a table
/// of its own (or raw).
struct Member<'a> {
    present: Present<'a>,
    own: f64,
}

/// A page table in the making, with its estimate for each stream of its kind.
#[derive(Clone)]
struct Built {
    norm: Vec<(u8, u32)>,
    log: u32,
    /// Per member of the kind, in order: its estimated bytes with this table (with a
    /// stream's 4 bytes of mode, table and length); infinite for a stream with a symbol
    /// the table lacks.
    estimates: Vec<f64>,
}

impl Built {
    /// The table for the summed counts of `members[i]` for each `i` of `chosen`: a state
    /// for every eight counted bytes, at least two for each symbol; `None` for fewer than
    /// two symbols.
    fn from(members: &[Member], chosen: &[usize]) -> Option<Self> {
        let counts = pooled(chosen.iter().map(|&i| &members[i]));
        let k = counts.iter().filter(|&&c| c > 0).count();
        let n: usize = counts.iter().map(|&c| c as usize).sum();
        if k < 2 {
            return None;
        }
        let log = (n / 8)
            .max(1)
            .ilog2()
            .clamp(MIN_TABLE_LOG, MAX_TABLE_LOG)
            .max((2 * k).next_power_of_two().trailing_zeros())
            .min(MAX_TABLE_LOG);
        let norm = normalize(&counts, n, log);
        let costs = Costs::of(&norm, log);
        let estimates = members
            .iter()
            .map(|m| {
                let bytes = costs.estimate(&m.present);
                f64::from(shared_header(bytes) + bytes)
            })
            .collect();
        Some(Self {
            norm,
            log,
            estimates,
        })
    }
}

/// The summed symbol counts of `members` (saturating, far above any page's streams).
fn pooled<'a, 'b: 'a>(members: impl IntoIterator<Item = &'a Member<'b>>) -> Histogram {
    let mut counts = [0u32; 256];
    for member in members {
        for (c, &x) in counts.iter_mut().zip(member.present.counts) {
            *c = c.saturating_add(x);
        }
    }
    counts
}

/// The table of `tables` that codes member `m` smallest and its estimated bytes;
/// `(None, infinity)` without tables.
fn best_shared(m: usize, tables: &[Built]) -> (Option<usize>, f64) {
    tables
        .iter()
        .enumerate()
        .map(|(t, table)| (Some(t), table.estimates[m]))
        .fold((None, f64::INFINITY), |best, next| {
            if next.1 < best.1 {
                next
            } else {
                best
            }
        })
}

/// [`best_shared`], or `None` and the cost of member `m` with a table of its own when
/// that is smaller.
fn best_table(m: usize, members: &[Member], tables: &[Built]) -> (Option<usize>, f64) {
    let shared = best_shared(m, tables);
    if shared.1 < members[m].own {
        shared
    } else {
        (None, members[m].own)
    }
}

/// Estimated bytes of a page's streams of one kind with `tables` (each sampled stream
/// standing for `scale`), the tables' own bytes included.
fn cost(members: &[Member], tables: &[Built], scale: f64) -> f64 {
    let streams: f64 = (0..members.len())
        .map(|m| best_table(m, members, tables).1)
        .sum();
    let carried: usize = tables.iter().map(|t| page_table_len(&t.norm)).sum();
    streams * scale + carried as f64
}

/// Rounds of refitting in [`cluster`].
const REFITS: usize = 2;

/// One more table for a kind, or `None` when that would not make the kind's page
/// smaller: seeded with the half of the streams that a table of their own codes smaller
/// than any of `tables` by the most, then every table rebuilt from the streams it codes
/// smallest, twice (k-means over histograms), so that each table fits the streams
/// nearest it.
fn cluster(members: &[Member], tables: &[Built], scale: f64) -> Option<Vec<Built>> {
    let mut outliers: Vec<(usize, f64)> = (0..members.len())
        .filter(|&m| best_table(m, members, tables).0.is_none())
        .map(|m| (m, best_shared(m, tables).1 - members[m].own))
        .collect();
    if outliers.len() < 2 {
        return None;
    }
    outliers.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let seed: Vec<usize> = outliers[..outliers.len().div_ceil(2)]
        .iter()
        .map(|&(i, _)| i)
        .collect();
    let mut trial: Vec<Built> = tables.iter().map(Built::clone).collect();
    trial.push(Built::from(members, &seed)?);
    for _ in 0..REFITS {
        let mut users: Vec<Vec<usize>> = vec![Vec::new(); trial.len()];
        for m in 0..members.len() {
            if let (Some(t), _) = best_shared(m, &trial) {
                users[t].push(m);
            }
        }
        let refit: Vec<Built> = users
            .iter()
            .zip(&trial)
            .filter(|(users, _)| !users.is_empty())
            .map(|(users, table)| Built::from(members, users).unwrap_or_else(|| table.clone()))
            .collect();
        if refit.is_empty() || cost(members, &refit, scale) > cost(members, &trial, scale) {
            break;
        }
        trial = refit;
    }
    (trial.len() > tables.len() && cost(members, &trial, scale) < cost(members, tables, scale))
        .then_some(trial)
}

/// A histogram and what estimates need of it: how many symbols it holds and, when they
/// are few, which (in symbol order) with their counts, so that estimates iterate those
/// alone. Above [`SPARSE_MAX`] symbols estimates go over all 256 counts instead, in
/// independent lanes that vectorise, rather than one sum that waits on each addition.
struct Present<'a> {
    counts: &'a Histogram,
    items: [(u8, u32); SPARSE_MAX],
    len: usize,
}

/// Most symbols a [`Present`] lists.
const SPARSE_MAX: usize = 32;

/// Lanes of the estimates over all 256 counts.
const EST_LANES: usize = 8;

impl<'a> Present<'a> {
    fn of(counts: &'a Histogram) -> Self {
        let len = counts.iter().filter(|&&c| c > 0).count();
        let mut items = [(0u8, 0u32); SPARSE_MAX];
        if len <= SPARSE_MAX {
            let mut at = 0;
            for (s, &c) in counts.iter().enumerate() {
                if c > 0 {
                    items[at] = (s as u8, c);
                    at += 1;
                }
            }
        }
        Self { counts, items, len }
    }

    /// The symbols present, when they are at most [`SPARSE_MAX`].
    fn sparse(&self) -> Option<&[(u8, u32)]> {
        (self.len <= SPARSE_MAX).then(|| &self.items[..self.len])
    }

    fn len(&self) -> usize {
        self.len
    }

    /// The sum over the symbols of `term(symbol, count)`; `term` must give 0 (not NaN)
    /// for absent symbols, whose count is 0.
    #[inline]
    fn sum(&self, term: impl Fn(usize, u32) -> f32) -> f32 {
        if let Some(items) = self.sparse() {
            return items.iter().map(|&(s, c)| term(usize::from(s), c)).sum();
        }
        let mut lanes = [0f32; EST_LANES];
        for (at, counts) in self.counts.chunks_exact(EST_LANES).enumerate() {
            for (l, (lane, &c)) in lanes.iter_mut().zip(counts).enumerate() {
                *lane += term(at * EST_LANES + l, c);
            }
        }
        lanes.iter().sum()
    }
}

/// Estimated bytes of a stream of these counts coded with a table of its own.
fn own_estimate(present: &Present) -> f32 {
    let (k, n, bits) = information(present);
    let log = table_log(n, k);
    let tans = 3.0 + table_len(k, log) as f32 + (bits + (LANES as u32 * log) as f32) / 8.0;
    tans.min(1.0 + n as f32)
}

/// The symbol count, the byte count and the information content in bits (order 0) of a
/// stream of these counts: what a table of its own codes it in, near enough to choose.
fn information(present: &Present) -> (usize, usize, f32) {
    let log2 = Log2::table();
    let n: usize = present.counts.iter().map(|&c| c as usize).sum();
    let sum = present.sum(|_, c| log2.times(c));
    // sum c * log2(n / c) = n log2 n - sum c log2 c
    let bits = n as f32 * log2.of(n as u32) - sum;
    (present.len(), n, bits.max(0.0))
}

/// `log2(x)` and `x * log2(x)` of the counts of a chunk's stream, from tables below
/// [`LOG2_TABLE`], else computed; taken once per estimate, so that its lazy
/// initialisation is checked once, not per symbol.
struct Log2(&'static Log2Tables);

/// Counts below this have their logarithms in a table.
const LOG2_TABLE: usize = 4096;

struct Log2Tables {
    log2: [f32; LOG2_TABLE],
    /// `x * log2(x)`, the term of a count in a stream's information content (0 for 0).
    times: [f32; LOG2_TABLE],
}

impl Log2 {
    fn table() -> Self {
        static TABLES: std::sync::LazyLock<Box<Log2Tables>> = std::sync::LazyLock::new(|| {
            let log2 = std::array::from_fn(|x| (x.max(1) as f32).log2());
            let times = std::array::from_fn(|x| x as f32 * log2[x]);
            Box::new(Log2Tables { log2, times })
        });
        Self(&TABLES)
    }

    #[inline]
    fn of(&self, x: u32) -> f32 {
        self.0
            .log2
            .get(x as usize)
            .copied()
            .unwrap_or_else(|| (x as f32).log2())
    }

    /// `x * log2(x)`, as `x as f32 * self.of(x)`.
    #[inline]
    fn times(&self, x: u32) -> f32 {
        self.0
            .times
            .get(x as usize)
            .copied()
            .unwrap_or_else(|| x as f32 * (x as f32).log2())
    }
}

/// `log2(x)` for one count.
fn log2(x: u32) -> f32 {
    Log2::table().of(x)
}

/// Bits after the leading one that a bin holds for integers of up to `bits` bits: 3 up
/// to 32 bits, 2 above, so that every bin symbol fits a byte.
fn bin_lead(bits: u32) -> u32 {
    if bits <= 32 {
        3
    } else {
        2
    }
}

/// The bin symbol of `v` and how many low bits follow it: `v` itself below
/// `2^(lead + 1)`, else `2^(lead+1) + (b - lead - 2) * 2^lead + top` for `v` of `b`
/// significant bits whose `lead` bits after the leading one are `top`, followed by its
/// `b - 1 - lead` low bits.
#[inline]
fn bin(v: u64, lead: u32) -> (u8, u32) {
    let b = 64 - v.leading_zeros();
    if b <= lead + 1 {
        return (v as u8, 0);
    }
    let low = b - 1 - lead;
    let top = (v >> low) & ((1 << lead) - 1);
    let symbol = (2u64 << lead) + u64::from(b - lead - 2) * (1 << lead) + top;
    // At most 2^(L+1) + (bits - L - 2) * 2^L + 2^L - 1: 239 for L = 3 and 32 bits, 251
    // for L = 2 and 64 bits.
    (symbol as u8, low)
}

/// What a bin symbol stands for: the high part of its integers, how many low bits
/// follow, and how many bits its integers have (`u8::MAX` for symbols no integer has).
#[derive(Debug, Clone, Copy, Default)]
struct Bin {
    high: u64,
    low: u8,
    bits: u8,
}

/// The bins of every symbol, for `lead` 2 and 3.
static BINS: std::sync::LazyLock<[[Bin; 256]; 2]> = std::sync::LazyLock::new(|| {
    [2, 3].map(|lead: u32| {
        std::array::from_fn(|s| {
            let s = s as u32;
            if s < 2 << lead {
                return Bin {
                    high: u64::from(s),
                    low: 0,
                    bits: (u32::BITS - s.leading_zeros()) as u8,
                };
            }
            let k = s - (2 << lead);
            let b = (k >> lead) + lead + 2;
            if b > 64 {
                return Bin {
                    bits: u8::MAX,
                    ..Bin::default()
                };
            }
            let top = u64::from(k & ((1 << lead) - 1));
            let low = b - 1 - lead;
            Bin {
                high: ((1 << lead) | top) << low,
                low: low as u8,
                bits: b as u8,
            }
        })
    })
});

/// The symbol counts of the two forms a chunk's integers of up to `bits` bits can take:
/// byte streams (byte j of each integer is stream j), or bins (a symbol per integer, then
/// its low bits).
pub(crate) struct IntForms {
    streams: Vec<Histogram>,
    bins: Histogram,
    /// Bits of the integers counted.
    bits: u32,
    /// Each integer's bin symbol, in order: what the binned form codes.
    symbols: Vec<u8>,
    low_bits: usize,
    /// The estimates with tables of their own of each byte stream and of the bins, once
    /// made: a chunk's integers may be planned with several sets of page tables (`auto`'s
    /// trials, then the page's), and these do not depend on them.
    own: [OnceCell<f32>; 9],
}

impl IntForms {
    /// Counts both forms of `values`.
    pub(crate) fn count(values: impl Iterator<Item = u64>, bits: u32) -> Self {
        match bits.div_ceil(8) {
            0 => Self::count_streams::<0>(values, bits),
            1 => Self::count_streams::<1>(values, bits),
            2 => Self::count_streams::<2>(values, bits),
            3 => Self::count_streams::<3>(values, bits),
            4 => Self::count_streams::<4>(values, bits),
            5 => Self::count_streams::<5>(values, bits),
            6 => Self::count_streams::<6>(values, bits),
            7 => Self::count_streams::<7>(values, bits),
            _ => Self::count_streams::<8>(values, bits),
        }
    }

    /// [`count`](Self::count) for integers of `N` byte streams: a loop of fixed
    /// length per value.
    fn count_streams<const N: usize>(values: impl Iterator<Item = u64>, bits: u32) -> Self {
        let lead = bin_lead(bits);
        let mut streams = [[0u32; 256]; N];
        let mut bins = [0u32; 256];
        let mut symbols = Vec::with_capacity(values.size_hint().0);
        let mut low_bits = 0usize;
        for v in values {
            for (j, counts) in streams.iter_mut().enumerate() {
                counts[(v >> (8 * j)) as u8 as usize] += 1;
            }
            let (symbol, low) = bin(v, lead);
            bins[usize::from(symbol)] += 1;
            symbols.push(symbol);
            low_bits += low as usize;
        }
        Self {
            streams: streams.to_vec(),
            bins,
            bits,
            symbols,
            low_bits,
            own: Default::default(),
        }
    }

    /// How to code these integers with `tables`: binned (when `may_bin` and that is
    /// smaller by estimate) or as byte streams, and whether in wide lanes (when their
    /// extra states cost little against the whole estimate).
    pub(crate) fn plan<'a>(&self, tables: &'a PageTables, may_bin: bool, margin: f32) -> Plan<'a> {
        let mut choices = [Choice::default(); 8];
        let choice = |counts: &Histogram, own: &OnceCell<f32>| {
            let present = Present::of(counts);
            Choice::with_own(&present, tables, || {
                *own.get_or_init(|| own_estimate(&present))
            })
        };
        for ((choice_j, counts), own) in choices.iter_mut().zip(&self.streams).zip(&self.own) {
            *choice_j = choice(counts, own);
        }
        let streams: f32 = choices[..self.streams.len()].iter().map(Choice::len).sum();
        let bins = if may_bin {
            choice(&self.bins, &self.own[8])
        } else {
            Choice::default()
        };
        let binned_len = bins.len() + (self.low_bits.div_ceil(8) as f32);
        // Bins are decoded in one pass of coded symbols, byte streams in one pass each
        // (tANS or a copy) and then interleaved: bins are picked up to `margin`
        // ([`BIN_MARGIN`], or more where `auto` trades size for speed) larger than two or
        // more streams that are not constant.
        let varied = choices[..self.streams.len()]
            .iter()
            .filter(|c| c.k >= 2)
            .count();
        let margin = if varied >= 2 { margin } else { 0.0 };
        let binned = may_bin && binned_len < streams * (1.0 + margin);
        let (len, coded) = if binned {
            (binned_len, 1)
        } else {
            (streams, self.streams.len())
        };
        Plan {
            tables,
            binned,
            // Weighed with the largest table's states: the tables are picked later, per
            // stream.
            wide: cheap_to_widen(len / coded as f32, self.symbols.len(), MAX_TABLE_LOG),
            streams: choices,
            bins,
        }
    }

    /// Appends byte stream `j` of the integers counted (byte j of each), coded as `plan`
    /// (made by [`plan`](Self::plan)) says.
    pub(crate) fn encode_stream(
        &self,
        j: usize,
        stream: &[u8],
        plan: &Plan,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let counts = self
            .streams
            .get(j)
            .ok_or_else(|| Error::invalid(format!("no byte stream {j} was counted")))?;
        encode_counted(
            stream,
            counts,
            Some(plan.streams[j]),
            plan.tables,
            Some(plan.wide),
            out,
        )
    }

    /// Whether bins are smaller than byte streams, by estimate, with `tables`.
    fn binned_is_smaller(&self, tables: &PageTables, margin: f32) -> bool {
        self.plan(tables, true, margin).binned
    }

    /// Appends the histograms of the form the integers take without page tables (bins
    /// only when `bin_kind` is given), so that a page's tables are built for the forms
    /// its chunks take: stream j as kind `stream_kind + j`, bins as `bin_kind`.
    pub(crate) fn chosen_histograms(
        &self,
        stream_kind: usize,
        bin_kind: Option<usize>,
        margin: f32,
        out: &mut Vec<KindHistogram>,
    ) {
        match bin_kind {
            Some(kind) if self.binned_is_smaller(&PageTables::default(), margin) => {
                out.push((kind, self.bins));
            }
            _ => out.extend(
                self.streams
                    .iter()
                    .enumerate()
                    .map(|(j, counts)| (stream_kind + j, *counts)),
            ),
        }
    }

    /// Appends the integers counted (`values` again) binned, as `plan` (made by
    /// [`plan`](Self::plan) with bins allowed) says: their bin symbols (as counted) as one
    /// coded stream, then every value's low bits, LSB first. Fewer or more values than
    /// were counted are an error.
    pub(crate) fn encode_binned(
        &self,
        values: impl ExactSizeIterator<Item = u64>,
        plan: &Plan,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let bits = self.bits;
        let lead = bin_lead(bits);
        let symbols = &self.symbols;
        if symbols.len() != values.len() {
            return Err(Error::invalid(format!(
                "{} integers to bin, {} counted",
                values.len(),
                symbols.len()
            )));
        }
        encode_counted(
            symbols,
            &self.bins,
            Some(plan.bins),
            plan.tables,
            Some(plan.wide),
            out,
        )?;
        let bins = &BINS[(lead - 2) as usize];
        let low_bits = self.low_bits;
        write_bits(out, low_bits, |writer| {
            if bits <= 32 {
                // At most 28 low bits: one put each.
                for (v, &symbol) in values.zip(symbols) {
                    let low = u32::from(bins[usize::from(symbol)].low);
                    writer.put((v & mask(low)) as u32, low);
                }
            } else {
                for (v, &symbol) in values.zip(symbols) {
                    writer.put_wide(v, u32::from(bins[usize::from(symbol)].low));
                }
            }
        });
        Ok(())
    }
}

/// Decodes `symbols.len()` binned integers of up to `bits` bits from the start of
/// `input` (the symbols are decoded into `symbols`), handing them to `sink` in order, in
/// blocks; returns the bytes of `input` taken. A symbol no integer of `bits` bits has,
/// and low bits cut short, are corrupt (after the blocks of a chunk have gone to
/// `sink`).
#[cfg(test)]
pub(crate) fn decode_binned(
    input: &[u8],
    symbols: &mut [u8],
    bits: u32,
    tables: &PageTables,
    mut sink: impl FnMut(&[u64]),
) -> Result<usize> {
    let mut reader = Unbinner::new(input, symbols, bits, tables)?;
    let mut block = [0u64; BIN_BLOCK];
    loop {
        let len = reader.next_block(&mut block);
        if len == 0 {
            return reader.finish();
        }
        sink(&block[..len]);
    }
}

/// Binned integers read back a block at a time, for callers whose use of each block
/// must compile inside their own loop (under their target features) rather than as a
/// sink called from here.
pub(crate) struct Unbinner<'a> {
    symbols: &'a [u8],
    /// The low bits, after the coded symbols.
    low: &'a [u8],
    /// Bytes of the input the coded symbols took.
    used: usize,
    bits: u32,
    lead: u32,
    /// Symbols read so far, and the bit position in `low` after their low bits.
    done: usize,
    pos: usize,
}

impl<'a> Unbinner<'a> {
    /// Decodes the `symbols.len()` bin symbols at the start of `input` into `symbols`.
    pub(crate) fn new(
        input: &'a [u8],
        symbols: &'a mut [u8],
        bits: u32,
        tables: &PageTables,
    ) -> Result<Self> {
        let used = decode(input, symbols, tables)?;
        Ok(Self::decoded(input, symbols, used, bits))
    }

    /// The reader of binned integers whose bin symbols, coded in the first `used` bytes
    /// of `input`, are decoded already into `symbols` (by [`decode_many`]).
    pub(crate) fn decoded(input: &'a [u8], symbols: &'a [u8], used: usize, bits: u32) -> Self {
        Self {
            symbols,
            low: input.get(used..).unwrap_or_default(),
            used,
            bits,
            lead: bin_lead(bits),
            done: 0,
            pos: 0,
        }
    }

    /// Fills the start of `block` with the next integers, [`BIN_BLOCK`] of them or the
    /// rest; returns how many (0 once all are read). A peek past the end of the low bits
    /// reads zeros, and a symbol out of range has no low bits: both are errors of
    /// [`finish`](Self::finish), not here.
    pub(crate) fn next_block(&mut self, block: &mut [u64; BIN_BLOCK]) -> usize {
        self.next_upto(block, BIN_BLOCK)
    }

    /// [`next_block`](Self::next_block) of at most `most` integers.
    pub(crate) fn next_upto(&mut self, block: &mut [u64; BIN_BLOCK], most: usize) -> usize {
        let part = &self.symbols[self.done..self.symbols.len().min(self.done + most)];
        let block = &mut block[..part.len()];
        let (low, wide) = (self.low, self.bits > 57);
        // Eight at a time in vector registers where the CPU can, the rest (near the end
        // of the low bits, or all of them) one at a time.
        let (done, at) = if wide {
            (0, self.pos)
        } else {
            kernels::unbin::unbin(self.lead, part, low, self.pos, block)
        };
        let (rest, tail) = (&part[done..], &mut block[done..]);
        let bins = &BINS[(self.lead - 2) as usize];
        self.pos = kernels::with_bmi2(|| {
            if wide {
                unbin::<true>(bins, rest, low, at, tail)
            } else {
                unbin::<false>(bins, rest, low, at, tail)
            }
        });
        self.done += part.len();
        part.len()
    }

    /// Writes the next integers, zigzag residuals of 4-byte values, as their running sums
    /// (order 1, or 2 with `order2`, on from `prev` and `delta`, updated) straight into
    /// `out`, as far as `kernels::unbin::unbin_sums4` goes; returns how many it wrote
    /// (none without that kernel). What is left is read as before, its checks in
    /// [`finish`](Self::finish) the same.
    pub(crate) fn sum_next4(
        &mut self,
        order2: bool,
        prev: &mut u64,
        delta: &mut u64,
        out: &mut [u8],
    ) -> usize {
        if self.bits > 57 {
            return 0;
        }
        let (done, pos) = kernels::unbin::unbin_sums4(
            self.lead,
            &self.symbols[self.done..],
            self.low,
            self.pos,
            order2,
            prev,
            delta,
            out,
        );
        self.done += done;
        self.pos = pos;
        done
    }

    /// Reads any blocks left and checks what the blocks read (every symbol one an
    /// integer of the stream's bits has, the low bits all present); returns the bytes of
    /// the input taken.
    pub(crate) fn finish(mut self) -> Result<usize> {
        let n = self.symbols.len();
        if self.done < n {
            let mut block = [0u64; BIN_BLOCK];
            while self.next_block(&mut block) > 0 {}
        }
        let corrupt = |what: String| Error::corrupt(format!("{n} binned integers: {what}"));
        let bins = &BINS[(self.lead - 2) as usize];
        // A bin's bits grow with its symbol, so the largest symbol has the widest.
        let largest = self.symbols.iter().copied().max().unwrap_or(0);
        if u32::from(bins[usize::from(largest)].bits) > self.bits {
            return Err(corrupt(format!(
                "bin symbol {largest} for integers of {} bits",
                self.bits
            )));
        }
        let len = self.pos.div_ceil(8);
        if self.low.len() < len {
            return Err(corrupt(format!("{len} bytes of low bits cut short")));
        }
        Ok(self.used + len)
    }
}

/// Bytes of low bits that follow the bin symbols `symbols` of integers of `bits` bits:
/// what [`Unbinner::finish`] returns past the coded symbols once it has read them all,
/// when every symbol is one such an integer has (those past 64 bits count bits here and
/// fail there). By the bins' rule on bytes rather than through their table, summed in
/// 16 bits per block, so that it compiles to a few vector instructions per 64 symbols.
pub(crate) fn low_bytes(symbols: &[u8], bits: u32) -> usize {
    let lead = bin_lead(bits);
    let first = 2u8 << lead;
    kernels::with_wide_vectors(
        #[inline(always)]
        || {
            let total: u64 = symbols
                // At most 62 low bits a symbol: 1024 of them fit 16 bits.
                .chunks(1024)
                .map(|part| {
                    let block: u16 = part
                        .iter()
                        .map(|&s| {
                            u16::from((s.saturating_sub(first) >> lead) + u8::from(s >= first))
                        })
                        .sum();
                    u64::from(block)
                })
                .sum();
            usize::try_from(total.div_ceil(8)).unwrap_or(usize::MAX)
        },
    )
}

/// Fills `block` with the integers of the bin symbols `part`, their low bits read from
/// bit `pos` of `low` on; returns the position after them. `WIDE` for integers of more
/// than 57 bits, whose low bits may need a second peek.
#[allow(clippy::inline_always)]
#[inline(always)]
fn unbin<const WIDE: bool>(
    bins: &[Bin; 256],
    part: &[u8],
    low: &[u8],
    mut pos: usize,
    block: &mut [u64],
) -> usize {
    for (slot, &symbol) in block.iter_mut().zip(part) {
        let bin = bins[usize::from(symbol)];
        let low_bits = u32::from(bin.low);
        let mut v = peek(low, pos);
        if WIDE && low_bits > 57 {
            // A peek holds at least 57 bits; the rest come from the byte after them.
            v |= peek(low, pos + 56) << 56;
        }
        *slot = bin.high | (v & mask(low_bits));
        pos += low_bits as usize;
    }
    pos
}

/// Binned integers are read in blocks of this many.
pub(crate) const BIN_BLOCK: usize = 256;

/// Estimated bytes [`encode`] writes for a stream of these symbol counts: the smallest of
/// a constant, raw, a table of its own and the best page table of `tables`.
pub fn estimate(counts: &Histogram, tables: &PageTables) -> f32 {
    Choice::of(&Present::of(counts), tables).len()
}

/// Symbol lists of more symbols than this are written as a 256-bit set.
const SYMBOL_LIST_MAX: usize = 32;

/// Bytes [`write_page_table`] writes.
fn page_table_len(norm: &[(u8, u32)]) -> usize {
    let k = norm.len();
    let count_bits = count_bits(norm);
    3 + if k > SYMBOL_LIST_MAX { 32 } else { k } + (k * count_bits as usize).div_ceil(8)
}

/// Bits that hold every count of `norm`.
fn count_bits(norm: &[(u8, u32)]) -> u32 {
    let max = norm.iter().map(|&(_, c)| c).max().unwrap_or(1);
    u32::BITS - max.leading_zeros()
}

/// Appends a page table: `L`, `k - 1`, `B` (bits per count), the symbols (a list of `k`
/// bytes, or for more than 32 symbols a 32-byte set, bit s of byte s / 8 for symbol s),
/// then the counts in `B` bits each, LSB first.
fn write_page_table(norm: &[(u8, u32)], log: u32, out: &mut Vec<u8>) {
    let bits = count_bits(norm);
    out.extend_from_slice(&[log as u8, (norm.len() - 1) as u8, bits as u8]);
    if norm.len() > SYMBOL_LIST_MAX {
        let mut set = [0u8; 32];
        for &(s, _) in norm {
            set[usize::from(s / 8)] |= 1 << (s % 8);
        }
        out.extend_from_slice(&set);
    } else {
        out.extend(norm.iter().map(|&(s, _)| s));
    }
    write_counts(norm, bits, out);
}

/// Reads a page table from the start of `bytes`; returns its counts, its log and its
/// length, every field checked as [`read_table`] does, and `B` from 1 to `L`.
fn read_page_table(bytes: &[u8]) -> std::result::Result<ReadTable, String> {
    let [log, k1, bits, ..] = *bytes else {
        return Err("cut inside its table header".to_owned());
    };
    let log = u32::from(log);
    let bits = u32::from(bits);
    let k = usize::from(k1) + 1;
    if !(MIN_TABLE_LOG..=MAX_TABLE_LOG).contains(&log) || k < 2 || k > 1 << log {
        return Err(format!("table log {log} with {k} symbols"));
    }
    if !(1..=log).contains(&bits) {
        return Err(format!("{bits} bits per count with table log {log}"));
    }
    let symbols: Vec<u8> = if k > SYMBOL_LIST_MAX {
        let set = bytes
            .get(3..35)
            .ok_or_else(|| "cut inside its symbol set".to_owned())?;
        let symbols: Vec<u8> = (0..=255u8)
            .filter(|&s| set[usize::from(s / 8)] >> (s % 8) & 1 == 1)
            .collect();
        if symbols.len() != k {
            return Err(format!("a symbol set of {} for {k} symbols", symbols.len()));
        }
        symbols
    } else {
        let list = bytes
            .get(3..3 + k)
            .ok_or_else(|| "cut inside its symbols".to_owned())?;
        if list.windows(2).any(|w| w[0] >= w[1]) {
            return Err("symbols not strictly increasing".to_owned());
        }
        list.to_vec()
    };
    let at = 3 + if k > SYMBOL_LIST_MAX { 32 } else { k };
    let len = at + (k * bits as usize).div_ceil(8);
    let count_bytes = bytes
        .get(at..len)
        .ok_or_else(|| "cut inside its counts".to_owned())?;
    let norm = read_counts(&symbols, count_bytes, bits, log)?;
    Ok((norm, log, len))
}

/// The counts of `symbols`, `bits` bits each from `bytes`: each at least 1, summing to
/// `2^log`.
fn read_counts(
    symbols: &[u8],
    bytes: &[u8],
    bits: u32,
    log: u32,
) -> std::result::Result<Vec<(u8, u32)>, String> {
    // The caller checked that `bytes` holds every count.
    let mut norm = Vec::with_capacity(symbols.len());
    let mut sum = 0u32;
    for (i, &symbol) in symbols.iter().enumerate() {
        let count = (peek(bytes, i * bits as usize) & mask(bits)) as u32;
        if count == 0 {
            return Err(format!("symbol {symbol} with count 0"));
        }
        sum = sum.saturating_add(count);
        norm.push((symbol, count));
    }
    if sum != 1 << log {
        return Err(format!("counts sum to {sum}, not {}", 1u32 << log));
    }
    Ok(norm)
}

/// Appends the coded form of `stream` to `out`, the smallest by estimate of: a page
/// table of `tables`, a table of its own (tANS), a constant or a raw stream.
pub fn encode(stream: &[u8], tables: &PageTables, out: &mut Vec<u8>) -> Result<()> {
    let mut counts = [0u32; 256];
    count(stream, &mut counts);
    encode_counted(stream, &counts, None, tables, None, out)
}

/// [`encode`], in [`WIDE_LANES`] lanes (when the stream has that many bytes) or not as
/// `wide` says, as a chunk's streams are coded ([`IntForms::encode_stream`]).
#[cfg(test)]
fn encode_lanes(stream: &[u8], tables: &PageTables, wide: bool, out: &mut Vec<u8>) -> Result<()> {
    let mut counts = [0u32; 256];
    count(stream, &mut counts);
    encode_counted(stream, &counts, None, tables, Some(wide), out)
}

/// [`encode`] of a stream whose symbol counts are `counts` (and, when given, whose
/// [`Choice`] with `tables` is `choice`), in wide lanes as `wide` says, or when the
/// stream alone makes them cheap.
fn encode_counted(
    stream: &[u8],
    counts: &Histogram,
    choice: Option<Choice>,
    tables: &PageTables,
    wide: Option<bool>,
    out: &mut Vec<u8>,
) -> Result<()> {
    let n = stream.len();
    if n > MAX_STREAM {
        return Err(Error::invalid(format!(
            "entropy-coded streams hold at most {MAX_STREAM} bytes, got {n}"
        )));
    }
    let choice = choice.unwrap_or_else(|| Choice::of(&Present::of(counts), tables));
    let k = choice.k;
    if let (1, Some(&byte)) = (k, stream.first()) {
        out.extend_from_slice(&[MODE_CONSTANT, byte]);
        return Ok(());
    }
    let start = out.len();
    if k >= 2 {
        let shared = choice.shared;
        let own_len = choice.own;
        let coded = match shared {
            // Raw by estimate: no table to build.
            _ if own_len >= (1 + n) as f32
                && shared.is_none_or(|(_, len)| len >= (1 + n) as f32) =>
            {
                false
            }
            Some((t, len)) if len < own_len => {
                let coder = &tables.coders[t];
                // `t` is below MAX_PAGE_TABLES (16).
                if wide.unwrap_or_else(|| cheap_to_widen(len, n, coder.log)) && n >= WIDE_LANES {
                    out.push(MODE_TABLE4 | t as u8);
                    coder.encode_bits::<WIDE_LANES>(stream, true, out)
                } else {
                    out.push(MODE_TABLE | t as u8);
                    coder.encode_bits::<LANES>(stream, true, out)
                }
            }
            _ => {
                let log = table_log(n, k);
                let own = Coder::new(normalize(counts, n, log), log);
                if wide.unwrap_or_else(|| cheap_to_widen(own_len, n, log)) && n >= WIDE_LANES {
                    out.push(MODE_TANS4);
                    write_table(&own.norm, log, out);
                    own.encode_bits::<WIDE_LANES>(stream, false, out)
                } else {
                    out.push(MODE_TANS);
                    write_table(&own.norm, log, out);
                    own.encode_bits::<LANES>(stream, false, out)
                }
            }
        };
        if coded && out.len() - start < 1 + n {
            return Ok(());
        }
    }
    out.truncate(start);
    out.push(MODE_RAW);
    out.extend_from_slice(stream);
    Ok(())
}

/// Decodes one coded stream of `out.len()` bytes from the start of `input` into `out`,
/// with `tables` for streams that name a page table; returns the bytes of `input` it
/// took. Every field is checked: a table that does not sum to its states, symbols out of
/// order, a page table that is not there, a bit stream shorter or longer than its symbols
/// need are corrupt.
pub fn decode(input: &[u8], out: &mut [u8], tables: &PageTables) -> Result<usize> {
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
        MODE_TANS | MODE_TANS4 => {
            let (norm, log, at) = read_table(rest).map_err(corrupt)?;
            let decoder = Decoder::new(&norm, log);
            let used = if mode == MODE_TANS {
                kernels::with_bmi2(|| decoder.decode_bits::<LANES>(&rest[at..], false, out))
            } else {
                kernels::with_bmi2(|| decoder.decode_bits::<WIDE_LANES>(&rest[at..], false, out))
            }
            .map_err(corrupt)?;
            Ok(1 + at + used)
        }
        MODE_SHARED | MODE_SHARED4 => {
            let &t = rest
                .first()
                .ok_or_else(|| corrupt("no page table index".to_owned()))?;
            let table = tables.decoder(usize::from(t)).map_err(corrupt)?;
            let used = if mode == MODE_SHARED {
                kernels::with_bmi2(|| table.decode_bits::<LANES>(&rest[1..], false, out))
            } else {
                kernels::with_bmi2(|| table.decode_bits::<WIDE_LANES>(&rest[1..], false, out))
            }
            .map_err(corrupt)?;
            Ok(2 + used)
        }
        other => {
            let (t, wide) =
                compact_shared(other).ok_or_else(|| corrupt(format!("unknown mode {other}")))?;
            let table = tables.decoder(t).map_err(corrupt)?;
            let used = if wide {
                kernels::with_bmi2(|| table.decode_bits::<WIDE_LANES>(rest, true, out))
            } else {
                kernels::with_bmi2(|| table.decode_bits::<LANES>(rest, true, out))
            }
            .map_err(corrupt)?;
            Ok(1 + used)
        }
    }
}

/// The bytes the coded stream of `n` bytes at the start of `input` takes, read from its
/// header alone, so that a caller can find the streams that follow it and decode them all
/// with [`decode_many`]. Only the lengths are read here: what [`decode`] checks (the
/// table, the page table's index, the bits) is checked when the stream is decoded.
pub(crate) fn coded_len(input: &[u8], n: usize) -> Result<usize> {
    let corrupt =
        |what: String| Error::corrupt(format!("entropy-coded stream of {n} bytes: {what}"));
    let (&mode, rest) = input
        .split_first()
        .ok_or_else(|| corrupt("no mode byte".to_owned()))?;
    let head = match mode {
        MODE_RAW if rest.len() >= n => return Ok(1 + n),
        MODE_RAW => return Err(corrupt(format!("{} raw bytes", rest.len()))),
        MODE_CONSTANT if rest.is_empty() => return Err(corrupt("no constant".to_owned())),
        MODE_CONSTANT => return Ok(2),
        MODE_TANS | MODE_TANS4 => match *rest {
            [log, k1, ..] => table_len(usize::from(k1) + 1, u32::from(log)),
            _ => return Err(corrupt("cut inside its table header".to_owned())),
        },
        MODE_SHARED | MODE_SHARED4 => 1,
        other if compact_shared(other).is_some() => 0,
        other => return Err(corrupt(format!("unknown mode {other}"))),
    };
    let varint = compact_shared(mode).is_some();
    let (len, len_bytes) = rest
        .get(head..)
        .ok_or_else(|| corrupt("cut inside its table".to_owned()))
        .and_then(|rest| stream_len(rest, varint).map_err(corrupt))?;
    let total = 1 + head + len_bytes + len;
    if total > input.len() {
        return Err(corrupt(format!("a bit stream of {len} bytes cut short")));
    }
    Ok(total)
}

/// Zero bytes after each bit stream that [`decode_many`] decodes side by side: one word.
const PAD: usize = 8;

/// Decodes several coded streams, each from the start of its input into its output of
/// the same index, as [`decode`] would one after the other; returns the bytes of each
/// input taken. Streams of four lanes of the same length are decoded side by side where
/// the CPU has the vector kernel (`kernels::tans`), up to `kernels::tans::streams()` at
/// a time; a chunk's streams are independent, so a run of chunks supplies them.
pub(crate) fn decode_many(
    inputs: &[&[u8]],
    outs: &mut [&mut [u8]],
    tables: &PageTables,
) -> Result<Vec<usize>> {
    if inputs.len() != outs.len() {
        return Err(Error::invalid(format!(
            "{} coded streams for {} outputs",
            inputs.len(),
            outs.len()
        )));
    }
    let mut used = vec![0; inputs.len()];
    // The four-lane streams the kernel takes: their index, where their bit stream's
    // length starts, and the index of a table of their own (built here, in `own`) or of
    // a page table (with whether the length is a varint). Tables live apart so that
    // sorting moves small tuples, not tables.
    let mut own: Vec<Decoder> = Vec::new();
    let mut wide: Vec<(usize, usize, StreamTable)> = Vec::new();
    for (i, (input, out)) in inputs.iter().zip(outs.iter_mut()).enumerate() {
        let n = out.len();
        let corrupt =
            |what: String| Error::corrupt(format!("entropy-coded stream of {n} bytes: {what}"));
        // At least one group of four steps for the kernel, past the lanes' last bytes.
        let kernel = kernels::tans::has_kernel() && n >= 4 + WIDE_LANES;
        match input.first() {
            Some(&MODE_TANS4) if kernel => {
                let (norm, log, at) = read_table(&input[1..]).map_err(corrupt)?;
                wide.push((i, 1 + at, StreamTable::Own(own.len())));
                own.push(Decoder::new(&norm, log));
            }
            Some(&MODE_SHARED4) if kernel => {
                let t = usize::from(
                    *input
                        .get(1)
                        .ok_or_else(|| corrupt("no page table index".to_owned()))?,
                );
                tables.decoder(t).map_err(corrupt)?;
                wide.push((i, 2, StreamTable::Page(t, false)));
            }
            Some(&mode) if kernel && compact_shared(mode).is_some_and(|(_, wide)| wide) => {
                let t = usize::from(mode & 0x0F);
                tables.decoder(t).map_err(corrupt)?;
                wide.push((i, 1, StreamTable::Page(t, true)));
            }
            _ => used[i] = decode(input, out, tables)?,
        }
    }
    // Groups of streams, longest first: the kernel runs every stream of a group up to the
    // shortest one's length, and each finishes alone from there, so streams of one length
    // (a run of whole chunks) go together, and those of different lengths (chunks of a
    // fill page) with the ones nearest in length. The sort is stable, so streams of one
    // length keep their order.
    let mut outs: Vec<Option<&mut [u8]>> = outs.iter_mut().map(|o| Some(&mut **o)).collect();
    wide.sort_by_key(|&(i, _, _)| std::cmp::Reverse(outs[i].as_ref().map_or(0, |o| o.len())));
    let mut rest = &wide[..];
    while !rest.is_empty() {
        let take = rest.len().min(kernels::tans::streams());
        let (group, after) = rest.split_at(take);
        rest = after;
        let len_of = |i: usize| outs[i].as_ref().map_or(0, |o| o.len());
        let n = group.iter().map(|&(i, _, _)| len_of(i)).min().unwrap_or(0);
        let corrupt = |what: String| {
            Error::corrupt(format!("entropy-coded stream of {n} bytes or more: {what}"))
        };
        // A vector costs the same whatever it holds: the streams past the last vector
        // with enough of them decode one at a time, with the tables already built.
        let per = kernels::tans::per_vector();
        let left = take % per;
        let (group, alone) = group.split_at(
            take - if left < kernels::tans::MIN_PER_VECTOR {
                left
            } else {
                0
            },
        );
        for (i, at, table) in alone {
            let (i, at) = (*i, *at);
            let (decoder, varint) = match *table {
                StreamTable::Own(k) => (&own[k], false),
                StreamTable::Page(t, varint) => (tables.decoder(t).map_err(corrupt)?, varint),
            };
            let out = outs[i].take().expect("each stream is in one group");
            used[i] = at
                + kernels::with_bmi2(|| {
                    decoder.decode_bits::<WIDE_LANES>(&inputs[i][at..], varint, out)
                })
                .map_err(corrupt)?;
        }
        if group.is_empty() {
            continue;
        }
        let mut ends = Vec::with_capacity(group.len());
        for (i, at, table) in group {
            let (i, at) = (*i, *at);
            let (decoder, varint) = match *table {
                StreamTable::Own(k) => (&own[k], false),
                StreamTable::Page(t, varint) => (tables.decoder(t).map_err(corrupt)?, varint),
            };
            let Start {
                bits,
                len,
                head,
                states,
            } = decoder
                .start::<WIDE_LANES>(&inputs[i][at..], varint)
                .map_err(corrupt)?;
            // `at` from here on: where the bit stream starts.
            ends.push((i, at + head, bits, len, decoder, states));
        }
        // The kernel reads a whole word at a stream's position, so a stream with fewer
        // than a word's bytes after it (one that ends at the end of its chunk) would stop
        // every stream of the group its last words before. Where every stream has a word
        // of bytes after it (a chunk's bin symbols, followed by their low bits) and the
        // kernel takes them where they lie, they are read in place; else each is copied
        // with zeros after it. A valid stream takes no bit past its end, so what follows
        // it is never used.
        let in_place = ends.iter().all(|e| e.2.len() >= e.3 + PAD)
            && kernels::tans::takes_in_place(ends.iter().map(|e| e.2));
        let mut padded = Vec::new();
        if !in_place {
            for &(_, _, bits, len, _, _) in &ends {
                padded.extend_from_slice(&bits[..len]);
                padded.extend_from_slice(&[0; PAD]);
            }
        }
        let mut cursors = Vec::with_capacity(group.len());
        let mut rest_bits = &padded[..];
        for &(i, _, bits, len, decoder, states) in &ends {
            let bits = if in_place {
                bits
            } else {
                let (bits, after) = rest_bits.split_at(len + PAD);
                rest_bits = after;
                bits
            };
            let out = outs[i].take().expect("each stream is in one group");
            cursors.push(Cursor {
                table: &decoder.entries,
                bits,
                out,
                states,
                pos: WIDE_LANES * decoder.log as usize,
            });
        }
        // Whole groups of four of the steps before the lanes' last bytes.
        let steps = (n - WIDE_LANES) / 4 * 4;
        let reached = kernels::tans::decode4(&mut cursors, 0, steps);
        for (cursor, &(i, at, _, len, decoder, _)) in cursors.iter_mut().zip(&ends) {
            used[i] = at
                + kernels::with_bmi2(|| decoder.finish::<WIDE_LANES>(cursor, reached, len))
                    .map_err(corrupt)?;
        }
    }
    Ok(used)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A compact shared stream (mode `0x10 + t` or `0x20 + t`) in the form of modes 3 and
    /// 5 that earlier files hold (the table a byte of its own, the length a u16); any
    /// other stream as it is.
    fn legacy_shared(coded: &[u8]) -> Vec<u8> {
        let Some((t, wide)) = compact_shared(coded[0]) else {
            return coded.to_vec();
        };
        let (p, head) = read_stream_len(&coded[1..]).unwrap();
        let mut legacy = vec![if wide { MODE_SHARED4 } else { MODE_SHARED }, t as u8];
        legacy.extend_from_slice(&(p as u16).to_le_bytes());
        legacy.extend_from_slice(&coded[1 + head..]);
        legacy
    }

    #[test]
    fn low_bytes_count_each_valid_symbols_low_bits() {
        for bits in [1, 7, 8, 9, 25, 32, 57, 64] {
            let bins = &BINS[(bin_lead(bits) - 2) as usize];
            let valid: Vec<u8> = (0..=255u8)
                .filter(|&s| u32::from(bins[usize::from(s)].bits) <= bits)
                .collect();
            for &s in &valid {
                let low = usize::from(bins[usize::from(s)].low);
                assert_eq!(low_bytes(&[s; 8], bits), low, "{bits} bits, symbol {s}");
            }
            let all: usize = valid
                .iter()
                .map(|&s| usize::from(bins[usize::from(s)].low))
                .sum();
            assert_eq!(low_bytes(&valid, bits), all.div_ceil(8), "{bits} bits");
        }
    }
    use crate::encodings::xorshift;

    fn round_trip(stream: &[u8]) -> Vec<u8> {
        let mut coded = vec![0xAB];
        encode(stream, &PageTables::default(), &mut coded).unwrap();
        coded.push(0xCD);
        let mut back = vec![0; stream.len()];
        let used = decode(&coded[1..], &mut back, &PageTables::default()).unwrap();
        assert_eq!(used, coded.len() - 2, "{} bytes", stream.len());
        assert_eq!(back, stream);
        coded[1..coded.len() - 1].to_vec()
    }

    /// `IntForms` counts once and estimates once: its plan must weigh exactly the byte
    /// streams the integers have (none past their width) against the bins, as separate
    /// estimates of separately counted streams do, and code each stream as a fresh
    /// `encode_lanes` of it would.
    #[test]
    fn forms_plan_and_code_as_separate_streams_would() {
        let mut x = 7u64;
        // Plans that took bins for their margin alone.
        let mut margins = 0;
        for bits in [0u32, 3, 8, 12, 16, 20, 32, 40, 64] {
            for spread in [0u32, 2, 6, 13] {
                let values: Vec<u64> = (0..700)
                    .map(|_| {
                        let v = xorshift(&mut x) >> (64 - spread.min(bits).max(1));
                        if bits == 0 {
                            0
                        } else {
                            v & mask(bits.min(63)) | (u64::from(bits == 64) << 63)
                        }
                    })
                    .collect();
                let forms = IntForms::count(values.iter().copied(), bits);
                let tables = PageTables::default();
                let plan = forms.plan(&tables, true, BIN_MARGIN);
                let streams: Vec<Vec<u8>> = (0..bits.div_ceil(8))
                    .map(|j| values.iter().map(|v| (v >> (8 * j)) as u8).collect())
                    .collect();
                let histogram = |bytes: &[u8]| {
                    let mut h = [0u32; 256];
                    count(bytes, &mut h);
                    h
                };
                let streams_len: f32 = streams
                    .iter()
                    .map(|s| estimate(&histogram(s), &tables))
                    .sum();
                let lead = bin_lead(bits);
                let symbols: Vec<u8> = values.iter().map(|&v| bin(v, lead).0).collect();
                let low: u32 = values.iter().map(|&v| bin(v, lead).1).sum();
                let binned_len = estimate(&histogram(&symbols), &tables) + low.div_ceil(8) as f32;
                let what = format!("{bits} bits, spread {spread}");
                // Two or more streams of more than one byte value give bins a margin.
                let varied = streams
                    .iter()
                    .filter(|s| s.iter().any(|&b| b != s[0]))
                    .count();
                let margin = if varied >= 2 { 1.0 + BIN_MARGIN } else { 1.0 };
                assert_eq!(plan.binned, binned_len < streams_len * margin, "{what}");
                margins += usize::from(plan.binned && binned_len >= streams_len);
                for (j, stream) in streams.iter().enumerate() {
                    let mut cached = Vec::new();
                    forms.encode_stream(j, stream, &plan, &mut cached).unwrap();
                    let mut fresh = Vec::new();
                    encode_lanes(stream, &tables, plan.wide, &mut fresh).unwrap();
                    assert_eq!(cached, fresh, "{what}, stream {j}");
                }
            }
        }
        assert!(margins > 0, "no plan took bins for their margin");
    }

    /// `decode_binned` finds the widest integer from the largest symbol alone.
    #[test]
    fn bin_widths_grow_with_their_symbols() {
        for bins in BINS.iter() {
            for pair in bins.windows(2) {
                assert!(pair[0].bits <= pair[1].bits, "{pair:?}");
            }
        }
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

    /// Tables whose sample saw every symbol often and served every stream say the page
    /// holds nothing more to learn; symbols seen once (rare ones a sample catches only
    /// now and then), or a stream no table serves, say it likely does.
    #[test]
    fn tables_say_when_their_sample_missed_some_of_the_page() {
        let mut x = 5u64;
        let mut draw = |n: usize, alphabet: &[u8]| -> Vec<u8> {
            (0..n)
                .map(|_| alphabet[(xorshift(&mut x) % alphabet.len() as u64) as usize])
                .collect()
        };
        let calm = [3u8, 3, 3, 3, 3, 3, 4, 4, 2, 2, 5, 1];
        let histogram = |stream: &[u8]| {
            let mut h = [0u32; 256];
            count(stream, &mut h);
            (0, h)
        };
        let alike: Vec<KindHistogram> = (0..16).map(|_| histogram(&draw(1024, &calm))).collect();
        let tables = PageTables::from_streams(&alike, 4.0);
        assert_eq!(tables.len(), 1);
        assert!(!tables.sample_missed());
        // A few streams with rare symbols, each seen once.
        let mut rare = alike.clone();
        for (k, (_, h)) in rare.iter_mut().enumerate().take(12) {
            h[100 + k] = 1;
        }
        let tables = PageTables::from_streams(&rare, 4.0);
        assert_eq!(tables.len(), 1);
        assert!(tables.sample_missed());
        // ... unless they are all of the page's streams.
        assert!(!PageTables::from_streams(&rare, 1.0).sample_missed());
        // A stream no table serves (every byte value four times: stored raw), and no
        // symbol seen once.
        let mut unlike = alike.clone();
        let flat: Vec<u8> = (0..1024).map(|i| i as u8).collect();
        unlike[0] = histogram(&flat);
        let tables = PageTables::from_streams(&unlike, 4.0);
        assert!(tables.sample_missed());
        // Parsed tables make no such claim: only the encoder's have a sample.
        assert!(!PageTables::parse(&tables.to_bytes())
            .unwrap()
            .sample_missed());
    }

    /// Streams of one kind drawn from two unlike distributions (a page whose chunks
    /// differ, as a grid's rows over land and sea do): a second table for the kind, each
    /// stream coded with a page table rather than one of its own, and the page smaller
    /// than with one table; a kind whose streams are alike keeps one; never more than
    /// [`MAX_PAGE_TABLES`] in all.
    #[test]
    fn unlike_streams_of_a_kind_get_tables_of_their_own() {
        let mut x = 11u64;
        let mut draw = |n: usize, alphabet: &[u8]| -> Vec<u8> {
            (0..n)
                .map(|_| alphabet[(xorshift(&mut x) % alphabet.len() as u64) as usize])
                .collect()
        };
        let calm = [3u8, 3, 3, 3, 3, 3, 4, 4, 2, 2, 5, 1];
        let rough = [3u8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 0, 1, 2, 4, 5];
        let streams: Vec<Vec<u8>> = (0..32)
            .map(|i| draw(1024, if i % 3 == 0 { &rough } else { &calm }))
            .collect();
        let histograms: Vec<KindHistogram> = streams
            .iter()
            .map(|s| {
                let mut h = [0u32; 256];
                count(s, &mut h);
                (0, h)
            })
            .collect();
        let tables = PageTables::from_streams(&histograms, 4.0);
        assert_eq!(tables.len(), 2);
        let members: Vec<Member> = histograms
            .iter()
            .map(|(_, h)| {
                let present = Present::of(h);
                Member {
                    own: f64::from(own_estimate(&present)),
                    present,
                }
            })
            .collect();
        let all: Vec<usize> = (0..members.len()).collect();
        let one = [Built::from(&members, &all).unwrap()];
        let two: Vec<Built> = tables
            .norms
            .iter()
            .map(|(norm, log)| {
                let costs = Costs::of(norm, *log);
                Built {
                    norm: norm.clone(),
                    log: *log,
                    estimates: members
                        .iter()
                        .map(|m| 4.0 + f64::from(costs.estimate(&m.present)))
                        .collect(),
                }
            })
            .collect();
        assert!(cost(&members, &two, 4.0) < cost(&members, &one, 4.0));
        let parsed = PageTables::parse(&tables.to_bytes()).unwrap();
        for stream in &streams {
            let mut coded = Vec::new();
            encode(stream, &tables, &mut coded).unwrap();
            assert!(compact_shared(coded[0]).is_some(), "mode {}", coded[0]);
            let mut back = vec![0; stream.len()];
            decode(&coded, &mut back, &parsed).unwrap();
            assert_eq!(&back, stream);
        }
        // Alike streams: one table.
        let alike: Vec<KindHistogram> = histograms
            .iter()
            .enumerate()
            .filter(|(i, _)| i % 3 != 0)
            .map(|(_, h)| *h)
            .collect();
        assert_eq!(PageTables::from_streams(&alike, 4.0).len(), 1);
        // Six kinds of streams, each of three unlike sorts (calm, rough, and rough on
        // other symbols): more tables than a page holds would pay.
        let mut many: Vec<KindHistogram> = Vec::new();
        let other: Vec<u8> = rough.iter().map(|s| s + 40).collect();
        for kind in 0..6 {
            for i in 0..24 {
                let alphabet = [&calm[..], &rough[..], &other[..]][i % 3];
                let mut h = [0u32; 256];
                count(&draw(1024, alphabet), &mut h);
                many.push((kind, h));
            }
        }
        let tables = PageTables::from_streams(&many, 8.0);
        assert!(
            (12..=MAX_PAGE_TABLES).contains(&tables.len()),
            "{}",
            tables.len()
        );
        PageTables::parse(&tables.to_bytes()).unwrap();
    }

    /// The page tables of docs/format.md's example: two tables, counts in 5 bits, symbols listed.
    #[test]
    fn page_tables_worked_example() {
        let tables = PageTables::for_encoding(vec![
            (vec![(0, 24), (1, 8)], 5),
            (vec![(5, 16), (6, 8), (7, 8)], 5),
        ]);
        let bytes = tables.to_bytes();
        assert_eq!(
            bytes,
            [2, 5, 1, 5, 0, 1, 0x18, 0x01, 5, 2, 5, 5, 6, 7, 0x10, 0x21]
        );
        let stream = [5u8, 6, 7, 5, 5, 6, 7, 5];
        let mut coded = Vec::new();
        encode(&stream, &tables, &mut coded).unwrap();
        // Mode 0x11: table 1, two lanes; P = 3: the two final states (5 bits each), then
        // the 9 bits the six other symbols shed (a 5 sheds 1, a 6 or a 7 sheds 2).
        assert_eq!(coded, [MODE_TABLE | 1, 0x03, 0x62, 0xC8, 0x00]);
        let mut back = [0u8; 8];
        decode(&coded, &mut back, &PageTables::parse(&bytes).unwrap()).unwrap();
        assert_eq!(back, stream);
        // The same stream in the longer form of mode 3, which the encoder no longer
        // writes: the same bits.
        let legacy = legacy_shared(&coded);
        assert_eq!(legacy, [MODE_SHARED, 1, 0x03, 0x00, 0x62, 0xC8, 0x00]);
        let mut back = [0u8; 8];
        let used = decode(&legacy, &mut back, &PageTables::parse(&bytes).unwrap()).unwrap();
        assert_eq!((used, back), (legacy.len(), stream));
        // More than 32 symbols: a 32-byte set instead of the list.
        let many: Vec<(u8, u32)> = (0..128).map(|s| (s * 2, 1)).collect();
        let bytes = PageTables::for_encoding(vec![(many.clone(), 7)]).to_bytes();
        assert_eq!(bytes.len(), 1 + 3 + 32 + 128 / 8);
        assert_eq!(bytes[4..36], [0x55; 32][..]);
        assert_eq!(PageTables::parse(&bytes).unwrap().norms[0].0, many);
    }

    /// Streams of one distribution name a page table built from others like them: they
    /// decode through the parsed tables, and take fewer bytes than with tables of their
    /// own; a stream with a symbol the page tables lack carries its own.
    #[test]
    fn page_tables_are_shared_and_parsed_back() {
        let mut x = 7u64;
        let mut draw = |n: usize, alphabet: &[u8]| -> Vec<u8> {
            (0..n)
                .map(|_| alphabet[(xorshift(&mut x) % alphabet.len() as u64) as usize])
                .collect()
        };
        let alphabet = [0u8, 0, 0, 0, 1, 1, 2, 3, 4, 5, 250, 251, 252, 253, 254, 255];
        let mut streams: Vec<KindHistogram> = Vec::new();
        for kind in [0, 0, 0, 0, 0, 0, 0, 0, 5] {
            let mut counts = [0u32; 256];
            count(
                &draw(512, if kind == 0 { &alphabet } else { &[9, 10] }),
                &mut counts,
            );
            streams.push((kind, counts));
        }
        // Each sampled stream standing for ten: both tables pay for themselves.
        let tables = PageTables::from_streams(&streams, 10.0);
        assert_eq!(tables.len(), 2);
        let bytes = tables.to_bytes();
        let parsed = PageTables::parse(&bytes).unwrap();
        assert_eq!(parsed.to_bytes(), bytes);
        let none = PageTables::default();
        for (n, alphabet) in [
            (512, &alphabet[..]),
            (1000, &alphabet[..]),
            (300, &[9, 10][..]),
        ] {
            let stream = draw(n, alphabet);
            let (mut own, mut shared) = (Vec::new(), Vec::new());
            encode(&stream, &none, &mut own).unwrap();
            encode(&stream, &tables, &mut shared).unwrap();
            assert!(compact_shared(shared[0]).is_some(), "{n}");
            assert!(
                shared.len() < own.len(),
                "{n}: {} vs {}",
                shared.len(),
                own.len()
            );
            let mut back = vec![0; n];
            assert_eq!(decode(&shared, &mut back, &parsed).unwrap(), shared.len());
            assert_eq!(back, stream);
            let err = decode(&shared, &mut back, &none).unwrap_err();
            assert_eq!(err.kind(), crate::error::ErrorKind::Corrupt);
        }
        let mut odd = draw(512, &alphabet);
        odd[100] = 77;
        let mut coded = Vec::new();
        encode(&odd, &tables, &mut coded).unwrap();
        assert!(matches!(coded[0], MODE_TANS | MODE_TANS4));
        let mut back = vec![0; odd.len()];
        decode(&coded, &mut back, &parsed).unwrap();
        assert_eq!(back, odd);
        // Hostile tables: every strict prefix, counts out of range, bytes left over.
        assert!(PageTables::parse(&[]).unwrap().is_empty());
        for len in 1..bytes.len() {
            assert!(
                PageTables::parse(&bytes[..len]).is_err(),
                "{len}-byte prefix"
            );
        }
        for count in [0u8, 17, 255] {
            let mut bad = bytes.clone();
            bad[0] = count;
            assert!(PageTables::parse(&bad).is_err(), "{count} tables");
        }
        let mut bad = bytes.clone();
        bad.push(0);
        assert!(PageTables::parse(&bad).is_err(), "a byte left over");
        for at in 0..bytes.len() {
            for byte in [0, 1, 0x7F, 0xFF] {
                let mut bad = bytes.clone();
                bad[at] = byte;
                let _ = PageTables::parse(&bad);
            }
        }
    }

    /// Estimates over few symbols (listed) and many (all 256 counts, in lanes) agree
    /// with a direct sum in f64, and a table missing a present symbol cannot code it.
    #[test]
    fn estimates_agree_with_a_direct_sum() {
        let mut seed = 7u64;
        for k in [2usize, 5, SPARSE_MAX, SPARSE_MAX + 1, 100, 256] {
            let mut counts = [0u32; 256];
            for s in 0..k {
                // Symbols spread over the byte range, counts from 1 to 5000 (some above
                // the log2 tables).
                counts[(s * 255 / (k - 1).max(1)) % 256] = 1 + (xorshift(&mut seed) % 5000) as u32;
            }
            let present = Present::of(&counts);
            assert_eq!(present.len(), k);
            let n: f64 = counts.iter().map(|&c| f64::from(c)).sum();
            let direct: f64 = counts
                .iter()
                .filter(|&&c| c > 0)
                .map(|&c| f64::from(c) * (n / f64::from(c)).log2())
                .sum();
            let (k2, n2, bits) = information(&present);
            assert_eq!((k2, n2), (k, n as usize));
            assert!(
                (f64::from(bits) - direct).abs() <= 1e-4 * direct + 1.0,
                "{bits} {direct}"
            );
            let log = table_log(n as usize, k).max(MIN_TABLE_LOG);
            let norm = normalize(&counts, n as usize, log);
            let coder = Coder::new(norm.clone(), log).with_costs();
            let direct: f64 = norm
                .iter()
                .map(|&(s, c)| {
                    f64::from(counts[usize::from(s)]) * (f64::from(log) - f64::from(c).log2())
                })
                .sum::<f64>()
                + f64::from(LANES as u32 * log);
            let estimate = f64::from(coder.estimate(&present));
            assert!(
                (estimate - direct / 8.0).abs() <= 1e-4 * direct,
                "{estimate} {direct}"
            );
            // A stream with one symbol the table lacks.
            let mut more = counts;
            let absent = (0..256).find(|&s| counts[s] == 0);
            if let Some(s) = absent {
                more[s] = 1;
                assert!(coder.estimate(&Present::of(&more)).is_infinite());
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
        let none = PageTables::default();
        for (wide, mode) in [(false, MODE_TANS), (true, MODE_TANS4)] {
            let mut coded = Vec::new();
            encode_lanes(&stream, &none, wide, &mut coded).unwrap();
            assert_eq!(coded[0], mode);
            let mut out = vec![0; stream.len()];
            assert_eq!(decode(&coded, &mut out, &none).unwrap(), coded.len());
            assert_eq!(out, stream);
            for len in 0..coded.len() {
                assert!(
                    decode(&coded[..len], &mut out, &none).is_err(),
                    "{len}-byte prefix"
                );
            }
            for at in 0..coded.len() {
                for byte in [0, 1, 2, 0x7F, 0x80, 0xFF] {
                    let mut bad = coded.clone();
                    bad[at] = byte;
                    let _ = decode(&bad, &mut out, &none);
                }
            }
            let mut bad = |f: &dyn Fn(&mut Vec<u8>), what: &str| {
                let mut bad = coded.clone();
                f(&mut bad);
                let err = decode(&bad, &mut out, &none).expect_err(what);
                assert_eq!(err.kind(), crate::error::ErrorKind::Corrupt, "{what}");
            };
            bad(&|c| c[0] = 6, "unknown mode");
            bad(
                &|c| c[0] = MODE_SHARED,
                "a page table the page does not have",
            );
            bad(
                &|c| c[0] = MODE_SHARED4,
                "a page table the page does not have",
            );
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
            // The other lane count reads the same bits differently: never a panic.
            let mut other = coded.clone();
            other[0] = if wide { MODE_TANS } else { MODE_TANS4 };
            let _ = decode(&other, &mut out, &none);
        }
    }

    /// A page's tables are built for decoding only when a stream names them: a read of one
    /// chunk builds the tables its streams use, not all sixteen of its page.
    #[test]
    fn only_the_tables_streams_name_are_built() {
        let tables = PageTables::for_encoding(vec![
            (vec![(0, 24), (1, 8)], 5),
            (vec![(5, 16), (6, 8), (7, 8)], 5),
            (vec![(2, 16), (3, 16)], 5),
        ]);
        let parsed = PageTables::parse(&tables.to_bytes()).unwrap();
        let stream = [5u8, 6, 7, 5, 5, 6, 7, 5];
        let mut coded = Vec::new();
        encode(&stream, &tables, &mut coded).unwrap();
        assert_eq!(coded[0], MODE_TABLE | 1);
        let built = |t: &PageTables| -> Vec<bool> {
            t.decoders.iter().map(|d| d.get().is_some()).collect()
        };
        assert_eq!(built(&parsed), [false, false, false]);
        let mut back = [0u8; 8];
        decode(&coded, &mut back, &parsed).unwrap();
        assert_eq!(back, stream);
        assert_eq!(built(&parsed), [false, true, false]);
        assert!(parsed.decoder(3).is_err());
    }

    /// A compact shared stream is checked as modes 3 and 5 are: every prefix is an error,
    /// no changed byte panics, and a table the page lacks, a length varint that is cut,
    /// longer than it needs or over 65535, or an unknown mode are corrupt.
    #[test]
    fn compact_shared_streams_are_checked() {
        let mut x = 5u64;
        let stream: Vec<u8> = (0..900)
            .map(|_| [3u8, 3, 3, 4, 9, 200][(xorshift(&mut x) % 6) as usize])
            .collect();
        let mut counts = [0u32; 256];
        count(&stream, &mut counts);
        let tables = PageTables::from_streams(&[(0, counts), (1, counts)], 1.0);
        let parsed = PageTables::parse(&tables.to_bytes()).unwrap();
        for wide in [false, true] {
            let mut coded = Vec::new();
            encode_lanes(&stream, &tables, wide, &mut coded).unwrap();
            let (t, is_wide) = compact_shared(coded[0]).expect("a compact shared stream");
            assert_eq!((t, is_wide), (0, wide));
            // P is 100 to 16383 bytes here: a two-byte varint.
            assert!(
                coded[1] & 0x80 != 0 && coded[2] & 0x80 == 0,
                "{:?}",
                &coded[..3]
            );
            let mut out = vec![0; stream.len()];
            assert_eq!(decode(&coded, &mut out, &parsed).unwrap(), coded.len());
            assert_eq!(out, stream);
            assert_eq!(coded_len(&coded, stream.len()).unwrap(), coded.len());
            for len in 0..coded.len() {
                assert!(decode(&coded[..len], &mut out, &parsed).is_err(), "{len}");
            }
            for at in 0..coded.len().min(64) {
                for byte in [0, 1, 0x10, 0x1F, 0x20, 0x2F, 0x7F, 0x80, 0xFF] {
                    let mut bad = coded.clone();
                    bad[at] = byte;
                    let _ = decode(&bad, &mut out, &parsed);
                    let _ = coded_len(&bad, stream.len());
                }
            }
            let bad = |f: &dyn Fn(&mut Vec<u8>), what: &str| {
                let mut bad = coded.clone();
                f(&mut bad);
                let mut out = vec![0; stream.len()];
                let err = decode(&bad, &mut out, &parsed).expect_err(what);
                assert_eq!(err.kind(), crate::error::ErrorKind::Corrupt, "{what}");
            };
            bad(&|c| c[0] |= 0x0F, "page table 15 of a page of two");
            bad(&|c| c[0] = 0x30, "unknown mode 0x30");
            bad(
                &|c| {
                    c[2] |= 0x80;
                    c.insert(3, 0x00);
                },
                "a length with a needless zero byte",
            );
            bad(
                &|c| c.splice(1..3, [0xFF, 0xFF, 0x04]).for_each(drop),
                "a length over 65535",
            );
            bad(
                &|c| c.splice(1..3, [0x80, 0x80, 0x80, 0x01]).for_each(drop),
                "a length of four bytes",
            );
            bad(
                &|c| {
                    let (p, _) = read_stream_len(&c[1..]).unwrap();
                    let more = p + 1;
                    c.splice(1..3, [(more as u8) | 0x80, (more >> 7) as u8])
                        .for_each(drop);
                    c.push(0);
                },
                "a byte past the bits the symbols need",
            );
            // Decoded side by side, the same stream and the same errors.
            let mut outs = [vec![0; stream.len()], vec![0; stream.len()]];
            let mut slices: Vec<&mut [u8]> = outs.iter_mut().map(|o| &mut o[..]).collect();
            let used = decode_many(&[&coded, &coded], &mut slices, &parsed).unwrap();
            assert_eq!(used, [coded.len(), coded.len()]);
            assert!(outs.iter().all(|o| *o == stream));
            let mut other = coded.clone();
            other[0] |= 0x0F;
            let mut slices: Vec<&mut [u8]> = outs.iter_mut().map(|o| &mut o[..]).collect();
            assert!(decode_many(&[&coded, &other], &mut slices, &parsed).is_err());
        }
    }

    /// A stream decoded to a length other than its own (a page that claims more or fewer
    /// values than a chunk holds) is an error but by chance: its lanes do not end at the
    /// states the encoder began them at, or its bits do not end with the stream. Chance is
    /// about (symbols / states) a lane, so small tables of short streams let a few
    /// through (without the end-state check, 54 of these 120 decoded).
    #[test]
    fn streams_decoded_to_another_length_are_corrupt() {
        let mut x = 0x2545_F491_4F6C_DD1D_u64;
        let none = PageTables::default();
        let (mut checked, mut passed) = (0, Vec::new());
        for n in [40usize, 100, 511, 1024, 4096] {
            for kind in 0..3 {
                let stream: Vec<u8> = (0..n)
                    .map(|i| match kind {
                        0 => u8::from(xorshift(&mut x).is_multiple_of(10)),
                        1 => [0, 0, 0, 1, 255, 2, 0, 254][(xorshift(&mut x) % 8) as usize],
                        _ => (i % 251) as u8,
                    })
                    .collect();
                for wide in [false, true] {
                    let mut coded = Vec::new();
                    encode_lanes(&stream, &none, wide, &mut coded).unwrap();
                    if ![MODE_TANS, MODE_TANS4].contains(&coded[0]) {
                        continue;
                    }
                    let mut out = vec![0; n];
                    assert_eq!(decode(&coded, &mut out, &none).unwrap(), coded.len());
                    for other in [n - 8, n - 4, n - 1, n + 1, n + 4, n + 8] {
                        let mut out = vec![0; other];
                        match decode(&coded, &mut out, &none) {
                            Err(e) => assert_eq!(e.kind(), crate::error::ErrorKind::Corrupt),
                            Ok(_) => passed.push((n, kind, wide, other)),
                        }
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked >= 120, "{checked}");
        assert!(
            passed.len() * 20 <= checked && passed.iter().all(|&(n, ..)| n < 500),
            "{} of {checked} decoded: {passed:?}",
            passed.len()
        );
    }

    #[test]
    fn peeks_read_every_position_of_every_length() {
        // Bit by bit: bit `p` is bit `p % 8` of byte `p / 8`, zero past the end.
        let reference = |bytes: &[u8], pos: usize| -> u64 {
            (0..57).fold(0u64, |word, i| {
                let p = pos + i;
                let bit = bytes.get(p / 8).map_or(0, |b| u64::from(b >> (p % 8) & 1));
                word | bit << i
            })
        };
        let mut x = 11u64;
        for len in 0..20 {
            let bytes: Vec<u8> = (0..len).map(|_| xorshift(&mut x) as u8).collect();
            for pos in 0..8 * (len + 2) {
                assert_eq!(
                    peek(&bytes, pos) & mask(57),
                    reference(&bytes, pos),
                    "{len} {pos}"
                );
            }
        }
    }

    #[test]
    fn plain_and_dispatched_decoders_agree() {
        // `decode` runs the bit reader compiled for BMI2 where the CPU has it; the same
        // reader called directly is the build for every other CPU.
        let mut x = 5u64;
        let none = PageTables::default();
        for n in [4, 9, 64, 1000, 4096] {
            let stream: Vec<u8> = (0..n)
                .map(|_| (xorshift(&mut x) % 7 + xorshift(&mut x) % 5) as u8)
                .collect();
            for wide in [false, true] {
                let mut coded = Vec::new();
                encode_lanes(&stream, &none, wide, &mut coded).unwrap();
                let mut dispatched = vec![0; n];
                decode(&coded, &mut dispatched, &none).unwrap();
                assert_eq!(dispatched, stream, "{n}");
                if n < 64 && coded[0] == MODE_RAW {
                    continue;
                }
                let (norm, log, at) = read_table(&coded[1..]).unwrap();
                let decoder = Decoder::new(&norm, log);
                let mut plain = vec![0; n];
                let used = match coded[0] {
                    MODE_TANS => decoder.decode_bits::<LANES>(&coded[1 + at..], false, &mut plain),
                    MODE_TANS4 => {
                        decoder.decode_bits::<WIDE_LANES>(&coded[1 + at..], false, &mut plain)
                    }
                    other => panic!("{n}: mode {other}"),
                };
                assert_eq!(1 + at + used.unwrap(), coded.len(), "{n}");
                assert_eq!(plain, stream, "{n}");
            }
        }
    }

    /// Streams decoded side by side (`decode_many`) come out as `decode` gives them one
    /// at a time: streams of every mode, own and page tables, groups of one length and
    /// of mixed lengths, each followed by other bytes (as a chunk's low bits follow its
    /// symbols); and any stream cut short or with a byte changed fails in both or in
    /// neither, with the same bytes out when neither fails.
    #[test]
    fn streams_side_by_side_decode_as_one_at_a_time() {
        let mut x = 11u64;
        let alphabet = [0u8, 0, 0, 1, 1, 2, 3, 4, 5, 9, 200, 255];
        let mut draw = |n: usize, k: usize| -> Vec<u8> {
            (0..n)
                .map(|_| alphabet[(xorshift(&mut x) % k as u64) as usize])
                .collect()
        };
        let mut sampled: Vec<KindHistogram> = Vec::new();
        for _ in 0..8 {
            let mut counts = [0u32; 256];
            count(&draw(1024, alphabet.len()), &mut counts);
            sampled.push((0, counts));
        }
        let tables = PageTables::from_streams(&sampled, 10.0);
        let parsed = PageTables::parse(&tables.to_bytes()).unwrap();
        let none = PageTables::default();
        // Runs of one length, and lengths apart (a group's kernel pass ends at its
        // shortest stream; the others finish alone from there).
        let lengths = [
            1024, 1024, 1024, 1000, 1024, 9, 1024, 300, 1024, 1024, 1024, 1024, 700, 512, 200, 64,
            33, 800,
        ];
        let mut streams = Vec::new();
        let mut coded: Vec<Vec<u8>> = Vec::new();
        for (i, &n) in lengths.iter().cycle().take(40).enumerate() {
            let shared = i % 3 == 0;
            let stream = draw(
                n,
                if shared {
                    alphabet.len()
                } else {
                    1 + i % alphabet.len()
                },
            );
            let mut bytes = Vec::new();
            if shared {
                encode(&stream, &tables, &mut bytes).unwrap();
                // Every other one as an earlier file holds it.
                if i % 2 == 0 {
                    bytes = legacy_shared(&bytes);
                }
            } else {
                encode_lanes(&stream, &none, i % 5 != 1, &mut bytes).unwrap();
            }
            // Bytes after the stream, which peeks may see and must not take.
            bytes.extend((0..i % 13).map(|j| (j * 37) as u8));
            streams.push(stream);
            coded.push(bytes);
        }
        let modes: std::collections::BTreeSet<u8> = coded.iter().map(|c| c[0]).collect();
        assert!(
            modes.contains(&MODE_TANS4)
                && modes.contains(&MODE_SHARED4)
                && modes
                    .iter()
                    .any(|&m| compact_shared(m).is_some_and(|(_, wide)| wide)),
            "{modes:?}"
        );
        let one_at_a_time = |coded: &[Vec<u8>]| -> Result<(Vec<Vec<u8>>, Vec<usize>)> {
            let mut outs = Vec::new();
            let mut used = Vec::new();
            for (c, s) in coded.iter().zip(&streams) {
                let mut out = vec![0; s.len()];
                used.push(decode(c, &mut out, &parsed)?);
                outs.push(out);
            }
            Ok((outs, used))
        };
        let side_by_side = |coded: &[Vec<u8>]| -> Result<(Vec<Vec<u8>>, Vec<usize>)> {
            let mut outs: Vec<Vec<u8>> = streams.iter().map(|s| vec![0; s.len()]).collect();
            let inputs: Vec<&[u8]> = coded.iter().map(|c| &c[..]).collect();
            let mut slices: Vec<&mut [u8]> = outs.iter_mut().map(|o| &mut o[..]).collect();
            let used = decode_many(&inputs, &mut slices, &parsed)?;
            Ok((outs, used))
        };
        let (outs, used) = side_by_side(&coded).unwrap();
        assert_eq!(outs, streams);
        assert_eq!(used, one_at_a_time(&coded).unwrap().1);
        for (i, c) in coded.iter().enumerate() {
            assert_eq!(used[i], c.len() - i % 13, "{i}");
            // The length from the header alone is what decoding takes.
            assert_eq!(coded_len(c, streams[i].len()).unwrap(), used[i], "{i}");
        }
        let raw = [&[MODE_RAW][..], &[7; 9]].concat();
        assert_eq!(coded_len(&raw, 9).unwrap(), 10);
        assert!(coded_len(&raw, 10).is_err());
        assert!(coded_len(&[MODE_CONSTANT], 9).is_err());
        assert!(coded_len(&[9, 0, 0, 0], 9).is_err());
        // Hostile: cuts and changed bytes in one stream of the group.
        for round in 0..600 {
            let mut bad = coded.clone();
            let i = round % bad.len();
            let at = (xorshift(&mut x) as usize) % bad[i].len();
            if round % 2 == 0 {
                bad[i].truncate(at);
            } else {
                bad[i][at] ^= 1 << (round % 8);
            }
            // Never past the bytes there, and where the stream decodes, what it takes.
            let len = coded_len(&bad[i], streams[i].len());
            assert!(len.as_ref().map_or(true, |&l| l <= bad[i].len()));
            let (a, b) = (one_at_a_time(&bad), side_by_side(&bad));
            if let Ok((_, used)) = &a {
                assert_eq!(len.unwrap(), used[i], "round {round}");
            }
            match (a, b) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "round {round}"),
                (Err(_), Err(_)) => {}
                (a, b) => panic!("round {round}: one at a time {a:?}, side by side {b:?}"),
            }
        }
    }

    /// A long stream of few bits a symbol takes four lanes, as decoding time goes with its
    /// symbols; a short one keeps two.
    #[test]
    fn long_streams_of_few_bits_take_four_lanes() {
        let mut x = 5u64;
        for (n, mode) in [(1024, MODE_TANS4), (200, MODE_TANS)] {
            // About one symbol in 20 is a 1: a third of a bit a symbol.
            let stream: Vec<u8> = (0..n)
                .map(|_| u8::from(xorshift(&mut x).is_multiple_of(20)))
                .collect();
            let mut coded = Vec::new();
            encode(&stream, &PageTables::default(), &mut coded).unwrap();
            assert_eq!(coded[0], mode, "{n} symbols in {} bytes", coded.len());
            let mut back = vec![0u8; n];
            decode(&coded, &mut back, &PageTables::default()).unwrap();
            assert_eq!(back, stream);
        }
    }

    #[test]
    fn wide_lanes_cost_two_states_and_decode_every_length() {
        let mut x = 7u64;
        let none = PageTables::default();
        for n in [4, 5, 6, 7, 8, 9, 63, 64, 65, 1000] {
            let stream: Vec<u8> = (0..n)
                .map(|_| [1u8, 1, 2, 3, 5, 8][(xorshift(&mut x) % 6) as usize])
                .collect();
            let (mut narrow, mut wide) = (Vec::new(), Vec::new());
            encode_lanes(&stream, &none, false, &mut narrow).unwrap();
            encode_lanes(&stream, &none, true, &mut wide).unwrap();
            for coded in [&narrow, &wide] {
                let mut back = vec![0; n];
                assert_eq!(decode(coded, &mut back, &none).unwrap(), coded.len());
                assert_eq!(back, stream, "{n}");
            }
            if narrow[0] == MODE_TANS {
                assert_eq!(wide[0], MODE_TANS4, "{n}");
                // Two more states of at most 12 bits, and a lane's last symbol sheds
                // nothing either way: within 3 bytes, give or take the rounding of the
                // states' paths.
                assert!(
                    wide.len() <= narrow.len() + 4,
                    "{n}: {} vs {}",
                    wide.len(),
                    narrow.len()
                );
            }
        }
        // Fewer bytes than wide lanes: two lanes whatever is asked.
        let mut coded = Vec::new();
        encode_lanes(&[1, 2, 1], &none, true, &mut coded).unwrap();
        assert_ne!(coded[0], MODE_TANS4);
    }
}
