//! What a raw `.f32`/`.f64` file's most frequent value (a fill value, typically) costs:
//! its share of the values and how many runs it makes, then the file encoded in 1 MiB
//! pages with an `auto` strategy (default `auto`) without and with its fill layer, each
//! decoded page by page (best of `REPS` passes, default 20, of a fresh `PageDecoder`
//! and `decode()` per page; with `ROWS` set, each page's decoder made once and the page
//! decoded `ROWS` rows a call, as a scan's batches are), with the encodings its pages
//! took.
//!
//! `cargo run --release --example fill_probe -- FILE [STRATEGY]`

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Instant;

use arrow_array::{ArrayRef, Float32Array, Float64Array};
use miniblock::encodings::{short_name, Strategy};
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
    let Strategy::Auto(auto) = strategy else {
        // One encoding throughout: it has no fill layer to switch.
        let (size, ns, chosen) = measure(&bytes, width, strategy, reps)?;
        println!(
            "{:<13} {size} bytes, {ns:.3} ns a value; pages: {chosen:?}",
            "one encoding"
        );
        return Ok(());
    };
    for (name, fills) in [("without fill", false), ("with fill", true)] {
        let strategy = Strategy::Auto(auto.with_fills(fills));
        let (size, ns, chosen) = measure(&bytes, width, strategy, reps)?;
        println!("{name:<13} {size} bytes, {ns:.3} ns a value; pages: {chosen:?}");
    }
    Ok(())
}

/// Bytes of `raw` encoded in 1 MiB pages, the best time a value of decoding them all,
/// and how many pages took each encoding.
type Measured = (usize, f64, BTreeMap<String, usize>);

/// [`Measured`] for `raw` encoded with `strategy`.
fn measure(
    raw: &[u8],
    width: usize,
    strategy: Strategy,
    reps: usize,
) -> Result<Measured, Box<dyn std::error::Error>> {
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
    let mut chosen = BTreeMap::new();
    for (encoding, _, _) in &pages {
        *chosen.entry(short_name(encoding)).or_insert(0) += 1;
    }
    let rows: Option<usize> = std::env::var("ROWS").ok().map(|s| s.parse()).transpose()?;
    let decoders = pages
        .iter()
        .map(|(encoding, n, page)| PageDecoder::try_new(encoding, *n, page))
        .collect::<Result<Vec<_>, _>>()?;
    let mut best = f64::MAX;
    for _ in 0..reps.max(1) {
        let start = Instant::now();
        match rows {
            None => {
                for (encoding, n, page) in &pages {
                    std::hint::black_box(PageDecoder::try_new(encoding, *n, page)?.decode()?);
                }
            }
            Some(rows) => {
                for decoder in &decoders {
                    let n = decoder.num_values();
                    for from in (0..n).step_by(rows.max(1)) {
                        let range = from..(from + rows).min(n);
                        std::hint::black_box(decoder.decode_range(range)?);
                    }
                }
            }
        }
        best = best.min(start.elapsed().as_secs_f64());
    }
    let n = (raw.len() / width).max(1);
    Ok((size, best * 1e9 / n as f64, chosen))
}
