//! Structure-aware column files whose footers lie: a few arbitrary columns repeated up to
//! 200,000 times (distinct names, or names from a set of eight; any nullability and
//! value type), pages with arbitrary offsets, lengths, u64 value counts and chunk tables
//! of repeated entries (validity and compressed flags, narrow or wide), page buffers of
//! any sizes, any page statistics, checksums off or correct, over a small data area. The footer's own checksum is correct, so every field
//! reaches validation. Opening and reading must return Ok or Err, never panic, never take
//! time or memory out of proportion to the file (the run's -timeout and -malloc_limit_mb).
#![no_main]

use std::io::Cursor;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use miniblock::file::{FileReader, ScanOptions, StatsFilter, FORMAT_VERSION, MAGIC};
use miniblock::proto::file as pb;
use miniblock::Encoding;
use prost::Message;

#[derive(Debug, Arbitrary)]
struct PageClaim {
    offset: u16,
    length: u16,
    num_values: u64,
    encoding: u8,
    entries: Vec<(u16, u8, u8)>,
    repeat: u8,
    wide: bool,
    chunk_crcs: bool,
    buffers: Vec<u16>,
    statistics: Option<(Option<Vec<u8>>, Option<Vec<u8>>, u64, u64)>,
}

#[derive(Debug, Arbitrary)]
struct ColumnClaim {
    name: u8,
    nullable: bool,
    value_type: u8,
    pages: Vec<PageClaim>,
}

#[derive(Debug, Arbitrary)]
struct FileClaim {
    num_rows: u64,
    columns: Vec<ColumnClaim>,
    repeat: u32,
    data: Vec<u8>,
}

fuzz_target!(|claim: FileClaim| {
    let data = &claim.data[..claim.data.len().min(64 * 1024)];
    let mut columns = Vec::new();
    let count = if claim.columns.is_empty() {
        0
    } else {
        (claim.repeat as usize % 200_000 + 1).max(claim.columns.len())
    };
    for i in 0..count {
        let c = &claim.columns[i % claim.columns.len()];
        let pages =
            c.pages
                .iter()
                .map(|p| {
                    let mut table = Vec::new();
                    let n = p.entries.len() * (usize::from(p.repeat) + 1);
                    for j in 0..n {
                        let (size, log, flags) = p.entries[j % p.entries.len()];
                        if p.wide {
                            table.extend_from_slice(&u32::from(size).to_le_bytes());
                            table.extend_from_slice(&[log % 18, flags & 3, 0, 0]);
                        } else {
                            table.extend_from_slice(&size.to_le_bytes());
                            table.extend_from_slice(&[log % 18, flags & 3]);
                        }
                    }
                    let offset = 8 + u64::from(p.offset) % (data.len() as u64 + 1);
                    let length = u64::from(p.length);
                    let bytes = data
                        .get((offset - 8) as usize..(offset - 8 + length) as usize)
                        .unwrap_or(&[]);
                    let encoding = Encoding::ALL[usize::from(p.encoding) % Encoding::ALL.len()];
                    pb::Page {
                        offset,
                        length,
                        num_values: p.num_values,
                        encoding: encoding.compressor(64).ok().map(|c| c.array_encoding()),
                        chunk_table: table,
                        crc32c: crc32c::crc32c(bytes),
                        chunk_entry_bytes: if p.wide { 8 } else { 0 },
                        chunk_crc32c: if p.chunk_crcs { vec![0; n] } else { Vec::new() },
                        buffer_sizes: p.buffers.iter().map(|&b| u64::from(b)).collect(),
                        buffer_crc32c: vec![0; p.buffers.len() % 3],
                        statistics: p.statistics.clone().map(
                            |(min, max, null_count, nan_count)| pb::PageStatistics {
                                min,
                                max,
                                null_count,
                                nan_count,
                            },
                        ),
                    }
                })
                .collect();
        columns.push(pb::Column {
            // Distinct names, or one of eight (duplicates).
            name: if c.name & 0x80 == 0 {
                format!("c{i}")
            } else {
                format!("d{}", c.name % 8)
            },
            value_type: i32::from(c.value_type % 26),
            nullable: c.nullable,
            pages,
            byte_width: 8,
            ..pb::Column::default()
        });
    }
    let footer = pb::Footer {
        format_version: FORMAT_VERSION,
        num_rows: claim.num_rows,
        columns,
        ..pb::Footer::default()
    }
    .encode_to_vec();
    let mut file = MAGIC.to_vec();
    file.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    file.extend_from_slice(data);
    file.extend_from_slice(&footer);
    file.extend_from_slice(&(footer.len() as u32).to_le_bytes());
    file.extend_from_slice(&crc32c::crc32c(&footer).to_le_bytes());
    file.extend_from_slice(&MAGIC);
    let Ok(mut reader) = FileReader::open(Cursor::new(&file)) else {
        return;
    };
    let rows = reader.num_rows();
    for column in 0..reader.schema().fields().len().min(16) {
        // Statistics, and a scan they prune, on whatever the footer claims.
        if let Ok(Some(stats)) = reader.column_stats(column) {
            let filter = StatsFilter {
                column: column.into(),
                min: stats.min,
                max: stats.min,
            };
            let options = ScanOptions {
                columns: Some(vec![column.into()]),
                batch_rows: 4096,
                rows: Some(0..rows.min(1 << 16)),
                filter: Some(filter),
            };
            let scan = FileReader::open(Cursor::new(&file)).and_then(|r| r.scan(&options));
            if let Ok(scan) = scan {
                scan.take(4).for_each(drop);
            }
        }
        for verify in [true, false] {
            reader.set_verify_checksums(verify);
            let _ =
                reader.read_column_range(column, rows / 3..(rows / 3).saturating_add(1).min(rows));
            if rows <= 1 << 20 {
                let _ = reader.read_column(column);
            }
        }
    }
});
