//! Whole-column reads with the pages decoded on one thread and on several
//! (`FileReader::set_parallel`), alternating read by read so that both see the same
//! machine: `cargo run --release --example parallel_probe -- [SECONDS] FILE...` (raw
//! .f32/.f64 files, each written with `auto:0` in pages of 256 KiB, as in
//! `benches/parallel.rs`). Each read opens a new reader over the file's bytes and decodes
//! the column into a caller's buffer, checksums verified; the first read of each kind
//! is checked bit for bit. Prints each kind's median and fastest read and the scaling
//! (serial time over parallel time) of both.
use std::io::Cursor;
use std::time::Instant;

use arrow_array::RecordBatch;
use miniblock::file::{FileReader, FileWriter, WriteOptions};

#[path = "../benches/common.rs"]
mod common;

const PAGE_BYTES: usize = 256 * 1024;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let seconds = match args.first().map(|a| a.parse::<f64>()) {
        Some(Ok(s)) => {
            args.remove(0);
            s
        }
        _ => 4.0,
    };
    if args.is_empty() {
        return Err("usage: parallel_probe [SECONDS] FILE...".into());
    }
    for path in &args {
        let bytes = std::fs::read(path)?;
        let f64s = std::path::Path::new(path)
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("f64"));
        let width = if f64s { 8 } else { 4 };
        let array = common::float_array(&bytes, width);
        let batch = RecordBatch::try_from_iter([("v", array)])?;
        let options = WriteOptions {
            page_values: Some(PAGE_BYTES / width),
            ..WriteOptions::default()
        }
        .with_strategy("auto:0".parse::<miniblock::encodings::Strategy>()?);
        let mut writer = FileWriter::try_new(Vec::new(), &batch.schema(), options)?;
        writer.write_batch(&batch)?;
        let file = writer.finish()?;
        let rows = (bytes.len() / width) as u64;
        let mut out = vec![0u8; bytes.len()];
        let mut times = [Vec::new(), Vec::new()];
        let start = Instant::now();
        while start.elapsed().as_secs_f64() < seconds || times[1].is_empty() {
            for (kind, parallel) in [false, true].into_iter().enumerate() {
                if times[kind].is_empty() {
                    out.fill(0);
                }
                let t = Instant::now();
                let mut reader = FileReader::open(Cursor::new(&file[..]))?;
                reader.set_parallel(parallel);
                reader.read_column_range_into(0, 0..rows, &mut out)?;
                drop(reader);
                times[kind].push(t.elapsed().as_secs_f64() * 1e3);
                if times[kind].len() == 1 && out != bytes {
                    return Err(format!("{path}: parallel {parallel} read differs").into());
                }
            }
        }
        for t in &mut times {
            t.sort_by(f64::total_cmp);
        }
        let median = |t: &[f64]| t[t.len() / 2];
        let name = path.rsplit('/').next().unwrap_or(path);
        println!(
            "{name}: {} pages, {} reads each; serial median {:.3} ms, fastest {:.3}; parallel median {:.3} ms, fastest {:.3}; scaling {:.2} (medians), {:.2} (fastest)",
            bytes.len().div_ceil(PAGE_BYTES),
            times[0].len(),
            median(&times[0]),
            times[0][0],
            median(&times[1]),
            times[1][0],
            median(&times[0]) / median(&times[1]),
            times[0][0] / times[1][0],
        );
    }
    Ok(())
}
