//! Arbitrary values of any fixed width, nulls, chunk size and encoding (auto included):
//! encode then decode gives back every bit.
#![no_main]

use arbitrary::Arbitrary;
use arrow_array::{make_array, Array, ArrayRef};
use arrow_buffer::{MutableBuffer, NullBuffer};
use arrow_data::ArrayData;
use arrow_schema::DataType;
use libfuzzer_sys::fuzz_target;
use miniblock::encodings::{EncoderOptions, Strategy};
use miniblock::{Encoding, PageDecoder, PageEncoder};

#[derive(Debug, Arbitrary)]
struct Input {
    data_type: u8,
    encoding: u8,
    chunk: u8,
    bytes: Vec<u8>,
    nulls: Vec<bool>,
}

const TYPES: [DataType; 7] = [
    DataType::Float32,
    DataType::Float64,
    DataType::Float16,
    DataType::Int8,
    DataType::FixedSizeBinary(5),
    DataType::Decimal128(20, 3),
    DataType::FixedSizeBinary(3),
];

fuzz_target!(|input: Input| {
    let data_type = TYPES[usize::from(input.data_type) % TYPES.len()].clone();
    let width = miniblock::page::value_width(&data_type).unwrap();
    let strategy = match usize::from(input.encoding) % (Encoding::ALL.len() + 2) {
        i if i < Encoding::ALL.len() => Strategy::Fixed(Encoding::ALL[i]),
        i if i == Encoding::ALL.len() => "auto".parse().unwrap(),
        _ => "auto:0".parse().unwrap(),
    };
    let chunk = match input.chunk % 4 {
        0 => None,
        1 => Some(256),
        2 => Some(4096),
        _ => Some(65536),
    };
    let options = EncoderOptions::default().with_chunk_values(chunk).unwrap();
    let len = input.bytes.len() / width;
    let nulls = (!input.nulls.is_empty())
        .then(|| NullBuffer::from_iter((0..len).map(|i| input.nulls[i % input.nulls.len()])));
    let mut values = MutableBuffer::new(len * width);
    values.extend_from_slice(&input.bytes[..len * width]);
    let data = ArrayData::builder(data_type.clone())
        .len(len)
        .add_buffer(values.into())
        .nulls(nulls)
        .build()
        .unwrap();
    let array: ArrayRef = make_array(data);
    if let Strategy::Fixed(encoding) = strategy {
        if !encoding.supports_width(width) {
            // ALP takes 4- and 8-byte values only: refused, not encoded.
            assert!(PageEncoder::for_strategy(strategy, width, &options).is_err());
            return;
        }
    }
    let encoder = PageEncoder::for_strategy(strategy, width, &options).unwrap();
    let page = encoder
        .encode(array.as_ref())
        .expect("encoding a valid array");
    let bytes = page.to_bytes();
    let decoder = PageDecoder::try_new(&page.encoding, page.num_values, &bytes)
        .expect("own page")
        .with_data_type(&data_type)
        .expect("own type");
    let decoded = decoder.decode().expect("own page decodes");
    // ArrayData equality compares values by their bytes, and only valid slots.
    assert_eq!(decoded.to_data(), array.to_data());
    assert_eq!(decoded.null_count(), array.null_count());
});
