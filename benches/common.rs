//! Data for the benches: real columns from `../shared/data` (or the bundled sample when
//! that folder is absent), tiled to the length a bench needs, and a synthetic series.

#![allow(dead_code)]

use std::path::PathBuf;

/// Reads the first of `names` found in `../shared/data` or `data/` as raw little-endian bytes.
pub fn real_bytes(names: &[&str]) -> (String, Vec<u8>) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    for dir in [root.join("../shared/data"), root.join("data")] {
        for name in names {
            if let Ok(bytes) = std::fs::read(dir.join(name)) {
                return ((*name).to_owned(), bytes);
            }
        }
    }
    panic!("none of {names:?} found in ../shared/data or data/");
}

/// `bytes` repeated until it is exactly `len` bytes long.
pub fn tiled(bytes: &[u8], len: usize) -> Vec<u8> {
    bytes.iter().copied().cycle().take(len).collect()
}

/// A smooth synthetic series of `len` bytes of f32 or f64 values.
pub fn synthetic(width: usize, len: usize) -> Vec<u8> {
    let n = len / width;
    let mut out = Vec::with_capacity(len);
    for i in 0..n {
        let v = (i as f64 * 0.001).sin() * 1000.0 + (i as f64 * 0.37).cos();
        if width == 4 {
            out.extend_from_slice(&(v as f32).to_le_bytes());
        } else {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
    out
}

/// Real data for each width: f32 ocean temperatures, f64 weather columns.
pub fn real(width: usize, len: usize) -> (String, Vec<u8>) {
    let (name, bytes) = if width == 4 {
        real_bytes(&[
            "ferret_levitus_climatology_TEMP.f32",
            "ferret_etopo20_ROSE.f32",
        ])
    } else {
        real_bytes(&["tmy3_all_cols.f64"])
    };
    (name, tiled(&bytes, len))
}

/// Encoded pages, each with its chunk table.
pub type Pages = Vec<(miniblock::page::EncodedPage, Vec<u8>)>;

/// Decodes `pages` whole, one after another, into `out`.
pub fn decode(pages: &Pages, out: &mut [u8], width: usize) {
    let mut at = 0;
    for (page, table) in pages {
        let decoder = miniblock::PageDecoder::from_parts(
            &page.encoding,
            &page.buffer_slices(),
            page.num_values,
            table,
            page.table_format(),
            &page.data,
        )
        .unwrap();
        let len = page.num_values as usize * width;
        decoder
            .decode_into(0..page.num_values as usize, &mut out[at..at + len], None)
            .unwrap();
        at += len;
    }
}

/// Decodes a Parquet file of one fixed-width column into `out`.
pub fn parquet_decompress(file: &bytes::Bytes, out: &mut [u8], width: usize) {
    use arrow_array::Array;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let reader = ParquetRecordBatchReaderBuilder::try_new(file.clone())
        .unwrap()
        .build()
        .unwrap();
    let mut at = 0;
    for batch in reader {
        let data = batch.unwrap().column(0).to_data();
        let values = &data.buffers()[0].as_slice()
            [data.offset() * width..(data.offset() + data.len()) * width];
        out[at..at + values.len()].copy_from_slice(values);
        at += values.len();
    }
}

/// The raw `.f32`/`.f64` files of `../shared/data` (or of the bundled `data/` when that
/// folder is absent) of at least `min_bytes`, sorted.
pub fn float_files(min_bytes: u64) -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let shared = root.join("../shared/data");
    let dir = if shared.is_dir() {
        shared
    } else {
        root.join("data")
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "f32" || e == "f64"))
        .filter(|p| std::fs::metadata(p).is_ok_and(|m| m.len() >= min_bytes))
        .collect();
    files.sort();
    files
}

/// Raw little-endian floats of `width` bytes (4 or 8) as a one-column Arrow array.
pub fn float_array(bytes: &[u8], width: usize) -> arrow_array::ArrayRef {
    use arrow_array::{Float32Array, Float64Array};
    if width == 4 {
        std::sync::Arc::new(Float32Array::from_iter_values(
            bytes
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes(b.try_into().unwrap())),
        ))
    } else {
        std::sync::Arc::new(Float64Array::from_iter_values(
            bytes
                .chunks_exact(8)
                .map(|b| f64::from_le_bytes(b.try_into().unwrap())),
        ))
    }
}
