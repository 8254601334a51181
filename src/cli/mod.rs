//! The `miniblock` command: `compare`, `encode`, `decode`, `inspect`.

mod compare;
mod decode;
mod encode;
mod input;
mod inspect;
mod output;
mod plot;
mod progress;

use std::fmt;
use std::path::PathBuf;

use arrow_schema::DataType;
use clap::{Parser, Subcommand, ValueEnum};
use miniblock::Encoding;

/// A one-line error for the user.
#[derive(Debug)]
pub struct CliError(String);

impl CliError {
    /// An error saying `message`.
    pub fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
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

/// Encodings as command-line values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EncodingArg {
    /// Values as they are.
    Plain,
    /// Values as they are, LZ4 per chunk.
    Lz4,
    /// Byte stream split per chunk.
    Bss,
    /// Byte stream split, LZ4 per chunk.
    #[value(name = "bss+lz4")]
    BssLz4,
}

impl From<EncodingArg> for Encoding {
    fn from(e: EncodingArg) -> Self {
        match e {
            EncodingArg::Plain => Encoding::Plain,
            EncodingArg::Lz4 => Encoding::Lz4,
            EncodingArg::Bss => Encoding::Bss,
            EncodingArg::BssLz4 => Encoding::BssLz4,
        }
    }
}

/// Byte-stream-split miniblocks for float columns: measure, encode, decode, inspect.
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
    /// Encode float columns of a file into a miniblock column file.
    Encode(encode::Args),
    /// Decode a column of a miniblock file to raw floats, .npy or Arrow IPC.
    Decode(decode::Args),
    /// Show what a miniblock file holds: columns, pages, encodings, chunks, ratio.
    Inspect(inspect::Args),
}

/// Runs the command line; the default command is `compare` on the bundled sample.
pub fn run(cli: Cli) -> Result<(), CliError> {
    match cli.command {
        None => compare::run(&compare::Args::default()),
        Some(Command::Compare(args)) => compare::run(&args),
        Some(Command::Encode(args)) => encode::run(&args),
        Some(Command::Decode(args)) => decode::run(&args),
        Some(Command::Inspect(args)) => inspect::run(&args),
    }
}

/// Where the bundled sample lives.
pub fn sample_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data")
}
