//! Reads the results of `cargo bench` (criterion's `target/criterion`) and prints the
//! figures of docs/benchmarks.md: throughputs, the ratios the project's floors are about, and
//! pass/fail for each floor. Every ratio comes from benchmarks of one `cargo bench` run.
//!
//! `cargo bench --bench bss --bench column && cargo run --release --example bench_report`

#[path = "../benches/common.rs"]
mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{ArrayRef, Float32Array, Float64Array};
use miniblock::encodings::ChunkStorage;
use miniblock::{encode_page, Encoding};

/// (group, function) -> (median ns per iteration, bytes per iteration)
type Results = BTreeMap<(String, String), (f64, Option<f64>)>;

fn collect(dir: &Path, out: &mut Results) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n == "new") {
                read_one(&path, out);
            } else {
                collect(&path, out);
            }
        }
    }
}

fn read_one(dir: &Path, out: &mut Results) {
    let read = |name: &str| -> Option<serde_json::Value> {
        serde_json::from_str(&std::fs::read_to_string(dir.join(name)).ok()?).ok()
    };
    let (Some(bench), Some(estimates)) = (read("benchmark.json"), read("estimates.json")) else {
        return;
    };
    let group = bench["group_id"].as_str().unwrap_or_default().to_owned();
    let mut function = bench["function_id"].as_str().unwrap_or_default().to_owned();
    if function.is_empty() {
        bench["value_str"]
            .as_str()
            .unwrap_or_default()
            .clone_into(&mut function);
    }
    let median = estimates["median"]["point_estimate"]
        .as_f64()
        .unwrap_or(f64::NAN);
    let bytes = bench["throughput"]["Bytes"].as_f64();
    out.insert((group, function), (median, bytes));
}

fn main() {
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| PathBuf::from("target"), PathBuf::from);
    let mut results = Results::new();
    collect(&target.join("criterion"), &mut results);
    if results.is_empty() {
        eprintln!(
            "no criterion results under {}; run `cargo bench --bench bss --bench column` first",
            target.display()
        );
        std::process::exit(1);
    }
    let time = |g: &str, f: &str| results.get(&(g.to_owned(), f.to_owned())).map(|r| r.0);
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_owned())
        })
        .unwrap_or_default();
    println!(
        "CPU: {cpu}, {} threads; kernels: {}\n",
        std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
        miniblock::kernel_name()
    );

    // Throughput table
    let functions = [
        "memcpy",
        "bss_kernel_split",
        "bss_kernel_unsplit",
        "bss_encode",
        "bss_decode",
        "bss_decode_array",
        "lz4_encode",
        "lz4_decode",
        "bss_lz4_encode",
        "bss_lz4_decode",
        "bss_lz4_decode_array",
        "parquet_bss_encode",
        "parquet_bss_decode",
    ];
    println!("| page | {} |", functions.join(" | "));
    println!("|---|{}", "---:|".repeat(functions.len()));
    let mut groups: Vec<&String> = results
        .keys()
        .map(|k| &k.0)
        .filter(|g| g.starts_with("f32/") || g.starts_with("f64/"))
        .collect();
    groups.dedup();
    for g in &groups {
        let cells: Vec<String> = functions
            .iter()
            .map(|f| match results.get(&((*g).clone(), (*f).to_owned())) {
                Some((ns, Some(bytes))) => format!("{:.2}", bytes / ns),
                _ => "-".to_owned(),
            })
            .collect();
        println!("| {g} | {} |", cells.join(" | "));
    }
    println!("\n(GB/s of raw values, median of criterion's samples)\n");
    print_stored_sizes(&groups);

    // Floors
    let mut rows = Vec::new();
    let mut floor = |what: String, value: Option<f64>, min: f64| {
        let verdict = match value {
            Some(v) if v >= min => "pass",
            Some(_) => "FAIL",
            None => "not measured",
        };
        rows.push(format!(
            "| {what} | {} | >= {min} | {verdict} |",
            value.map_or("-".to_owned(), |v| format!("{v:.3}"))
        ));
    };
    for ty in ["f32", "f64"] {
        let min = if ty == "f32" { 0.8 } else { 0.6 };
        for data in ["real", "synthetic"] {
            let g = format!("{ty}/{data}/1MiB");
            let memcpy = time(&g, "memcpy");
            for op in ["encode", "decode"] {
                let bss = time(&g, &format!("bss_{op}"));
                floor(
                    format!("{g}: BSS page {op} / memcpy (throughput)"),
                    memcpy.zip(bss).map(|(m, b)| m / b),
                    min,
                );
            }
            for op in ["split", "unsplit"] {
                let kernel = time(&g, &format!("bss_kernel_{op}"));
                floor(
                    format!("{g}: BSS kernel {op} over 4 KiB chunks / memcpy (throughput)"),
                    memcpy.zip(kernel).map(|(m, k)| m / k),
                    min,
                );
            }
        }
    }
    for g in &groups {
        let enc = time(g, "parquet_bss_encode")
            .zip(time(g, "bss_encode"))
            .map(|(p, b)| p / b);
        floor(format!("{g}: BSS encode / arrow-rs BSS encode"), enc, 5.0);
        let dec = time(g, "parquet_bss_decode")
            .zip(time(g, "bss_decode"))
            .map(|(p, b)| p / b);
        floor(format!("{g}: BSS decode / arrow-rs BSS decode"), dec, 1.5);
    }
    for g in &groups {
        let enc = time(g, "lz4_encode")
            .zip(time(g, "bss_lz4_encode"))
            .map(|(l, b)| l / b);
        floor(format!("{g}: BSS+LZ4 encode / LZ4 encode"), enc, 0.95);
        let dec = time(g, "lz4_decode")
            .zip(time(g, "bss_lz4_decode"))
            .map(|(l, b)| l / b);
        floor(format!("{g}: BSS+LZ4 decode / LZ4 decode"), dec, 0.8);
    }
    let access: Vec<String> = results
        .keys()
        .map(|k| k.0.clone())
        .filter(|g| g.starts_with("chunk_access/"))
        .collect();
    let mut seen = Vec::new();
    for g in access {
        if seen.contains(&g) {
            continue;
        }
        seen.push(g.clone());
        let whole = time(&g, "whole_page");
        let one = results
            .iter()
            .find(|(k, _)| k.0 == g && k.1.starts_with("one_chunk"))
            .map(|(_, v)| v.0);
        floor(
            format!("{g}: whole page / one chunk (time)"),
            whole.zip(one).map(|(w, o)| w / o),
            200.0,
        );
    }
    let par = time("column_64MiB", "serial")
        .zip(time("column_64MiB", "parallel"))
        .map(|(s, p)| s / p);
    floor(
        "column_64MiB: parallel / serial write (throughput)".to_owned(),
        par,
        1.7,
    );
    println!("| floor | measured | wanted | verdict |\n|---|---:|---:|---|");
    for row in rows {
        println!("{row}");
    }
}

/// What LZ4 alone and BSS+LZ4 make of each benchmarked page (the same bytes the benches
/// build): the compression ratio, and how many chunks were left raw because compressing
/// them gained nothing. Where LZ4 alone leaves every chunk raw, its "decode" is a copy.
fn print_stored_sizes(groups: &[&String]) {
    println!(
        "| page | lz4 ratio | lz4 chunks stored raw | bss+lz4 ratio | bss+lz4 chunks stored raw |"
    );
    println!("|---|---:|---:|---:|---:|");
    for g in groups {
        let parts: Vec<&str> = g.split('/').collect();
        let (width, len) = match (parts.first(), parts.get(2)) {
            (Some(&"f32"), Some(size)) => (4, page_bytes(size)),
            (Some(&"f64"), Some(size)) => (8, page_bytes(size)),
            _ => continue,
        };
        let Some(len) = len else { continue };
        let bytes = if parts.get(1) == Some(&"real") {
            common::real(width, len).1
        } else {
            common::synthetic(width, len)
        };
        let n = bytes.len() / width;
        let buffer = arrow_buffer::Buffer::from(bytes);
        let array: ArrayRef = if width == 4 {
            Arc::new(Float32Array::new(
                arrow_buffer::ScalarBuffer::new(buffer, 0, n),
                None,
            ))
        } else {
            Arc::new(Float64Array::new(
                arrow_buffer::ScalarBuffer::new(buffer, 0, n),
                None,
            ))
        };
        let mut cells = Vec::new();
        for encoding in [Encoding::Lz4, Encoding::BssLz4] {
            let page = encode_page(array.as_ref(), encoding).expect("encode");
            let raw = page
                .chunks
                .iter()
                .filter(|c| c.storage == ChunkStorage::Raw)
                .count();
            cells.push(format!(
                "{:.3} | {raw} of {}",
                len as f64 / page.data.len() as f64,
                page.chunks.len()
            ));
        }
        println!("| {g} | {} |", cells.join(" | "));
    }
    println!();
}

fn page_bytes(size: &str) -> Option<usize> {
    match size {
        "4KiB" => Some(4096),
        "64KiB" => Some(64 << 10),
        "1MiB" => Some(1 << 20),
        _ => None,
    }
}
