//! Reads the results of `cargo bench` (criterion's `target/criterion`) and prints the
//! figures of BENCHMARKS.md: throughputs, the ratios the project's floors are about, and
//! pass/fail for each floor. Every ratio comes from benchmarks of one `cargo bench` run.
//!
//! `cargo bench --bench bss --bench column && cargo run --release --example bench_report`

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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
        "lz4_encode",
        "lz4_decode",
        "bss_lz4_encode",
        "bss_lz4_decode",
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
            value.map_or("-".to_owned(), |v| format!("{v:.2}"))
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
