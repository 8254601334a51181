//! `miniblock compare [FILE...]`: every encoding on every data set, measured.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use arrow_array::{Array, ArrayRef};
use miniblock::encodings::{AutoOptions, EncoderOptions, Strategy};
use miniblock::page::value_width;
use miniblock::{Encoding, PageDecoder, PageEncoder};
use serde_json::json;

use super::{input, output, parse_strategy, plot, progress, sample_dir, CliError, Dtype};

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
    /// Encodings to measure (comma-separated): plain, lz4, zstd, bss, bss+lz4, bss+zstd,
    /// alp, alp+lz4, alp+zstd (32- and 64-bit floats), auto (default knob) and auto:GAIN (auto:0 favours size). Default: all of them,
    /// with auto and auto:0.
    #[arg(long, value_delimiter = ',', value_parser = parse_strategy)]
    encoding: Vec<Strategy>,
    /// Chunk sizes to measure, in KiB of values (comma-separated; default 4,64).
    #[arg(long, value_delimiter = ',', value_name = "KIB", value_parser = clap::value_parser!(u64).range(1..=4096))]
    chunk_kib: Vec<u64>,
    /// Zstd level for the zstd encodings.
    #[arg(long, value_name = "L", default_value_t = miniblock::encodings::DEFAULT_ZSTD_LEVEL, allow_negative_numbers = true)]
    zstd_level: i32,
    /// Print one JSON object per data set, chunk size and encoding instead of the table.
    #[arg(long)]
    json: bool,
    /// Also draw compression ratio against decode speed as an SVG.
    #[arg(long, value_name = "OUT.svg")]
    plot: Option<PathBuf>,
    /// Overwrite an existing plot file.
    #[arg(short = 'f', long)]
    force: bool,
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
            encoding: Vec::new(),
            chunk_kib: Vec::new(),
            zstd_level: miniblock::encodings::DEFAULT_ZSTD_LEVEL,
            json: false,
            plot: None,
            force: false,
            runs: 5,
            page_values: None,
        }
    }
}

impl Args {
    fn strategies(&self) -> Vec<Strategy> {
        if !self.encoding.is_empty() {
            return self.encoding.clone();
        }
        let mut all: Vec<Strategy> = Encoding::ALL.iter().map(|&e| e.into()).collect();
        all.push(Strategy::default());
        all.push(Strategy::Auto(
            AutoOptions::default()
                .with_min_gain(0.0)
                .expect("0 is a valid gain"),
        ));
        all
    }

    fn chunk_kib(&self) -> Vec<u64> {
        if self.chunk_kib.is_empty() {
            vec![4, 64]
        } else {
            self.chunk_kib.clone()
        }
    }
}

/// One data set under one encoding and chunk size.
#[derive(Debug, Clone)]
pub struct Measurement {
    /// Data set name (file stem, or stem:column).
    pub dataset: String,
    /// The encoding, or `auto`.
    pub strategy: Strategy,
    /// Bytes of values per chunk.
    pub chunk_bytes: usize,
    /// Pages per encoding actually used.
    pub chosen: BTreeMap<&'static str, usize>,
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

/// Encodes and decodes `column` page by page with `strategy`, `runs` times, checking
/// that the decoded pages equal the input bit for bit.
fn measure(
    dataset: &str,
    column: &ArrayRef,
    strategy: Strategy,
    options: &EncoderOptions,
    page_values: Option<u64>,
    runs: u64,
) -> Result<Measurement, CliError> {
    let fail = |e: miniblock::Error| CliError::new(format!("{dataset} with {strategy}: {e}"));
    let width = value_width(column.data_type()).map_err(fail)?;
    let page_values = page_values.map_or((1 << 20) / width, |n| n as usize);
    let pages: Vec<ArrayRef> = (0..column.len())
        .step_by(page_values)
        .map(|start| column.slice(start, page_values.min(column.len() - start)))
        .collect();
    let encoder = PageEncoder::for_strategy(strategy, width, options).map_err(fail)?;
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
                PageDecoder::from_parts(
                    &page.encoding,
                    page.num_values,
                    table,
                    page.table_format(),
                    &page.data,
                )?
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
                        "{dataset} with {strategy}: page {i} did not decode to its input"
                    )));
                }
            }
        }
    }
    let mut chosen = BTreeMap::new();
    for page in &encoded {
        let name = page.encoding_kind().map_or("other", Encoding::name);
        *chosen.entry(name).or_insert(0) += 1;
    }
    let raw_bytes = (column.len() * width) as u64;
    Ok(Measurement {
        dataset: dataset.to_owned(),
        strategy,
        chunk_bytes: options.chunk_values_for(width).map_err(fail)? * width,
        chosen,
        values: column.len(),
        raw_bytes,
        encoded_bytes: encoded.iter().map(|p| p.encoded_len() as u64).sum(),
        encode_gbps: raw_bytes as f64 / median(encode_times) / 1e9,
        decode_gbps: raw_bytes as f64 / median(decode_times) / 1e9,
    })
}

/// How an `auto` row compares with the fixed encodings measured beside it (same data
/// set, same chunk size): the floors.
#[derive(Debug, Clone, Copy)]
struct AutoCheck {
    /// auto's size / the smallest fixed encoding's size (floor: <= 1.02 with auto:0).
    vs_best: f64,
    /// auto's size / plain LZ4's size (floor: <= 1.01).
    vs_lz4: Option<f64>,
    /// auto's encode speed / the speed of the encodings it chose, weighted by pages
    /// (floor: >= 0.5).
    speed_vs_chosen: Option<f64>,
}

fn auto_check(auto: &Measurement, fixed: &[&Measurement]) -> Option<AutoCheck> {
    let best = fixed.iter().map(|m| m.encoded_bytes).min()?;
    let find = |e: Encoding| {
        fixed
            .iter()
            .find(|m| m.strategy == Strategy::Fixed(e))
            .copied()
    };
    // The chosen encodings' own time: each page's share at its encoding's measured speed.
    let pages: usize = auto.chosen.values().sum();
    let chosen_seconds_per_byte = auto
        .chosen
        .iter()
        .map(|(name, n)| {
            let e: Encoding = name.parse().ok()?;
            Some(*n as f64 / pages.max(1) as f64 / find(e)?.encode_gbps)
        })
        .sum::<Option<f64>>();
    Some(AutoCheck {
        vs_best: auto.encoded_bytes as f64 / best.max(1) as f64,
        vs_lz4: find(Encoding::Lz4)
            .map(|m| auto.encoded_bytes as f64 / m.encoded_bytes.max(1) as f64),
        speed_vs_chosen: chosen_seconds_per_byte.map(|t| auto.encode_gbps * t),
    })
}

/// Chunk values for `kib` KiB of values of `width` bytes; `None` for the default 4 KiB.
fn chunk_values(kib: u64, width: usize) -> Option<usize> {
    let values = (kib as usize * 1024 / width).max(1);
    let values = 1usize << values.ilog2();
    (values != miniblock::encodings::default_chunk_values(width)).then_some(values)
}

/// The bundled sample's files, sorted.
fn sample_files() -> Result<Vec<PathBuf>, CliError> {
    let dir = sample_dir()?;
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
    let strategies = args.strategies();
    if !args.json {
        say!(
            "miniblock compare: pages of {} values, median of {} runs, zstd level {}, {} on {} ({} threads)",
            args.page_values
                .map_or_else(|| "1 MiB of".to_owned(), |n| n.to_string()),
            args.runs,
            args.zstd_level,
            if cfg!(debug_assertions) {
                "DEBUG BUILD (use --release for real speeds)"
            } else {
                "release build"
            },
            cpu_name(),
            std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
        )?;
        say!(
            "\n{:<34} {:>9} {:>6} {:<9} {:>11} {:>7} {:>8} {:>8}  auto chose",
            "dataset",
            "values",
            "chunk",
            "encoding",
            "bytes",
            "ratio",
            "enc GB/s",
            "dec GB/s"
        )?;
    }
    let mut all = Vec::new();
    let mut checks = Vec::new();
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
            let width =
                value_width(column.data_type()).map_err(|e| CliError::new(e.to_string()))?;
            for kib in args.chunk_kib() {
                let options = EncoderOptions::default()
                    .with_chunk_values(chunk_values(kib, width))
                    .and_then(|o| o.with_zstd_level(args.zstd_level))
                    .map_err(|e| CliError::new(format!("{dataset}: {e}")))?;
                // Encodings for other widths (ALP on Float16) are left out of the default
                // list; asked for by name, they fail with their reason.
                let results = strategies
                    .iter()
                    .filter(|s| {
                        !args.encoding.is_empty()
                            || !matches!(s, Strategy::Fixed(e) if !e.supports_width(width))
                    })
                    .map(|&e| measure(&dataset, &column, e, &options, args.page_values, args.runs))
                    .collect::<Result<Vec<_>, _>>()?;
                report(args, &results, &mut checks)?;
                all.extend(results);
            }
            bar.inc(input_bytes(&column));
        }
        bar.finish_and_clear();
    }
    if !args.json && !checks.is_empty() {
        print_checks(&checks)?;
    }
    if let Some(path) = &args.plot {
        let svg = plot::svg(&all);
        let inputs: Vec<&std::path::Path> = files.iter().map(PathBuf::as_path).collect();
        output::write_output(path, &inputs, args.force, |w| {
            w.write_all(svg.as_bytes())
                .map_err(|e| output::write_error(path, &e))
        })?;
        if !args.json {
            say!("\nplot written to {}", path.display())?;
        }
    }
    Ok(())
}

/// Prints one data set at one chunk size, and records its auto rows' checks.
fn report(
    args: &Args,
    results: &[Measurement],
    checks: &mut Vec<(Measurement, AutoCheck)>,
) -> Result<(), CliError> {
    let fixed: Vec<&Measurement> = results
        .iter()
        .filter(|m| matches!(m.strategy, Strategy::Fixed(_)))
        .collect();
    let best = results.iter().map(Measurement::ratio).fold(0.0, f64::max);
    for m in results {
        let is_best = m.ratio() >= best;
        let check = matches!(m.strategy, Strategy::Auto(_))
            .then(|| auto_check(m, &fixed))
            .flatten();
        if let Some(check) = check {
            checks.push((m.clone(), check));
        }
        let chosen = if matches!(m.strategy, Strategy::Auto(_)) {
            m.chosen
                .iter()
                .map(|(name, n)| format!("{name} x{n}"))
                .collect::<Vec<_>>()
                .join(", ")
        } else {
            String::new()
        };
        if args.json {
            let mut doc = json!({
                "dataset": m.dataset,
                "encoding": m.strategy.to_string(),
                "chunk_bytes": m.chunk_bytes,
                "values": m.values,
                "raw_bytes": m.raw_bytes,
                "encoded_bytes": m.encoded_bytes,
                "ratio": m.ratio(),
                "encode_gbps": m.encode_gbps,
                "decode_gbps": m.decode_gbps,
                "best": is_best,
            });
            if let Strategy::Auto(options) = m.strategy {
                doc["chosen"] = json!(m.chosen);
                doc["min_gain"] = json!(options.min_gain());
                if let Some(check) = check {
                    doc["size_vs_best_fixed"] = json!(check.vs_best);
                    doc["size_vs_lz4"] = json!(check.vs_lz4);
                    doc["encode_speed_vs_chosen"] = json!(check.speed_vs_chosen);
                }
            }
            say!("{doc}")?;
        } else {
            say!(
                "{:<34} {:>9} {:>5}K {:<9} {:>11} {:>7.3} {:>8.2} {:>8.2}  {}{}",
                m.dataset,
                m.values,
                m.chunk_bytes / 1024,
                m.strategy.to_string(),
                m.encoded_bytes,
                m.ratio(),
                m.encode_gbps,
                m.decode_gbps,
                chosen,
                if is_best { "  * best ratio" } else { "" }
            )?;
        }
    }
    Ok(())
}

/// The auto floors, one line per auto row.
fn print_checks(checks: &[(Measurement, AutoCheck)]) -> Result<(), CliError> {
    say!(
        "\nauto against the fixed encodings (floors: size <= 1.02x the best fixed with auto:0, <= 1.01x lz4; encode speed >= 0.5x the chosen encoding's)"
    )?;
    say!(
        "{:<34} {:>6} {:<9} {:>12} {:>10} {:>14}  verdict",
        "dataset",
        "chunk",
        "encoding",
        "size/best",
        "size/lz4",
        "speed/chosen"
    )?;
    let fmt = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.3}"));
    for (m, c) in checks {
        let size_only = matches!(m.strategy, Strategy::Auto(o) if o.min_gain() == 0.0);
        let pass = (!size_only || c.vs_best <= 1.02)
            && c.vs_lz4.is_none_or(|v| v <= 1.01)
            && c.speed_vs_chosen.is_none_or(|v| v >= 0.5);
        say!(
            "{:<34} {:>5}K {:<9} {:>12.3} {:>10} {:>14}  {}",
            m.dataset,
            m.chunk_bytes / 1024,
            m.strategy.to_string(),
            c.vs_best,
            fmt(c.vs_lz4),
            fmt(c.speed_vs_chosen),
            if pass { "pass" } else { "FAIL" }
        )?;
    }
    Ok(())
}

fn input_bytes(column: &ArrayRef) -> u64 {
    (column.len() * value_width(column.data_type()).unwrap_or(4)) as u64
}
