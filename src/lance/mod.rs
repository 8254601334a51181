//! Lance files: reading fixed-width columns of the files Lance 14 writes (format 2.1 and
//! 2.2), and writing format 2.1 files whose pages are miniblock's chunk encodings in
//! Lance's own mini-block layout, readable by Lance itself.
//!
//! A Lance file (`lance.file.v2`) is data buffers, then the schema (global buffer 0, a
//! `FileDescriptor`), one `ColumnMetadata` per column listing its pages (buffer offsets and
//! sizes, rows, and the page's `PageLayout` wrapped in an `Any`), two offset tables, and a
//! 40-byte footer:
//!
//! ```text
//! u64 first column metadata | u64 column metadata table | u64 global buffer table
//! u32 global buffers | u32 columns | u16 major (2) | u16 minor (1 or 2) | "LANC"
//! ```
//!
//! Both tables are (u64 position, u64 size) pairs. Page buffers start at multiples of 64.
//! [`page`] has the mini-block page layout byte by byte.
//!
//! What is read: pages in Lance's mini-block layout whose values are flat, byte stream
//! split, inline bit-packed, RLE or dictionary-coded, under LZ4 or Zstd, with or without
//! bit-packed definition levels; constant pages with an inline value, and all-null pages.
//! What is written: mini-block pages of flat or byte-stream-split chunks, under LZ4 or Zstd
//! when that shrinks the page, with definition levels for nulls.

mod compression;
mod fastlanes;
pub mod page;
mod reader;
mod writer;

use arrow_schema::{DataType, TimeUnit};

pub use page::LanceValues;
pub use reader::{LanceField, LanceReader, LanceScan};
pub use writer::{LanceEncoding, LanceWriteOptions, LanceWriter};

/// The last four bytes of a Lance file.
pub const MAGIC: [u8; 4] = *b"LANC";
const FOOTER_LEN: usize = 40;
const PAGE_LAYOUT_URL: &str = "/lance.encodings21.PageLayout";
const COLUMN_ENCODING_URL: &str = "/lance.encodings.ColumnEncoding";

fn unit(u: &str) -> Option<TimeUnit> {
    Some(match u {
        "s" => TimeUnit::Second,
        "ms" => TimeUnit::Millisecond,
        "us" => TimeUnit::Microsecond,
        "ns" => TimeUnit::Nanosecond,
        _ => return None,
    })
}

fn unit_name(u: TimeUnit) -> &'static str {
    match u {
        TimeUnit::Second => "s",
        TimeUnit::Millisecond => "ms",
        TimeUnit::Microsecond => "us",
        TimeUnit::Nanosecond => "ns",
    }
}

/// The Arrow type of a Lance logical type, for the fixed-width types miniblock reads.
pub(crate) fn logical_to_arrow(logical: &str) -> Option<DataType> {
    Some(match logical {
        "int8" => DataType::Int8,
        "uint8" => DataType::UInt8,
        "int16" => DataType::Int16,
        "uint16" => DataType::UInt16,
        "int32" => DataType::Int32,
        "uint32" => DataType::UInt32,
        "int64" => DataType::Int64,
        "uint64" => DataType::UInt64,
        "halffloat" => DataType::Float16,
        "float" => DataType::Float32,
        "double" => DataType::Float64,
        "date32:day" => DataType::Date32,
        "date64:ms" => DataType::Date64,
        _ => {
            let parts: Vec<&str> = logical.split(':').collect();
            match parts.as_slice() {
                ["time32", u] => DataType::Time32(unit(u)?),
                ["time64", u] => DataType::Time64(unit(u)?),
                ["duration", u] => DataType::Duration(unit(u)?),
                ["timestamp", u, tz] => {
                    DataType::Timestamp(unit(u)?, (*tz != "-").then(|| (*tz).into()))
                }
                ["decimal", "128", p, s] => DataType::Decimal128(p.parse().ok()?, s.parse().ok()?),
                _ => return None,
            }
        }
    })
}

/// The Lance logical type of an Arrow type miniblock writes.
pub(crate) fn arrow_to_logical(data_type: &DataType) -> Option<String> {
    Some(match data_type {
        DataType::Int8 => "int8".into(),
        DataType::UInt8 => "uint8".into(),
        DataType::Int16 => "int16".into(),
        DataType::UInt16 => "uint16".into(),
        DataType::Int32 => "int32".into(),
        DataType::UInt32 => "uint32".into(),
        DataType::Int64 => "int64".into(),
        DataType::UInt64 => "uint64".into(),
        DataType::Float16 => "halffloat".into(),
        DataType::Float32 => "float".into(),
        DataType::Float64 => "double".into(),
        DataType::Date32 => "date32:day".into(),
        DataType::Date64 => "date64:ms".into(),
        DataType::Time32(u) => format!("time32:{}", unit_name(*u)),
        DataType::Time64(u) => format!("time64:{}", unit_name(*u)),
        DataType::Duration(u) => format!("duration:{}", unit_name(*u)),
        DataType::Timestamp(u, tz) => format!(
            "timestamp:{}:{}",
            unit_name(*u),
            tz.as_deref().unwrap_or("-")
        ),
        DataType::Decimal128(p, s) => format!("decimal:128:{p}:{s}"),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logical_types_round_trip() {
        for t in [
            DataType::Int8,
            DataType::UInt64,
            DataType::Float16,
            DataType::Float32,
            DataType::Float64,
            DataType::Date32,
            DataType::Time64(TimeUnit::Nanosecond),
            DataType::Timestamp(TimeUnit::Microsecond, None),
            DataType::Timestamp(TimeUnit::Second, Some("UTC".into())),
            DataType::Duration(TimeUnit::Millisecond),
            DataType::Decimal128(38, 4),
        ] {
            let logical = arrow_to_logical(&t).unwrap();
            assert_eq!(logical_to_arrow(&logical), Some(t), "{logical}");
        }
        assert_eq!(logical_to_arrow("string"), None);
    }
}
