//! What a raw `.f32`/`.f64` file's most frequent value (a fill value, typically) costs:
//! its share of the values and how many runs it makes, then the file encoded in 1 MiB
//! pages with a strategy (default `auto`) as it is and with that value taken out, each
//! decoded page by page (best of `REPS` passes, default 20, of a fresh `PageDecoder`
//! and `decode()` per page).
//!
//! `cargo run --release --example fill_probe -- FILE [STRATEGY]`
//!
//! The last line scales the time a value of what is left by the share left: what a
//! layer storing the fill value's runs and encoding only the other values could decode
//! at, before the cost of putting the fills back.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use arrow_array::{ArrayRef, Float32Array, Float64Array};
use miniblock::encodings::Strategy;
use miniblock::{encode_page, PageDecoder};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).ok_or("usage: fill_probe FILE [STRATEGY]")?;
    let strategy: Strategy = args.get(2).map_or("auto", String::as_str).parse()?;
    let reps: usize = std::env::var("REPS").map_or(Ok(20), |s| s.parse())?;
    let is_f64 = std::path::Path::new(path)
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("f64"));
    let width = if is_f64 { 8 } else { 4 };
    let bytes = std::fs::read(path)?;
    if bytes.len() % width != 0 {
        return Err(format!(
            "{path}: {} bytes, not whole {width}-byte values",
            bytes.len()
        )
        .into());
    }
    let values: Vec<&[u8]> = bytes.chunks_exact(width).collect();
    if values.is_empty() {
        return Err("no values".into());
    }
    let mut counts: HashMap<&[u8], usize> = HashMap::new();
    for v in &values {
        *counts.entry(v).or_default() += 1;
    }
    let (fill, count) = counts
        .into_iter()
        .max_by_key(|&(v, c)| (c, v))
        .ok_or("no values")?;
    let runs = values
        .iter()
        .enumerate()
        .filter(|&(i, v)| *v == fill && (i == 0 || values[i - 1] != fill))
        .count();
    let kept: Vec<u8> = values
        .iter()
        .filter(|v| **v != fill)
        .flat_map(|v| v.iter().copied())
        .collect();
    let shown = if width == 8 {
        format!("{:?}", f64::from_le_bytes(fill.try_into()?))
    } else {
        format!("{:?}", f32::from_le_bytes(fill.try_into()?))
    };
    println!(
        "{path}: {} values; most frequent {shown}: {count} ({:.1}%) in {runs} runs",
        values.len(),
        100.0 * count as f64 / values.len() as f64
    );
    let with = measure(&bytes, width, strategy, reps)?;
    let without = measure(&kept, width, strategy, reps)?;
    println!("as it is:      {} bytes, {:.3} ns a value", with.0, with.1);
    println!(
        "without it:    {} bytes (plus its runs), {:.3} ns a value left",
        without.0, without.1
    );
    let left = (values.len() - count) as f64 / values.len() as f64;
    println!(
        "scaled:        {:.3} ns a row ({:.3} x {:.3} left)",
        without.1 * left,
        without.1,
        left
    );
    Ok(())
}

/// Bytes of `raw` encoded in 1 MiB pages, and the best time a value of decoding them all.
fn measure(
    raw: &[u8],
    width: usize,
    strategy: Strategy,
    reps: usize,
) -> Result<(usize, f64), Box<dyn std::error::Error>> {
    let mut pages = Vec::new();
    for page in raw.chunks((1 << 20) / width * width) {
        let array: ArrayRef = if width == 8 {
            Arc::new(Float64Array::from_iter_values(
                page.chunks_exact(8)
                    .map(|b| f64::from_le_bytes(b.try_into().unwrap())),
            ))
        } else {
            Arc::new(Float32Array::from_iter_values(
                page.chunks_exact(4)
                    .map(|b| f32::from_le_bytes(b.try_into().unwrap())),
            ))
        };
        let encoded = encode_page(array.as_ref(), strategy)?;
        pages.push((
            encoded.encoding.clone(),
            encoded.num_values,
            encoded.to_bytes(),
        ));
    }
    let size = pages.iter().map(|p| p.2.len()).sum();
    let mut best = f64::MAX;
    for _ in 0..reps.max(1) {
        let start = Instant::now();
        for (encoding, n, page) in &pages {
            std::hint::black_box(PageDecoder::try_new(encoding, *n, page)?.decode()?);
        }
        best = best.min(start.elapsed().as_secs_f64());
    }
    let n = (raw.len() / width).max(1);
    Ok((size, best * 1e9 / n as f64))
}
