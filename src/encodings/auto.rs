//! `auto`: choosing a page's encoding by trial-encoding a sample of it.
//!
//! Byte stream split is not always a win: it roughly doubles LZ4's ratio on smooth grids,
//! but on columns of few distinct decimal values LZ4 alone does better, because it matches
//! whole repeated values that splitting breaks apart; and Zstd beats LZ4 on ratio at a
//! cost in speed. Guessing from byte entropy (as Lance does, over a page's first 64
//! values) misses both. [`AutoChooser`] instead encodes a few windows of values spread over
//! the whole page with every enabled encoding, exactly as the page would be encoded, and
//! compares the sizes:
//!
//! - the default candidates are lz4, bss+lz4, zstd, bss+zstd, bss+zstd+dict (in the
//!   first stage it is bss+zstd: its page's dictionary is made only as below, when
//!   bss+zstd is within 1.15x of the best), (for 1-, 2-, 4- and 8-byte
//!   values) bitpack, delta, delta+lz4, delta+ans and delta+zstd, (for 1- to 8-byte values) dict
//!   and dict+zstd, and (for 4- and 8-byte values) alp, alp-rd, alp+lz4, alp+ans and
//!   alp+zstd; plain and bss can be
//!   added ([`AutoOptions::with_candidates`]) and cost nothing to try (their size is the
//!   values' size), but never win on size: a chunk LZ4 cannot shrink is stored as it is;
//! - favouring size alone (`min_gain = 0`), an LZ4 candidate is not tried when the same
//!   transform under Zstd is a candidate (lz4, bss+lz4, delta+lz4, dict), nor bit-packed
//!   or LZ4 ALP when `alp+ans` is, nor bit-packed delta when `delta+ans` is: they win on decode speed, never by more than a few
//!   bytes on size;
//! - a page of at most 64 KiB is tried whole, every candidate on every chunk;
//! - a candidate more than 2x the size of the best so far on the first window of the
//!   first sample (a whole chunk both encoded, on which the best came within 1.25x of its
//!   estimate on the whole sample) is tried on that window alone, its estimate as many
//!   times the best's: it would not win, and its other windows would cost encode time
//!   for nothing;
//! - windows are whole chunks when chunks are at most 16 KiB (else aligned 16 KiB slots
//!   of them, less on a page under 256 KiB, down to 4 KiB), about 1/32 of the page in all,
//!   at least one (four when ALP is tried; never over 1/8 of a small page) and at most 32, one in each of equal slices of the page at golden-ratio
//!   offsets, so neither the start of a page nor a grid's period can mislead it;
//! - the candidates that code with entropy tables (`alp+ans`, `delta+ans`) are tried
//!   first, and a candidate more than 1.5x the best so far on the first four or more
//!   whole chunks of a sample, together, is not tried on the sample's other chunks, its
//!   estimate as many times the best's (it could not come within any call the choice
//!   makes; on a small page tried whole, most candidates stop there);
//! - on chunks larger than the windows, the smallest candidate and every LZ4 or Zstd one
//!   within 15% of it are tried again on the whole chunks the first sample's windows lie
//!   in, the others' estimates moved as the smallest's moved: a window shows nothing of
//!   what LZ4 and Zstd match further back in a chunk of up to 512 KiB;
//! - when the two smallest candidates are within 8% of each other, they are tried again on
//!   about 1/8 of the page (at least 4 windows, but never more than 1/8 of it; favouring
//!   size, on a page too small for that, its chunks one after another until at least
//!   four tried all have the same one smaller, or every chunk), the others' estimates moved as
//!   the pair's moved; but between an LZ4 and a Zstd encoding only when favouring size
//!   (`min_gain = 0`) and they differ by more than 2% (otherwise the extra Zstd trials
//!   would cost more encode time than the choice is worth); and not when the smaller of
//!   the pair was smaller on each of at least four windows of the first sample (whole
//!   chunks, on a page larger than that sample): a candidate that loses on every window
//!   of a spread sample would only cost a second trial;
//! - with that knob, Zstd is not tried at all when neither LZ4 encoding saves `min_gain`
//!   on the sample (data close to incompressible);
//! - the candidates are ranked by decode speed in chunks of the default size (plain,
//!   bss, lz4, bss+lz4, bitpack, dict, delta, delta+lz4, alp, alp-rd, alp+lz4, dict+zstd,
//!   delta+ans, alp+ans, bss+zstd, bss+zstd+dict, zstd, delta+zstd, alp+zstd); the pick is the
//!   fastest whose estimate is at most `1 / (1 - min_gain)` times the smallest, or
//!   less than `min_gain / 8` of the values' bytes above it (so a page every candidate
//!   shrinks to almost nothing, such as a sorted key, keeps the fastest) while at most
//!   `(1 + min_gain) / (1 - min_gain)` times the smallest (twice the relative budget's
//!   share: a page of ratio 136 gives up at most about 6%, not 50%). `min_gain = 0`
//!   picks the smallest; the default, [`DEFAULT_MIN_GAIN`], gives up to about 3% of size
//!   for faster decoding; `auto:0.3` up to about 43%;
//! - with `min_gain` above 0, `alp+ans` and `delta+ans` also take each chunk's integers
//!   binned (one coded symbol a value, decoded in one pass) rather than as byte streams
//!   (a coded symbol a byte, several passes) when bins are at most `min_gain` larger by
//!   estimate, on top of the margin they always have: the two trades compound, so the
//!   default can give up a little over 3% (SLP in 4 KiB chunks: 3.8% more bytes,
//!   decoded 2.9x as fast);
//! - whole chunks a trial encoded with the encoding finally picked are reused by the page
//!   encoder, not encoded twice; and what candidates derive from a chunk before storing
//!   it (ALP's scale, integers and exceptions, shared by `alp+zstd` and `alp+ans`;
//!   delta's residuals; their symbol counts) is derived once per chunk for every trial,
//!   the page's tables and the final encoding (the page encoder's memo);
//! - a candidate that learns from the page (`alp+ans` and `delta+ans` build entropy
//!   tables from it, `bss+zstd+dict` a Zstd dictionary, [`MiniBlockCompressor::for_page`]) is first tried as it comes (each
//!   chunk with tables of its own); when that is within 1.3x of the best estimate (and,
//!   of `alp+ans` and `delta+ans`, which the same kind of tables gain alike, within 1.15x
//!   of the better one) it is
//!   made for the page once from a sample of its chunks ([`Learn::Sample`]), tried again
//!   as made, and its tables' bytes are added to its estimate (the tables save at most
//!   about a fifth, so one further off cannot win; 1.3x leaves room for the sample's
//!   error, and each page made costs a pass over a quarter of the page); the one picked
//!   is made again from the whole page ([`Learn::Page`]), whose tables hold the symbols
//!   of chunks the sample missed, when its sample likely missed some
//!   ([`MiniBlockCompressor::would_learn_more`]: a sampled stream no table serves, or
//!   symbols seen once), and the trials' chunks are reused only if that made the same
//!   tables;
//! - a dictionary (`dict`, `dict+zstd`) is tried only when at most a quarter of the first
//!   sample's values are distinct: it is made for the page (its items found in one pass),
//!   tried as made, and its items' bytes are added to its estimate.
//!
//! The choice depends only on the page's bytes (never on timings), so the same page is
//! always encoded the same way, by one thread or many.
//!
//! ```
//! use miniblock::encodings::{AutoChooser, AutoOptions, EncoderOptions, Encoding};
//! // A smooth series: byte stream split (of the values or of their differences) plus a
//! // compressor wins.
//! let values: Vec<u8> = (0..100_000)
//!     .flat_map(|i| (1000.0 + (i as f32 / 500.0).sin()).to_le_bytes())
//!     .collect();
//! let chooser = AutoChooser::new(4, &EncoderOptions::default(), &AutoOptions::default())?;
//! let choice = chooser.choose(&values)?;
//! let e = choice.encoding;
//! assert!(e.splits() || e.is_delta() || e.is_alp(), "{e:?}");
//! # Ok::<(), miniblock::Error>(())
//! ```

use std::fmt;
use std::ops::Range;
use std::str::FromStr;

use super::{
    ChunkPlan, ChunkStorage, CompressionScheme, EncoderOptions, Encoding, Learn,
    MiniBlockCompressor, CHUNK_BYTES,
};
use crate::error::{Error, Result};

/// The `min_gain` of [`AutoOptions::default`]: `auto` gives up to about 3% of size for
/// faster decoding.
pub const DEFAULT_MIN_GAIN: f64 = 0.03;

/// Largest trial window: chunks above this size are sampled by their first bytes.
const MAX_WINDOW_BYTES: usize = 16 * 1024;

/// The default candidates: every encoding that can shrink values (all but plain and
/// BSS; each only for the widths it supports). Plain and BSS alone are never smaller than LZ4 over them (a chunk LZ4 cannot
/// shrink is stored as it is, and decodes as a copy), so they are left out unless asked
/// for: they are the first two of [`SPEED_ORDER`].
const DEFAULT_CANDIDATES: u32 = ((1 << SPEED_ORDER.len()) - 1) & !0b11;

/// At most this many windows per page and stage.
const MAX_WINDOWS: usize = 32;

/// Stage 1 tries one window per this many windows' worth of page.
const FIRST_SAMPLE_EVERY: usize = 32;

/// With ALP among the candidates, stage 1 tries at least this many windows (when the page
/// has them): with 16 KiB windows, 1/32 of a 1 MiB page is only two, too few to tell ALP
/// from Zstd.
const FIRST_MIN_WINDOWS: usize = 4;

/// Pages of at most this many bytes are tried whole, every candidate on every chunk.
const EXACT_PAGE_BYTES: usize = 64 * 1024;

/// Stage 2 tries one window per this many.
const SECOND_SAMPLE_EVERY: usize = 8;

/// Stage 2 tries at least this many windows (when the page has them).
const SECOND_MIN_WINDOWS: usize = 4;

/// Stage 2 runs when the second smallest is within this factor of the smallest.
const CLOSE: f64 = 1.08;

/// Stage 2 over every chunk of a small page, favouring size, runs when the second
/// smallest is within this factor: a few windows of a small page (one 8 KiB window of
/// hourly weather in 64 KiB chunks) can miss by more than [`CLOSE`], and the whole page
/// costs little to try.
const CLOSE_SMALL: f64 = 1.15;

/// A candidate that learns from the page is made for it when, as it comes, it is within
/// this factor of the best: what it learns (entropy tables shared by the chunks) saves
/// at most about a fifth of its bytes (a chunk's own tables, on small pages), so 1.25
/// would do; the rest is room for the first sample's error.
const LEARNED_GAIN: f64 = 1.3;

/// Of the candidates that learn entropy tables from the page alike ([`learns_tables`]),
/// one is made for it only when, as it comes, it is within this factor of the best of
/// them: the same tables gain them alike (2-10% on the shared files), so one further
/// behind stays behind, and making it costs a pass over a quarter of the page.
const TABLES_RIVAL: f64 = 1.15;

/// Whether `encoding` codes its streams with entropy tables learnt from the page.
fn learns_tables(encoding: Encoding) -> bool {
    matches!(encoding, Encoding::AlpAns | Encoding::DeltaAns)
}

/// `bss+zstd+dict` is made for the page only when `bss+zstd` is within this of the best:
/// its dictionary saved 11-14% on the ephemerides, and making one (the page's high byte
/// streams compressed, then prepared for Zstd) costs a few milliseconds a page.
const DICTIONARY_GAIN: f64 = 1.15;

/// Stage 2 (on a page larger than its first sample) is skipped when the smaller of the
/// two is smaller on every one of at least this many windows of the first sample: a
/// candidate that loses on every window of a spread sample has little chance on the
/// page, and trying it again would cost encode time for nothing.
const AGREEING_WINDOWS: usize = 4;

/// A candidate this many times the size of the best so far on the first window of the
/// first sample is not tried on its other windows.
const HOPELESS: f64 = 2.0;

/// A candidate this many times the size of the best so far on the first
/// [`BEHIND_AFTER`] or more whole chunks of a sample, together, is not tried on the
/// rest: on several chunks spread over the page this far behind, it would not come
/// within [`LEARNED_GAIN`] of the best (nor within any closer call the choice makes),
/// and its other chunks would cost encode time for nothing.
const BEHIND: f64 = 1.5;
const BEHIND_AFTER: usize = 4;

/// ... when the best so far is within this factor of its estimate on that window.
const REPRESENTATIVE: f64 = 1.25;

/// A fill page's estimate (the other values' choice, sampled apart from the page's own)
/// within this factor of the page's own, either way, is checked on the same chunks: two
/// estimates from different samples of a page whose rows differ (a grid's land and sea)
/// can each miss by a tenth or more (`ferret_levitus_climatology_TEMP` in 8192-value
/// chunks: the page's own estimated at 0.254 of its bytes, 0.289 when encoded).
const FILL_DOUBT: f64 = 1.25;

/// Whole chunks, spread over the page, on which a doubtful fill layer and the page's own
/// choice are both encoded: at least [`PAIRED_MIN_CHUNKS`], a sixteenth of the page's
/// chunks beyond that, at most [`PAIRED_MAX_CHUNKS`].
const PAIRED_MIN_CHUNKS: usize = 8;
const PAIRED_MAX_CHUNKS: usize = 32;

/// On a fill page, the encodings the page as it is tries: those within this factor of the
/// smallest estimate for the other values (at most [`MAX_FILL_RIVALS`]). The fill values
/// are a run-length list beside them, so what codes the others best codes the page
/// best but for them, and the page's own choice is wanted only to say whether the fill
/// layer pays.
const FILL_RIVALS: f64 = 1.3;
const MAX_FILL_RIVALS: usize = 4;

/// The encodings a fill page tries as it is, from the estimates for its other values:
/// see [`FILL_RIVALS`]. `bss+zstd+dict` brings `bss+zstd`, whose trial it starts from.
fn rivals(estimates: &[(Encoding, Option<f64>)]) -> Vec<Encoding> {
    let mut ranked: Vec<(Encoding, f64)> = estimates
        .iter()
        .filter_map(|&(e, r)| r.map(|r| (e, r)))
        .collect();
    ranked.sort_by(|a, b| a.1.total_cmp(&b.1));
    let smallest = ranked.first().map_or(0.0, |r| r.1);
    let mut rivals: Vec<Encoding> = ranked
        .iter()
        .take_while(|r| r.1 <= smallest * FILL_RIVALS)
        .take(MAX_FILL_RIVALS)
        .map(|r| r.0)
        .collect();
    if rivals.contains(&Encoding::BssZstdDict) && !rivals.contains(&Encoding::BssZstd) {
        rivals.push(Encoding::BssZstd);
    }
    rivals
}

/// Runs of the fill value this long on average, or longer, are not weighed as slower
/// to decode than the page's own choice: see [`AutoChooser::choose`].
const LONG_RUN: f64 = 8.0;

/// Between an LZ4 and a Zstd candidate this close, stage 2 is skipped.
const NEAR_TIE: f64 = 1.02;

/// Chunks larger than the trial windows: the LZ4 and Zstd candidates within this factor
/// of the best are measured again, with the best, on whole chunks. A window of 16 KiB
/// shows nothing of what LZ4 and Zstd match further back in a chunk of up to 512 KiB
/// (`bss+zstd` on 512 KiB chunks of `de421_venus` comes out 10% smaller than on its
/// 16 KiB windows).
const CLOSE_LONG: f64 = 1.15;

/// What `auto` may choose from and how it weighs size against decode speed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AutoOptions {
    /// Bit `i` set: `SPEED_ORDER[i]` is a candidate.
    candidates: u32,
    min_gain: f64,
    fills: bool,
}

impl Default for AutoOptions {
    fn default() -> Self {
        Self {
            candidates: DEFAULT_CANDIDATES,
            min_gain: DEFAULT_MIN_GAIN,
            fills: true,
        }
    }
}

impl AutoOptions {
    /// Choose only among `candidates` (at least one).
    pub fn with_candidates(mut self, candidates: &[Encoding]) -> Result<Self> {
        if candidates.is_empty() {
            return Err(Error::invalid("auto needs at least one candidate encoding"));
        }
        self.candidates = candidates.iter().fold(0, |mask, e| mask | 1 << rank(*e));
        Ok(self)
    }

    /// The fastest-decoding candidate is picked among those at most `1 / (1 - min_gain)`
    /// times the smallest estimate (`min_gain` a fraction, 0 to below 1): a slower one is
    /// picked only when every faster one is further above the smallest. 0 favours size
    /// alone.
    pub fn with_min_gain(mut self, min_gain: f64) -> Result<Self> {
        if !(0.0..1.0).contains(&min_gain) {
            return Err(Error::invalid(format!(
                "auto's min_gain must be from 0 to below 1, got {min_gain}"
            )));
        }
        self.min_gain = min_gain;
        Ok(self)
    }

    /// The candidates, fastest-decoding first.
    pub fn candidates(&self) -> Vec<Encoding> {
        SPEED_ORDER
            .into_iter()
            .filter(|e| self.candidates & (1 << rank(*e)) != 0)
            .collect()
    }

    /// The size-versus-speed knob.
    pub fn min_gain(&self) -> f64 {
        self.min_gain
    }

    /// Whether a page's dominant value may be taken out of its encoding
    /// ([`FillCompressor`](super::FillCompressor)); on by default. Off, every page is one
    /// of the candidates alone.
    #[must_use]
    pub fn with_fills(mut self, fills: bool) -> Self {
        self.fills = fills;
        self
    }

    /// Whether a fill layer may be chosen.
    pub fn fills(&self) -> bool {
        self.fills
    }
}

/// Position of an encoding in decode-speed order, [`SPEED_ORDER`].
fn rank(encoding: Encoding) -> usize {
    SPEED_ORDER
        .iter()
        .position(|&e| e == encoding)
        .expect("every encoding is ranked")
}

/// Whether `encoding` is the faster, larger form of another of `candidates`: LZ4 where
/// the same values under Zstd are a candidate, bit-packed or LZ4 ALP where `alp+ans` is.
fn size_dominated(encoding: Encoding, candidates: &[Encoding]) -> bool {
    let by = match encoding {
        Encoding::Lz4 => Encoding::Zstd,
        Encoding::BssLz4 => Encoding::BssZstd,
        Encoding::DeltaLz4 => Encoding::DeltaZstd,
        Encoding::Alp | Encoding::AlpLz4 => Encoding::AlpAns,
        Encoding::Delta => Encoding::DeltaAns,
        Encoding::Dict => Encoding::DictZstd,
        _ => return false,
    };
    candidates.contains(&by)
}

/// Whether an estimate `r` is within the size budget that the smallest estimate and
/// `min_gain` set: at most `1 / (1 - min_gain)` times the smallest, or less than
/// `min_gain / 8` of the values' bytes above it (where every candidate shrinks the page
/// to almost nothing, a sorted key or a constant, a few bytes do not pay for slower
/// decoding) while still at most twice the relative budget's share above it: on a page
/// of ratio 136 that share alone would allow 1.5x the smallest, far from "about 3%".
fn within_budget(r: f64, smallest: f64, min_gain: f64) -> bool {
    let relative = r * (1.0 - min_gain) <= smallest;
    let twice = r * (1.0 - min_gain) <= smallest * (1.0 + min_gain);
    relative || (r - smallest < min_gain / 8.0 && twice)
}

/// The index of the fastest estimate (they come fastest first) within the size budget
/// ([`within_budget`]); 0 when there is no estimate.
///
/// The budget is set by the smallest, not by each faster pick in turn, so a larger
/// `min_gain` never picks a smaller, slower-ranked encoding than a smaller one does.
fn fastest_within(estimates: &[(Encoding, Option<f64>)], min_gain: f64) -> usize {
    let smallest = estimates
        .iter()
        .filter_map(|&(_, r)| r)
        .fold(f64::INFINITY, f64::min);
    estimates
        .iter()
        .position(|&(_, r)| r.is_some_and(|r| within_budget(r, smallest, min_gain)))
        .unwrap_or(0)
}

/// Encodings from the fastest to decode to the slowest, in 4 KiB chunks: there each
/// Zstd frame parses its headers and builds its decoding tables for a few thousand
/// bytes, while a chunk of `delta+ans` or `alp+ans` names page tables built once, so
/// those decode faster than their Zstd forms, and faster than Zstd over split bytes or
/// over the values; a dictionary's indices under Zstd decode faster still. In chunks of
/// 64 KiB and more Zstd amortizes its tables and the order of those pairs turns; the
/// default chunks, and the scans that read them a few at a time, are what the order is
/// for. It is the order of typical decoding times over the bundled grids (docs/history.md,
/// "Where the scan floor's gap lies"), not a measure of the values at hand: on some
/// series `bss+zstd` decodes faster than `delta+ans`, or `alp+ans` (many exceptions)
/// slower, so a large `min_gain` can still pick a slower encoding than `min_gain = 0`.
/// `delta+ans` comes before `alp+ans`: at sizes within the budget of each other, both
/// decode binned integers of about as many bits, and ALP then scales every one back to a
/// float and patches its exceptions (on SLP in 8192-value chunks, the same size decodes
/// 1.3x as fast as `delta+ans`); where `alp+ans` is faster, `delta+ans` is far larger.
const SPEED_ORDER: [Encoding; 19] = [
    Encoding::Plain,
    Encoding::Bss,
    Encoding::Lz4,
    Encoding::BssLz4,
    Encoding::Bitpack,
    Encoding::Dict,
    Encoding::Delta,
    Encoding::DeltaLz4,
    Encoding::Alp,
    Encoding::AlpRd,
    Encoding::AlpLz4,
    Encoding::DictZstd,
    Encoding::DeltaAns,
    Encoding::AlpAns,
    Encoding::BssZstd,
    Encoding::BssZstdDict,
    Encoding::Zstd,
    Encoding::DeltaZstd,
    Encoding::AlpZstd,
];

/// How a page is to be encoded: one encoding, or `auto`'s choice per page.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Strategy {
    /// Every page with this encoding.
    Fixed(Encoding),
    /// Each page with the encoding [`AutoChooser`] picks for it.
    Auto(AutoOptions),
}

impl Default for Strategy {
    fn default() -> Self {
        Strategy::Auto(AutoOptions::default())
    }
}

impl From<Encoding> for Strategy {
    fn from(encoding: Encoding) -> Self {
        Strategy::Fixed(encoding)
    }
}

impl fmt::Display for Strategy {
    /// As [`FromStr`] reads it: an encoding's name, or `auto` with `:GAIN` when the gain
    /// is not the default and `:nofill` when fill pages are off (the candidates of
    /// [`AutoOptions::with_candidates`] are not shown).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Strategy::Fixed(e) => write!(f, "{e}"),
            Strategy::Auto(o) => {
                f.write_str("auto")?;
                if o.min_gain != DEFAULT_MIN_GAIN {
                    write!(f, ":{}", o.min_gain)?;
                }
                if !o.fills {
                    f.write_str(":nofill")?;
                }
                Ok(())
            }
        }
    }
}

impl FromStr for Strategy {
    type Err = Error;

    /// An encoding name, or `auto` followed by any of `:GAIN` (its `min_gain`; `auto:0`
    /// favours size alone) and `:nofill` (no fill pages), in that order.
    fn from_str(s: &str) -> Result<Self> {
        let lower = s.to_ascii_lowercase();
        if lower == "auto" || lower.starts_with("auto:") {
            let mut options = AutoOptions::default();
            let mut rest: Vec<&str> = lower.split(':').skip(1).collect();
            if rest.last() == Some(&"nofill") {
                rest.pop();
                options = options.with_fills(false);
            }
            match rest[..] {
                [] => {}
                [gain] => {
                    let gain: f64 = gain.parse().map_err(|_| {
                        Error::invalid(format!("auto's min_gain {gain:?} is not a number"))
                    })?;
                    options = options.with_min_gain(gain)?;
                }
                _ => {
                    return Err(Error::invalid(format!(
                        "{s:?}: expected auto, auto:GAIN, auto:nofill or auto:GAIN:nofill"
                    )))
                }
            }
            return Ok(Strategy::Auto(options));
        }
        s.parse::<Encoding>().map(Strategy::Fixed).map_err(|_| {
            let names: Vec<&str> = Encoding::ALL.iter().map(|e| e.name()).collect();
            Error::invalid(format!(
                "unknown encoding {s:?}; expected auto, auto:GAIN, auto:nofill or one of {}",
                names.join(", ")
            ))
        })
    }
}

/// `auto`'s decision for one page.
#[derive(Debug)]
pub struct Choice {
    /// The encoding picked.
    pub encoding: Encoding,
    /// Bytes of values in the last sample taken.
    pub sample_bytes: usize,
    /// Each candidate's encoded bytes per sampled byte (`None`: not tried), fastest-decoding
    /// first.
    pub estimates: Vec<(Encoding, Option<f64>)>,
    /// Whole chunks the trials already encoded with the picked encoding, by chunk index:
    /// the page encoder copies them instead of encoding them again.
    pub(crate) encoded_chunks: Vec<TrialChunk>,
    /// The picked encoding's compressor made for this page, when it learns from the page
    /// ([`MiniBlockCompressor::for_page`]); the trials used it. With a fill, the fill
    /// layer around the picked encoding's compressor.
    pub(crate) page_compressor: Option<Box<dyn MiniBlockCompressor>>,
    /// The value taken out of the page's chunks ([`FillCompressor`](super::FillCompressor))
    /// before `encoding` codes the others, if any: then `encoding` and `estimates` are of
    /// the other values.
    pub fill: Option<Vec<u8>>,
    /// Whether the pick's page compressor is still the one made from a sample, to be made
    /// from the whole page ([`AutoChooser::learn_whole_page`]) once the choice is final:
    /// of a fill page's two choices, one for the page and one for its other values, only
    /// the one used needs it, and making it costs a pass over the page.
    learns_more: bool,
}

impl Choice {
    /// The picked encoding's estimated bytes for the `len` bytes of values it was chosen
    /// for.
    fn estimated_bytes(&self, len: usize) -> Option<f64> {
        let (_, ratio) = self.estimates.iter().find(|(e, _)| *e == self.encoding)?;
        Some((*ratio)? * len as f64)
    }
}

/// One chunk as a trial encoded it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TrialChunk {
    pub(crate) index: usize,
    pub(crate) storage: ChunkStorage,
    pub(crate) bytes: Vec<u8>,
}

/// A trial window: values `rows`, which are all of chunk `chunk` when `whole`.
#[derive(Debug, Clone)]
struct Window {
    chunk: usize,
    rows: Range<usize>,
    whole: bool,
}

/// Trial encodings of windows of one page, with reused buffers.
struct Trial<'a> {
    values: &'a [u8],
    width: usize,
    scratch: Vec<u8>,
    /// Per candidate, the whole chunks it encoded.
    encoded: Vec<Vec<TrialChunk>>,
}

impl Trial<'_> {
    fn bytes(&self, windows: &[Window]) -> usize {
        windows.iter().map(|w| w.rows.len() * self.width).sum()
    }

    /// [`ratio`](Self::ratio) on `windows`; or, when on the first of them candidate
    /// `index` comes out more than [`HOPELESS`] times the size of `leader` (the best so
    /// far, and its estimate on `windows`) on the same whole chunk, and the leader came
    /// within [`REPRESENTATIVE`] of its estimate there, that many times the leader's
    /// estimate: it would not win on the rest, and trying it there would cost encode time
    /// for nothing.
    fn screened_ratio(
        &mut self,
        index: usize,
        encoding: Encoding,
        compressor: &dyn MiniBlockCompressor,
        windows: &[Window],
        leader: Option<(usize, f64)>,
    ) -> Result<f64> {
        if let (Some((leader, leading)), [first, _, ..]) = (leader, windows) {
            let led = self.encoded[leader]
                .iter()
                .find(|c| c.index == first.chunk && first.whole)
                .map(|c| c.bytes.len() as f64 / (first.rows.len() * self.width) as f64);
            // Only a window on which the leader fares as on the whole sample speaks for
            // the sample: on a window unlike the rest (a run of one value among noise)
            // the others may trail it by far more than they do elsewhere.
            if let Some(led) = led
                .filter(|&led| led <= leading * REPRESENTATIVE && leading <= led * REPRESENTATIVE)
            {
                let alone = self.ratio(index, encoding, compressor, std::slice::from_ref(first))?;
                if alone > led * HOPELESS {
                    // As many times the leader's estimate on the whole sample: a first
                    // window easier than the rest must not make it look better than it is.
                    return Ok(alone / led * leading);
                }
            }
        }
        if let Some((leader, leading)) = leader {
            if windows.len() > BEHIND_AFTER && !encoding.stores_values_at_width() {
                // Window by window, while they are whole chunks the leader encoded too
                // (the chunks encoded here are kept, so the whole trial below reuses
                // them).
                let (mut mine, mut theirs) = (0.0, 0.0);
                for (k, window) in windows[..windows.len() - 1].iter().enumerate() {
                    let Some(led) = self.encoded[leader]
                        .iter()
                        .find(|c| c.index == window.chunk && window.whole)
                    else {
                        break;
                    };
                    let raw = (window.rows.len() * self.width) as f64;
                    theirs += led.bytes.len() as f64;
                    mine +=
                        self.ratio(index, encoding, compressor, std::slice::from_ref(window))?
                            * raw;
                    if k + 1 >= BEHIND_AFTER && mine > theirs * BEHIND {
                        return Ok(mine / theirs * leading);
                    }
                }
            }
        }
        self.ratio(index, encoding, compressor, windows)
    }

    /// Whether candidate `a` (which carries `carried.0` bytes per value byte besides its
    /// chunks) came out smaller than `b` on each of `windows`, all whole chunks both
    /// encoded; false when any was not.
    fn smaller_on_each(
        &self,
        (a, b): (usize, usize),
        carried: (f64, f64),
        windows: &[Window],
    ) -> bool {
        let size = |i: usize, window: &Window| {
            self.encoded[i]
                .iter()
                .find(|c| c.index == window.chunk)
                .filter(|_| window.whole)
                .map(|c| c.bytes.len() as f64)
        };
        windows.iter().all(|window| {
            let raw = (window.rows.len() * self.width) as f64;
            match (size(a, window), size(b, window)) {
                (Some(sa), Some(sb)) => sa + carried.0 * raw < sb + carried.1 * raw,
                _ => false,
            }
        })
    }

    /// Encoded bytes per value byte of `windows` under candidate `index`.
    fn ratio(
        &mut self,
        index: usize,
        encoding: Encoding,
        compressor: &dyn MiniBlockCompressor,
        windows: &[Window],
    ) -> Result<f64> {
        let mut encoded = 0;
        let mut raw = 0;
        for window in windows {
            let bytes = &self.values[window.rows.start * self.width..window.rows.end * self.width];
            raw += bytes.len();
            if encoding.stores_values_at_width() {
                // Plain and BSS write exactly the values' bytes.
                encoded += bytes.len();
                continue;
            }
            let done = window
                .whole
                .then(|| self.encoded[index].iter().find(|c| c.index == window.chunk))
                .flatten();
            if let Some(done) = done {
                encoded += done.bytes.len();
                continue;
            }
            let mut out = Vec::new();
            let storage = compressor.compress_chunk(bytes, &mut out, &mut self.scratch)?;
            encoded += out.len();
            if window.whole {
                self.encoded[index].push(TrialChunk {
                    index: window.chunk,
                    storage,
                    bytes: out,
                });
            }
        }
        Ok(encoded as f64 / raw.max(1) as f64)
    }
}

/// The candidate with the smallest estimate so far, of those that store chunks of their
/// own (not plain or BSS), and its estimate.
fn leader(estimates: &[(Encoding, Option<f64>)]) -> Option<(usize, f64)> {
    estimates
        .iter()
        .enumerate()
        .filter(|(_, (e, _))| !e.stores_values_at_width())
        .filter_map(|(i, (_, r))| r.map(|r| (i, r)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
}

/// Candidates `again` tried again on `windows`: each estimate becomes what it came to
/// there, with what the candidate carries besides its chunks; every other estimate is
/// multiplied by `drift` of the factors by which theirs moved (in the order of `again`),
/// so that all estimates speak of the same data.
fn measure_again(
    trial: &mut Trial,
    compressors: &[(Encoding, &dyn MiniBlockCompressor)],
    carried: &[f64],
    estimates: &mut [(Encoding, Option<f64>)],
    again: &[usize],
    windows: &[Window],
    drift: impl FnOnce(&[f64]) -> f64,
) -> Result<()> {
    let mut factors = Vec::with_capacity(again.len());
    for &i in again {
        let (encoding, compressor) = compressors[i];
        let before = estimates[i].1.unwrap_or(f64::INFINITY);
        let after = trial.ratio(i, encoding, compressor, windows)? + carried[i];
        factors.push(after / before.max(f64::MIN_POSITIVE));
        estimates[i].1 = Some(after);
    }
    let drift = drift(&factors);
    for (i, estimate) in estimates.iter_mut().enumerate() {
        if !again.contains(&i) {
            estimate.1 = estimate.1.map(|r| r * drift);
        }
    }
    Ok(())
}

/// Where chunk `chunk` comes in a spread order of a page's chunks: 0, 0.618.., 0.236..,
/// 0.854.., ... (golden-ratio steps), so that the first few are far apart.
fn spread_key(chunk: usize) -> f64 {
    (chunk as f64 * 0.618_033_988_749_895).fract()
}

/// Picks an encoding per page by trial-encoding a sample (see the module docs).
#[derive(Debug)]
pub struct AutoChooser {
    compressors: Vec<(Encoding, Box<dyn MiniBlockCompressor>)>,
    width: usize,
    chunk_values: usize,
    min_gain: f64,
    fills: bool,
    options: EncoderOptions,
}

impl AutoChooser {
    /// A chooser for values of `width` bytes, its candidates built with `options`.
    pub fn new(width: usize, options: &EncoderOptions, auto: &AutoOptions) -> Result<Self> {
        // Binned integers decode in one pass, byte streams in several: where size is
        // traded for speed, the entropy-coded candidates pick bins up to `min_gain` more
        // readily too.
        let options = &options.with_bin_margin_above(auto.min_gain);
        let candidates: Vec<Encoding> = auto
            .candidates()
            .into_iter()
            .filter(|e| e.supports_width(width))
            .collect();
        // Favouring size alone, an LZ4 candidate (and bit-packed ALP) is left out when
        // the same transform under Zstd (ALP under ANS) is a candidate: it is never
        // smaller by more than a few bytes, and trying it costs encode time.
        let compressors = candidates
            .iter()
            .copied()
            .filter(|e| auto.min_gain > 0.0 || !size_dominated(*e, &candidates))
            .map(|e| Ok((e, e.compressor_with(width, options)?)))
            .collect::<Result<Vec<_>>>()?;
        if compressors.is_empty() {
            return Err(Error::invalid(format!(
                "auto has no candidate encoding for {width}-byte values"
            )));
        }
        Ok(Self {
            compressors,
            width,
            chunk_values: options.chunk_values_for(width)?,
            min_gain: auto.min_gain,
            fills: auto.fills,
            options: *options,
        })
    }

    /// Bytes per value.
    pub fn value_width(&self) -> usize {
        self.width
    }

    /// The compressor of candidate `encoding`, if it is one.
    pub fn compressor(&self, encoding: Encoding) -> Option<&dyn MiniBlockCompressor> {
        self.compressors
            .iter()
            .find(|(e, _)| *e == encoding)
            .map(|(_, c)| c.as_ref())
    }

    /// Chooses the encoding for a page of `values` (little-endian, back to back).
    ///
    /// When one value makes up at least an eighth of the page (a fill page), the
    /// page's other values are chosen for too, and the fill layer around that choice
    /// wins when its estimate (the inner encoding's, the runs' exact bytes and the value)
    /// is smaller than the page's own by `min_gain` at least: it decodes fewer values but
    /// puts the runs back, which can cost more than it saves where runs are short, so it
    /// is weighed as a slower choice there. When the two estimates are within
    /// [`FILL_DOUBT`] of that, both are encoded on the same chunks and those sizes decide.
    /// Where the fill's runs are long ([`LONG_RUN`] values on average) they decode faster
    /// than the values would: with `min_gain` above 0 both are then encoded on the same
    /// chunks whatever the estimates say, and the fill layer wins unless it is more than
    /// `min_gain` larger there.
    pub fn choose(&self, values: &[u8]) -> Result<Choice> {
        let learned = |mut choice: Choice| -> Result<Choice> {
            self.learn_whole_page(values, &mut choice)?;
            Ok(choice)
        };
        if !self.fills {
            return learned(self.choose_values(values, None)?);
        }
        let Some(fill) = super::fill::dominant(values, self.width, super::fill::MIN_SHARE) else {
            return learned(self.choose_values(values, None)?);
        };
        let others = super::fill::without(values, &fill);
        let headers = super::fill::header_bytes(values, &fill, self.chunk_values);
        // The other values are chosen for first; the page as it is then tries only the
        // encodings that came close on them (see FILL_RIVALS): the search over every
        // candidate on the whole page, fill values included, cost as much as the one on
        // the others, and was there only to say whether the fill layer pays.
        let (inner, inner_bytes, rivals) = if others.is_empty() {
            (None, 0.0, None)
        } else {
            let inner = self.choose_values(&others, None)?;
            let Some(bytes) = inner.estimated_bytes(others.len()) else {
                return learned(self.choose_values(values, None)?);
            };
            let rivals = rivals(&inner.estimates);
            (Some(inner), bytes, Some(rivals))
        };
        let mut whole = self.choose_values(values, rivals.as_deref())?;
        if rivals.is_some() && whole.estimated_bytes(values.len()).is_none() {
            // None of them could be tried on the page as it is (ALP where the fill
            // values hide the decimals from its screen, a dictionary the fill value
            // overflows): every candidate is.
            whole = self.choose_values(values, None)?;
        }
        let Some(whole_bytes) = whole.estimated_bytes(values.len()) else {
            return learned(whole);
        };
        let fill_bytes = inner_bytes + (headers + fill.len()) as f64;
        let budget = whole_bytes * (1.0 - self.min_gain);
        // Long runs decode faster as runs than as values, so where speed counts they are
        // weighed on the same chunks however far apart the estimates are: a page mostly
        // of the fill value is sampled mostly there, and the page's own estimate can miss
        // its other values by 5x (a Zarr array's last chunk, padded with zeros).
        // (A pass over the page: made only where it is asked, once.)
        let long_runs = std::cell::OnceCell::new();
        let long_runs =
            || *long_runs.get_or_init(|| super::fill::mean_run(values, &fill) >= LONG_RUN);
        if fill_bytes > budget * FILL_DOUBT && !(self.min_gain > 0.0 && long_runs()) {
            return learned(whole);
        }
        let doubtful = inner.is_some() && fill_bytes * FILL_DOUBT > budget;
        // A page of the fill alone never reaches its inner encoding: the page's own pick
        // stands there.
        let (mut inner, whole) = match inner {
            Some(inner) => (inner, Some(whole)),
            None => (whole, None),
        };
        let inner_values = if whole.is_some() { &others[..] } else { values };
        self.learn_whole_page(inner_values, &mut inner)?;
        let compressor = match inner.page_compressor {
            Some(page) => page,
            None => inner.encoding.compressor_with(self.width, &self.options)?,
        };
        let filled = super::FillCompressor::for_page(fill.clone(), compressor, values)?;
        if let (true, Some(mut whole)) = (doubtful, whole) {
            self.learn_whole_page(values, &mut whole)?;
            let (whole_paired, fill_paired) = self.paired_bytes(values, &whole, &filled)?;
            // Putting runs back costs decode time where they are short; long runs are
            // values the inner encoding never decodes (the night hours of irradiance,
            // 12 in a row, decode faster as runs), so there the fill layer wins unless it
            // is larger by more than `min_gain` (the smaller one, favouring size alone).
            let margin = if long_runs() {
                -self.min_gain
            } else {
                self.min_gain
            };
            if fill_paired as f64 > whole_paired as f64 * (1.0 - margin) {
                return Ok(whole);
            }
        }
        Ok(Choice {
            encoding: inner.encoding,
            sample_bytes: inner.sample_bytes,
            estimates: inner.estimates,
            encoded_chunks: Vec::new(),
            page_compressor: Some(Box::new(filled)),
            fill: Some(fill),
            learns_more: false,
        })
    }

    /// The bytes of the same whole chunks of the page `values` as the page's own choice
    /// `whole` encodes them (the chunks its trials encoded first, then others spread over
    /// the page) and as the fill layer `filled` does.
    fn paired_bytes(
        &self,
        values: &[u8],
        whole: &Choice,
        filled: &super::FillCompressor,
    ) -> Result<(usize, usize)> {
        let chunks = self.whole_chunks(values.len() / self.width)?;
        let count = (chunks.len() / 16)
            .clamp(PAIRED_MIN_CHUNKS, PAIRED_MAX_CHUNKS)
            .min(chunks.len());
        let mut order: Vec<usize> = whole.encoded_chunks.iter().map(|c| c.index).collect();
        let mut spread: Vec<usize> = (0..chunks.len()).collect();
        spread.sort_by(|&x, &y| spread_key(x).total_cmp(&spread_key(y)));
        order.extend(spread);
        let mut seen = vec![false; chunks.len()];
        order.retain(|&c| c < chunks.len() && !std::mem::replace(&mut seen[c], true));
        order.truncate(count);
        let own;
        let whole_compressor: &dyn MiniBlockCompressor = if let Some(page) = &whole.page_compressor
        {
            page.as_ref()
        } else {
            own = whole.encoding.compressor_with(self.width, &self.options)?;
            own.as_ref()
        };
        let (mut whole_bytes, mut fill_bytes, mut sampled) = (0, 0, 0);
        let (mut out, mut scratch) = (Vec::new(), Vec::new());
        for c in order {
            let rows = &chunks[c].rows;
            let bytes = &values[rows.start * self.width..rows.end * self.width];
            sampled += bytes.len();
            if let Some(done) = whole.encoded_chunks.iter().find(|t| t.index == c) {
                whole_bytes += done.bytes.len();
            } else {
                out.clear();
                whole_compressor.compress_chunk(bytes, &mut out, &mut scratch)?;
                whole_bytes += out.len();
            }
            out.clear();
            filled.compress_chunk(bytes, &mut out, &mut scratch)?;
            fill_bytes += out.len();
        }
        // What each page carries besides its chunks (its message: tables, the fill value;
        // its page buffers: a Zstd dictionary), the sampled chunks' share of it.
        let carried = |c: &dyn MiniBlockCompressor| {
            let buffers: usize = c.page_buffers().iter().map(Vec::len).sum();
            let page = prost::Message::encoded_len(&c.array_encoding()) + buffers;
            (page as f64 * sampled as f64 / values.len().max(1) as f64).round() as usize
        };
        Ok((
            whole_bytes + carried(whole_compressor),
            fill_bytes + carried(filled),
        ))
    }

    /// [`choose`](Self::choose) without the fill layer, among `among` when given (else
    /// every candidate).
    fn choose_values(&self, values: &[u8], among: Option<&[Encoding]>) -> Result<Choice> {
        let allowed = |e: Encoding| among.is_none_or(|a| a.contains(&e));
        let width = self.width;
        if !values.len().is_multiple_of(width) {
            return Err(Error::invalid(format!(
                "{} bytes is not a whole number of {width}-byte values",
                values.len()
            )));
        }
        let num_values = values.len() / width;
        let mut trial = Trial {
            values,
            width,
            scratch: Vec::new(),
            encoded: vec![Vec::new(); self.compressors.len()],
        };
        let is_zstd = |e: Encoding| e.scheme() == Some(CompressionScheme::Zstd);
        // Stage 1: every candidate on ~1/32 of the page, the cheap ones first.
        // ALP is tried only where 32 values spread over the page look like decimals or
        // dyadic fractions: on other data its trials would cost encode time for nothing.
        let try_alp = self.compressors.iter().any(|(e, _)| e.is_alp())
            && super::alp::worth_trying(values, width);
        // With ALP in play, at least FIRST_MIN_WINDOWS (never more than an eighth of a
        // small page): two windows cannot tell ALP from Zstd.
        let eighth = (num_values.div_ceil(self.window_values(num_values)) / 8).max(1);
        let min_windows = if try_alp {
            FIRST_MIN_WINDOWS.min(eighth)
        } else {
            1
        };
        // A small page is tried whole, chunk by chunk: exact, and cheap at its size (a
        // window of a chunk that holds the whole page can mislead ALP's exponents and
        // Zstd's matches alike).
        let first = if values.len() <= EXACT_PAGE_BYTES {
            self.whole_chunks(num_values)?
        } else {
            self.windows(num_values, FIRST_SAMPLE_EVERY, min_windows, usize::MAX)?
        };
        let mut estimates: Vec<(Encoding, Option<f64>)> =
            self.compressors.iter().map(|(e, _)| (*e, None)).collect();
        // Stage 1, every candidate as it comes (those that learn from the page, with no
        // page tables yet).
        // A dictionary is only ever tried as made for the page (below).
        let tried = |e: Encoding| allowed(e) && (try_alp || !e.is_alp()) && !e.is_dictionary();
        // The cheap ones first, then Zstd's, each screened against the best before it;
        // within each, those that code with entropy tables first: usually the smallest,
        // they make the leader against which the others are screened.
        let mut order: Vec<usize> = (0..self.compressors.len()).collect();
        order.sort_by_key(|&i| !learns_tables(self.compressors[i].0));
        for zstd in [false, true] {
            if zstd {
                // Nothing to gain cheaply: with a knob that wants min_gain for slower
                // decoding, Zstd would have to beat LZ4 by as much on data LZ4 cannot
                // touch; skip its trials.
                let cheap_best = leader(&estimates).map_or(f64::INFINITY, |(_, r)| r);
                if self.min_gain > 0.0 && cheap_best.is_finite() && cheap_best > 1.0 - self.min_gain
                {
                    break;
                }
            }
            for &i in &order {
                let (encoding, compressor) = &self.compressors[i];
                if tried(*encoding) && is_zstd(*encoding) == zstd {
                    // Before its page's dictionary, bss+zstd+dict is bss+zstd.
                    if *encoding == Encoding::BssZstdDict {
                        let plain = estimates.iter().find(|(e, _)| *e == Encoding::BssZstd);
                        if let Some(&(_, Some(ratio))) = plain {
                            estimates[i].1 = Some(ratio);
                            continue;
                        }
                    }
                    let leader = leader(&estimates);
                    let compressor = compressor.as_ref();
                    let ratio = trial.screened_ratio(i, *encoding, compressor, &first, leader)?;
                    estimates[i].1 = Some(ratio);
                }
            }
        }
        // Candidates that learn from the page are made for it (once: it costs a pass over
        // a sample of the page) only when, without what they learn, they are within
        // LEARNED_GAIN of the best; then tried again as made, and what their encoding
        // carries (its tables), per value byte, is added to their estimates.
        let best_so_far = estimates
            .iter()
            .filter_map(|(_, r)| *r)
            .fold(f64::INFINITY, f64::min);
        let best_tables = estimates
            .iter()
            .filter(|(e, _)| learns_tables(*e))
            .filter_map(|(_, r)| *r)
            .fold(f64::INFINITY, f64::min);
        let mut page_compressors: Vec<Option<Box<dyn MiniBlockCompressor>>> = Vec::new();
        let mut carried = Vec::new();
        // A dictionary is made for the page when the first sample has few distinct values.
        let few_distinct = self.compressors.iter().any(|(e, _)| e.is_dictionary()) && {
            let sample: Vec<&[u8]> = first
                .iter()
                .map(|w| &values[w.rows.start * width..w.rows.end * width])
                .collect();
            super::dictionary::worth_trying(&sample, width)
        };
        for (i, (encoding, compressor)) in self.compressors.iter().enumerate() {
            let page = if !allowed(*encoding) {
                None
            } else if encoding.is_dictionary() {
                // More distinct values than a dictionary holds: not a candidate.
                if few_distinct {
                    compressor.for_page(values, Learn::Sample).ok().flatten()
                } else {
                    None
                }
            } else if estimates[i].1.is_some_and(|r| {
                let gain = if *encoding == Encoding::BssZstdDict {
                    DICTIONARY_GAIN
                } else {
                    LEARNED_GAIN
                };
                r <= best_so_far * gain
                    && (!learns_tables(*encoding) || r <= best_tables * TABLES_RIVAL)
            }) {
                compressor.for_page(values, Learn::Sample)?
            } else {
                None
            };
            // What the page carries besides its chunks: its message and page buffers.
            let carries = page.as_ref().map_or(0.0, |c| {
                let buffers: usize = c.page_buffers().iter().map(Vec::len).sum();
                (prost::Message::encoded_len(&c.array_encoding()) + buffers) as f64
                    / values.len().max(1) as f64
            });
            if let Some(page) = &page {
                trial.encoded[i].clear();
                estimates[i].1 = Some(trial.ratio(i, *encoding, page.as_ref(), &first)? + carries);
            } else if *encoding == Encoding::BssZstdDict
                && estimates
                    .iter()
                    .any(|(e, r)| *e == Encoding::BssZstd && r.is_some())
            {
                // Without its dictionary it is bss+zstd, already a candidate: no second
                // trial of the same chunks.
                estimates[i].1 = None;
            }
            page_compressors.push(page);
            carried.push(carries);
        }
        let compressors: Vec<(Encoding, &dyn MiniBlockCompressor)> = self
            .compressors
            .iter()
            .zip(&page_compressors)
            .map(|((e, c), page)| (*e, page.as_deref().unwrap_or(c.as_ref())))
            .collect();
        // Stage 2: when the two smallest are close, measure them again on ~1/8 of it.
        let mut ranked: Vec<(usize, f64)> = estimates
            .iter()
            .enumerate()
            .filter_map(|(i, (_, r))| r.map(|r| (i, r)))
            .collect();
        ranked.sort_by(|a, b| a.1.total_cmp(&b.1));
        let mut sample_bytes = trial.bytes(&first);
        if let [(a, ra), (b, rb), ..] = ranked[..] {
            // At most an eighth of the page.
            let max = num_values.div_ceil(self.window_values(num_values)) / 8;
            let second = self.windows(num_values, SECOND_SAMPLE_EVERY, SECOND_MIN_WINDOWS, max)?;
            // With a knob that trades size for speed, a close call between an LZ4 and a
            // Zstd encoding is left to it: more Zstd trials would cost more encode time
            // than the choice is worth. Favouring size alone, or within a family, refine.
            // Favouring size, a close call within 2% costs at most about 2% if wrong: not
            // worth Zstd trials when the other candidate is a (much faster) LZ4 one. Any
            // other close pair favouring size (alp+ans against alp+zstd) is refined: a
            // sample's error alone can exceed 2% there.
            let schemes = (estimates[a].0.scheme(), estimates[b].0.scheme());
            let same_family = schemes.0 == schemes.1;
            let lz4_and_zstd = matches!(
                schemes,
                (Some(CompressionScheme::Lz4), Some(CompressionScheme::Zstd))
                    | (Some(CompressionScheme::Zstd), Some(CompressionScheme::Lz4))
            );
            let refine =
                same_family || (self.min_gain == 0.0 && (rb > ra * NEAR_TIE || !lz4_and_zstd));
            // A small page has no larger eighth than its first sample: favouring size, a
            // close call there is settled on every window of the page.
            let whole_page = second.len() <= first.len() && self.min_gain == 0.0;
            let (second, close) = if whole_page {
                // Every chunk, whole: exact sizes (a 16 KiB window of a 64 KiB chunk
                // tells little of what Zstd makes of the chunk).
                (self.whole_chunks(num_values)?, CLOSE_SMALL)
            } else {
                (second, CLOSE)
            };
            // A pair the first sample already tells apart window by window, on a page
            // larger than that sample, is not tried again.
            let told_apart = !whole_page
                && first.len() >= AGREEING_WINDOWS
                && trial.smaller_on_each((a, b), (carried[a], carried[b]), &first);
            if refine
                && !told_apart
                && rb <= ra * close
                && trial.bytes(&second) > trial.bytes(&first)
            {
                // Every chunk of a small page: one at a time, the first sample's first
                // and the others spread over the page, until the pair is told apart on
                // each chunk tried so far (at least AGREEING_WINDOWS of them), or all
                // are tried.
                let second = if whole_page {
                    // The first sample's whole chunks are tried already; a window of
                    // part of a chunk tells nothing of the whole chunk.
                    let mut order: Vec<Window> =
                        first.iter().filter(|w| w.whole).cloned().collect();
                    let mut rest: Vec<Window> = second
                        .into_iter()
                        .filter(|w| !order.iter().any(|f| f.chunk == w.chunk))
                        .collect();
                    rest.sort_by(|x, y| spread_key(x.chunk).total_cmp(&spread_key(y.chunk)));
                    for window in rest {
                        if order.len() >= AGREEING_WINDOWS
                            && (trial.smaller_on_each((a, b), (carried[a], carried[b]), &order)
                                || trial.smaller_on_each((b, a), (carried[b], carried[a]), &order))
                        {
                            break;
                        }
                        for i in [a, b] {
                            let (encoding, compressor) = compressors[i];
                            trial.ratio(i, encoding, compressor, std::slice::from_ref(&window))?;
                        }
                        order.push(window);
                    }
                    order
                } else {
                    second
                };
                // The others were measured on the first sample only: they move as the
                // pair moved, on average.
                let mean = |f: &[f64]| f.iter().map(|x| x / f.len() as f64).sum();
                let pair = [a, b];
                measure_again(
                    &mut trial,
                    &compressors,
                    &carried,
                    &mut estimates,
                    &pair,
                    &second,
                    mean,
                )?;
                sample_bytes = trial.bytes(&second);
            }
        }
        // Chunks larger than the windows: what LZ4 and Zstd match further back than a
        // window reaches is not in the estimates. The best and every LZ4 or Zstd candidate
        // close to it are measured again on the whole chunks the first sample's windows
        // lie in, the same for all, the others moved as the best moved.
        if first.iter().any(|w| !w.whole) {
            let all = self.whole_chunks(num_values)?;
            let mut chunks: Vec<Window> = first.iter().map(|w| all[w.chunk].clone()).collect();
            chunks.dedup_by_key(|w| w.chunk);
            if let Some((best, ratio)) = leader(&estimates) {
                // A dictionary lets a window match what lies beyond it, which the others'
                // windows cannot: the candidates close to it without its dictionary are
                // measured again too, on whole chunks where they can.
                let ratio = if estimates[best].0 == Encoding::BssZstdDict {
                    estimates
                        .iter()
                        .find(|(e, _)| *e == Encoding::BssZstd)
                        .and_then(|(_, r)| *r)
                        .map_or(ratio, |r| r.max(ratio))
                } else {
                    ratio
                };
                // The best first: the others move as it moved.
                let again: Vec<usize> = std::iter::once(best)
                    .chain((0..estimates.len()).filter(|&i| {
                        let (encoding, estimate) = estimates[i];
                        i != best
                            && encoding.scheme().is_some()
                            && estimate.is_some_and(|r| r <= ratio * CLOSE_LONG)
                    }))
                    .collect();
                if again.len() > 1 {
                    let best_moved = |f: &[f64]| f[0];
                    measure_again(
                        &mut trial,
                        &compressors,
                        &carried,
                        &mut estimates,
                        &again,
                        &chunks,
                        best_moved,
                    )?;
                    sample_bytes = trial.bytes(&chunks);
                }
            }
        }
        let index = fastest_within(&estimates, self.min_gain);
        let mut encoded_chunks = std::mem::take(&mut trial.encoded[index]);
        encoded_chunks.sort_by_key(|c| c.index);
        Ok(Choice {
            encoding: self.compressors[index].0,
            sample_bytes,
            estimates,
            encoded_chunks,
            page_compressor: page_compressors[index].take(),
            fill: None,
            learns_more: true,
        })
    }

    /// The pick, when it learns from the page and its sample likely missed some of it,
    /// made again from the whole page `values` (once; see [`Choice::learns_more`]): the
    /// trials' sample told its size well enough, the page's tables are another matter
    /// (see `Learn`). Chunks the trials encoded with what the sample taught stay valid
    /// only if the whole page teaches the same.
    fn learn_whole_page(&self, values: &[u8], choice: &mut Choice) -> Result<()> {
        if !std::mem::replace(&mut choice.learns_more, false) {
            return Ok(());
        }
        // (A dictionary is made from the whole page either way.)
        let Some(sampled) = choice
            .page_compressor
            .as_ref()
            .filter(|c| !choice.encoding.is_dictionary() && c.would_learn_more())
        else {
            return Ok(());
        };
        let Some((_, compressor)) = self.compressors.iter().find(|(e, _)| *e == choice.encoding)
        else {
            return Ok(());
        };
        if let Some(whole) = compressor.for_page(values, Learn::Page)? {
            if whole.array_encoding() != sampled.array_encoding()
                || whole.page_buffers() != sampled.page_buffers()
            {
                choice.encoded_chunks.clear();
            }
            choice.page_compressor = Some(whole);
        }
        Ok(())
    }

    /// Every chunk of a page of `num_values`, whole.
    fn whole_chunks(&self, num_values: usize) -> Result<Vec<Window>> {
        let plan = ChunkPlan::new(num_values, self.chunk_values)?;
        Ok((0..plan.num_chunks())
            .map(|chunk| Window {
                chunk,
                rows: plan.chunk(chunk).0,
                whole: true,
            })
            .collect())
    }

    /// Values per trial window on a page of `num_values`: a whole chunk, or at most
    /// 16 KiB, and at most 1/16 of a small page (not under 4 KiB); a power of two, so it
    /// divides the chunk size.
    fn window_values(&self, num_values: usize) -> usize {
        let window_bytes = (num_values * self.width / 16).clamp(CHUNK_BYTES, MAX_WINDOW_BYTES);
        self.chunk_values
            .min(1 << (window_bytes / self.width).max(2).ilog2())
    }

    /// The windows to trial, about one in `every` windows' worth of the page, at least
    /// `min` and at most `max` (and [`MAX_WINDOWS`]): whole chunks (or, for chunks over
    /// 16 KiB, aligned 16 KiB slots of them; less on small pages), one in each equal slice
    /// of the page at a golden-ratio offset into it, avoiding a short last slot.
    fn windows(
        &self,
        num_values: usize,
        every: usize,
        min: usize,
        max: usize,
    ) -> Result<Vec<Window>> {
        let plan = ChunkPlan::new(num_values, self.chunk_values)?;
        if num_values == 0 {
            return Ok(Vec::new());
        }
        let window_values = self.window_values(num_values);
        // Slots never straddle chunks: window_values divides chunk_values.
        let slots = num_values.div_ceil(window_values);
        let full_slots = num_values / window_values;
        let count = slots
            .div_ceil(every)
            .max(min)
            .min(max)
            .min(MAX_WINDOWS)
            .min(slots);
        let mut windows: Vec<Window> = Vec::with_capacity(count);
        for i in 0..count {
            // A slot of slice i of the page, at a golden-ratio offset into it: not always
            // the middle, which would alias with data whose period divides the slice (a
            // grid's rows or months).
            let offset = (0.5 + i as f64 * 0.618_033_988_749_895).fract();
            let slice = slots as f64 / count as f64;
            let mut slot = (((i as f64 + offset) * slice) as usize).min(slots - 1);
            if slot >= full_slots && full_slots > 0 {
                slot = full_slots - 1;
            }
            if windows
                .last()
                .is_some_and(|w| w.rows.start == slot * window_values)
            {
                continue;
            }
            let start = slot * window_values;
            let rows = start..(start + window_values).min(num_values);
            let chunk = start / self.chunk_values;
            windows.push(Window {
                chunk,
                whole: rows == plan.chunk(chunk).0,
                rows,
            });
        }
        Ok(windows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(index: usize, len: usize) -> TrialChunk {
        TrialChunk {
            index,
            storage: ChunkStorage::Raw,
            bytes: vec![0; len],
        }
    }

    /// The pick is the fastest within the budget the smallest sets, so a larger
    /// `min_gain` never picks a smaller estimate, and never one more than the budget
    /// above the smallest. The estimates are SLP's (fastest first: lz4, bss+lz4,
    /// delta+ans), where a rule comparing each candidate with the faster pick before it
    /// took bss+lz4 at 0.2 but delta+ans, the smallest and slowest, at 0.3.
    #[test]
    fn a_larger_min_gain_picks_faster_within_its_budget() {
        let estimates = [
            (Encoding::Lz4, Some(0.6502)),
            (Encoding::BssLz4, Some(0.5007)),
            (Encoding::Dict, None),
            (Encoding::DeltaAns, Some(0.4061)),
        ];
        let picks: Vec<usize> = [0.0, 0.03, 0.2, 0.3, 0.4, 0.9]
            .iter()
            .map(|&g| fastest_within(&estimates, g))
            .collect();
        assert_eq!(picks, [3, 3, 1, 1, 0, 0]);
        let mut seed = 3u64;
        for _ in 0..2000 {
            let estimates: Vec<(Encoding, Option<f64>)> = SPEED_ORDER
                .iter()
                .map(|&e| {
                    let r = crate::encodings::xorshift(&mut seed);
                    (
                        e,
                        (!r.is_multiple_of(5)).then(|| (r % 1000) as f64 / 1000.0 + 0.01),
                    )
                })
                .collect();
            let smallest = estimates
                .iter()
                .filter_map(|e| e.1)
                .fold(f64::INFINITY, f64::min);
            let mut last = usize::MAX;
            for gain in [0.0, 0.01, 0.03, 0.1, 0.2, 0.3, 0.5, 0.9] {
                let i = fastest_within(&estimates, gain);
                let Some(r) = estimates[i].1 else {
                    assert!(estimates.iter().all(|e| e.1.is_none()));
                    continue;
                };
                assert!(r * (1.0 - gain) <= smallest || r - smallest < gain / 8.0);
                // Never more than twice the relative budget above the smallest.
                assert!(r * (1.0 - gain) <= smallest * (1.0 + gain) + 1e-12);
                assert!(estimates[..i]
                    .iter()
                    .all(|e| e.1.is_none_or(|f| !within_budget(f, smallest, gain))));
                assert!(i <= last, "{gain}: {i} after {last}");
                last = i;
            }
        }
    }

    /// A page whose sampled chunks miss symbols that others use (a smooth series with
    /// jumps only in chunks a sample of 64 of 256 skips): the pick is made again from
    /// the whole page, with other tables than the trials' sample taught, and the page
    /// written with it decodes to its values, the trials' chunks not reused under the
    /// new tables.
    #[test]
    fn the_pick_learns_from_the_whole_page() {
        let mut seed = 3u64;
        let values: Vec<u8> = (0..256 * 1024)
            .flat_map(|i: usize| {
                let jump = (i / 1024) % 4 == 1 && i.is_multiple_of(97);
                let noise = (crate::encodings::xorshift(&mut seed) % 5) as f32;
                let v = 100.0 + (i as f32 / 3000.0).sin() * 50.0 + noise / 1024.0;
                (if jump { v * 3.0 } else { v }).to_le_bytes()
            })
            .collect();
        let options = EncoderOptions::default();
        let auto = AutoOptions::default()
            .with_candidates(&[Encoding::DeltaAns])
            .unwrap();
        let chooser = AutoChooser::new(4, &options, &auto).unwrap();
        let choice = chooser.choose(&values).unwrap();
        assert_eq!(choice.encoding, Encoding::DeltaAns);
        // As `auto` builds its candidates: bins taken more readily by its `min_gain`.
        let compressor = Encoding::DeltaAns
            .compressor_with(4, &options.with_bin_margin_above(auto.min_gain()))
            .unwrap();
        let [sampled, whole] = [Learn::Sample, Learn::Page]
            .map(|learn| compressor.for_page(&values, learn).unwrap().unwrap());
        assert!(sampled.would_learn_more());
        assert_ne!(sampled.array_encoding(), whole.array_encoding());
        assert_eq!(
            choice.page_compressor.unwrap().array_encoding(),
            whole.array_encoding()
        );
        let encoder = crate::PageEncoder::for_strategy(Strategy::Auto(auto), 4, &options).unwrap();
        let page = encoder.encode_values(&values, None).unwrap();
        let decoder = page.decoder(&arrow_schema::DataType::Float32).unwrap();
        let mut out = vec![0; values.len()];
        decoder
            .decode_into(0..values.len() / 4, &mut out, None)
            .unwrap();
        assert!(out == values);
    }

    /// A page whose sample's tables miss nothing of it keeps them: the pick is not made
    /// again from the whole page, and the chunks the trials encoded are reused.
    #[test]
    fn a_sample_that_misses_nothing_is_kept() {
        // Steps of one float ulp up a sawtooth of 16: two residuals, each seen often.
        let values: Vec<u8> = (0..256 * 1024u32)
            .flat_map(|i| f32::from_bits(0x42C8_0000 + i % 16).to_le_bytes())
            .collect();
        let options = EncoderOptions::default();
        let auto = AutoOptions::default()
            .with_candidates(&[Encoding::DeltaAns])
            .unwrap();
        let compressor = Encoding::DeltaAns
            .compressor_with(4, &options.with_bin_margin_above(auto.min_gain()))
            .unwrap();
        let sampled = compressor
            .for_page(&values, Learn::Sample)
            .unwrap()
            .unwrap();
        assert!(!sampled.would_learn_more());
        let choice = AutoChooser::new(4, &options, &auto)
            .unwrap()
            .choose(&values)
            .unwrap();
        assert_eq!(choice.encoding, Encoding::DeltaAns);
        assert!(!choice.encoded_chunks.is_empty());
        assert_eq!(
            choice.page_compressor.unwrap().array_encoding(),
            sampled.array_encoding()
        );
    }

    /// Chunks larger than the trial windows, holding repeats further back than a window
    /// reaches (a 32 KiB block of noise, sixteen times over in each 512 KiB chunk): only
    /// whole chunks show what LZ4 and Zstd make of them, and the pick is one of those,
    /// its estimate what the whole chunks came to (the windows alone put every candidate
    /// near the values' own size).
    #[test]
    fn matches_past_the_windows_are_measured_on_whole_chunks() {
        let mut seed = 11u64;
        let block: Vec<u8> = (0..32 * 1024)
            .map(|_| crate::encodings::xorshift(&mut seed) as u8)
            .collect();
        let values: Vec<u8> = block.iter().copied().cycle().take(1 << 20).collect();
        let options = EncoderOptions::default()
            .with_chunk_values(Some(65536))
            .unwrap();
        for gain in [0.0, DEFAULT_MIN_GAIN] {
            let auto = AutoOptions::default().with_min_gain(gain).unwrap();
            let choice = AutoChooser::new(8, &options, &auto)
                .unwrap()
                .choose(&values)
                .unwrap();
            assert!(
                choice.encoding.scheme().is_some(),
                "min_gain {gain}: {:?}",
                choice.encoding
            );
            let estimate = choice
                .estimates
                .iter()
                .find(|(e, _)| *e == choice.encoding)
                .and_then(|(_, r)| *r)
                .unwrap();
            assert!(estimate < 0.2, "min_gain {gain}: {estimate}");
        }
    }

    /// `chunks` chunks of 1024 random 4-byte values (from `seed`), each a whole window,
    /// and an LZ4 compressor, which stores them as they are.
    fn noise_chunks(
        chunks: usize,
        mut seed: u64,
    ) -> (Vec<u8>, Vec<Window>, Box<dyn MiniBlockCompressor>) {
        let values: Vec<u8> = (0..chunks * 4096)
            .map(|_| crate::encodings::xorshift(&mut seed) as u8)
            .collect();
        let windows: Vec<Window> = (0..chunks)
            .map(|c| Window {
                chunk: c,
                rows: c * 1024..(c + 1) * 1024,
                whole: true,
            })
            .collect();
        let lz4 = Encoding::Lz4
            .compressor_with(4, &EncoderOptions::default())
            .unwrap();
        (values, windows, lz4)
    }

    /// A candidate far behind the leader on the first window is tried there alone, and
    /// its estimate is as many times the leader's; one that is not, or one behind a
    /// leader whose first window is unlike its sample, is tried on every window.
    #[test]
    fn hopeless_candidates_are_tried_on_one_window() {
        let (values, windows, lz4) = noise_chunks(4, 5);
        // The leader's bytes on each chunk, its estimate on the sample as a multiple of
        // its ratio on window 0, and whether LZ4 (which stores noise as it is) is
        // screened.
        for (leader_bytes, sample, hopeless) in
            [(100, 1.2, true), (100, 2.0, false), (3000, 1.0, false)]
        {
            let mut trial = Trial {
                values: &values,
                width: 4,
                scratch: Vec::new(),
                encoded: vec![(0..4).map(|c| chunk(c, leader_bytes)).collect(), Vec::new()],
            };
            let leading = sample * leader_bytes as f64 / 4096.0;
            let ratio = trial
                .screened_ratio(1, Encoding::Lz4, lz4.as_ref(), &windows, Some((0, leading)))
                .unwrap();
            let tried: Vec<usize> = trial.encoded[1].iter().map(|c| c.index).collect();
            if hopeless {
                assert_eq!(tried, [0]);
                let alone = trial.encoded[1][0].bytes.len() as f64 / 4096.0;
                assert!((ratio - sample * alone).abs() < 1e-12, "{ratio} {alone}");
                assert!(ratio >= leading * HOPELESS);
            } else {
                assert_eq!(tried, [0, 1, 2, 3], "{leader_bytes} {sample}");
            }
        }
    }

    /// A candidate more than BEHIND times the leader's bytes on the first BEHIND_AFTER
    /// whole chunks of a longer sample stops there, its estimate scaled from the
    /// leader's; one within it is tried on every chunk.
    #[test]
    fn candidates_far_behind_stop_after_a_few_chunks() {
        let (values, windows, lz4) = noise_chunks(8, 7);
        // LZ4 stores noise as it is (4096 bytes a chunk): 1.64x a leader of 2500 bytes a
        // chunk (not hopeless on one window, but behind), 1.37x one of 3000.
        for (leader_bytes, behind) in [(2500, true), (3000, false)] {
            let mut trial = Trial {
                values: &values,
                width: 4,
                scratch: Vec::new(),
                encoded: vec![(0..8).map(|c| chunk(c, leader_bytes)).collect(), Vec::new()],
            };
            let leading = leader_bytes as f64 / 4096.0;
            let ratio = trial
                .screened_ratio(1, Encoding::Lz4, lz4.as_ref(), &windows, Some((0, leading)))
                .unwrap();
            let tried: Vec<usize> = trial.encoded[1].iter().map(|c| c.index).collect();
            let mine: usize = trial.encoded[1].iter().map(|c| c.bytes.len()).sum();
            if behind {
                assert_eq!(tried, (0..BEHIND_AFTER).collect::<Vec<_>>());
                let expected = mine as f64 / (BEHIND_AFTER * leader_bytes) as f64 * leading;
                assert!((ratio - expected).abs() < 1e-12, "{ratio} {expected}");
                assert!(ratio > leading * BEHIND);
            } else {
                assert_eq!(tried, (0..8).collect::<Vec<_>>());
                assert!((ratio - mine as f64 / (8.0 * 4096.0)).abs() < 1e-12);
            }
        }
    }

    /// Stage 2 is skipped only on the evidence of whole chunks both candidates encoded,
    /// each one won by the same candidate, with what each carries counted.
    #[test]
    fn a_pair_is_told_apart_only_window_by_window() {
        let values = vec![0u8; 4 * 4096];
        let window = |chunk: usize, whole: bool| Window {
            chunk,
            rows: chunk * 1024..(chunk + 1) * 1024,
            whole,
        };
        let windows: Vec<Window> = (0..4).map(|c| window(c, true)).collect();
        let mut trial = Trial {
            values: &values,
            width: 4,
            scratch: Vec::new(),
            encoded: vec![
                (0..4).map(|c| chunk(c, 100)).collect(),
                (0..4).map(|c| chunk(c, 110 - 20 * (c % 2))).collect(),
            ],
        };
        // Candidate 1 is smaller on windows 1 and 3 only.
        assert!(!trial.smaller_on_each((0, 1), (0.0, 0.0), &windows));
        assert!(!trial.smaller_on_each((1, 0), (0.0, 0.0), &windows));
        // Smaller on each of windows 0 and 2.
        let even = [window(0, true), window(2, true)];
        assert!(trial.smaller_on_each((0, 1), (0.0, 0.0), &even));
        // What candidate 0 carries (here 12 bytes per 4096) outweighs its lead.
        assert!(!trial.smaller_on_each((0, 1), (12.0 / 4096.0, 0.0), &even));
        // A window that is not a whole chunk, or a chunk one of them did not encode,
        // tells nothing.
        assert!(!trial.smaller_on_each((0, 1), (0.0, 0.0), &[window(0, false)]));
        trial.encoded[1].retain(|c| c.index != 2);
        assert!(!trial.smaller_on_each((0, 1), (0.0, 0.0), &even));
    }
}
