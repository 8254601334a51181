//! The `miniblock` command: `compare`, `encode`, `decode`, `inspect`, `verify`,
//! `completions`.

/// Writes a line to standard output; a closed pipe becomes [`CliError::broken_pipe`]
/// instead of the panic of `println!`. Used with `?` in every command.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*).map_err(|e| {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                $crate::cli::CliError::broken_pipe()
            } else {
                $crate::cli::CliError::new(format!("writing to standard output: {e}"))
            }
        })
    }};
}

mod compare;
mod decode;
mod encode;
mod input;
mod inspect;
mod output;
mod plot;
mod progress;
mod sql;
mod stats;
mod verify;

use std::fmt;
use std::path::PathBuf;

use arrow_schema::DataType;
use clap::{Parser, Subcommand, ValueEnum};
use miniblock::encodings::{EncoderOptions, Strategy};

/// A one-line error for the user.
#[derive(Debug)]
pub struct CliError {
    message: String,
    broken_pipe: bool,
}

impl CliError {
    /// An error saying `message`.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            broken_pipe: false,
        }
    }

    /// Standard output was closed by its reader (`| head`): the command ends quietly, as
    /// Unix tools do.
    pub fn broken_pipe() -> Self {
        Self {
            message: "broken pipe".to_owned(),
            broken_pipe: true,
        }
    }

    /// Whether this is [`broken_pipe`](Self::broken_pipe).
    pub fn is_broken_pipe(&self) -> bool {
        self.broken_pipe
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// Value type of raw inputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Dtype {
    /// 4-byte little-endian floats.
    F32,
    /// 8-byte little-endian floats.
    F64,
}

impl Dtype {
    fn width(self) -> usize {
        match self {
            Dtype::F32 => 4,
            Dtype::F64 => 8,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Dtype::F32 => "f32",
            Dtype::F64 => "f64",
        }
    }

    fn data_type(self) -> DataType {
        match self {
            Dtype::F32 => DataType::Float32,
            Dtype::F64 => DataType::Float64,
        }
    }
}

/// Parses an `--encoding` value: an encoding name, or `auto` with an optional `:GAIN` and
/// `:nofill`.
pub fn parse_strategy(s: &str) -> Result<Strategy, String> {
    s.parse::<Strategy>().map_err(|e| e.to_string())
}

/// Parses `--chunk-values`: a power of two the encoders take.
fn parse_chunk_values(s: &str) -> Result<usize, String> {
    let n: usize = s
        .trim()
        .parse()
        .map_err(|_| "not a whole number of values".to_owned())?;
    miniblock::encodings::check_chunk_values(n).map_err(|_| {
        format!(
            "a chunk holds a power of two from {} to {} values",
            miniblock::encodings::MIN_CHOSEN_CHUNK_VALUES,
            miniblock::encodings::MAX_CHUNK_VALUES
        )
    })?;
    Ok(n)
}

/// Parses `--zstd-level`: a level the linked Zstd accepts.
fn parse_zstd_level(s: &str) -> Result<i32, String> {
    let level: i32 = s
        .trim()
        .parse()
        .map_err(|_| "not a whole number".to_owned())?;
    let range = zstd::compression_level_range();
    if range.contains(&level) {
        Ok(level)
    } else {
        Err(format!(
            "Zstd levels run from {} (fastest) to {} (smallest); 0 means the default, {}",
            range.start(),
            range.end(),
            miniblock::encodings::DEFAULT_ZSTD_LEVEL
        ))
    }
}

/// Options of every command that encodes.
#[derive(Debug, Clone, clap::Args)]
pub struct EncoderArgs {
    /// Values per chunk: a power of two from 256 to 65536 (default: 4 KiB of values,
    /// 1024 f32 or 512 f64).
    #[arg(long, value_name = "N", value_parser = parse_chunk_values)]
    chunk_values: Option<usize>,
    /// Zstd level for the zstd encodings (1 to 22; negative for the fast levels).
    #[arg(long, value_name = "L", default_value_t = miniblock::encodings::DEFAULT_ZSTD_LEVEL, allow_negative_numbers = true, value_parser = parse_zstd_level)]
    zstd_level: i32,
}

impl Default for EncoderArgs {
    fn default() -> Self {
        Self {
            chunk_values: None,
            zstd_level: miniblock::encodings::DEFAULT_ZSTD_LEVEL,
        }
    }
}

impl EncoderArgs {
    /// The library options these arguments ask for.
    pub fn options(&self) -> Result<EncoderOptions, CliError> {
        EncoderOptions::default()
            .with_chunk_values(self.chunk_values)
            .and_then(|o| o.with_zstd_level(self.zstd_level))
            .map_err(|e| CliError::new(e.to_string()))
    }
}

/// Where a command writes: OUTPUT, `-o OUTPUT` or `-c` (standard output).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct OutputArgs {
    /// Where to write (`-`: standard output).
    #[arg(value_name = "OUTPUT")]
    output: Option<PathBuf>,
    /// Where to write, as an option (the same as OUTPUT).
    #[arg(
        short = 'o',
        long = "output",
        value_name = "OUTPUT",
        conflicts_with = "output"
    )]
    output_flag: Option<PathBuf>,
    /// Write to standard output (the same as OUTPUT `-`).
    #[arg(short = 'c', long, conflicts_with_all = ["output", "output_flag"])]
    stdout: bool,
    /// Overwrite OUTPUT if it exists.
    #[arg(short = 'f', long)]
    force: bool,
}

impl OutputArgs {
    /// The output path (`-` for standard output), if one was given.
    pub fn path(&self) -> Option<PathBuf> {
        if self.stdout {
            return Some(PathBuf::from("-"));
        }
        // Names of standard output are standard output: written through, with the
        // summary on stderr, never replaced by a renamed file.
        self.output
            .clone()
            .or_else(|| self.output_flag.clone())
            .map(|p| match p.to_str() {
                Some("/dev/stdout" | "/dev/fd/1" | "/proc/self/fd/1") => PathBuf::from("-"),
                _ => p,
            })
    }
}

/// Whether `-q` asked for no summaries and no progress.
pub fn quiet() -> bool {
    QUIET.load(std::sync::atomic::Ordering::Relaxed)
}

static QUIET: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

const EXAMPLES: &str = "\
Examples:
  miniblock                                    compare every encoding on the bundled sample
  miniblock compare data.parquet --plot p.svg  the same on your columns, with a plot
  miniblock encode data.parquet                write data.mb (fixed-width columns, auto)
  miniblock decode data.mb -o out.arrow        every column back, types and nulls kept
  miniblock inspect data.mb                    pages, encodings, min/max, nulls, NaNs
  miniblock verify data.mb                     every checksum, every page decoded
  miniblock sql \"SELECT avg(x) FROM 'a.mb'\"    SQL over column files (built with --features sql)
  miniblock completions bash > ~/.local/share/bash-completion/completions/miniblock

Exit status: 0 on success, 1 when a command fails, 2 for a wrong argument (one line on
stderr each time); 141 when standard output was closed by its reader.";

/// Byte-stream-split and ALP miniblocks for fixed-width columns: measure, encode, decode,
/// inspect, verify.
#[derive(Debug, Parser)]
#[command(name = "miniblock", version, about, long_about = None, after_help = EXAMPLES)]
pub struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// No progress and no summary lines (errors and warnings still go to stderr).
    #[arg(short, long, global = true)]
    quiet: bool,
    /// Threads for encoding and decoding (default: one per core).
    #[arg(short = 'j', long, global = true, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    threads: Option<u16>,
    /// When to show progress on stderr: auto (a bar on a terminal, for large work),
    /// always (lines when stderr is not a terminal), never.
    #[arg(long, global = true, value_enum, default_value_t = progress::When::Auto)]
    progress: progress::When,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Compare every encoding on data sets: size, ratio, encode and decode speed.
    ///
    /// With no FILE, uses the bundled sample in data/.
    #[command(after_help = compare::EXAMPLES)]
    Compare(compare::Args),
    /// Encode columns of a file into a miniblock column file.
    #[command(after_help = encode::EXAMPLES)]
    Encode(encode::Args),
    /// Decode columns of a miniblock file to raw values, .npy, Arrow IPC or Parquet.
    #[command(after_help = decode::EXAMPLES)]
    Decode(decode::Args),
    /// Show what a file holds: columns, pages, encodings, chunks, ratio, min/max, nulls
    /// and NaNs (for a Parquet, Arrow or .npy file: its columns and what can be encoded).
    #[command(after_help = inspect::EXAMPLES)]
    Inspect(inspect::Args),
    /// Check miniblock files: every page and chunk checksum, and a full decode of every page.
    #[command(after_help = verify::EXAMPLES)]
    Verify(verify::Args),
    /// Run a SQL query (DataFusion) over column files named by path in FROM (in builds with
    /// the `sql` feature).
    #[command(after_help = sql::EXAMPLES)]
    Sql(sql::Args),
    /// Print a shell completion script for miniblock.
    #[command(after_help = COMPLETION_EXAMPLES)]
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

const COMPLETION_EXAMPLES: &str = "\
Examples:
  miniblock completions bash > ~/.local/share/bash-completion/completions/miniblock
  miniblock completions zsh > ~/.zfunc/_miniblock
  miniblock completions fish > ~/.config/fish/completions/miniblock.fish";

/// Runs the command line; the default command is `compare` on the bundled sample.
pub fn run(cli: Cli) -> Result<(), CliError> {
    QUIET.store(cli.quiet, std::sync::atomic::Ordering::Relaxed);
    progress::set_when(if cli.quiet {
        progress::When::Never
    } else {
        cli.progress
    });
    if let Some(threads) = cli.threads {
        rayon::ThreadPoolBuilder::new()
            .num_threads(usize::from(threads))
            .build_global()
            .map_err(|e| CliError::new(format!("--threads {threads}: {e}")))?;
    }
    let result = match cli.command {
        None => compare::run(&compare::Args::default()),
        Some(Command::Compare(args)) => compare::run(&args),
        Some(Command::Encode(args)) => encode::run(&args),
        Some(Command::Decode(args)) => decode::run(&args),
        Some(Command::Inspect(args)) => inspect::run(&args),
        Some(Command::Verify(args)) => verify::run(&args),
        Some(Command::Sql(args)) => sql::run(&args),
        Some(Command::Completions { shell }) => {
            let mut command = <Cli as clap::CommandFactory>::command();
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut command, "miniblock", &mut script);
            std::io::Write::write_all(&mut std::io::stdout().lock(), &script)
                .map_err(|e| output::write_error(std::path::Path::new("standard output"), &e))
        }
    };
    if result.is_ok() {
        input::say_lance_notes();
    }
    result
}

/// Where the bundled sample lives: `data/` beside the executable (or one or two folders
/// up, as in `target/release`), in the working directory, or in the source tree the
/// binary was built from; the first that holds `.f32`/`.f64` files. An installed or copied
/// binary therefore finds it wherever the sample was copied with it.
pub fn sample_dir() -> Result<PathBuf, CliError> {
    let mut candidates = Vec::new();
    if let Ok(exe) = std::env::current_exe() {
        for dir in exe.ancestors().skip(1).take(3) {
            candidates.push(dir.join("data"));
        }
    }
    candidates.push(PathBuf::from("data"));
    candidates.push(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../data"));
    let holds_sample = |dir: &PathBuf| {
        std::fs::read_dir(dir).is_ok_and(|entries| {
            entries.filter_map(Result::ok).any(|e| {
                e.path()
                    .extension()
                    .is_some_and(|x| x == "f32" || x == "f64")
            })
        })
    };
    candidates.iter().find(|d| holds_sample(d)).cloned().ok_or_else(|| {
        let tried: Vec<String> = candidates.iter().map(|d| d.display().to_string()).collect();
        CliError::new(format!(
            "no bundled sample found (looked in {}); name files to compare, e.g. `miniblock compare my.f64`",
            tried.join(", ")
        ))
    })
}
