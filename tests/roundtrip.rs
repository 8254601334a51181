//! Round trips of every page length 0..=2100 and around chunk boundaries, for f32 and f64,
//! every encoding, with and without nulls, every special bit pattern compared by bits.

mod common;

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Float32Array, Float64Array};
use arrow_schema::DataType;
use common::{assert_same_bits, mixed_f32, mixed_f64};
use miniblock::{encode_page, Encoding, PageDecoder};

fn lengths() -> impl Iterator<Item = usize> {
    let boundaries = [
        511, 512, 513, 1023, 1024, 1025, 2047, 2048, 2049, 3071, 3072, 3073, 4095, 4096, 4097, 8193,
    ];
    (0..=2100).chain(boundaries)
}

fn check_page(array: &ArrayRef, encoding: Encoding, chunk_values: usize) {
    let context = format!(
        "{} len {} {encoding} nulls {}",
        array.data_type(),
        array.len(),
        array.null_count()
    );
    let page = encode_page(array.as_ref(), encoding).unwrap();
    assert_eq!(page.num_values, array.len() as u64);
    // Exactly ceil(n / chunk) chunks: none empty, none trailing.
    assert_eq!(
        page.chunks.len(),
        array.len().div_ceil(chunk_values),
        "{context}: chunk count"
    );
    if array.null_count() == 0 {
        assert!(
            page.chunks.iter().all(|c| !c.has_validity),
            "{context}: validity without nulls"
        );
    }
    let bytes = page.to_bytes();
    let decoder = PageDecoder::try_new(&page.encoding, page.num_values, &bytes).unwrap();
    assert_same_bits(array.as_ref(), decoder.decode().unwrap().as_ref(), &context);
    // Every chunk alone.
    for c in 0..decoder.num_chunks() {
        let rows = decoder.chunk_rows(c).unwrap();
        let chunk = decoder.decode_chunk(c).unwrap();
        assert_same_bits(
            &array.slice(rows.start, rows.len()),
            chunk.as_ref(),
            &format!("{context} chunk {c}"),
        );
    }
    // A range straddling chunk boundaries.
    let (start, end) = (array.len() / 3, array.len() - array.len() / 5);
    let range = decoder.decode_range(start..end).unwrap();
    assert_same_bits(
        &array.slice(start, end - start),
        range.as_ref(),
        &format!("{context} rows {start}..{end}"),
    );
}

#[test]
fn f32_every_length_every_encoding() {
    for len in lengths() {
        let values = mixed_f32(len, len as u64 + 7);
        let dense: ArrayRef = Arc::new(Float32Array::from(values.clone()));
        let nullable: ArrayRef = Arc::new(Float32Array::from_iter(
            values
                .iter()
                .enumerate()
                .map(|(i, v)| (i % 7 != 3).then_some(*v)),
        ));
        for encoding in Encoding::ALL {
            check_page(&dense, encoding, 1024);
            check_page(&nullable, encoding, 1024);
        }
    }
}

#[test]
fn f64_every_length_every_encoding() {
    for len in lengths() {
        let values = mixed_f64(len, len as u64 + 11);
        let dense: ArrayRef = Arc::new(Float64Array::from(values.clone()));
        let nullable: ArrayRef = Arc::new(Float64Array::from_iter(
            values
                .iter()
                .enumerate()
                .map(|(i, v)| (i % 5 != 1).then_some(*v)),
        ));
        for encoding in Encoding::ALL {
            check_page(&dense, encoding, 512);
            check_page(&nullable, encoding, 512);
        }
    }
}

#[test]
fn all_null_and_sliced_arrays() {
    let all_null: ArrayRef = Arc::new(Float32Array::from(vec![None; 3000]));
    let sliced: ArrayRef = Arc::new(Float64Array::from(mixed_f64(5000, 3)).slice(1234, 2000));
    let sliced_nullable: ArrayRef = Arc::new(
        Float32Array::from_iter((0..5000).map(|i| (i % 3 == 0).then_some(i as f32)))
            .slice(77, 3000),
    );
    for encoding in Encoding::ALL {
        check_page(&all_null, encoding, 1024);
        check_page(&sliced, encoding, 512);
        check_page(&sliced_nullable, encoding, 1024);
    }
}

#[test]
fn values_under_nulls_are_written_as_zero() {
    let array = Float32Array::from(vec![Some(1.0), None, Some(3.0)]);
    let page = encode_page(&array, Encoding::Plain).unwrap();
    // one validity byte 0b101, then the three values with zero in the null slot
    assert_eq!(page.data[0], 0b101);
    assert_eq!(
        &page.data[1..],
        [1.0f32.to_le_bytes(), [0; 4], 3.0f32.to_le_bytes()].concat()
    );
}

#[test]
fn decode_into_a_caller_buffer() {
    let values = mixed_f64(5000, 42);
    let array = Float64Array::from(values.clone());
    let page = encode_page(&array, Encoding::BssLz4).unwrap();
    let decoder = page.decoder(&DataType::Float64).unwrap();
    let mut out = vec![0u8; 1000 * 8];
    decoder.decode_into(700..1700, &mut out, None).unwrap();
    let expected: Vec<u8> = values[700..1700]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    assert_eq!(out, expected);
    // wrong output size and rows past the end are argument errors
    let err = decoder.decode_into(0..10, &mut out, None).unwrap_err();
    assert_eq!(err.kind(), miniblock::ErrorKind::InvalidArgument);
    let err = decoder.decode_range(4000..5001).unwrap_err();
    assert_eq!(err.kind(), miniblock::ErrorKind::InvalidArgument);
}

#[test]
fn lz4_shrinks_smooth_data_and_never_grows_random_data() {
    let smooth = Float32Array::from(
        (0..10_000)
            .map(|i| (i as f32 * 0.001).sin())
            .collect::<Vec<_>>(),
    );
    let raw = 10_000 * 4;
    let bss_lz4 = encode_page(&smooth, Encoding::BssLz4).unwrap();
    assert!(
        bss_lz4.data.len() < raw * 9 / 10,
        "{} of {raw}",
        bss_lz4.data.len()
    );
    let noise = Float64Array::from(
        mixed_f64(10_000, 5)
            .iter()
            .map(|v| f64::from_bits(v.to_bits() ^ 0x5555))
            .collect::<Vec<_>>(),
    );
    let random: Vec<f64> = {
        let mut rng = common::Rng(99);
        (0..10_000)
            .map(|_| f64::from_bits(rng.next_u64()))
            .collect()
    };
    for array in [noise, Float64Array::from(random)] {
        let page = encode_page(&array, Encoding::Lz4).unwrap();
        assert!(page.data.len() <= array.len() * 8, "lz4 grew a page");
        let page = encode_page(&array, Encoding::BssLz4).unwrap();
        assert!(page.data.len() <= array.len() * 8, "bss+lz4 grew a page");
    }
}

/// Chunks of one repeated value (fill values, zeros, a NaN payload, -0.0) get an LZ4
/// block written directly: every page of them, and pages mixing them with other chunks,
/// decode to the same bits, chunk by chunk too, and those chunks are tiny.
#[test]
fn chunks_of_one_repeated_value_round_trip_and_shrink() {
    let fills: [f64; 5] = [
        0.0,
        -0.0,
        9.969_209_968_386_869e36,
        f64::from_bits(0x7FF8_0000_DEAD_BEEF),
        1.5,
    ];
    for fill in fills {
        for len in [1usize, 12, 13, 100, 1024, 3000, 4096] {
            let noise = mixed_f64(len, len as u64);
            // all one value, then every other 512-value chunk one value
            let patterns: [Vec<f64>; 2] = [
                vec![fill; len],
                (0..len)
                    .map(|i| if (i / 512) % 2 == 0 { fill } else { noise[i] })
                    .collect(),
            ];
            for values in patterns {
                let f64s: ArrayRef = Arc::new(Float64Array::from(values.clone()));
                let f32s: ArrayRef = Arc::new(Float32Array::from(
                    values.iter().map(|v| *v as f32).collect::<Vec<_>>(),
                ));
                for array in [f64s, f32s] {
                    for encoding in [Encoding::Lz4, Encoding::BssLz4] {
                        let context = format!("{fill} len {len} {} {encoding}", array.data_type());
                        let page = encode_page(array.as_ref(), encoding).unwrap();
                        let decoder = page.decoder(array.data_type()).unwrap();
                        assert_same_bits(&array, decoder.decode().unwrap().as_ref(), &context);
                        for c in 0..decoder.num_chunks() {
                            let rows = decoder.chunk_rows(c).unwrap();
                            let expected = array.slice(rows.start, rows.len());
                            let chunk = decoder.decode_chunk(c).unwrap();
                            assert_same_bits(&expected, chunk.as_ref(), &context);
                            let constant = values[rows.clone()].windows(2).all(|w| {
                                if array.data_type() == &DataType::Float64 {
                                    w[0].to_bits() == w[1].to_bits()
                                } else {
                                    (w[0] as f32).to_bits() == (w[1] as f32).to_bits()
                                }
                            });
                            if constant && rows.len() >= 512 {
                                let bytes = page.chunks[c].num_bytes as usize;
                                let width = array.data_type().primitive_width().unwrap();
                                assert!(
                                    bytes * 16 < rows.len() * width,
                                    "{context}: chunk {c} {bytes}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Whole uncompressed chunks without validity decode as one run; chunks with nulls,
/// compressed chunks and partial chunks break the run. Every range over such a page, by
/// `decode_range` and `decode_into`, gives the right values and validity.
#[test]
fn runs_of_uncompressed_chunks_decode_like_single_chunks() {
    let chunk = 1024;
    let len = 20 * chunk + 300;
    let noise = mixed_f32(len, 99);
    let values: Vec<Option<f32>> = (0..len)
        .map(|i| {
            let c = i / chunk;
            let null = (c == 5 && i % 9 == 0) || (c == 12 && i % 100 == 1);
            // every third chunk smooth (LZ4 compresses it), the others noise (stored raw)
            let v = if c % 3 == 0 { (c * 7) as f32 } else { noise[i] };
            (!null).then_some(v)
        })
        .collect();
    let array: ArrayRef = Arc::new(Float32Array::from(values.clone()));
    let rows_to_try: Vec<usize> = [
        0,
        1,
        1023,
        1024,
        1025,
        2048,
        3000,
        5 * 1024,
        6 * 1024 - 1,
        6 * 1024,
        9000,
        12 * 1024,
        13 * 1024 + 5,
        19 * 1024,
        20 * 1024,
        20 * 1024 + 1,
        len - 1,
        len,
    ]
    .to_vec();
    for encoding in Encoding::ALL {
        let page = encode_page(array.as_ref(), encoding).unwrap();
        let decoder = page.decoder(&DataType::Float32).unwrap();
        for &start in &rows_to_try {
            for &end in rows_to_try.iter().filter(|&&e| e >= start) {
                let context = format!("{encoding} rows {start}..{end}");
                let expected = array.slice(start, end - start);
                let range = decoder.decode_range(start..end).unwrap();
                assert_same_bits(&expected, range.as_ref(), &context);
                let mut out = vec![0xAAu8; (end - start) * 4];
                let mut validity = arrow_buffer::BooleanBufferBuilder::new(end - start);
                decoder
                    .decode_into(start..end, &mut out, Some(&mut validity))
                    .unwrap();
                let validity = validity.finish();
                // Appending after existing bytes gives the same bytes and validity.
                let mut appended = arrow_buffer::MutableBuffer::new(0);
                appended.extend_from_slice(&[9u8, 9, 9]);
                let mut appended_validity = arrow_buffer::BooleanBufferBuilder::new(0);
                appended_validity.append(false);
                decoder
                    .decode_append(start..end, &mut appended, Some(&mut appended_validity))
                    .unwrap();
                assert_eq!(appended.as_slice()[..3], [9, 9, 9], "{context}");
                assert_eq!(appended.as_slice()[3..], out[..], "{context}: appended");
                assert_eq!(appended_validity.len(), 1 + end - start, "{context}");
                for k in 0..end - start {
                    assert_eq!(
                        appended_validity.get_bit(1 + k),
                        validity.value(k),
                        "{context}"
                    );
                }
                for (k, value) in values[start..end].iter().enumerate() {
                    let got = f32::from_le_bytes(out[4 * k..4 * k + 4].try_into().unwrap());
                    if let Some(v) = value {
                        assert!(validity.value(k), "{context}: row {k} valid");
                        assert_eq!(got.to_bits(), v.to_bits(), "{context}: row {k}");
                    } else {
                        assert!(!validity.value(k), "{context}: row {k} null");
                        assert_eq!(got.to_bits(), 0, "{context}: zero under null {k}");
                    }
                }
            }
        }
    }
}

/// A sliced array (offset into its buffers, nullable) encodes exactly like a fresh copy
/// of the same rows, for each float width and a type that takes the generic path.
#[test]
fn sliced_arrays_encode_like_fresh_copies() {
    let values = mixed_f64(3000, 5);
    let f64s: ArrayRef = Arc::new(Float64Array::from_iter(
        values
            .iter()
            .enumerate()
            .map(|(i, v)| (i % 5 != 2).then_some(*v)),
    ));
    let f32s: ArrayRef = Arc::new(Float32Array::from_iter(
        values
            .iter()
            .enumerate()
            .map(|(i, v)| (i % 7 != 1).then_some(*v as f32)),
    ));
    let f16_bits: Vec<u16> = (0..3000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 16) as u16)
        .collect();
    let f16s: ArrayRef = arrow_array::make_array(
        arrow_data::ArrayData::builder(DataType::Float16)
            .len(3000)
            .add_buffer(arrow_buffer::Buffer::from_vec(f16_bits))
            .build()
            .unwrap(),
    );
    let ints: ArrayRef = Arc::new(arrow_array::Int32Array::from_iter(
        (0..3000).map(|i| (i % 3 != 0).then_some(i * 7)),
    ));
    for array in [f64s, f32s, f16s, ints] {
        for (offset, len) in [(0, 3000), (3, 2000), (1021, 1979), (2999, 1), (100, 0)] {
            let sliced = array.slice(offset, len);
            let fresh = arrow_array::make_array(sliced.to_data().clone());
            let copy = arrow_select::concat::concat(&[sliced.as_ref()]).unwrap();
            for encoding in [Encoding::Bss, Encoding::BssLz4, Encoding::Plain] {
                let a = encode_page(sliced.as_ref(), encoding).unwrap();
                let b = encode_page(copy.as_ref(), encoding).unwrap();
                let c = encode_page(fresh.as_ref(), encoding).unwrap();
                let context = format!("{} {offset}+{len} {encoding}", array.data_type());
                assert_eq!(a.to_bytes(), b.to_bytes(), "{context}");
                assert_eq!(a.to_bytes(), c.to_bytes(), "{context}");
            }
        }
    }
}

/// Runs of whole entropy-coded chunks decode their chunks' tANS streams side by side
/// (sixteen at a time where the CPU has AVX-512F): on real series, whole pages and every
/// row range decode to the values, bit for bit, as chunk after chunk does; and a page
/// with a byte changed fails whole exactly when some chunk of it fails alone, with the
/// same values when neither fails.
#[test]
fn runs_of_coded_chunks_decode_like_single_chunks() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data");
    let read = |name: &str| std::fs::read(root.join(name)).unwrap();
    let slp: Vec<f32> = read("ferret_coads_climatology_SLP.f32")
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .take(40 * 1024 + 77)
        .collect();
    let rose: Vec<f32> = read("ferret_etopo20_ROSE.f32")
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .take(40 * 1024 + 77)
        .collect();
    let mars: Vec<f64> = read("de421_mars.f64")
        .chunks_exact(8)
        .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
        .take(20 * 512 + 3)
        .collect();
    let arrays: Vec<ArrayRef> = vec![
        Arc::new(Float32Array::from(slp)),
        Arc::new(Float32Array::from(rose)),
        Arc::new(Float64Array::from(mars)),
    ];
    let mut damaged_pages = 0;
    for array in &arrays {
        for encoding in [Encoding::DeltaAns, Encoding::AlpAns] {
            let page = encode_page(array.as_ref(), encoding).unwrap();
            let decoder = page.decoder(array.data_type()).unwrap();
            let context = format!("{encoding} {}", array.data_type());
            assert_same_bits(array, decoder.decode().unwrap().as_ref(), &context);
            let n = array.len();
            for (start, end) in [(0, n), (1024, 9 * 1024), (1, n - 1), (512, n / 2 + 9)] {
                let range = decoder.decode_range(start..end).unwrap();
                assert_same_bits(&array.slice(start, end - start), range.as_ref(), &context);
            }
            // Damaged pages: decoded whole (runs) and chunk by chunk agree.
            let bytes = page.to_bytes();
            let chunk_data = 4 + page.chunks.len() * 4;
            let mut x = 77u64;
            for _ in 0..150 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let mut damaged = bytes.clone();
                let pos = chunk_data + (x as usize % (bytes.len() - chunk_data));
                damaged[pos] ^= 1 << ((x >> 60) % 8);
                let Ok(decoder) = PageDecoder::try_new(&page.encoding, page.num_values, &damaged)
                else {
                    continue;
                };
                let whole = decoder.decode();
                let one_by_one: Result<Vec<ArrayRef>, _> = (0..decoder.num_chunks())
                    .map(|i| decoder.decode_chunk(i))
                    .collect();
                match (whole, one_by_one) {
                    (Ok(whole), Ok(parts)) => {
                        let parts: Vec<&dyn Array> = parts.iter().map(AsRef::as_ref).collect();
                        let joined = arrow_select::concat::concat(&parts).unwrap();
                        assert_same_bits(&joined, whole.as_ref(), &context);
                    }
                    (Err(_), Err(_)) => damaged_pages += 1,
                    (whole, parts) => panic!(
                        "{context}, byte {pos}: whole {:?}, chunk by chunk {:?}",
                        whole.err(),
                        parts.err()
                    ),
                }
            }
        }
    }
    assert!(
        damaged_pages > 100,
        "only {damaged_pages} damaged pages failed"
    );
}
