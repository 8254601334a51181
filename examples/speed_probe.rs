//! Times one strategy on a raw .f32/.f64 file through the page API, one thread, for
//! profiling (`perf record`): `cargo run --release --example speed_probe -- FILE STRATEGY
//! [encode|decode|file] [SECONDS] [CHUNK_VALUES]`. Pages are 1 MiB, as in `benches/floats.rs`; every decode is
//! checked against the input once; `file` reads a column file (a new reader each time,
//! into a buffer) written with those pages.
use miniblock::encodings::{EncoderOptions, Strategy};
use miniblock::PageEncoder;
use std::time::{Duration, Instant};

#[path = "../benches/common.rs"]
mod common;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: speed_probe FILE STRATEGY [encode|decode] [SECONDS] [CHUNK_VALUES]";
    let path = args.get(1).ok_or(usage)?;
    let strategy: Strategy = args.get(2).ok_or(usage)?.parse()?;
    let what = args.get(3).map_or("decode", String::as_str);
    let seconds: f64 = args.get(4).map_or(Ok(2.0), |s| s.parse())?;
    let chunk = args.get(5).map(|s| s.parse()).transpose()?;
    let is_f64 = std::path::Path::new(path)
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("f64"));
    let width = if is_f64 { 8 } else { 4 };
    let bytes = std::fs::read(path)?;
    let encoder = PageEncoder::for_strategy(
        strategy,
        width,
        &EncoderOptions::default().with_chunk_values(chunk)?,
    )?;
    let encode = || -> Result<Vec<_>, miniblock::Error> {
        bytes
            .chunks((1 << 20) / width * width)
            .map(|page| encoder.encode_values(page, None))
            .collect()
    };
    let pages = encode()?;
    if std::env::var_os("SPEED_PROBE_DESCRIBE").is_some() {
        for p in &pages {
            eprintln!("{}", miniblock::encodings::describe(&p.encoding));
        }
    }
    let mut out = vec![0u8; bytes.len()];
    let pages: common::Pages = pages
        .into_iter()
        .map(|p| {
            let table = p.chunk_table();
            (p, table)
        })
        .collect();
    let decode = |out: &mut [u8]| -> Result<(), miniblock::Error> {
        common::decode(&pages, out, width);
        Ok(())
    };
    decode(&mut out)?;
    if out != bytes {
        return Err("round trip differs".into());
    }
    let file = {
        use miniblock::arrow::array::{ArrayRef, Float32Array, Float64Array, RecordBatch};
        use miniblock::file::{FileWriter, WriteOptions};
        let column: ArrayRef = if width == 8 {
            std::sync::Arc::new(Float64Array::from_iter_values(
                bytes
                    .chunks_exact(8)
                    .map(|b| f64::from_le_bytes(b.try_into().expect("8"))),
            ))
        } else {
            std::sync::Arc::new(Float32Array::from_iter_values(
                bytes
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes(b.try_into().expect("4"))),
            ))
        };
        let batch = RecordBatch::try_from_iter([("v", column)])?;
        let options = WriteOptions {
            page_values: Some((1 << 20) / width),
            parallel: false,
            ..WriteOptions::default()
        }
        .with_strategy(strategy);
        let mut writer = FileWriter::try_new(Vec::new(), &batch.schema(), options)?;
        writer.write_batch(&batch)?;
        writer.finish()?
    };
    let read_file = |out: &mut [u8]| -> Result<(), miniblock::Error> {
        let mut reader = miniblock::file::FileReader::open(std::io::Cursor::new(&file))?;
        let rows = reader.num_rows();
        reader.read_column_range_into(0, 0..rows, out)?;
        Ok(())
    };
    out.fill(0);
    read_file(&mut out)?;
    if out != bytes {
        return Err("file round trip differs".into());
    }
    let stored: usize = pages.iter().map(|(p, _)| p.encoded_len()).sum();
    let start = Instant::now();
    let mut runs = 0u32;
    while start.elapsed() < Duration::from_secs_f64(seconds) {
        if what == "encode" {
            std::hint::black_box(encode()?);
        } else if what == "file" {
            read_file(&mut out)?;
        } else {
            decode(&mut out)?;
        }
        runs += 1;
    }
    let per_run = start.elapsed().as_secs_f64() / f64::from(runs);
    println!(
        "{path} {strategy} ratio {:.3} {what} {:.3} GB/s ({runs} runs)",
        bytes.len() as f64 / stored as f64,
        bytes.len() as f64 / per_run / 1e9
    );
    Ok(())
}
