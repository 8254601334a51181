//! Fill pages: `auto` takes a page's dominant value out of its encoding, and every value
//! (nulls, NaN payloads, -0.0 beside 0.0) comes back; hostile fill messages are errors.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Float32Array, Float64Array};
use arrow_schema::DataType;
use miniblock::encodings::{decompressor_for, AutoOptions, Strategy};
use miniblock::proto::encodings::{array_encoding, ArrayEncoding, ByteStreamSplit, Fill};
use miniblock::{encode_page, EncodedPage};

fn slp() -> Float32Array {
    let bytes = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("data/ferret_coads_climatology_SLP.f32"),
    )
    .unwrap();
    Float32Array::from_iter_values(
        bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().unwrap())),
    )
}

fn auto(fills: bool) -> Strategy {
    Strategy::Auto(AutoOptions::default().with_fills(fills))
}

fn fill_of(page: &EncodedPage) -> Option<Vec<u8>> {
    match &page.encoding.array_encoding {
        Some(
            array_encoding::ArrayEncoding::Fill(fill)
            | array_encoding::ArrayEncoding::CodedFill(fill),
        ) => Some(fill.value.clone()),
        _ => None,
    }
}

fn bits(array: &dyn Array) -> Vec<u8> {
    let data = array.to_data();
    let width = data.data_type().primitive_width().unwrap();
    data.buffers()[0].as_slice()[data.offset() * width..(data.offset() + data.len()) * width]
        .to_vec()
}

fn validity(array: &dyn Array) -> Vec<bool> {
    (0..array.len()).map(|i| array.is_valid(i)).collect()
}

/// Decodes `page` whole and in ranges, comparing bits and validity with `array`.
fn check_round_trip(page: &EncodedPage, array: &dyn Array) {
    let decoder = page.decoder(array.data_type()).unwrap();
    let back = decoder.decode().unwrap();
    assert_eq!(bits(back.as_ref()), bits(array));
    assert_eq!(validity(back.as_ref()), validity(array));
    let n = array.len();
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    for _ in 0..200 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let start = (seed % n as u64) as usize;
        let len = ((seed >> 32) % 3000) as usize;
        let end = (start + len).min(n);
        let part = decoder.decode_range(start..end).unwrap();
        let want = array.slice(start, end - start);
        assert_eq!(
            bits(part.as_ref()),
            bits(want.as_ref()),
            "rows {start}..{end}"
        );
        assert!(
            validity(part.as_ref()) == validity(want.as_ref()),
            "rows {start}..{end}"
        );
    }
}

/// SLP is 44.5% `-1e34`: `auto` takes it out, and the page is smaller than `auto` without
/// the layer.
#[test]
fn auto_takes_the_fill_value_out_of_a_grid() {
    let slp = slp();
    let with = encode_page(&slp, auto(true)).unwrap();
    let without = encode_page(&slp, auto(false)).unwrap();
    assert_eq!(fill_of(&with), Some((-1e34f32).to_le_bytes().to_vec()));
    assert_eq!(fill_of(&without), None);
    assert!(
        with.encoded_len() < without.encoded_len(),
        "with fill {} bytes, without {}",
        with.encoded_len(),
        without.encoded_len()
    );
    check_round_trip(&with, &slp);
}

/// Nulls, a NaN fill beside other NaN payloads, -0.0 beside 0.0, f64 and whole chunks of
/// the fill alone.
#[test]
fn every_value_comes_back_around_a_fill() {
    let nan = f32::from_bits(0x7FC0_0001);
    let values: Vec<Option<f32>> = (0..50_000)
        .map(|i| match i % 100 {
            0..=59 => Some(nan),
            60..=69 if i % 3 == 0 => None,
            70 => Some(f32::NAN),
            71 => Some(if i % 200 < 100 { -0.0 } else { 0.0 }),
            _ if (20_000..24_096).contains(&i) => Some(nan),
            _ => Some((i as f32 * 0.01).sin()),
        })
        .collect();
    let array = Float32Array::from(values);
    let page = encode_page(&array, auto(true)).unwrap();
    assert_eq!(fill_of(&page), Some(nan.to_le_bytes().to_vec()));
    check_round_trip(&page, &array);

    let doubles = Float64Array::from_iter_values((0..40_000).map(|i| {
        if (i / 40) % 2 == 0 {
            -1e10
        } else {
            f64::from(i) * 0.125
        }
    }));
    let page = encode_page(&doubles, auto(true)).unwrap();
    assert_eq!(fill_of(&page), Some((-1e10f64).to_le_bytes().to_vec()));
    check_round_trip(&page, &doubles);

    let constant: ArrayRef = Arc::new(Float32Array::from(vec![-1e34f32; 10_000]));
    let page = encode_page(constant.as_ref(), auto(true)).unwrap();
    assert_eq!(fill_of(&page), Some((-1e34f32).to_le_bytes().to_vec()));
    assert!(page.encoded_len() < 200, "{} bytes", page.encoded_len());
    check_round_trip(&page, constant.as_ref());
}

/// A value below an eighth of the page is not taken out.
#[test]
fn a_rare_value_is_not_a_fill() {
    let array = Float32Array::from_iter_values((0..100_000).map(|i| {
        if i % 10 == 0 {
            -1e34
        } else {
            (i as f32 * 0.001).cos()
        }
    }));
    let page = encode_page(&array, auto(true)).unwrap();
    assert_eq!(fill_of(&page), None);
}

fn fill_message(value: Vec<u8>, inner: Option<ArrayEncoding>) -> ArrayEncoding {
    ArrayEncoding {
        array_encoding: Some(array_encoding::ArrayEncoding::Fill(Box::new(Fill {
            value,
            inner: inner.map(Box::new),
            ..Fill::default()
        }))),
    }
}

fn bss32() -> ArrayEncoding {
    ArrayEncoding {
        array_encoding: Some(array_encoding::ArrayEncoding::ByteStreamSplit(
            ByteStreamSplit { bits_per_value: 32 },
        )),
    }
}

#[test]
fn hostile_fill_messages_are_errors() {
    // A value of the wrong width, no inner encoding, a fill inside a fill.
    assert!(decompressor_for(&fill_message(vec![0; 3], Some(bss32())), &[]).is_err());
    assert!(decompressor_for(&fill_message(vec![0; 4], None), &[]).is_err());
    let nested = fill_message(vec![0; 4], Some(fill_message(vec![0; 4], Some(bss32()))));
    assert!(decompressor_for(&nested, &[]).is_err());
    assert!(decompressor_for(&fill_message(vec![0; 4], Some(bss32())), &[]).is_ok());
    // A page whose chunk claims runs past its end fails to decode, whole or in ranges.
    let array = Float32Array::from_iter_values((0..4096).map(|i| {
        if (i / 16) % 2 == 0 {
            -1e34
        } else {
            (i as f32).sqrt()
        }
    }));
    let page = encode_page(&array, auto(true)).unwrap();
    assert!(fill_of(&page).is_some());
    let mut bytes = page.to_bytes();
    let data_start = bytes.len() - page.data.len();
    // The first chunk's run count, now 16383 runs in 1024 values.
    bytes[data_start] = 0xFF;
    bytes[data_start + 1] = 0x7F;
    let decoder =
        miniblock::PageDecoder::try_new(&page.encoding, page.num_values as u64, &bytes).unwrap();
    assert!(decoder
        .with_data_type(&DataType::Float32)
        .unwrap()
        .decode()
        .is_err());
}
