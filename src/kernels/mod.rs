//! Byte-stream-split kernels: the one transform behind both the BSS chunk encoding and
//! the whole-buffer [`shuffle`](crate::shuffle) filter.
//!
//! `split` turns `n` values of `width` bytes (value after value) into `width` streams of
//! `n` bytes (stream `j` holds byte `j` of every value, in order); `unsplit` is its
//! inverse. Widths 2, 4 and 8 have SIMD kernels, chosen once per process from the CPU's
//! features: x86_64 SSSE3/SSE2 and AVX2, plus an AVX-512 VBMI split of 4-byte values (the
//! one AVX-512 kernel that measured faster than AVX2, see docs/benchmarks.md); aarch64 NEON
//! (structure loads/stores, tested under qemu-user: `.ci/neon`). Every other width, and
//! every CPU without them, uses the blocked portable kernels of `scalar`. The SIMD kernels
//! cover a slice with overlapping first and last blocks (`blocks`), so their stores are
//! aligned from the second block on and nothing is left to a scalar tail.
//!
//! Both functions require `src.len() == dst.len()` and a length that is a whole number of
//! values; every public caller checks this first and reports a proper error, so a
//! violation here is a bug in this crate, not bad input. All `unsafe` code of the crate
//! lives in this module.
//!
//! Other pieces live here: `bitpack`, the bit-packing kernels; `crc`, the CRC-32C of
//! chunks, pages and footers (folded by carry-less multiplies, PCLMULQDQ or AVX-512
//! VPCLMULQDQ); `unbin`, which rebuilds the entropy coder's binned integers eight at a
//! time (AVX2 or AVX-512 VBMI); `unpack`, which unpacks bit-packed offsets a vector at
//! a time with their frame of reference and, for `delta`, their running sums (AVX-512
//! VBMI); `sums`,
//! the running sums that undo `delta`'s differences a vector at a time (AVX-512F); `tans`,
//! which decodes up to sixteen chunks' tANS streams side by side (AVX-512F); and
//! [`with_bmi2`],
//! which runs a closure compiled for BMI1/BMI2 where the CPU has them, so that the
//! entropy decoder's bit readers, which shift and mask by counts read from a table, take
//! one instruction for each (`shrx`, `bzhi`) instead of a sequence through `cl`; and
//! [`with_wide_vectors`], which runs a closure compiled for AVX-512, or for AVX2 on CPUs
//! without it, so that the loops the compiler vectorises in it (ALP's analysis of a chunk
//! and its decoding) take eight (or four) 64-bit lanes a step instead of two.

#[macro_use]
mod blocks;
pub(crate) mod bitpack;
pub(crate) mod crc;
#[cfg(target_arch = "aarch64")]
mod neon;
mod scalar;
pub(crate) mod sums;
pub(crate) mod tans;
pub(crate) mod unbin;
pub(crate) mod unpack;
#[cfg(target_arch = "x86_64")]
mod x86;

use std::mem::MaybeUninit;
use std::sync::OnceLock;

use arrow_buffer::MutableBuffer;

/// The bytes of a slice of Arrow native values, to decode into a caller's typed buffer
/// without a copy.
pub(crate) fn native_bytes_mut<T: arrow_buffer::ArrowNativeType>(values: &mut [T]) -> &mut [u8] {
    let len = std::mem::size_of_val(values);
    // SAFETY: `ArrowNativeType` is sealed and implemented only for primitive integers,
    // floats and plain structs of them without padding (`i256`, `f16`, the intervals):
    // every byte of a value is initialized and every byte pattern is a valid value, so
    // writing any bytes through the view is sound. The view covers exactly the slice's
    // bytes and borrows it mutably for its whole life.
    unsafe { std::slice::from_raw_parts_mut(values.as_mut_ptr().cast::<u8>(), len) }
}

/// Instruction-set levels, lowest first: what a kernel needs, and the highest any kernel
/// of this process may use (see [`cpu_level`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum CpuLevel {
    /// The target's baseline only (x86_64: SSE2; aarch64: as compiled): no run-time
    /// detected kernel.
    Portable,
    /// x86_64 SSSE3 and SSE4.1 with PCLMULQDQ: the 128-bit byte transpose and CRC folds.
    Sse,
    /// x86_64 AVX2 with BMI1/BMI2 (Haswell and later, most laptops and cloud machines);
    /// aarch64 NEON.
    Avx2,
    /// x86_64 AVX-512 (F, DQ, BW, VL, VBMI, VBMI2, VPCLMULQDQ where a kernel needs them).
    Avx512,
}

/// The highest level kernels may use in this process: the CPU's own, unless the
/// environment variable `MINIBLOCK_CPU` (read once) caps it at `avx2`, `sse` or
/// `portable`, so that one machine measures the paths CPUs without AVX-512 (or without
/// any detected extension) take. A kernel still runs only where the CPU has its features;
/// a value naming no level is ignored. `MINIBLOCK_KERNELS`, `MINIBLOCK_TANS` and
/// `MINIBLOCK_CRC` pick single kernels within the cap.
pub fn cpu_level() -> CpuLevel {
    static CAP: OnceLock<CpuLevel> = OnceLock::new();
    *CAP.get_or_init(|| match std::env::var("MINIBLOCK_CPU").as_deref() {
        Ok("portable") => CpuLevel::Portable,
        Ok("sse") => CpuLevel::Sse,
        Ok("avx2") => CpuLevel::Avx2,
        _ => CpuLevel::Avx512,
    })
}

/// Whether kernels of `level` may run (the CPU's features are checked separately).
#[inline]
pub(crate) fn allows(level: CpuLevel) -> bool {
    cpu_level() >= level
}

/// Runs `f`, compiled for BMI1 and BMI2 where the CPU has them (x86_64; elsewhere, and
/// on CPUs without them, as it is). Bit readers that `f` inlines then shift and mask by a
/// variable count in one instruction each.
#[inline]
pub(crate) fn with_bmi2<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    if has_bmi2() {
        // SAFETY: `x86::with_bmi2` requires BMI1 and BMI2, detected by `has_bmi2`.
        return unsafe { x86::with_bmi2(f) };
    }
    f()
}

/// Whether the CPU has BMI1 and BMI2 and the level allows them (asked once).
#[cfg(target_arch = "x86_64")]
fn has_bmi2() -> bool {
    static HAS: OnceLock<bool> = OnceLock::new();
    *HAS.get_or_init(|| {
        allows(CpuLevel::Avx2)
            && std::is_x86_feature_detected!("bmi1")
            && std::is_x86_feature_detected!("bmi2")
    })
}

/// Runs `f`, compiled for AVX-512 (F, DQ, BW, VL), AVX2, BMI1 and BMI2 where the CPU has
/// them all, else for AVX2, BMI1 and BMI2 where it has those (x86_64; elsewhere, and on
/// other CPUs, as it is). The loops `f` inlines are the same code either way: only the
/// instructions the compiler may choose differ, so the results are the same bit for bit
/// (no contraction into fused multiply-adds: FMA is not enabled).
#[inline]
pub(crate) fn with_wide_vectors<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx512() {
            // SAFETY: `x86::with_avx512` requires these features, all detected.
            return unsafe { x86::with_avx512(f) };
        }
        if has_avx2() && has_bmi2() {
            // SAFETY: `x86::with_avx2` requires AVX2, BMI1 and BMI2, all detected.
            return unsafe { x86::with_avx2(f) };
        }
    }
    f()
}

/// Whether the CPU has AVX2 and the level allows it (asked once).
#[cfg(target_arch = "x86_64")]
pub(crate) fn has_avx2() -> bool {
    static HAS: OnceLock<bool> = OnceLock::new();
    *HAS.get_or_init(|| allows(CpuLevel::Avx2) && std::is_x86_feature_detected!("avx2"))
}

/// Whether the CPU has every feature [`with_wide_vectors`] compiles for (asked once per
/// process: callers ask per chunk).
#[cfg(target_arch = "x86_64")]
pub(crate) fn has_avx512() -> bool {
    static HAS: OnceLock<bool> = OnceLock::new();
    *HAS.get_or_init(|| {
        allows(CpuLevel::Avx512)
            && std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512dq")
            && std::is_x86_feature_detected!("avx512bw")
            && std::is_x86_feature_detected!("avx512vl")
            && std::is_x86_feature_detected!("avx2")
            && std::is_x86_feature_detected!("bmi1")
            && std::is_x86_feature_detected!("bmi2")
    })
}

/// A kernel of one width: reads `src`, writes every byte of the (possibly uninitialized)
/// output, which is as long as `src`.
type Kernel = fn(&[u8], &mut [MaybeUninit<u8>]);

/// One set of kernels for widths 2, 4 and 8.
#[derive(Clone, Copy)]
pub(crate) struct KernelSet {
    /// Name of the instruction set, for reports.
    pub(crate) name: &'static str,
    split: [Kernel; 3],
    unsplit: [Kernel; 3],
}

impl std::fmt::Debug for KernelSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

const SCALAR: KernelSet = KernelSet {
    name: "scalar",
    split: [
        scalar::split_const::<2>,
        scalar::split_const::<4>,
        scalar::split_const::<8>,
    ],
    unsplit: [
        scalar::unsplit_const::<2>,
        scalar::unsplit_const::<4>,
        scalar::unsplit_const::<8>,
    ],
};

#[cfg(target_arch = "x86_64")]
mod x86_sets {
    use super::{x86, KernelSet};

    // Each wrapper is stored only in a set that `available()` returns after checking the
    // CPU features its kernels need.
    macro_rules! wrap {
        ($name:ident, $kernel:path, $feature:tt, $dst:ty) => {
            fn $name(src: &[u8], dst: $dst) {
                // Real checks, not debug ones: this is a safe function, and the kernel's
                // contract (the feature, equal lengths) is what keeps it in bounds.
                assert!(std::is_x86_feature_detected!($feature));
                assert_eq!(
                    src.len(),
                    dst.len(),
                    "kernel input and output lengths differ"
                );
                // SAFETY: the CPU has the feature and the lengths are equal (both checked
                // above); the kernels need nothing else to stay in bounds.
                unsafe { $kernel(src, dst) }
            }
        };
    }
    wrap!(
        split2_ssse3,
        x86::split2_ssse3,
        "ssse3",
        &mut [std::mem::MaybeUninit<u8>]
    );
    wrap!(
        split4_ssse3,
        x86::split4_ssse3,
        "ssse3",
        &mut [std::mem::MaybeUninit<u8>]
    );
    wrap!(
        split8_ssse3,
        x86::split8_ssse3,
        "ssse3",
        &mut [std::mem::MaybeUninit<u8>]
    );
    wrap!(
        unsplit2_sse2,
        x86::unsplit2_sse2,
        "sse2",
        &mut [std::mem::MaybeUninit<u8>]
    );
    wrap!(
        unsplit4_sse2,
        x86::unsplit4_sse2,
        "sse2",
        &mut [std::mem::MaybeUninit<u8>]
    );
    wrap!(
        unsplit8_sse2,
        x86::unsplit8_sse2,
        "sse2",
        &mut [std::mem::MaybeUninit<u8>]
    );
    wrap!(
        split2_avx2,
        x86::split2_avx2,
        "avx2",
        &mut [std::mem::MaybeUninit<u8>]
    );
    wrap!(
        split4_avx2,
        x86::split4_avx2,
        "avx2",
        &mut [std::mem::MaybeUninit<u8>]
    );
    wrap!(
        split8_avx2,
        x86::split8_avx2,
        "avx2",
        &mut [std::mem::MaybeUninit<u8>]
    );
    wrap!(
        unsplit2_avx2,
        x86::unsplit2_avx2,
        "avx2",
        &mut [std::mem::MaybeUninit<u8>]
    );
    wrap!(
        unsplit4_avx2,
        x86::unsplit4_avx2,
        "avx2",
        &mut [std::mem::MaybeUninit<u8>]
    );
    wrap!(
        unsplit8_avx2,
        x86::unsplit8_avx2,
        "avx2",
        &mut [std::mem::MaybeUninit<u8>]
    );

    pub(super) const SSSE3: KernelSet = KernelSet {
        name: "ssse3",
        split: [split2_ssse3, split4_ssse3, split8_ssse3],
        unsplit: [unsplit2_sse2, unsplit4_sse2, unsplit8_sse2],
    };

    pub(super) const AVX2: KernelSet = KernelSet {
        name: "avx2",
        split: [split2_avx2, split4_avx2, split8_avx2],
        unsplit: [unsplit2_avx2, unsplit4_avx2, unsplit8_avx2],
    };

    wrap!(
        split4_avx512vbmi,
        x86::split4_avx512vbmi,
        "avx512vbmi",
        &mut [std::mem::MaybeUninit<u8>]
    );
    /// AVX2, with AVX-512 VBMI for the split of 4-byte values: the one kernel where it
    /// measured faster (docs/benchmarks.md); a VBMI unsplit measured slower than AVX2's.
    pub(super) const AVX512VBMI: KernelSet = KernelSet {
        name: "avx512vbmi",
        split: [split2_avx2, split4_avx512vbmi, split8_avx2],
        unsplit: [unsplit2_avx2, unsplit4_avx2, unsplit8_avx2],
    };
}

#[cfg(target_arch = "aarch64")]
mod neon_sets {
    use super::{neon, KernelSet};

    // Each wrapper is stored only in a set that `available()` returns after checking
    // that the CPU has NEON.
    macro_rules! wrap {
        ($name:ident, $kernel:path, $dst:ty) => {
            fn $name(src: &[u8], dst: $dst) {
                // Real checks, not debug ones: this is a safe function.
                assert!(std::arch::is_aarch64_feature_detected!("neon"));
                assert_eq!(
                    src.len(),
                    dst.len(),
                    "kernel input and output lengths differ"
                );
                // SAFETY: the CPU has NEON and the lengths are equal (both checked above);
                // the kernels need nothing else to stay in bounds.
                unsafe { $kernel(src, dst) }
            }
        };
    }
    wrap!(split2, neon::split2_neon, &mut [std::mem::MaybeUninit<u8>]);
    wrap!(split4, neon::split4_neon, &mut [std::mem::MaybeUninit<u8>]);
    wrap!(split8, neon::split8_neon, &mut [std::mem::MaybeUninit<u8>]);
    wrap!(
        unsplit2,
        neon::unsplit2_neon,
        &mut [std::mem::MaybeUninit<u8>]
    );
    wrap!(
        unsplit4,
        neon::unsplit4_neon,
        &mut [std::mem::MaybeUninit<u8>]
    );
    wrap!(
        unsplit8,
        neon::unsplit8_neon,
        &mut [std::mem::MaybeUninit<u8>]
    );

    pub(super) const NEON: KernelSet = KernelSet {
        name: "neon",
        split: [split2, split4, split8],
        unsplit: [unsplit2, unsplit4, unsplit8],
    };
}

/// Every kernel set this CPU can run, best last (the scalar set always first).
pub(crate) fn available() -> Vec<KernelSet> {
    #[allow(unused_mut)]
    let mut sets = vec![SCALAR];
    #[cfg(target_arch = "x86_64")]
    {
        if allows(CpuLevel::Sse) && std::is_x86_feature_detected!("ssse3") {
            sets.push(x86_sets::SSSE3);
        }
        if allows(CpuLevel::Avx2) && std::is_x86_feature_detected!("avx2") {
            sets.push(x86_sets::AVX2);
            if allows(CpuLevel::Avx512)
                && std::is_x86_feature_detected!("avx512f")
                && std::is_x86_feature_detected!("avx512vbmi")
            {
                sets.push(x86_sets::AVX512VBMI);
            }
        }
    }
    #[cfg(target_arch = "aarch64")]
    {
        if allows(CpuLevel::Avx2) && std::arch::is_aarch64_feature_detected!("neon") {
            sets.push(neon_sets::NEON);
        }
    }
    sets
}

/// The kernel set in use: the best available, chosen once per process. Setting the
/// environment variable `MINIBLOCK_KERNELS` to `scalar`, `ssse3`, `avx2`, `avx512vbmi` or `neon`
/// picks that set instead (when the CPU has it), for comparisons.
pub(crate) fn selected() -> &'static KernelSet {
    static SELECTED: OnceLock<KernelSet> = OnceLock::new();
    SELECTED.get_or_init(|| {
        let sets = available();
        let asked = std::env::var("MINIBLOCK_KERNELS").ok();
        asked
            .and_then(|name| sets.iter().find(|s| s.name == name).copied())
            .unwrap_or_else(|| *sets.last().unwrap_or(&SCALAR))
    })
}

/// Name of the kernel set in use ("avx512vbmi", "avx2", "ssse3" or "scalar").
pub fn selected_name() -> &'static str {
    selected().name
}

impl KernelSet {
    /// Writes every byte of `dst`. Panics unless `src` and `dst` have the same length, a
    /// whole number of `width`-byte values: the callers that expose `dst` as initialized
    /// rely on every byte being written, so this is checked for real.
    pub(crate) fn split(&self, src: &[u8], dst: &mut [MaybeUninit<u8>], width: usize) {
        check_lengths(src.len(), dst.len(), width);
        match width {
            1 => {
                for (d, &b) in dst.iter_mut().zip(src) {
                    *d = MaybeUninit::new(b);
                }
            }
            2 => (self.split[0])(src, dst),
            4 => (self.split[1])(src, dst),
            8 => (self.split[2])(src, dst),
            _ => scalar::split_any(src, dst, width),
        }
    }

    /// Splits `src`, `chunk_bytes` after `chunk_bytes`, each piece into its own streams
    /// (the BSS encoding of whole chunks).
    pub(crate) fn split_chunks(
        &self,
        src: &[u8],
        dst: &mut [MaybeUninit<u8>],
        width: usize,
        chunk_bytes: usize,
    ) {
        check_chunk_lengths(src.len(), dst.len(), width, chunk_bytes);
        for (s, d) in src
            .chunks_exact(chunk_bytes)
            .zip(dst.chunks_exact_mut(chunk_bytes))
        {
            self.split(s, d, width);
        }
    }

    /// Joins each `chunk_bytes` piece of `src` back into values: the inverse of
    /// [`split_chunks`](Self::split_chunks).
    pub(crate) fn unsplit_chunks(
        &self,
        src: &[u8],
        dst: &mut [MaybeUninit<u8>],
        width: usize,
        chunk_bytes: usize,
    ) {
        check_chunk_lengths(src.len(), dst.len(), width, chunk_bytes);
        for (s, d) in src
            .chunks_exact(chunk_bytes)
            .zip(dst.chunks_exact_mut(chunk_bytes))
        {
            self.unsplit(s, d, width);
        }
    }

    /// Writes every byte of `dst`. Panics like [`split`](Self::split).
    pub(crate) fn unsplit(&self, src: &[u8], dst: &mut [MaybeUninit<u8>], width: usize) {
        check_lengths(src.len(), dst.len(), width);
        match width {
            1 => {
                for (d, &b) in dst.iter_mut().zip(src) {
                    *d = MaybeUninit::new(b);
                }
            }
            2 => (self.unsplit[0])(src, dst),
            4 => (self.unsplit[1])(src, dst),
            8 => (self.unsplit[2])(src, dst),
            _ => scalar::unsplit_any(src, dst, width),
        }
    }
}

/// Panics unless `src_len == dst_len` is a whole number of `width`-byte values: the
/// condition under which a kernel writes every output byte.
fn check_lengths(src_len: usize, dst_len: usize, width: usize) {
    assert!(
        width > 0 && src_len == dst_len && src_len.is_multiple_of(width),
        "kernel called with {src_len} input bytes, {dst_len} output bytes, width {width}"
    );
}

/// Panics unless `src_len == dst_len` is a whole number of chunks of `chunk_bytes`, each
/// a whole number of `width`-byte values.
fn check_chunk_lengths(src_len: usize, dst_len: usize, width: usize, chunk_bytes: usize) {
    assert!(
        width > 0
            && chunk_bytes > 0
            && chunk_bytes.is_multiple_of(width)
            && src_len == dst_len
            && src_len.is_multiple_of(chunk_bytes),
        "chunked kernel called with {src_len} input bytes, {dst_len} output bytes, width {width}, chunks of {chunk_bytes}"
    );
}

/// Splits `src` (values of `width` bytes, back to back) into `width` byte streams in `dst`.
#[inline]
pub(crate) fn split(src: &[u8], dst: &mut [u8], width: usize) {
    selected().split(src, as_uninit(dst), width);
}

/// Splits `src` into `width` byte streams appended to `out`, without first zeroing the
/// bytes the kernel is about to write.
#[inline]
pub(crate) fn split_append(src: &[u8], out: &mut Vec<u8>, width: usize) {
    out.reserve(src.len());
    let len = out.len();
    selected().split(src, &mut out.spare_capacity_mut()[..src.len()], width);
    // SAFETY: `split` writes every byte of the `src.len()` bytes of spare capacity it was
    // given (checked byte by byte against the reference by the kernel tests), and
    // `reserve` made that capacity available.
    unsafe { out.set_len(len + src.len()) };
}

/// Splits every `chunk_bytes` piece of `src` into its own `width` byte streams, appended
/// to `out`: whole BSS chunks in one call.
pub(crate) fn split_chunks_append(src: &[u8], out: &mut Vec<u8>, width: usize, chunk_bytes: usize) {
    out.reserve(src.len());
    let len = out.len();
    selected().split_chunks(
        src,
        &mut out.spare_capacity_mut()[..src.len()],
        width,
        chunk_bytes,
    );
    // SAFETY: `split_chunks` writes every byte of the `src.len()` bytes of spare capacity
    // it was given (each piece through a kernel that writes all of its output), and
    // `reserve` made that capacity available.
    unsafe { out.set_len(len + src.len()) };
}

/// Joins every `chunk_bytes` piece of `src` back into values in `dst`.
#[inline]
pub(crate) fn unsplit_chunks(src: &[u8], dst: &mut [u8], width: usize, chunk_bytes: usize) {
    selected().unsplit_chunks(src, as_uninit(dst), width, chunk_bytes);
}

/// Joins `width` byte streams in `src` back into values appended to `out`, without first
/// zeroing the bytes the kernel is about to write.
pub(crate) fn unsplit_vec_append(src: &[u8], out: &mut Vec<u8>, width: usize) {
    out.reserve(src.len());
    let len = out.len();
    selected().unsplit(src, &mut out.spare_capacity_mut()[..src.len()], width);
    // SAFETY: `unsplit` writes every byte of the `src.len()` bytes of spare capacity it
    // was given (checked byte by byte against the reference by the kernel tests), and
    // `reserve` made that capacity available.
    unsafe { out.set_len(len + src.len()) };
}

/// Joins `width` byte streams in `src` back into values appended to the Arrow buffer
/// `out`, without first zeroing the bytes the kernel is about to write.
#[inline]
pub(crate) fn unsplit_append(src: &[u8], out: &mut MutableBuffer, width: usize) {
    append_with(out, src.len(), |dst| selected().unsplit(src, dst, width));
}

/// Joins every `chunk_bytes` piece of `src` back into values appended to `out`, without
/// first zeroing the bytes the kernels are about to write: whole BSS chunks decoded
/// straight into an Arrow buffer.
pub(crate) fn unsplit_chunks_append(
    src: &[u8],
    out: &mut MutableBuffer,
    width: usize,
    chunk_bytes: usize,
) {
    append_with(out, src.len(), |dst| {
        selected().unsplit_chunks(src, dst, width, chunk_bytes);
    });
}

/// Grows `out` by `len` bytes that `kernel` writes, all of them, into the spare capacity.
/// Private to this module: only this module's kernels, which write every byte of the
/// output they are given (tested byte by byte against the reference), are passed in.
fn append_with(out: &mut MutableBuffer, len: usize, kernel: impl FnOnce(&mut [MaybeUninit<u8>])) {
    out.reserve(len);
    let start = out.len();
    // SAFETY: `reserve` made `start + len <= capacity`, so the `len` bytes after the
    // buffer's initialized part lie inside its allocation; `MaybeUninit<u8>` has the layout
    // of `u8` and makes no claim about their contents; `out` is borrowed mutably, so
    // nothing else aliases them while the slice lives.
    let spare = unsafe {
        std::slice::from_raw_parts_mut(out.as_mut_ptr().add(start).cast::<MaybeUninit<u8>>(), len)
    };
    kernel(spare);
    // SAFETY: the kernel wrote every one of those `len` bytes, so `start + len` bytes are
    // initialized, and `start + len <= capacity`.
    unsafe { out.set_len(start + len) };
}

/// Views initialized bytes as possibly-uninitialized ones, for the split kernels.
fn as_uninit(bytes: &mut [u8]) -> &mut [MaybeUninit<u8>] {
    // SAFETY: `MaybeUninit<u8>` has the layout of `u8`; the split kernels only ever store
    // initialized bytes through this view, so `bytes` stays initialized.
    unsafe { &mut *(std::ptr::from_mut::<[u8]>(bytes) as *mut [MaybeUninit<u8>]) }
}

/// Joins `width` byte streams in `src` back into values of `width` bytes in `dst`.
#[inline]
pub(crate) fn unsplit(src: &[u8], dst: &mut [u8], width: usize) {
    selected().unsplit(src, as_uninit(dst), width);
}

/// The plain reference transform, value by value, used by the tests to check every kernel.
#[cfg(test)]
pub(crate) fn split_reference(src: &[u8], width: usize) -> Vec<u8> {
    let n = src.len() / width;
    let mut out = vec![0; src.len()];
    for i in 0..n {
        for j in 0..width {
            out[j * n + i] = src[i * width + j];
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `MINIBLOCK_CPU` caps every run-time chosen kernel (`.ci/run` runs the library's
    /// tests at `avx2` and `portable` too, so those paths are tested on this machine).
    #[test]
    fn the_cpu_level_caps_every_kernel() {
        let level = cpu_level();
        if level < CpuLevel::Avx512 {
            #[cfg(target_arch = "x86_64")]
            {
                assert!(!has_avx512());
                assert!(!tans::has_kernel());
                assert!(!unbin::has_fused());
                assert!(!unpack::has_kernel());
                assert!(sums::levels().iter().all(|&l| l != sums::Level::Avx512));
                assert!(crc::fold_names().iter().all(|&n| n != "avx512"));
            }
            assert_ne!(selected_name(), "avx512vbmi");
        }
        if level < CpuLevel::Avx2 {
            #[cfg(target_arch = "x86_64")]
            {
                assert!(!has_bmi2());
                assert!(!has_avx2());
                assert!(sums::levels().is_empty());
            }
            assert!(matches!(selected_name(), "scalar" | "ssse3"));
        }
        if level == CpuLevel::Portable {
            assert_eq!(selected_name(), "scalar");
            #[cfg(target_arch = "x86_64")]
            assert!(crc::fold_names().is_empty());
        }
    }

    fn pseudo_random(len: usize, seed: u64) -> Vec<u8> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            })
            .collect()
    }

    fn lengths() -> Vec<usize> {
        if cfg!(miri) {
            (0..=70).chain([127, 128, 129, 255, 256, 257]).collect()
        } else {
            (0..=4200).collect()
        }
    }

    #[test]
    fn every_kernel_matches_the_reference_for_every_length() {
        let sets = available();
        assert!(sets.iter().any(|s| s.name == "scalar"));
        let names: Vec<&str> = sets.iter().map(|s| s.name).collect();
        eprintln!("kernel sets tested: {names:?}");
        for set in &sets {
            for width in [1usize, 2, 3, 4, 5, 8, 16] {
                for n in lengths() {
                    if width > 8 && n > 600 && !cfg!(miri) && n % 97 != 0 {
                        continue; // wide fallback widths: a sample of lengths is enough
                    }
                    let src = pseudo_random(n * width, (n * 31 + width) as u64);
                    let expected = split_reference(&src, width);
                    let mut split_out = vec![0xAA; src.len()];
                    set.split(&src, as_uninit(&mut split_out), width);
                    assert_eq!(split_out, expected, "{set:?} split width {width} n {n}");
                    let mut back = vec![0x55; src.len()];
                    set.unsplit(&split_out, as_uninit(&mut back), width);
                    assert_eq!(back, src, "{set:?} unsplit width {width} n {n}");
                }
            }
        }
    }

    /// Input at odd offsets, output at every offset from a 64-byte boundary: the SIMD
    /// kernels start their aligned blocks at an address-dependent value, so every
    /// alignment takes a different path through the overlapping first block.
    #[test]
    fn every_kernel_works_at_odd_offsets() {
        for set in available() {
            for width in [2usize, 4, 8] {
                let counts: &[usize] = if cfg!(miri) {
                    &[31, 33, 65]
                } else {
                    &[31, 32, 33, 63, 64, 65, 95, 127, 128, 129, 777]
                };
                for &n in counts {
                    let buf = pseudo_random(n * width + 16, 99 + n as u64);
                    let offsets: &[usize] = if cfg!(miri) {
                        &[0, 1, 3]
                    } else {
                        &[0, 1, 3, 4, 8, 13]
                    };
                    let out_offsets: Vec<usize> = if cfg!(miri) {
                        vec![0, 1, 7, 48]
                    } else {
                        (0..64).collect()
                    };
                    for &offset in offsets {
                        let src = &buf[offset..offset + n * width];
                        let expected = split_reference(src, width);
                        for &out_offset in &out_offsets {
                            let mut dst = vec![0; n * width + 128];
                            let base = (64 - dst.as_ptr() as usize % 64) % 64 + out_offset;
                            let out = base..base + n * width;
                            set.split(src, as_uninit(&mut dst[out.clone()]), width);
                            assert_eq!(
                                dst[out.clone()],
                                expected,
                                "{set:?} split w{width} n{n} +{offset} out +{out_offset}"
                            );
                            let mut back = vec![0; n * width + 128];
                            set.unsplit(&expected, as_uninit(&mut back[out.clone()]), width);
                            assert_eq!(
                                &back[out], src,
                                "{set:?} unsplit w{width} n{n} +{offset} out +{out_offset}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn chunked_kernels_split_each_chunk_on_its_own() {
        for set in available() {
            for width in [1usize, 2, 3, 4, 8, 16] {
                for (chunk_values, chunks) in [(1, 5), (37, 3), (256, 4), (1024, 3)] {
                    if cfg!(miri) && chunk_values > 256 {
                        continue;
                    }
                    let chunk_bytes = chunk_values * width;
                    let src = pseudo_random(chunk_bytes * chunks, (width * 7 + chunks) as u64);
                    let expected: Vec<u8> = src
                        .chunks(chunk_bytes)
                        .flat_map(|c| split_reference(c, width))
                        .collect();
                    let mut appended = vec![7, 8, 9];
                    split_chunks_append(&src, &mut appended, width, chunk_bytes);
                    assert_eq!(appended[..3], [7, 8, 9]);
                    assert_eq!(
                        appended[3..],
                        expected,
                        "appended w{width} of {chunk_values}"
                    );
                    let mut split = vec![0xAA; src.len()];
                    set.split_chunks(&src, as_uninit(&mut split), width, chunk_bytes);
                    assert_eq!(split, expected, "{set:?} w{width} chunks of {chunk_values}");
                    let mut back = vec![0x55; src.len()];
                    set.unsplit_chunks(&split, as_uninit(&mut back), width, chunk_bytes);
                    assert_eq!(back, src, "{set:?} w{width} chunks of {chunk_values}");
                    // Appending to an Arrow buffer: after existing bytes (so the output
                    // starts off alignment), growing it, twice.
                    let mut buffer = MutableBuffer::new(0);
                    buffer.extend_from_slice(&[1u8, 2, 3]);
                    unsplit_chunks_append(&split, &mut buffer, width, chunk_bytes);
                    unsplit_append(&split_reference(&src, width), &mut buffer, width);
                    let bytes = buffer.as_slice();
                    assert_eq!(bytes.len(), 3 + 2 * src.len());
                    assert_eq!(bytes[..3], [1, 2, 3]);
                    assert_eq!(bytes[3..3 + src.len()], src, "w{width} of {chunk_values}");
                    assert_eq!(bytes[3 + src.len()..], src, "w{width} of {chunk_values}");
                    let mut vec = vec![4u8];
                    unsplit_vec_append(&split_reference(&src, width), &mut vec, width);
                    assert_eq!(vec[0], 4);
                    assert_eq!(vec[1..], src, "vec w{width} of {chunk_values}");
                }
            }
        }
    }

    /// The safe wrappers refuse lengths under which a kernel would leave output bytes
    /// unwritten (they used to check this only in debug builds).
    #[test]
    fn kernels_refuse_partial_values() {
        for set in available() {
            for width in [2usize, 3, 4, 8] {
                let src = vec![1u8; width * 3 + 1];
                let mut dst = vec![0u8; src.len()];
                let split = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    set.split(&src, as_uninit(&mut dst), width);
                }));
                assert!(split.is_err(), "{set:?} split width {width}");
                let unsplit = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    set.unsplit(&src[1..], as_uninit(&mut dst), width);
                }));
                assert!(unsplit.is_err(), "{set:?} unsplit of unequal lengths");
            }
        }
        let mut out = Vec::new();
        let append = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            split_append(&[1, 2, 3, 4, 5], &mut out, 4);
        }));
        assert!(append.is_err());
        assert!(out.is_empty(), "nothing exposed");
    }

    #[test]
    fn the_selected_set_is_the_best_available() {
        if std::env::var("MINIBLOCK_KERNELS").is_err() {
            assert_eq!(selected().name, available().last().unwrap().name);
        }
    }
}
