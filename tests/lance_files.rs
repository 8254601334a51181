//! Lance files: the ones pylance 14.0.2 wrote (vendored in `tests/lance/`, made by
//! `tests/lance/generate.py`) read bit for bit, and the ones miniblock writes read back.

use std::fs::File;
use std::io::Cursor;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type};
use arrow_array::{Array, ArrayRef, Float32Array, Float64Array, RecordBatch};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, Field, Schema};
use miniblock::encodings::CompressionScheme;
use miniblock::lance::{LanceEncoding, LanceReader, LanceValues, LanceWriteOptions, LanceWriter};

const ROWS: usize = 5000;

fn f64_values() -> Vec<f64> {
    let bytes = std::fs::read("data/tmy3_Dry_bulb.f64").unwrap();
    bytes[..ROWS * 8]
        .chunks_exact(8)
        .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
        .collect()
}

fn f32_values() -> Vec<f32> {
    let bytes = std::fs::read("data/ferret_coads_climatology_SLP.f32").unwrap();
    bytes[..ROWS * 4]
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect()
}

/// The generator's null mask: every 7th row and rows 100..300.
fn generator_nulls() -> NullBuffer {
    NullBuffer::from(
        (0..ROWS)
            .map(|i| !(i % 7 == 0 || (100..300).contains(&i)))
            .collect::<Vec<_>>(),
    )
}

fn same_bits(a: &dyn Array, b: &dyn Array) {
    assert_eq!(a.len(), b.len());
    assert_eq!(a.data_type(), b.data_type());
    for i in 0..a.len() {
        assert_eq!(a.is_null(i), b.is_null(i), "null at {i}");
        if a.is_valid(i) {
            match a.data_type() {
                DataType::Float64 => assert_eq!(
                    a.as_primitive::<Float64Type>().value(i).to_bits(),
                    b.as_primitive::<Float64Type>().value(i).to_bits(),
                    "row {i}"
                ),
                DataType::Float32 => assert_eq!(
                    a.as_primitive::<Float32Type>().value(i).to_bits(),
                    b.as_primitive::<Float32Type>().value(i).to_bits(),
                    "row {i}"
                ),
                t => panic!("{t}"),
            }
        }
    }
}

fn expected() -> Vec<ArrayRef> {
    let (f64s, f32s) = (f64_values(), f32_values());
    vec![
        Arc::new(Float64Array::from(f64s.clone())),
        Arc::new(Float32Array::from(f32s.clone())),
        Arc::new(Float64Array::new(f64s.into(), Some(generator_nulls()))),
        Arc::new(Float32Array::new(f32s.into(), Some(generator_nulls()))),
    ]
}

/// Written 1000 rows at a time with a small write cache: four pages per column, which
/// need not line up across columns.
#[test]
fn reads_pylance_files_of_several_pages() {
    let expected = expected();
    for version in ["2.1", "2.2"] {
        let path = format!("tests/lance/pages_{version}.lance");
        let mut reader = LanceReader::open(File::open(&path).unwrap()).unwrap();
        for (i, want) in expected.iter().enumerate() {
            assert!(
                reader.num_pages(i).unwrap() > 1,
                "{path}: column {i} in one page"
            );
            let got = reader.read_column(i).unwrap();
            same_bits(got.as_ref(), want.as_ref());
        }
    }
}

#[test]
fn reads_what_pylance_wrote() {
    let expected = expected();
    for name in ["default", "zstd_bss", "lz4_bss"] {
        for version in ["2.1", "2.2"] {
            let path = format!("tests/lance/{name}_{version}.lance");
            let mut reader = LanceReader::open(File::open(&path).unwrap()).unwrap();
            assert_eq!(reader.num_rows(), ROWS as u64);
            let minor = if version == "2.1" { 1 } else { 2 };
            assert_eq!(reader.version(), (2, minor));
            let names: Vec<_> = reader.fields().iter().map(|f| f.name.clone()).collect();
            assert_eq!(names, ["x64", "x32", "n64", "n32"]);
            // What Lance chose for the hourly temperatures (118 distinct values).
            let layout = miniblock::lance::page::describe(&reader.page_layout(0, 0).unwrap());
            let chosen = match (name, version) {
                ("default", "2.1") => "rle of flat 64-bit",
                ("zstd_bss", "2.1") => "general zstd over byte stream split over flat 64-bit",
                ("lz4_bss", "2.1") => "general lz4 over byte stream split over flat 64-bit",
                // Lance 2.2 dictionary-codes it whatever the compression.
                _ => "dictionary of 118 items",
            };
            assert!(layout.contains(chosen), "{path}: {layout}");
            for (i, want) in expected.iter().enumerate() {
                let got = reader
                    .read_column(i)
                    .unwrap_or_else(|e| panic!("{path} column {i}: {e}"));
                same_bits(got.as_ref(), want.as_ref());
            }
        }
    }
}

fn batch(rows: usize) -> RecordBatch {
    let (f64s, f32s) = (f64_values(), f32_values());
    let nulls = NullBuffer::from(
        (0..rows)
            .map(|i| !(i % 5 == 0 || (700..1900).contains(&i)))
            .collect::<Vec<_>>(),
    );
    let mut odd = f64s[..rows].to_vec();
    let specials = [
        -0.0,
        f64::from_bits(0x7ff8_dead_beef_0001),
        f64::from_bits(1),
    ];
    for (v, s) in odd.iter_mut().skip(1).zip(specials) {
        *v = s;
    }
    let schema = Schema::new(vec![
        Field::new("x64", DataType::Float64, false),
        Field::new("x32", DataType::Float32, false),
        Field::new("n64", DataType::Float64, true),
        Field::new("n32", DataType::Float32, true),
    ]);
    RecordBatch::try_new(
        Arc::new(schema),
        vec![
            Arc::new(Float64Array::from(odd)),
            Arc::new(Float32Array::from(f32s[..rows].to_vec())),
            Arc::new(Float64Array::new(
                f64s[..rows].to_vec().into(),
                Some(nulls.clone()),
            )),
            Arc::new(Float32Array::new(f32s[..rows].to_vec().into(), Some(nulls))),
        ],
    )
    .unwrap()
}

fn option_sets() -> Vec<(&'static str, LanceWriteOptions)> {
    let fixed = |values, compression| LanceEncoding::Fixed {
        values,
        compression,
    };
    let with = |encoding, zstd_level, page_rows| LanceWriteOptions {
        encoding,
        zstd_level,
        chunk_values: None,
        page_rows: Some(page_rows),
    };
    let (lz4, zstd) = (Some(CompressionScheme::Lz4), Some(CompressionScheme::Zstd));
    vec![
        ("flat", with(fixed(LanceValues::Flat, None), None, 1 << 20)),
        ("bss", with(fixed(LanceValues::Bss, None), None, 1 << 20)),
        ("bss_lz4", with(fixed(LanceValues::Bss, lz4), None, 1 << 20)),
        (
            "bss_zstd",
            with(fixed(LanceValues::Bss, zstd), None, 1 << 20),
        ),
        (
            "flat_zstd_pages",
            with(fixed(LanceValues::Flat, zstd), Some(9), 1500),
        ),
        (
            "bss_lz4_pages",
            with(fixed(LanceValues::Bss, lz4), None, 1000),
        ),
        ("smallest_pages", with(LanceEncoding::Smallest, None, 2000)),
    ]
}

fn write(batch: &RecordBatch, options: LanceWriteOptions) -> Vec<u8> {
    let mut writer = LanceWriter::try_new(Vec::new(), batch.schema().as_ref(), options).unwrap();
    // Two batches, so pages span batch boundaries.
    let half = batch.num_rows() / 2;
    writer.write_batch(&batch.slice(0, half)).unwrap();
    writer
        .write_batch(&batch.slice(half, batch.num_rows() - half))
        .unwrap();
    writer.finish().unwrap()
}

#[test]
fn reads_back_what_it_writes() {
    let batch = batch(ROWS);
    for (name, options) in option_sets() {
        let bytes = write(&batch, options);
        let mut reader = LanceReader::open(Cursor::new(&bytes)).unwrap();
        assert_eq!(reader.num_rows(), ROWS as u64);
        let pages = reader.num_pages(0).unwrap();
        if name == "smallest_pages" {
            let dictionaries = (0..pages)
                .filter(|&p| {
                    miniblock::lance::page::describe(&reader.page_layout(0, p).unwrap())
                        .contains("dictionary")
                })
                .count();
            assert!(
                dictionaries > 0,
                "auto wrote no dictionary page for hourly temperatures"
            );
        }
        assert_eq!(pages, ROWS.div_ceil(options.page_rows.unwrap()), "{name}");
        for (i, want) in batch.columns().iter().enumerate() {
            let got = reader
                .read_column(i)
                .unwrap_or_else(|e| panic!("{name} column {i}: {e}"));
            same_bits(got.as_ref(), want.as_ref());
        }
    }
}

/// Lance's own reader (pylance 14.0.2) reads every file miniblock writes, bit for bit:
/// `tests/lance/check.py` compares each with the same batch written as Arrow IPC.
#[test]
#[cfg_attr(
    not(pylance),
    ignore = "needs pylance 14.0.2 in .venv-lance: run .ci/lance-venv (CI does), then touch build.rs"
)]
fn pylance_reads_what_it_writes() {
    let dir = tempfile::tempdir().unwrap();
    let mut paths = Vec::new();
    for rows in [ROWS, 4, 512, 1025] {
        let batch = batch(rows);
        for (name, options) in option_sets() {
            let path = dir.path().join(format!("{name}_{rows}.lance"));
            std::fs::write(&path, write(&batch, options)).unwrap();
            let ipc = File::create(path.with_extension("arrow")).unwrap();
            let mut ipc =
                arrow_ipc::writer::FileWriter::try_new(ipc, batch.schema().as_ref()).unwrap();
            ipc.write(&batch).unwrap();
            ipc.finish().unwrap();
            paths.push(path);
        }
    }
    let out = std::process::Command::new(".venv-lance/bin/python")
        .arg("tests/lance/check.py")
        .args(&paths)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "pylance check failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        stdout.lines().filter(|l| l.contains("same bits")).count(),
        paths.len()
    );
}

/// Damaged Lance files give errors, never panics: every prefix of a small file, and a
/// flipped byte at every position of its metadata and every 61st of its data.
#[test]
fn damaged_files_are_errors() {
    let read_all = |bytes: &[u8]| -> Result<(), miniblock::Error> {
        let mut reader = LanceReader::open(Cursor::new(bytes))?;
        for field in 0..reader.fields().len() {
            let _ = reader.read_column(field);
        }
        Ok(())
    };
    for name in ["mixed_2.2", "default_2.1", "default_2.2"] {
        let good = std::fs::read(format!("tests/lance/{name}.lance")).unwrap();
        read_all(&good).unwrap();
        for cut in (0..good.len()).step_by(7) {
            assert!(
                read_all(&good[..cut]).is_err(),
                "{name}: prefix of {cut} bytes opened"
            );
        }
        let metadata_start = good.len().saturating_sub(2048);
        for at in (0..good.len()).filter(|&i| i >= metadata_start || i % 61 == 0) {
            let mut bad = good.clone();
            bad[at] ^= 0xff;
            let _ = read_all(&bad);
        }
    }
}

/// A scan streams batches over pages that do not line up across columns, for any batch
/// size and row range, equal to the whole columns sliced.
#[test]
fn scans_match_whole_columns() {
    let expected = expected();
    for version in ["2.1", "2.2"] {
        let path = format!("tests/lance/pages_{version}.lance");
        for (batch_rows, rows) in [
            (333usize, 0..5000u64),
            (5000, 0..5000),
            (7, 1990..2030),
            (1024, 100..4900),
            (10, 0..0),
        ] {
            let reader = LanceReader::open(File::open(&path).unwrap()).unwrap();
            let scan = reader.scan(&[3, 0], batch_rows, rows.clone()).unwrap();
            let names: Vec<_> = scan
                .schema()
                .fields()
                .iter()
                .map(|f| f.name().clone())
                .collect();
            assert_eq!(names, ["n32", "x64"]);
            let mut at = rows.start as usize;
            for batch in scan {
                let batch = batch.unwrap();
                assert!(batch.num_rows() <= batch_rows);
                same_bits(
                    batch.column(0).as_ref(),
                    expected[3].slice(at, batch.num_rows()).as_ref(),
                );
                same_bits(
                    batch.column(1).as_ref(),
                    expected[0].slice(at, batch.num_rows()).as_ref(),
                );
                at += batch.num_rows();
            }
            assert_eq!(at as u64, rows.end, "{path} {batch_rows} {rows:?}");
        }
        let reader = LanceReader::open(File::open(&path).unwrap()).unwrap();
        assert!(reader.scan(&[0], 10, 0..5001).is_err());
    }
}
