//! Writes the fuzzers' seed corpus from real encoded pages and files:
//! `cargo run --example fuzz_corpus` fills `fuzz/seeds/{page_decode,file_read,shuffle}`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{
    ArrayRef, FixedSizeBinaryArray, Float32Array, Float64Array, Int32Array, RecordBatch,
};
use miniblock::encodings::{EncoderOptions, Strategy};
use miniblock::file::{FileWriter, WriteOptions};
use miniblock::{encode_page, Encoding, PageEncoder};
use prost::Message;

fn read(name: &str) -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("data")
            .join(name),
    )
    .expect("bundled sample")
}

/// A `page_decode` seed: the message's length (one byte) and bytes, the value count, the
/// page.
fn page_seed(page: &miniblock::EncodedPage) -> Vec<u8> {
    let message = page.encoding.encode_to_vec();
    let mut seed = vec![message.len() as u8];
    seed.extend_from_slice(&message);
    seed.extend_from_slice(&(page.num_values as u32).to_le_bytes());
    seed.extend_from_slice(&page.to_bytes());
    seed
}

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds");
    for target in ["page_decode", "file_read", "shuffle"] {
        std::fs::create_dir_all(root.join(target)).unwrap();
    }
    let f32s: Vec<f32> = read("ferret_coads_climatology_SLP.f32")
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    let f64s: Vec<f64> = read("tmy3_Dry_bulb.f64")
        .chunks_exact(8)
        .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
        .collect();
    let mut arrays: Vec<(String, ArrayRef)> = Vec::new();
    for len in [0usize, 1, 5, 700, 1500] {
        arrays.push((
            format!("f32_{len}"),
            Arc::new(Float32Array::from(f32s[..len].to_vec())),
        ));
        arrays.push((
            format!("f64_{len}"),
            Arc::new(Float64Array::from(f64s[..len].to_vec())),
        ));
        arrays.push((
            format!("f32_nulls_{len}"),
            Arc::new(Float32Array::from_iter(
                f32s[..len]
                    .iter()
                    .enumerate()
                    .map(|(i, v)| (i % 5 != 2).then_some(*v)),
            )),
        ));
    }
    let mut count = 0;
    for (name, array) in &arrays {
        for encoding in Encoding::ALL {
            let page = encode_page(array.as_ref(), encoding).unwrap();
            let file = format!("{name}_{}", encoding.name().replace('+', "_"));
            std::fs::write(root.join("page_decode").join(file), page_seed(&page)).unwrap();
            count += 1;
        }
    }
    for encoding in Encoding::ALL {
        for (rows, page_values) in [(0usize, 100usize), (10, 4), (3000, 1000)] {
            let a: ArrayRef = Arc::new(Float32Array::from_iter(
                f32s[..rows]
                    .iter()
                    .enumerate()
                    .map(|(i, v)| (i % 7 != 0).then_some(*v)),
            ));
            let b: ArrayRef = Arc::new(Float64Array::from(f64s[..rows].to_vec()));
            let batch = RecordBatch::try_from_iter([("a", a), ("b", b)]).unwrap();
            let options = WriteOptions {
                strategy: encoding.into(),
                page_values: Some(page_values),
                parallel: false,
                ..WriteOptions::default()
            };
            let mut writer =
                FileWriter::try_new(Vec::new(), batch.schema().as_ref(), options).unwrap();
            writer.write_batch(&batch).unwrap();
            let bytes = writer.finish().unwrap();
            let file = format!("{}_{rows}_{page_values}", encoding.name().replace('+', "_"));
            std::fs::write(root.join("file_read").join(file), bytes).unwrap();
            count += 1;
        }
    }
    // Pages with 64 Ki-value chunks (wide chunk tables), and auto's picks.
    let big: ArrayRef = Arc::new(Float64Array::from(f64s.clone()));
    for (name, strategy) in [
        ("wide_bss_zstd", "bss+zstd"),
        ("wide_lz4", "lz4"),
        ("wide_auto", "auto"),
    ] {
        let options = EncoderOptions::default()
            .with_chunk_values(Some(65536))
            .unwrap();
        let strategy: Strategy = strategy.parse().unwrap();
        let page = PageEncoder::for_strategy(strategy, 8, &options)
            .unwrap()
            .encode(big.as_ref())
            .unwrap();
        std::fs::write(root.join("page_decode").join(name), page_seed(&page)).unwrap();
        count += 1;
    }
    // Fill pages: SLP's land value taken out by auto, with and without nulls.
    for (name, nulls) in [("fill_slp_auto", false), ("fill_slp_nulls_auto", true)] {
        let array: ArrayRef = Arc::new(Float32Array::from_iter(
            f32s[..20_000]
                .iter()
                .enumerate()
                .map(|(i, v)| (!nulls || i % 9 != 4).then_some(*v)),
        ));
        let page = encode_page(array.as_ref(), Strategy::default()).unwrap();
        assert!(
            miniblock::encodings::short_name(&page.encoding).starts_with("fill+"),
            "{name}: {}",
            miniblock::encodings::short_name(&page.encoding)
        );
        std::fs::write(root.join("page_decode").join(name), page_seed(&page)).unwrap();
        count += 1;
    }
    // A fill page with entropy-coded run headers (`coded_fill`): hourly values whose
    // zeros fill each night.
    let hourly: ArrayRef = Arc::new(Float64Array::from_iter_values((0..6000).map(|i| {
        if i % 24 < 13 {
            0.0
        } else {
            f64::from(i % 24 * 41 % 700 + i % 7)
        }
    })));
    let page = encode_page(hourly.as_ref(), Strategy::default()).unwrap();
    assert!(
        matches!(
            page.encoding.array_encoding,
            Some(miniblock::proto::encodings::array_encoding::ArrayEncoding::CodedFill(_))
        ),
        "coded_fill_auto: {}",
        miniblock::encodings::describe(&page.encoding)
    );
    std::fs::write(
        root.join("page_decode").join("coded_fill_auto"),
        page_seed(&page),
    )
    .unwrap();
    count += 1;
    // A file of other fixed-width types, auto-encoded.
    let ints: ArrayRef = Arc::new(Int32Array::from_iter_values(
        (0..3000).map(|i| i * 7 % 1000),
    ));
    let fsb: ArrayRef = Arc::new(
        FixedSizeBinaryArray::try_from_iter(
            (0..3000u32).map(|i| (i * 31).to_be_bytes()[..3].to_vec()),
        )
        .unwrap(),
    );
    let batch = RecordBatch::try_from_iter([("i", ints), ("b", fsb)]).unwrap();
    let mut writer = FileWriter::try_new(
        Vec::new(),
        batch.schema().as_ref(),
        WriteOptions {
            page_values: Some(1000),
            ..WriteOptions::default()
        },
    )
    .unwrap();
    writer.write_batch(&batch).unwrap();
    std::fs::write(
        root.join("file_read").join("types_auto"),
        writer.finish().unwrap(),
    )
    .unwrap();
    count += 1;
    for (i, size) in [2u8, 4, 8, 5, 1, 0].into_iter().enumerate() {
        let mut seed = vec![size];
        seed.extend(
            read("tmy3_Dry_bulb.f64")
                .into_iter()
                .take(64 * usize::from(size.max(1))),
        );
        std::fs::write(root.join("shuffle").join(format!("seed_{i}")), seed).unwrap();
        count += 1;
    }
    println!("wrote {count} seeds under {}", root.display());
}
