//! `miniblock compare [FILE...]`: every encoding on every data set, measured.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use arrow_array::{make_array, Array, ArrayRef};
use arrow_data::transform::MutableArrayData;
use arrow_data::ArrayData;
use miniblock::encodings::{short_name, AutoOptions, EncoderOptions, Strategy};
use miniblock::page::value_width;
use miniblock::{Encoding, PageDecoder, PageEncoder};
use serde_json::json;

use super::progress::{Progress, Unit};
use super::{input, output, parse_strategy, plot, sample_dir, CliError, Dtype};

pub(super) const EXAMPLES: &str = "\
Examples:
  miniblock compare                                  every encoding on the bundled sample
  miniblock compare data.parquet --column t --plot ratio.svg
  miniblock compare grid.npy --json --chunk-values 1024,4096 --encoding lz4,alp+zstd,auto
  miniblock compare big.parquet --sample-mib 512     measure up to 512 MiB of each column
  miniblock compare data.f64 --check                 exit 1 when auto misses a size floor";

/// Arguments of `compare`.
// Each flag is a switch of its own on the command line, as clap takes them.
#[allow(clippy::struct_excessive_bools)]
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Data sets: .f32/.f64 raw floats, .npy, .arrow/.feather or .parquet (every float
    /// column of each is a data set). Default: the bundled sample in data/.
    files: Vec<PathBuf>,
    /// Read FILEs as raw little-endian floats of this type, whatever their extension.
    #[arg(long, value_enum)]
    dtype: Option<Dtype>,
    /// Take raw inputs' bytes as values even when they start like another format
    /// (netCDF, HDF5, Parquet, Arrow, .npy, gzip, ...), which is otherwise refused.
    #[arg(long)]
    raw: bool,
    /// Only these columns of IPC/Parquet files (repeatable).
    #[arg(long = "column", value_name = "NAME")]
    columns: Vec<String>,
    /// Encodings to measure (comma-separated): plain, lz4, zstd, bss, bss+lz4, bss+zstd,
    /// bss+zstd+dict, bitpack, delta, delta+lz4, delta+zstd, delta+ans (1-, 2-, 4- and 8-byte values),
    /// dict, dict+zstd (1- to 8-byte values), alp, alp+lz4, alp+zstd, alp+ans, alp-rd
    /// (32- and 64-bit floats), auto (default knob) and auto:GAIN (auto:0 favours size),
    /// either followed by :nofill for no fill pages.
    /// Default: all of them, with auto and auto:0.
    #[arg(long, value_delimiter = ',', value_parser = parse_strategy)]
    encoding: Vec<Strategy>,
    /// Chunk sizes to measure, in values (comma-separated powers of two from 256 to
    /// 65536). Default: 4 KiB and 64 KiB of values (1024 and 16384 f32, 512 and 8192 f64).
    #[arg(long, value_delimiter = ',', value_name = "N", value_parser = super::parse_chunk_values)]
    chunk_values: Vec<usize>,
    /// Zstd level for the zstd encodings.
    #[arg(long, value_name = "L", default_value_t = miniblock::encodings::DEFAULT_ZSTD_LEVEL, allow_negative_numbers = true, value_parser = super::parse_zstd_level)]
    zstd_level: i32,
    /// Print one JSON object per data set, chunk size and encoding instead of the table.
    #[arg(long)]
    json: bool,
    /// Also draw compression ratio against decode speed as an SVG (checked before
    /// anything is measured).
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
    /// Measure at most this many MiB of each data set: pages spread evenly over it, so
    /// memory stays bounded whatever the input's size (0: every page).
    #[arg(long, value_name = "MIB", default_value_t = 128)]
    sample_mib: u64,
    /// Exit with status 1 when an auto row misses a size floor (the speed figures are
    /// shown, not judged: they follow timing noise).
    #[arg(long)]
    check: bool,
}

impl Default for Args {
    fn default() -> Self {
        Self {
            files: Vec::new(),
            dtype: None,
            raw: false,
            columns: Vec::new(),
            encoding: Vec::new(),
            chunk_values: Vec::new(),
            zstd_level: miniblock::encodings::DEFAULT_ZSTD_LEVEL,
            json: false,
            plot: None,
            force: false,
            runs: 5,
            page_values: None,
            sample_mib: 128,
            check: false,
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

    /// The strategies measured on values of `width` bytes: encodings for other widths
    /// (ALP on Float16) are left out of the default list; asked for by name, they fail
    /// with their reason.
    fn strategies_for(&self, width: usize) -> Vec<Strategy> {
        self.strategies()
            .into_iter()
            .filter(|s| {
                !self.encoding.is_empty()
                    || !matches!(s, Strategy::Fixed(e) if !e.supports_width(width))
            })
            .collect()
    }

    /// Chunk sizes in values for values of `width` bytes.
    fn chunk_values(&self, width: usize) -> Vec<usize> {
        if self.chunk_values.is_empty() {
            let default = miniblock::encodings::default_chunk_values(width);
            vec![
                default,
                (default * 16).min(miniblock::encodings::MAX_CHUNK_VALUES),
            ]
        } else {
            self.chunk_values.clone()
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
    /// Values per chunk.
    pub chunk_values: usize,
    /// Pages per encoding actually used.
    pub chosen: BTreeMap<String, usize>,
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
    /// Pages measured, of the pages the input has.
    pub pages: (usize, usize),
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

/// Encodes and decodes `pages` with `strategy`, `runs` times, checking that the decoded
/// pages equal the input bit for bit.
fn measure(
    dataset: &str,
    pages: &[ArrayRef],
    strategy: Strategy,
    options: &EncoderOptions,
    runs: u64,
) -> Result<Measurement, CliError> {
    let fail = |e: miniblock::Error| CliError::new(format!("{dataset} with {strategy}: {e}"));
    let data_type = pages[0].data_type();
    let width = value_width(data_type).map_err(fail)?;
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
                    &page.buffer_slices(),
                    page.num_values,
                    table,
                    page.table_format(),
                    &page.data,
                )?
                .with_data_type(data_type)?
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
        let name = short_name(&page.encoding);
        *chosen.entry(name).or_insert(0) += 1;
    }
    let values: usize = pages.iter().map(Array::len).sum();
    let raw_bytes = (values * width) as u64;
    Ok(Measurement {
        dataset: dataset.to_owned(),
        strategy,
        chunk_bytes: options.chunk_values_for(width).map_err(fail)? * width,
        chunk_values: options.chunk_values_for(width).map_err(fail)?,
        chosen,
        values,
        raw_bytes,
        encoded_bytes: encoded.iter().map(|p| p.encoded_len() as u64).sum(),
        encode_gbps: raw_bytes as f64 / median(encode_times) / 1e9,
        decode_gbps: raw_bytes as f64 / median(decode_times) / 1e9,
        pages: (pages.len(), pages.len()),
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
    /// (shown, not judged: two timings of the same work differ by more than the margin).
    speed_vs_chosen: Option<f64>,
    /// Whether the size floors hold.
    size_pass: bool,
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
            // A fill page at its inner encoding's speed.
            let e: Encoding = name.strip_prefix("fill+").unwrap_or(name).parse().ok()?;
            Some(*n as f64 / pages.max(1) as f64 / find(e)?.encode_gbps)
        })
        .sum::<Option<f64>>();
    let vs_best = auto.encoded_bytes as f64 / best.max(1) as f64;
    let vs_lz4 =
        find(Encoding::Lz4).map(|m| auto.encoded_bytes as f64 / m.encoded_bytes.max(1) as f64);
    let size_only = matches!(auto.strategy, Strategy::Auto(o) if o.min_gain() == 0.0);
    Some(AutoCheck {
        vs_best,
        vs_lz4,
        speed_vs_chosen: chosen_seconds_per_byte.map(|t| auto.encode_gbps * t),
        size_pass: (!size_only || vs_best <= 1.02) && vs_lz4.is_none_or(|v| v <= 1.01),
    })
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

/// Names for the inputs: their stems, or as many trailing path components as make
/// them distinct (`a/x` and `b/x`), or the whole path.
fn labels(files: &[PathBuf]) -> Vec<String> {
    let tail = |p: &std::path::Path, n: usize| -> String {
        let parts: Vec<String> = p
            .with_extension("")
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        parts[parts.len().saturating_sub(n)..].join("/")
    };
    let deepest = files
        .iter()
        .map(|p| p.components().count())
        .max()
        .unwrap_or(1);
    let mut labels: Vec<String> = files.iter().map(|p| tail(p, 1)).collect();
    for depth in 2..=deepest {
        let clashing: Vec<usize> = (0..files.len())
            .filter(|&i| (0..files.len()).any(|j| j != i && labels[j] == labels[i]))
            .collect();
        if clashing.is_empty() {
            break;
        }
        for i in clashing {
            labels[i] = tail(&files[i], depth);
        }
    }
    labels
}

/// The pages of one column kept for measuring: every `stride`-th page of the input, the
/// stride doubling whenever the kept pages pass the byte limit, so they stay spread over
/// the whole input and never hold more than the limit (and one page) in memory.
struct PageSample {
    page_values: usize,
    limit_bytes: u64,
    width: usize,
    pending: Vec<ArrayRef>,
    pending_len: usize,
    /// Index of the next page cut.
    next: usize,
    stride: usize,
    kept: Vec<(usize, ArrayRef)>,
}

impl PageSample {
    fn new(page_values: usize, width: usize, limit_bytes: u64) -> Self {
        Self {
            page_values,
            limit_bytes,
            width,
            pending: Vec::new(),
            pending_len: 0,
            next: 0,
            stride: 1,
            kept: Vec::new(),
        }
    }

    fn push(&mut self, mut array: ArrayRef) -> Result<(), CliError> {
        while !array.is_empty() {
            let take = (self.page_values - self.pending_len).min(array.len());
            self.pending.push(array.slice(0, take));
            self.pending_len += take;
            array = array.slice(take, array.len() - take);
            if self.pending_len == self.page_values {
                self.cut()?;
            }
        }
        Ok(())
    }

    fn cut(&mut self) -> Result<(), CliError> {
        let pieces = std::mem::take(&mut self.pending);
        let len = std::mem::take(&mut self.pending_len);
        let index = self.next;
        self.next += 1;
        if !index.is_multiple_of(self.stride) || pieces.is_empty() {
            return Ok(());
        }
        // Copied into buffers of its own: a piece is a slice of a decoded batch (of a
        // Lance constant page, say, 2^24 rows), and a kept slice would keep all of it, so
        // the kept pages would stay within --sample-mib only by their lengths.
        let refs: Vec<ArrayData> = pieces.iter().map(Array::to_data).collect();
        let mut copy = MutableArrayData::new(refs.iter().collect(), false, len);
        for (i, piece) in refs.iter().enumerate() {
            copy.try_extend(i, 0, piece.len())
                .map_err(|e| CliError::new(e.to_string()))?;
        }
        let page = make_array(copy.freeze());
        self.kept.push((index, page));
        let width = self.width as u64;
        let kept_bytes = |kept: &[(usize, ArrayRef)]| {
            kept.iter().map(|(_, p)| p.len() as u64).sum::<u64>() * width
        };
        while self.limit_bytes > 0
            && self.kept.len() > 1
            && kept_bytes(&self.kept) > self.limit_bytes
        {
            self.stride *= 2;
            let stride = self.stride;
            self.kept.retain(|(i, _)| i.is_multiple_of(stride));
        }
        Ok(())
    }

    /// The kept pages, and how many pages the input had.
    fn finish(mut self) -> Result<(Vec<ArrayRef>, usize), CliError> {
        if self.pending_len > 0 {
            self.cut()?;
        }
        Ok((self.kept.into_iter().map(|(_, p)| p).collect(), self.next))
    }
}

/// Runs `compare`.
pub fn run(args: &Args) -> Result<(), CliError> {
    let files = if args.files.is_empty() {
        sample_files()?
    } else {
        args.files.clone()
    };
    if let Some(path) = &args.plot {
        // Before any measuring: a run of minutes must not end on a bad plot path.
        let ext = path
            .extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        if ext != "svg" {
            return Err(CliError::new(format!(
                "--plot {}: plots are SVG; name the file .svg",
                path.display()
            )));
        }
        let inputs: Vec<&std::path::Path> = files.iter().map(PathBuf::as_path).collect();
        output::check_output(path, &inputs, args.force)?;
    }
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
    for (path, label) in files.iter().zip(labels(&files)) {
        let mut input = input::open(path, args.dtype, &args.columns, args.raw, &[])?;
        let fields = input.schema.fields().clone();
        let widths = fields
            .iter()
            .map(|f| value_width(f.data_type()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| CliError::new(format!("{}: {e}", path.display())))?;
        let total: usize = widths
            .iter()
            .map(|&w| args.chunk_values(w).len() * args.strategies_for(w).len())
            .sum();
        let bar = Progress::start(
            &format!("measuring {label}"),
            total as u64,
            Unit::Items("measurements"),
        );
        let mut samples: Vec<PageSample> = widths
            .iter()
            .map(|&w| {
                let page_values = args.page_values.map_or((1 << 20) / w, |n| n as usize);
                PageSample::new(page_values, w, args.sample_mib.saturating_mul(1 << 20))
            })
            .collect();
        while let Some(batch) = input.next_batch() {
            for (sample, column) in samples.iter_mut().zip(batch?.columns()) {
                sample.push(column.clone())?;
            }
        }
        let single = fields.len() == 1;
        for ((field, sample), width) in fields.iter().zip(samples).zip(widths) {
            let dataset = if single {
                label.clone()
            } else {
                format!("{label}:{}", field.name())
            };
            let (pages, input_pages) = sample.finish()?;
            if pages.is_empty() {
                return Err(CliError::new(format!(
                    "{}: the input holds no values",
                    path.display()
                )));
            }
            if pages.len() < input_pages && !args.json {
                bar.suspend(|| {
                    say!(
                        "{dataset}: measured on {} of its {input_pages} pages, spread over it (--sample-mib {})",
                        pages.len(),
                        args.sample_mib
                    )
                })?;
            }
            for chunk_values in args.chunk_values(width) {
                let options = EncoderOptions::default()
                    .with_chunk_values(Some(chunk_values))
                    .and_then(|o| o.with_zstd_level(args.zstd_level))
                    .map_err(|e| CliError::new(format!("{dataset}: {e}")))?;
                let mut results = Vec::new();
                for strategy in args.strategies_for(width) {
                    let mut m = measure(&dataset, &pages, strategy, &options, args.runs)?;
                    m.pages = (pages.len(), input_pages);
                    results.push(m);
                    bar.inc(1);
                }
                bar.suspend(|| report(args, &results, &mut checks))?;
                all.extend(results);
            }
        }
        bar.finish();
    }
    let failed = checks.iter().filter(|(_, c)| !c.size_pass).count();
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
    if args.check && failed > 0 {
        return Err(CliError::new(format!(
            "--check: {failed} auto row(s) missed a size floor (see the table above)"
        )));
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
                "chunk_values": m.chunk_values,
                "values": m.values,
                "pages_measured": m.pages.0,
                "pages_in_input": m.pages.1,
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
                    doc["size_floors_pass"] = json!(check.size_pass);
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
        "\nauto against the fixed encodings (size floors: <= 1.02x the best fixed with auto:0, <= 1.01x lz4; encode speed against the chosen encodings' own, shown, not judged)"
    )?;
    say!(
        "{:<34} {:>6} {:<9} {:>12} {:>10} {:>14}  size",
        "dataset",
        "chunk",
        "encoding",
        "size/best",
        "size/lz4",
        "speed/chosen"
    )?;
    let fmt = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.3}"));
    for (m, c) in checks {
        say!(
            "{:<34} {:>5}K {:<9} {:>12.3} {:>10} {:>14}  {}",
            m.dataset,
            m.chunk_bytes / 1024,
            m.strategy.to_string(),
            c.vs_best,
            fmt(c.vs_lz4),
            fmt(c.speed_vs_chosen),
            if c.size_pass { "pass" } else { "FAIL" }
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(strategy: Strategy, bytes: u64, chosen: &[(&'static str, usize)]) -> Measurement {
        Measurement {
            dataset: "d".to_owned(),
            strategy,
            chunk_bytes: 4096,
            chunk_values: 1024,
            chosen: chosen.iter().map(|&(k, v)| (k.to_owned(), v)).collect(),
            values: 1000,
            raw_bytes: 4000,
            encoded_bytes: bytes,
            encode_gbps: 1.0,
            decode_gbps: 1.0,
            pages: (1, 1),
        }
    }

    #[test]
    fn size_floors_decide_the_verdict_and_speed_never_does() {
        let lz4 = row(Encoding::Lz4.into(), 1000, &[]);
        let zstd = row(Encoding::Zstd.into(), 800, &[]);
        let fixed = [&lz4, &zstd];
        let size_first = Strategy::Auto(AutoOptions::default().with_min_gain(0.0).unwrap());
        // auto:0 within 2% of the best fixed: pass, however slow
        let mut auto = row(size_first, 815, &[("zstd", 1)]);
        auto.encode_gbps = 0.01;
        let check = auto_check(&auto, &fixed).unwrap();
        assert!(check.size_pass && check.speed_vs_chosen.unwrap() < 0.5);
        // 3% over the best fixed: FAIL
        let check = auto_check(&row(size_first, 824, &[("zstd", 1)]), &fixed).unwrap();
        assert!(!check.size_pass);
        // the default auto only has to stay within 1% of lz4
        let auto = Strategy::default();
        assert!(
            auto_check(&row(auto, 1010, &[("lz4", 1)]), &fixed)
                .unwrap()
                .size_pass
        );
        assert!(
            !auto_check(&row(auto, 1011, &[("lz4", 1)]), &fixed)
                .unwrap()
                .size_pass
        );
    }

    #[test]
    fn labels_tell_equal_stems_apart() {
        let files: Vec<PathBuf> = ["a/x.f32", "b/x.f32", "c/y.f64", "p/q/z.npy", "r/q/z.npy"]
            .iter()
            .map(PathBuf::from)
            .collect();
        assert_eq!(labels(&files), ["a/x", "b/x", "y", "p/q/z", "r/q/z"]);
    }

    #[test]
    fn page_samples_stay_spread_and_bounded() {
        use std::sync::Arc;
        let mut sample = PageSample::new(100, 4, 1000);
        for start in (0..2000).step_by(37) {
            let values: Vec<f32> = (start..(start + 37).min(2000)).map(|v| v as f32).collect();
            sample
                .push(Arc::new(arrow_array::Float32Array::from(values)))
                .unwrap();
        }
        let (pages, total) = sample.finish().unwrap();
        assert_eq!(total, 20);
        // two pages of 400 bytes fit 1000 bytes: the stride doubled to 16, pages 0 and 16
        let firsts: Vec<f32> = pages
            .iter()
            .map(|p| {
                p.as_any()
                    .downcast_ref::<arrow_array::Float32Array>()
                    .unwrap()
                    .value(0)
            })
            .collect();
        assert_eq!(firsts, [0.0, 1600.0]);
        assert!(pages.iter().all(|p| p.len() == 100));
    }

    /// Kept pages own their bytes: slices of one large decoded batch (a Lance constant
    /// page) do not keep the batch alive.
    #[test]
    fn page_samples_do_not_pin_their_batches() {
        use std::sync::Arc;
        let batch: ArrayRef = Arc::new(arrow_array::Float64Array::from(vec![1.5; 1 << 20]));
        let mut sample = PageSample::new(1000, 8, 8000);
        sample.push(batch.slice(0, 1000)).unwrap();
        sample.push(batch.slice(5000, 500)).unwrap();
        sample.push(batch.slice(9000, 500)).unwrap();
        let (pages, total) = sample.finish().unwrap();
        assert_eq!(total, 2);
        let held: usize = pages.iter().map(Array::get_array_memory_size).sum();
        assert!(held < 64 * 1024, "kept pages hold {held} bytes");
        let values = pages[0]
            .as_any()
            .downcast_ref::<arrow_array::Float64Array>()
            .unwrap();
        assert!(
            values.len() == 1000
                && values
                    .values()
                    .iter()
                    .all(|&v| v.to_bits() == 1.5f64.to_bits())
        );
    }
}
