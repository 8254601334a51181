//! `miniblock compare [FILE...]`: every encoding on every data set, measured.

use std::path::PathBuf;
use std::time::Instant;

use arrow_array::{Array, ArrayRef};
use miniblock::{Encoding, PageDecoder, PageEncoder};
use serde_json::json;

use super::{input, output, plot, progress, sample_dir, CliError, Dtype};

/// Arguments of `compare`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Data sets: .f32/.f64 raw floats, .npy, .arrow/.feather or .parquet (every float
    /// column of each is a data set). Default: the bundled sample in data/.
    files: Vec<PathBuf>,
    /// Read FILEs as raw little-endian floats of this type, whatever their extension.
    #[arg(long, value_enum)]
    dtype: Option<Dtype>,
    /// Only these columns of IPC/Parquet files (repeatable).
    #[arg(long = "column", value_name = "NAME")]
    columns: Vec<String>,
    /// Print one JSON object per data set and encoding instead of the table.
    #[arg(long)]
    json: bool,
    /// Also draw compression ratio against decode speed as an SVG.
    #[arg(long, value_name = "OUT.svg")]
    plot: Option<PathBuf>,
    /// Timed runs per measurement (the median is reported).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=1000))]
    runs: u64,
    /// Values per page (default: about 1 MiB of values).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    page_values: Option<u64>,
}

impl Default for Args {
    fn default() -> Self {
        Self {
            files: Vec::new(),
            dtype: None,
            columns: Vec::new(),
            json: false,
            plot: None,
            runs: 5,
            page_values: None,
        }
    }
}

/// One data set under one encoding.
#[derive(Debug, Clone)]
pub struct Measurement {
    /// Data set name (file stem, or stem:column).
    pub dataset: String,
    /// The encoding.
    pub encoding: Encoding,
    /// Values in the data set.
    pub values: usize,
    /// Bytes of the values as they are.
    pub raw_bytes: u64,
    /// Bytes of the encoded pages: data plus chunk tables.
    pub encoded_bytes: u64,
    /// Raw bytes encoded per second, in GB/s (median run).
    pub encode_gbps: f64,
    /// Raw bytes decoded per second, in GB/s (median run).
    pub decode_gbps: f64,
}

impl Measurement {
    /// raw / encoded.
    pub fn ratio(&self) -> f64 {
        self.raw_bytes as f64 / self.encoded_bytes.max(1) as f64
    }
}

fn median(mut seconds: Vec<f64>) -> f64 {
    seconds.sort_by(f64::total_cmp);
    seconds[seconds.len() / 2].max(1e-9)
}

/// Encodes and decodes `column` page by page with `encoding`, `runs` times, checking
/// that the decoded pages equal the input bit for bit.
fn measure(
    dataset: &str,
    column: &ArrayRef,
    encoding: Encoding,
    page_values: Option<u64>,
    runs: u64,
) -> Result<Measurement, CliError> {
    let fail = |e: miniblock::Error| CliError::new(format!("{dataset} with {encoding}: {e}"));
    let width = column.data_type().primitive_width().unwrap_or(4);
    let page_values = page_values.map_or((1 << 20) / width, |n| n as usize);
    let pages: Vec<ArrayRef> = (0..column.len())
        .step_by(page_values)
        .map(|start| column.slice(start, page_values.min(column.len() - start)))
        .collect();
    let encoder = PageEncoder::new(encoding.compressor(width as u64 * 8).map_err(fail)?);
    let mut encode_times = Vec::new();
    let mut encoded = Vec::new();
    // One untimed warm-up run (allocator, caches, clock), then `runs` timed ones.
    for run in 0..=runs {
        encoded.clear(); // free the previous run's pages before timing the next
        let start = Instant::now();
        encoded = pages
            .iter()
            .map(|p| encoder.encode(p.as_ref()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(fail)?;
        if run > 0 {
            encode_times.push(start.elapsed().as_secs_f64());
        }
    }
    let tables: Vec<Vec<u8>> = encoded
        .iter()
        .map(miniblock::EncodedPage::chunk_table)
        .collect();
    let mut decode_times = Vec::new();
    for run in 0..=runs {
        let start = Instant::now();
        let decoded = encoded
            .iter()
            .zip(&tables)
            .map(|(page, table)| {
                PageDecoder::from_parts(&page.encoding, page.num_values, table, &page.data)?
                    .with_data_type(column.data_type())?
                    .decode()
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(fail)?;
        if run > 0 {
            decode_times.push(start.elapsed().as_secs_f64());
        }
        if run == 0 {
            for (i, (page, back)) in pages.iter().zip(&decoded).enumerate() {
                if page.to_data() != back.to_data() {
                    return Err(CliError::new(format!(
                        "{dataset} with {encoding}: page {i} did not decode to its input"
                    )));
                }
            }
        }
    }
    let raw_bytes = (column.len() * width) as u64;
    Ok(Measurement {
        dataset: dataset.to_owned(),
        encoding,
        values: column.len(),
        raw_bytes,
        encoded_bytes: encoded.iter().map(|p| p.encoded_len() as u64).sum(),
        encode_gbps: raw_bytes as f64 / median(encode_times) / 1e9,
        decode_gbps: raw_bytes as f64 / median(decode_times) / 1e9,
    })
}

/// The bundled sample's files, sorted.
fn sample_files() -> Result<Vec<PathBuf>, CliError> {
    let dir = sample_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| {
            CliError::new(format!(
                "bundled sample not found at {}: {e}",
                dir.display()
            ))
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "f32" || e == "f64"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(CliError::new(format!(
            "no .f32/.f64 files in {}",
            dir.display()
        )));
    }
    Ok(files)
}

/// The CPU's name, for reports.
pub fn cpu_name() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_owned())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_owned())
}

/// Runs `compare`.
pub fn run(args: &Args) -> Result<(), CliError> {
    let files = if args.files.is_empty() {
        sample_files()?
    } else {
        args.files.clone()
    };
    if !args.json {
        println!(
            "miniblock compare: pages of {} values, median of {} runs, {} on {} ({} threads)",
            args.page_values
                .map_or_else(|| "1 MiB of".to_owned(), |n| n.to_string()),
            args.runs,
            if cfg!(debug_assertions) {
                "DEBUG BUILD (use --release for real speeds)"
            } else {
                "release build"
            },
            cpu_name(),
            std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
        );
        println!(
            "\n{:<36} {:>10} {:<8} {:>12} {:>7} {:>9} {:>9}",
            "dataset", "values", "encoding", "bytes", "ratio", "enc GB/s", "dec GB/s"
        );
    }
    let mut all = Vec::new();
    for path in &files {
        let input = input::open(path, args.dtype, &args.columns)?;
        let bar = progress::bar(input.file_bytes, &format!("measuring {}", input.name));
        let stem = input.name.clone();
        let columns = input.read_all()?;
        let single = columns.len() == 1;
        for (name, column) in columns {
            let dataset = if single {
                stem.clone()
            } else {
                format!("{stem}:{name}")
            };
            if column.is_empty() {
                return Err(CliError::new(format!(
                    "{}: the input holds no values",
                    path.display()
                )));
            }
            let results = Encoding::ALL
                .iter()
                .map(|&e| measure(&dataset, &column, e, args.page_values, args.runs))
                .collect::<Result<Vec<_>, _>>()?;
            bar.inc(input_bytes(&column));
            let best = results.iter().map(Measurement::ratio).fold(0.0, f64::max);
            for m in &results {
                let is_best = m.ratio() >= best;
                if args.json {
                    println!(
                        "{}",
                        json!({
                            "dataset": m.dataset,
                            "encoding": m.encoding.name(),
                            "values": m.values,
                            "raw_bytes": m.raw_bytes,
                            "encoded_bytes": m.encoded_bytes,
                            "ratio": m.ratio(),
                            "encode_gbps": m.encode_gbps,
                            "decode_gbps": m.decode_gbps,
                            "best": is_best,
                        })
                    );
                } else {
                    println!(
                        "{:<36} {:>10} {:<8} {:>12} {:>7.3} {:>9.2} {:>9.2}{}",
                        m.dataset,
                        m.values,
                        m.encoding.name(),
                        m.encoded_bytes,
                        m.ratio(),
                        m.encode_gbps,
                        m.decode_gbps,
                        if is_best { "  * best ratio" } else { "" }
                    );
                }
            }
            all.extend(results);
        }
        bar.finish_and_clear();
    }
    if let Some(path) = &args.plot {
        let svg = plot::svg(&all);
        output::atomic_write(path, |w| {
            use std::io::Write;
            w.write_all(svg.as_bytes())
                .map_err(|e| CliError::new(format!("writing {}: {e}", path.display())))
        })?;
        if !args.json {
            println!("\nplot written to {}", path.display());
        }
    }
    Ok(())
}

fn input_bytes(column: &ArrayRef) -> u64 {
    (column.len() * column.data_type().primitive_width().unwrap_or(4)) as u64
}
