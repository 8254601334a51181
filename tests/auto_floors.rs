//! `auto`'s size floors on every real data set in `../shared/data`, at 4 KiB and 64 KiB
//! chunks, in 1 MiB pages as the column writer cuts them: favouring size (`auto:0`) it is
//! at most 1.02x the best fixed encoding's size, and neither `auto` nor `auto:0` is ever
//! more than 1.01x plain LZ4's. (Speed floors are measured by `miniblock compare`, not by
//! tests.)

mod common;

use std::fmt::Write;
use std::fs;

use arrow_array::{ArrayRef, Float32Array, Float64Array};
use miniblock::encodings::{EncoderOptions, Strategy};
use miniblock::{Encoding, PageEncoder};

fn pages(bytes: &[u8], width: usize) -> Vec<ArrayRef> {
    bytes
        .chunks((1 << 20) / width * width)
        .map(|page| -> ArrayRef {
            if width == 4 {
                std::sync::Arc::new(Float32Array::from_iter_values(
                    page.chunks_exact(4)
                        .map(|b| f32::from_le_bytes(b.try_into().unwrap())),
                ))
            } else {
                std::sync::Arc::new(Float64Array::from_iter_values(
                    page.chunks_exact(8)
                        .map(|b| f64::from_le_bytes(b.try_into().unwrap())),
                ))
            }
        })
        .collect()
}

fn encoded_size(pages: &[ArrayRef], strategy: Strategy, width: usize, kib: usize) -> usize {
    let chunk = (kib != 4).then_some(kib * 1024 / width);
    let options = EncoderOptions::default().with_chunk_values(chunk).unwrap();
    let encoder = PageEncoder::for_strategy(strategy, width, &options).unwrap();
    pages
        .iter()
        .map(|p| encoder.encode(p.as_ref()).unwrap().encoded_len())
        .sum()
}

/// The bundled sample (`data/`, in the repository): always runs.
#[test]
fn auto_size_floors_hold_on_the_bundled_sample() {
    floors_hold_in(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data"),
        5,
    );
}

#[test]
#[cfg_attr(
    not(shared_data),
    ignore = "needs ../shared/data beside the checkout (CI has it)"
)]
fn auto_size_floors_hold_on_every_shared_data_set() {
    floors_hold_in(&common::shared_dir().join("data"), 12);
}

fn floors_hold_in(dir: &std::path::Path, at_least: usize) {
    let mut files: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "f32" || e == "f64"))
        .collect();
    files.sort();
    assert!(files.len() >= at_least, "{files:?}");
    let mut report = String::new();
    let mut failures = Vec::new();
    for path in &files {
        let width = if path.extension().is_some_and(|e| e == "f64") {
            8
        } else {
            4
        };
        let pages = pages(&fs::read(path).unwrap(), width);
        for kib in [4, 64] {
            let fixed: Vec<(Encoding, usize)> = Encoding::ALL
                .iter()
                .map(|&e| (e, encoded_size(&pages, e.into(), width, kib)))
                .collect();
            let best = fixed.iter().map(|f| f.1).min().unwrap();
            let lz4 = fixed.iter().find(|f| f.0 == Encoding::Lz4).unwrap().1;
            for (name, limit_vs_best) in [("auto:0", Some(1.02)), ("auto", None)] {
                let size = encoded_size(&pages, name.parse().unwrap(), width, kib);
                let vs_best = size as f64 / best as f64;
                let vs_lz4 = size as f64 / lz4 as f64;
                let name_of = path.file_name().unwrap().to_string_lossy();
                let _ = writeln!(
                    report,
                    "{name_of} {kib}K {name}: {vs_best:.3} of best, {vs_lz4:.3} of lz4"
                );
                if limit_vs_best.is_some_and(|l| vs_best > l) || vs_lz4 > 1.01 {
                    failures.push(format!("{name_of} {kib}K {name}"));
                }
            }
        }
    }
    println!("{report}");
    assert!(failures.is_empty(), "floors missed: {failures:?}\n{report}");
}
