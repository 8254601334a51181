//! The `miniblock` command: `compare`, `encode`, `decode`, `inspect`, `verify`.

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

/// Parses an `--encoding` value: an encoding name, `auto` or `auto:GAIN`.
pub fn parse_strategy(s: &str) -> Result<Strategy, String> {
    s.parse::<Strategy>().map_err(|e| e.to_string())
}

/// Options of every command that encodes.
#[derive(Debug, Clone, clap::Args)]
pub struct EncoderArgs {
    /// Values per chunk: a power of two from 256 to 65536 (default: 4 KiB of values,
    /// 1024 f32 or 512 f64).
    #[arg(long, value_name = "N")]
    chunk_values: Option<usize>,
    /// Zstd level for the zstd encodings (1..=22, negative for the fast levels).
    #[arg(long, value_name = "L", default_value_t = miniblock::encodings::DEFAULT_ZSTD_LEVEL, allow_negative_numbers = true)]
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

/// Byte-stream-split miniblocks for fixed-width columns: measure, encode, decode, inspect.
#[derive(Debug, Parser)]
#[command(name = "miniblock", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Compare every encoding on data sets: size, ratio, encode and decode speed.
    ///
    /// With no FILE, uses the bundled sample in data/.
    Compare(compare::Args),
    /// Encode columns of a file into a miniblock column file.
    Encode(encode::Args),
    /// Decode a column of a miniblock file to raw values, .npy or Arrow IPC.
    Decode(decode::Args),
    /// Show what a miniblock file holds: columns, pages, encodings, chunks, ratio.
    Inspect(inspect::Args),
    /// Check miniblock files: every page and chunk checksum, and a full decode of every page.
    Verify(verify::Args),
}

/// Runs the command line; the default command is `compare` on the bundled sample.
pub fn run(cli: Cli) -> Result<(), CliError> {
    match cli.command {
        None => compare::run(&compare::Args::default()),
        Some(Command::Compare(args)) => compare::run(&args),
        Some(Command::Encode(args)) => encode::run(&args),
        Some(Command::Decode(args)) => decode::run(&args),
        Some(Command::Inspect(args)) => inspect::run(&args),
        Some(Command::Verify(args)) => verify::run(&args),
    }
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
    candidates.push(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data"));
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
