//! Arbitrary floats, nulls and encoding: encode then decode gives back every bit.
#![no_main]

use std::sync::Arc;

use arbitrary::Arbitrary;
use arrow_array::{Array, ArrayRef, Float32Array, Float64Array};
use libfuzzer_sys::fuzz_target;
use miniblock::{encode_page, Encoding, PageDecoder};

#[derive(Debug, Arbitrary)]
struct Input {
    wide: bool,
    encoding: u8,
    values: Vec<(u64, bool)>,
}

fuzz_target!(|input: Input| {
    let encoding = Encoding::ALL[usize::from(input.encoding) % Encoding::ALL.len()];
    let array: ArrayRef = if input.wide {
        Arc::new(Float64Array::from_iter(input.values.iter().map(|&(bits, valid)| valid.then(|| f64::from_bits(bits)))))
    } else {
        Arc::new(Float32Array::from_iter(input.values.iter().map(|&(bits, valid)| valid.then(|| f32::from_bits(bits as u32)))))
    };
    let page = encode_page(array.as_ref(), encoding).expect("encoding a valid array");
    let bytes = page.to_bytes();
    let decoder = PageDecoder::try_new(&page.encoding, page.num_values, &bytes).expect("own page");
    let decoded = decoder.decode().expect("own page decodes");
    // ArrayData equality compares float values by their bytes, and only valid slots.
    assert_eq!(decoded.to_data(), array.to_data());
    assert_eq!(decoded.null_count(), array.null_count());
});
