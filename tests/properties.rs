//! Property tests: random arrays with random nulls, lengths and encodings round-trip by
//! bits, whole and by random row ranges.

mod common;

use std::sync::Arc;

use arrow_array::{ArrayRef, Float32Array, Float64Array};
use miniblock::{encode_page, Encoding, PageDecoder};
use proptest::prelude::*;

fn encoding() -> impl Strategy<Value = Encoding> {
    prop::sample::select(Encoding::ALL.to_vec())
}

fn f32_array() -> impl Strategy<Value = ArrayRef> {
    prop::collection::vec((any::<u32>(), any::<bool>(), 0u8..4), 0..5000).prop_map(|rows| {
        let nulls = rows.iter().any(|r| r.2 == 0);
        Arc::new(Float32Array::from_iter(rows.iter().enumerate().map(
            |(i, (bits, smooth, null))| {
                let v = if *smooth {
                    (i as f32 * 0.1).sin()
                } else {
                    f32::from_bits(*bits)
                };
                (!nulls || *null != 0).then_some(v)
            },
        ))) as ArrayRef
    })
}

fn f64_array() -> impl Strategy<Value = ArrayRef> {
    prop::collection::vec((any::<u64>(), any::<bool>(), any::<bool>()), 0..3000).prop_map(|rows| {
        Arc::new(Float64Array::from_iter(rows.iter().enumerate().map(
            |(i, (bits, smooth, valid))| {
                let v = if *smooth {
                    (i as f64).sqrt().round()
                } else {
                    f64::from_bits(*bits)
                };
                valid.then_some(v)
            },
        ))) as ArrayRef
    })
}

/// Bit patterns ALP must keep: NaN payloads of both signs, -0.0, infinities, subnormals,
/// the extremes.
const SPECIAL_F64: [u64; 10] = [
    0x7FF8_0000_0000_0001,
    0xFFF0_0000_0000_0BAD,
    0x8000_0000_0000_0000,
    0x7FF0_0000_0000_0000,
    0xFFF0_0000_0000_0000,
    0x0000_0000_0000_0001,
    0x800F_FFFF_FFFF_FFFF,
    0x7FEF_FFFF_FFFF_FFFF,
    0x0010_0000_0000_0000,
    0x4330_0000_0000_0001,
];

/// Decimal-like values (an integer over a power of ten, the kind ALP turns into
/// integers; or over a power of two, which ALP's binary exponent takes), a run of one decimal count or mixed, with special bit patterns, values
/// past ALP's integer range, and nulls among them.
fn decimal_f64_array() -> impl Strategy<Value = ArrayRef> {
    (
        prop::collection::vec((any::<i32>(), 0u32..40, 0u8..12), 0..3000),
        0i32..19,
        any::<bool>(),
    )
        .prop_map(|(rows, digits, walk)| {
            let mut level = 0i64;
            Arc::new(Float64Array::from_iter(rows.iter().map(
                |&(int, kind, null)| {
                    level += i64::from(int % 100);
                    let int = if walk { level } else { i64::from(int) };
                    let v = match kind {
                        0 => f64::from_bits(SPECIAL_F64[int.unsigned_abs() as usize % 10]),
                        1 => int as f64 * 1e300,
                        2 => int as f64 / 10f64.powi(int.rem_euclid(19) as i32),
                        3..=5 => int as f64 / 2f64.powi(digits * 3),
                        _ => int as f64 / 10f64.powi(digits),
                    };
                    (null != 0).then_some(v)
                },
            ))) as ArrayRef
        })
}

/// The same for f32: a decimal computed in f64 and rounded, or a special pattern.
fn decimal_f32_array() -> impl Strategy<Value = ArrayRef> {
    (
        prop::collection::vec((any::<i32>(), 0u32..40, 0u8..12), 0..5000),
        0i32..11,
    )
        .prop_map(|(rows, digits)| {
            Arc::new(Float32Array::from_iter(rows.iter().map(
                |&(int, kind, null)| {
                    let v = match kind {
                        0 => f32::from_bits(
                            [
                                0x7FC0_0001,
                                0xFF80_0BAD,
                                0x8000_0000,
                                0x7F80_0000,
                                0x0000_0001,
                            ][int.unsigned_abs() as usize % 5],
                        ),
                        1 => f32::from_bits(int as u32),
                        _ => (f64::from(int % 100_000) / 10f64.powi(digits)) as f32,
                    };
                    (null != 0).then_some(v)
                },
            ))) as ArrayRef
        })
}

fn alp_encoding() -> impl Strategy<Value = Encoding> {
    prop::sample::select(vec![Encoding::Alp, Encoding::AlpLz4, Encoding::AlpZstd])
}

fn check(array: &ArrayRef, encoding: Encoding, a: usize, b: usize) {
    let page = encode_page(array.as_ref(), encoding).unwrap();
    let bytes = page.to_bytes();
    let decoder = PageDecoder::try_new(&page.encoding, page.num_values, &bytes).unwrap();
    common::assert_same_bits(array.as_ref(), decoder.decode().unwrap().as_ref(), "page");
    let len = array.len();
    let (start, end) = if len == 0 {
        (0, 0)
    } else {
        (a % (len + 1), b % (len + 1))
    };
    let (start, end) = (start.min(end), start.max(end));
    let range = decoder.decode_range(start..end).unwrap();
    common::assert_same_bits(&array.slice(start, end - start), range.as_ref(), "range");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn f32_pages_round_trip(array in f32_array(), encoding in encoding(), a in any::<usize>(), b in any::<usize>()) {
        check(&array, encoding, a, b);
    }

    #[test]
    fn f64_pages_round_trip(array in f64_array(), encoding in encoding(), a in any::<usize>(), b in any::<usize>()) {
        check(&array, encoding, a, b);
    }

    #[test]
    fn decimal_f64_pages_round_trip(array in decimal_f64_array(), encoding in alp_encoding(), a in any::<usize>(), b in any::<usize>()) {
        check(&array, encoding, a, b);
    }

    #[test]
    fn decimal_f32_pages_round_trip(array in decimal_f32_array(), encoding in alp_encoding(), a in any::<usize>(), b in any::<usize>()) {
        check(&array, encoding, a, b);
    }

    #[test]
    fn shuffle_round_trips(data in prop::collection::vec(any::<u8>(), 0..3000), size in 1usize..20) {
        let data = &data[..data.len() / size * size];
        let shuffled = miniblock::shuffle::shuffle(data, size).unwrap();
        prop_assert_eq!(miniblock::shuffle::unshuffle(&shuffled, size).unwrap(), data);
    }
}
