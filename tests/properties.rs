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
    fn shuffle_round_trips(data in prop::collection::vec(any::<u8>(), 0..3000), size in 1usize..20) {
        let data = &data[..data.len() / size * size];
        let shuffled = miniblock::shuffle::shuffle(data, size).unwrap();
        prop_assert_eq!(miniblock::shuffle::unshuffle(&shuffled, size).unwrap(), data);
    }
}
