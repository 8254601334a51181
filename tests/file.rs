//! Column files: writer/reader round trips over several columns, nulls, page boundaries
//! and batch sizes; range reads that fetch only the overlapping pages; damaged files.

mod common;

use std::io::{Cursor, Read, Seek, SeekFrom};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Float32Array, Float64Array, Int32Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use miniblock::encodings::Strategy;
use miniblock::file::{FileReader, FileWriter, Source, WriteOptions};
use miniblock::{Encoding, ErrorKind};

fn schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        Field::new("a", DataType::Float32, true),
        Field::new("b", DataType::Float64, false),
    ]))
}

fn columns(rows: usize) -> (ArrayRef, ArrayRef) {
    let a: ArrayRef = Arc::new(Float32Array::from_iter(
        common::mixed_f32(rows, 1)
            .into_iter()
            .enumerate()
            .map(|(i, v)| (i % 13 != 5 && !(3000..3100).contains(&i)).then_some(v)),
    ));
    let b: ArrayRef = Arc::new(Float64Array::from(common::mixed_f64(rows, 2)));
    (a, b)
}

/// A file of `columns` of `schema` written in one batch.
fn one_batch(schema: &Arc<Schema>, columns: Vec<ArrayRef>, options: WriteOptions) -> Vec<u8> {
    let mut writer = FileWriter::try_new(Vec::new(), schema, options).unwrap();
    writer
        .write_batch(&RecordBatch::try_new(schema.clone(), columns).unwrap())
        .unwrap();
    writer.finish().unwrap()
}

/// Writes `rows` rows in batches of the given sizes (cycled).
fn write_file(
    rows: usize,
    batch_sizes: &[usize],
    options: WriteOptions,
) -> (Vec<u8>, ArrayRef, ArrayRef) {
    let (a, b) = columns(rows);
    let mut writer = FileWriter::try_new(Vec::new(), &schema(), options).unwrap();
    let mut start = 0;
    for size in batch_sizes.iter().cycle() {
        if start >= rows {
            break;
        }
        let len = (*size).min(rows - start);
        let batch =
            RecordBatch::try_new(schema(), vec![a.slice(start, len), b.slice(start, len)]).unwrap();
        writer.write_batch(&batch).unwrap();
        start += len;
    }
    (writer.finish().unwrap(), a, b)
}

#[test]
fn round_trip_columns_pages_and_ranges() {
    for encoding in Encoding::ALL {
        for page_values in [1000usize, 4096, 100_000] {
            let options = WriteOptions {
                strategy: encoding.into(),
                page_values: Some(page_values),
                ..WriteOptions::default()
            };
            let (bytes, a, b) = write_file(25_000, &[1, 999, 7000, 3, 4096], options);
            let mut reader = FileReader::open(Cursor::new(bytes)).unwrap();
            assert_eq!(reader.num_rows(), 25_000);
            assert_eq!(reader.schema().as_ref(), schema().as_ref());
            assert_eq!(
                reader.footer().columns[0].pages.len(),
                25_000usize.div_ceil(page_values)
            );
            let context = format!("{encoding} pages of {page_values}");
            common::assert_same_bits(
                a.as_ref(),
                reader.read_column(0).unwrap().as_ref(),
                &context,
            );
            common::assert_same_bits(
                b.as_ref(),
                reader.read_column(1).unwrap().as_ref(),
                &context,
            );
            for (start, end) in [
                (0, 0),
                (0, 1),
                (999, 1001),
                (2990, 3110),
                (4095, 12_289),
                (24_999, 25_000),
                (0, 25_000),
            ] {
                let got = reader.read_column_range(0, start..end).unwrap();
                common::assert_same_bits(
                    &a.slice(start as usize, (end - start) as usize),
                    got.as_ref(),
                    &format!("{context} a {start}..{end}"),
                );
                let got = reader.read_column_range(1, start..end).unwrap();
                common::assert_same_bits(
                    &b.slice(start as usize, (end - start) as usize),
                    got.as_ref(),
                    &format!("{context} b {start}..{end}"),
                );
            }
            assert_eq!(
                reader.read_column_range(0, 10..25_001).unwrap_err().kind(),
                ErrorKind::InvalidArgument
            );
            assert_eq!(
                reader.read_column(2).unwrap_err().kind(),
                ErrorKind::InvalidArgument
            );
        }
    }
}

#[test]
fn empty_file_round_trips() {
    let writer = FileWriter::try_new(Vec::new(), &schema(), WriteOptions::default()).unwrap();
    let bytes = writer.finish().unwrap();
    let mut reader = FileReader::open(Cursor::new(bytes)).unwrap();
    assert_eq!(reader.num_rows(), 0);
    assert_eq!(reader.read_column(0).unwrap().len(), 0);
}

#[test]
fn variable_width_columns_are_refused_by_name() {
    for data_type in [DataType::Utf8, DataType::Null, DataType::Binary] {
        let schema = Schema::new(vec![
            Field::new("x", DataType::Float32, false),
            Field::new("name", data_type.clone(), false),
        ]);
        let err = FileWriter::try_new(Vec::new(), &schema, WriteOptions::default()).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        assert!(
            err.to_string().contains("\"name\"")
                && err.to_string().contains(&data_type.to_string()),
            "{err}"
        );
    }
    // a batch whose schema differs from the file's
    let mut writer = FileWriter::try_new(
        Vec::new(),
        &Schema::new(vec![Field::new("x", DataType::Float32, false)]),
        WriteOptions::default(),
    )
    .unwrap();
    let batch =
        RecordBatch::try_from_iter([("x", Arc::new(Int32Array::from(vec![1])) as ArrayRef)])
            .unwrap();
    assert_eq!(
        writer.write_batch(&batch).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
}

/// A source that counts the bytes read through it, or lent by it when `lends`.
struct Counting<R> {
    inner: R,
    read: Arc<AtomicU64>,
    lends: bool,
    /// The bytes read (not lent) through it.
    only_read: AtomicU64,
    /// The range lent last: the reader may ask twice in a row for bytes it takes once.
    last_lent: std::sync::Mutex<Option<(u64, usize)>>,
}

impl<R> Counting<R> {
    fn new(inner: R, read: Arc<AtomicU64>, lends: bool) -> Self {
        Self {
            inner,
            read,
            lends,
            only_read: AtomicU64::new(0),
            last_lent: std::sync::Mutex::new(None),
        }
    }
}

impl<R: Source> Source for Counting<R> {
    fn lend(&self, offset: u64, len: usize) -> Option<&[u8]> {
        if !self.lends {
            return None;
        }
        let lent = self.inner.lend(offset, len)?;
        if self.last_lent.lock().unwrap().replace((offset, len)) != Some((offset, len)) {
            self.read.fetch_add(len as u64, Ordering::SeqCst);
        }
        Some(lent)
    }
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.fetch_add(n as u64, Ordering::SeqCst);
        self.only_read.fetch_add(n as u64, Ordering::SeqCst);
        Ok(n)
    }
}

impl<R: Seek> Seek for Counting<R> {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        self.inner.seek(pos)
    }
}

#[test]
fn range_reads_fetch_only_overlapping_pages_and_chunks() {
    let options = WriteOptions {
        strategy: Encoding::Bss.into(),
        page_values: Some(10_240),
        ..WriteOptions::default()
    };
    let (bytes, _, b) = write_file(102_400, &[50_000], options);
    let total = bytes.len() as u64;
    // Read into buffers, and lent by a source holding the bytes: the same bytes either way.
    for lends in [false, true] {
        let read = Arc::new(AtomicU64::new(0));
        let open = || {
            FileReader::open(Counting::new(
                Cursor::new(bytes.clone()),
                read.clone(),
                lends,
            ))
            .unwrap()
        };
        let opening = open().into_inner().only_read.load(Ordering::SeqCst);
        let mut reader = open();
        fetches_only_overlapping_pages_and_chunks(&mut reader, &read, total, &b);
        // Past the header and footer, a lending source is never read.
        let after_open = reader.into_inner().only_read.load(Ordering::SeqCst) - opening;
        assert_eq!(after_open > 0, !lends, "{after_open} bytes read");
    }
}

fn fetches_only_overlapping_pages_and_chunks<R: Source>(
    reader: &mut FileReader<R>,
    read: &AtomicU64,
    total: u64,
    b: &ArrayRef,
) {
    let footer_bytes = read.swap(0, Ordering::SeqCst);
    assert!(
        footer_bytes < total / 10,
        "open read {footer_bytes} of {total} bytes"
    );
    // whole column b: all its pages
    reader.read_column(1).unwrap();
    let column_b: u64 = reader.footer().columns[1]
        .pages
        .iter()
        .map(|p| p.length)
        .sum();
    assert_eq!(read.swap(0, Ordering::SeqCst), column_b);
    // one row of b: one chunk of 512 f64 values = 4096 bytes, nothing else
    let got = reader.read_column_range(1, 50_000..50_001).unwrap();
    assert_eq!(read.swap(0, Ordering::SeqCst), 4096);
    common::assert_same_bits(&b.slice(50_000, 1), got.as_ref(), "one row");
    // a range over two pages: the tail chunk of page 3 and the head chunk of page 4
    reader.read_column_range(1, 40_900..41_000).unwrap();
    assert_eq!(read.swap(0, Ordering::SeqCst), 2 * 4096);
    // a whole page read checks its CRC; a range inside it reads only its chunks
    reader.read_column_range(1, 10_240..20_480).unwrap();
    assert_eq!(read.swap(0, Ordering::SeqCst), 10_240 * 8);
}

#[test]
fn damaged_files_are_errors() {
    let (bytes, _, _) = write_file(
        5000,
        &[5000],
        WriteOptions {
            strategy: Encoding::BssLz4.into(),
            page_values: Some(2000),
            ..WriteOptions::default()
        },
    );
    // every prefix: truncated (or, for the first bytes, not even a header)
    for cut in (0..bytes.len())
        .step_by(97)
        .chain([bytes.len() - 1, bytes.len() - 4, 1, 3])
    {
        let result = FileReader::open(Cursor::new(&bytes[..cut]));
        let err = result.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Truncated, "cut {cut}: {err}");
    }
    // not a miniblock file
    let err = FileReader::open(Cursor::new(b"PAR1 something else entirely".to_vec())).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Corrupt);
    // a flipped byte in a page: the page CRC names it
    let mut damaged = bytes.clone();
    damaged[100] ^= 0x20;
    let mut reader = FileReader::open(Cursor::new(damaged.clone())).unwrap();
    let err = reader.read_column(0).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Corrupt);
    assert!(
        err.to_string().contains("page 0") && err.to_string().contains("checksum"),
        "{err}"
    );
    // opting out of verification decodes what is there (or fails inside a chunk), never panics
    reader.set_verify_checksums(false);
    let _ = reader.read_column(0);
    // a flipped byte in the footer
    let mut damaged = bytes.clone();
    let at = bytes.len() - 20;
    damaged[at] ^= 1;
    let err = FileReader::open(Cursor::new(damaged)).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Corrupt, "{err}");
}

#[test]
fn parallel_and_serial_writers_write_the_same_bytes() {
    let strategies = Encoding::ALL
        .map(Strategy::from)
        .into_iter()
        .chain(["auto", "auto:0"].map(|s| s.parse().unwrap()));
    for strategy in strategies {
        let write = |parallel| {
            write_file(
                40_000,
                &[7, 10_000, 333],
                WriteOptions {
                    strategy,
                    page_values: Some(1500),
                    parallel,
                    ..WriteOptions::default()
                },
            )
            .0
        };
        assert_eq!(write(false), write(true), "{strategy}");
    }
}

#[test]
fn scans_stream_projected_batches_of_the_rows_asked() {
    use arrow_array::RecordBatchReader;
    use miniblock::file::ScanOptions;
    let options = WriteOptions {
        page_values: Some(10_240),
        ..WriteOptions::default()
    };
    let (a, b) = columns(50_000);
    let metadata: std::collections::HashMap<String, String> =
        [("origin".to_owned(), "test".to_owned())].into();
    let schema = Arc::new(Schema::new_with_metadata(
        vec![
            Field::new("a", DataType::Float32, true)
                .with_metadata([("unit".to_owned(), "K".to_owned())].into()),
            Field::new("b", DataType::Float64, false),
        ],
        metadata.clone(),
    ));
    let bytes = one_batch(&schema, vec![a.clone(), b.clone()], options);
    let open = || FileReader::open(Cursor::new(bytes.clone())).unwrap();
    // b then a, 7,000 rows a batch, rows 1,234..45,678: batches cut across pages
    let read = Arc::new(AtomicU64::new(0));
    let counted = FileReader::open(Counting::new(
        Cursor::new(bytes.clone()),
        read.clone(),
        false,
    ))
    .unwrap();
    let scan = counted
        .scan(
            &ScanOptions::default()
                .with_columns(["b".into(), 0.into()])
                .with_batch_rows(7_000)
                .with_rows(1_234..45_678),
        )
        .unwrap();
    let out_schema = scan.schema();
    assert_eq!(out_schema.field(0).name(), "b");
    assert_eq!(out_schema.field(1).metadata()["unit"], "K");
    assert_eq!(out_schema.metadata(), &metadata);
    let batches: Vec<RecordBatch> = scan.map(Result::unwrap).collect();
    let sizes: Vec<usize> = batches.iter().map(RecordBatch::num_rows).collect();
    assert_eq!(sizes, [7_000, 7_000, 7_000, 7_000, 7_000, 7_000, 2_444]);
    let mut row = 1_234;
    for batch in &batches {
        let n = batch.num_rows();
        common::assert_same_bits(&b.slice(row, n), batch.column(0).as_ref(), "b");
        common::assert_same_bits(&a.slice(row, n), batch.column(1).as_ref(), "a");
        row += n;
    }
    // only column a: none of b's bytes are read
    let only_a = open()
        .scan(&ScanOptions {
            columns: Some(vec![0.into()]),
            ..ScanOptions::default()
        })
        .unwrap();
    let got: Vec<RecordBatch> = only_a.map(Result::unwrap).collect();
    assert_eq!(got.iter().map(RecordBatch::num_rows).sum::<usize>(), 50_000);
    read.store(0, Ordering::SeqCst);
    let counted = FileReader::open(Counting::new(
        Cursor::new(bytes.clone()),
        read.clone(),
        false,
    ))
    .unwrap();
    let footer = read.swap(0, Ordering::SeqCst);
    // A page's chunks and its page buffers (a dictionary), nothing else.
    let a_bytes: u64 = counted.footer().columns[0]
        .pages
        .iter()
        .map(|p| p.length + p.buffer_sizes.iter().sum::<u64>())
        .sum();
    let _: Vec<RecordBatch> = counted
        .scan(&ScanOptions {
            columns: Some(vec![0.into()]),
            ..ScanOptions::default()
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(read.load(Ordering::SeqCst), a_bytes, "footer {footer}");
    // no columns: batches of row counts only
    let counts: Vec<usize> = open()
        .scan(&ScanOptions {
            columns: Some(vec![]),
            batch_rows: 20_000,
            rows: None,
            filter: None,
        })
        .unwrap()
        .map(|b| b.unwrap().num_rows())
        .collect();
    assert_eq!(counts, [20_000, 20_000, 10_000]);
    // bad requests are errors, not panics
    for bad in [
        ScanOptions {
            columns: Some(vec![2.into()]),
            ..ScanOptions::default()
        },
        ScanOptions::default().with_columns(["c".into()]),
        ScanOptions {
            batch_rows: 0,
            ..ScanOptions::default()
        },
        ScanOptions {
            rows: Some(10..50_001),
            ..ScanOptions::default()
        },
        ScanOptions {
            #[allow(clippy::reversed_empty_ranges)]
            rows: Some(10..5),
            ..ScanOptions::default()
        },
    ] {
        assert_eq!(
            open().scan(&bad).unwrap_err().kind(),
            ErrorKind::InvalidArgument
        );
    }
    // a name the file lacks: the error says which columns there are
    let missing = open()
        .scan(&ScanOptions::default().with_columns(["c".into()]))
        .unwrap_err();
    assert!(
        missing
            .to_string()
            .contains(r#"no column "c"; the file has ["a", "b"]"#),
        "{missing}"
    );
}

/// A change to a footer's page.
type Lie = Box<dyn Fn(&mut miniblock::proto::file::Page)>;

/// Dictionary pages keep their items in a page buffer after the page's data: it is
/// written, read back for whole and partial reads, checked against its own CRC32C, and a
/// footer that misplaces or miscounts it is corrupt.
#[test]
fn dictionary_page_buffers_round_trip_and_are_checked() {
    let schema = Arc::new(Schema::new(vec![Field::new("code", DataType::Int32, true)]));
    let codes: ArrayRef = Arc::new(Int32Array::from_iter(
        (0..50_000).map(|i| (i % 7 != 3).then_some([-5, 17, 90_000, 3][i * 7 % 4])),
    ));
    for strategy in [Encoding::Dict, Encoding::DictZstd] {
        let options = WriteOptions {
            strategy: strategy.into(),
            page_values: Some(20_000),
            ..WriteOptions::default()
        };
        let bytes = one_batch(&schema, vec![codes.clone()], options);
        let mut reader = FileReader::open(Cursor::new(bytes.clone())).unwrap();
        let pages = reader.footer().columns[0].pages.clone();
        assert_eq!(pages.len(), 3);
        assert!(
            pages.iter().all(|p| p.buffer_sizes == [20]),
            "{strategy}: 4 codes and the zero under nulls"
        );
        assert_eq!(reader.read_column(0).unwrap().as_ref(), codes.as_ref());
        assert_eq!(
            reader
                .read_column_range(0, 19_990..20_020)
                .unwrap()
                .as_ref(),
            codes.slice(19_990, 30).as_ref()
        );
        assert_eq!(reader.verify().unwrap().pages, 3);

        // A flipped byte in page 1's items: its own checksum names it.
        let mut damaged = bytes.clone();
        damaged[(pages[1].offset + pages[1].length) as usize + 5] ^= 4;
        let mut reader = FileReader::open(Cursor::new(damaged)).unwrap();
        let err = reader.read_column_range(0, 25_000..25_010).unwrap_err();
        assert!(err.to_string().contains("page buffer 0 checksum"), "{err}");
        assert!(reader.verify().is_err());

        // Footers that lie about the buffers.
        let lies: [(&str, Lie); 4] = [
            (
                "no buffers",
                Box::new(|p| {
                    p.buffer_sizes.clear();
                    p.buffer_crc32c.clear();
                }),
            ),
            (
                "past the file",
                Box::new(|p| p.buffer_sizes[0] = u64::MAX - 3),
            ),
            ("no checksum", Box::new(|p| p.buffer_crc32c.clear())),
            ("wrong size", Box::new(|p| p.buffer_sizes[0] = 12)),
        ];
        for (what, lie) in lies {
            let lying = common::with_footer(&bytes, |f| lie(&mut f.columns[0].pages[2]));
            let err = FileReader::open(Cursor::new(lying))
                .and_then(|mut r| r.read_column(0))
                .unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Corrupt, "{what}: {err}");
        }
    }
}

/// Every page's statistics are in the footer; a scan with a filter reads only the pages
/// whose statistics may match (here about 1% of a sorted column's pages, and a few
/// percent of the file's bytes), and the rows it returns include every matching row.
/// `verify` compares every page's recorded statistics with those of its decoded values:
/// footers whose statistics are well formed (they pass the reader's checks and the file
/// reads) but untrue are corrupt there, down to the sign of a zero; pages without
/// statistics are not judged.
#[test]
fn verify_checks_page_statistics_against_the_values() {
    let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Float32, true)]));
    // Page 0 has nulls, page 1 a NaN, page 2 a -0.0 as its smallest value.
    let x: ArrayRef = Arc::new(Float32Array::from_iter((0..3_000).map(|i| match i {
        _ if i < 1_000 && i % 10 == 3 => None,
        1_500 => Some(f32::NAN),
        2_400 => Some(-0.0),
        _ => Some((i % 1_000) as f32 * 0.25),
    })));
    let options = WriteOptions {
        page_values: Some(1_000),
        ..WriteOptions::default()
    };
    let bytes = one_batch(&schema, vec![x.clone()], options);
    let summary = FileReader::open(Cursor::new(bytes.clone()))
        .unwrap()
        .verify()
        .unwrap();
    assert_eq!(
        (summary.pages, summary.page_stats, summary.nulls),
        (3, 3, 100)
    );

    let lies: [(&str, usize, Lie); 4] = [
        (
            "a lower min",
            1,
            Box::new(|p| {
                p.statistics.as_mut().unwrap().min = Some((-1.0f32).to_le_bytes().to_vec());
            }),
        ),
        (
            "a null too many",
            0,
            Box::new(|p| p.statistics.as_mut().unwrap().null_count += 1),
        ),
        (
            "no NaN",
            1,
            Box::new(|p| p.statistics.as_mut().unwrap().nan_count = 0),
        ),
        (
            "+0.0 for -0.0",
            2,
            Box::new(|p| {
                let stats = p.statistics.as_mut().unwrap();
                assert_eq!(stats.min, Some((-0.0f32).to_le_bytes().to_vec()));
                stats.min = Some(0.0f32.to_le_bytes().to_vec());
            }),
        ),
    ];
    for (what, page, lie) in lies {
        let lying = common::with_footer(&bytes, |f| lie(&mut f.columns[0].pages[page]));
        let mut reader = FileReader::open(Cursor::new(lying)).unwrap();
        assert!(reader.page_stats(0, page).unwrap().is_some(), "{what}");
        assert_eq!(
            reader.read_column(0).unwrap().as_ref(),
            x.as_ref(),
            "{what}"
        );
        let err = reader.verify().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Corrupt, "{what}: {err}");
        assert!(
            err.to_string().contains("page statistics disagree")
                && err.to_string().contains(&format!("page {page}")),
            "{what}: {err}"
        );
    }

    // A file written before statistics existed: nothing to compare.
    let old = common::with_footer(&bytes, |f| {
        for page in &mut f.columns[0].pages {
            page.statistics = None;
        }
    });
    let summary = FileReader::open(Cursor::new(old))
        .unwrap()
        .verify()
        .unwrap();
    assert_eq!((summary.pages, summary.page_stats), (3, 0));
}

#[test]
fn page_statistics_prune_scans() {
    use miniblock::file::{PageStats, ScanOptions, StatValue, StatsFilter};
    let schema = Arc::new(Schema::new(vec![
        Field::new("t", DataType::Int64, false),
        Field::new("x", DataType::Float32, true),
    ]));
    let rows = 400_000usize;
    let t: ArrayRef = Arc::new(arrow_array::Int64Array::from_iter_values(
        (0..400_000i64).map(|i| 1_000_000 + 3 * i),
    ));
    let x: ArrayRef = Arc::new(Float32Array::from_iter((0..rows).map(|i| match i % 97 {
        0 => None,
        1 => Some(f32::NAN),
        _ => Some((i as f32 * 0.001).sin()),
    })));
    let options = WriteOptions {
        page_values: Some(4_000),
        ..WriteOptions::default()
    };
    let bytes = one_batch(&schema, vec![t.clone(), x.clone()], options);
    let reader = FileReader::open(Cursor::new(bytes.clone())).unwrap();
    // Statistics of the whole columns, from the footer alone.
    let t_stats = reader.column_stats(0).unwrap().unwrap();
    assert_eq!(t_stats.min, Some(StatValue::Int(1_000_000)));
    assert_eq!(
        t_stats.max,
        Some(StatValue::Int(1_000_000 + 3 * (rows as i128 - 1)))
    );
    let x_stats = reader.column_stats(1).unwrap().unwrap();
    let expected = PageStats::of(x.as_ref());
    assert_eq!(x_stats, expected);
    assert_eq!((x_stats.null_count, x_stats.nan_count), (4124, 4124));
    assert_eq!(reader.footer().columns[0].pages.len(), 100);

    // t from 1,600,000 to 1,611,000: rows 200,000..203,667, in page 50 alone.
    let read = Arc::new(AtomicU64::new(0));
    let counted = FileReader::open(Counting::new(
        Cursor::new(bytes.clone()),
        read.clone(),
        false,
    ))
    .unwrap();
    read.store(0, Ordering::SeqCst);
    let filter = StatsFilter {
        column: "t".into(),
        min: Some(StatValue::Int(1_600_000)),
        max: Some(StatValue::Int(1_611_000)),
    };
    let batches: Vec<RecordBatch> = counted
        .scan(&ScanOptions {
            filter: Some(filter),
            ..ScanOptions::default()
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let fetched = read.load(Ordering::SeqCst);
    let got: usize = batches.iter().map(RecordBatch::num_rows).sum();
    assert_eq!(got, 4_000, "one page of rows");
    let first = &batches[0];
    assert_eq!(first.column(0).as_ref(), t.slice(200_000, 4_000).as_ref());
    common::assert_same_bits(&x.slice(200_000, 4_000), first.column(1).as_ref(), "x");
    assert!(
        fetched * 100 <= bytes.len() as u64 * 3,
        "read {fetched} of {} bytes",
        bytes.len()
    );
    println!(
        "pruned scan: {got} rows, {fetched} of {} bytes read",
        bytes.len()
    );

    // A range past every value reads nothing; an open range above keeps pages with NaN.
    let none = FileReader::open(Cursor::new(bytes.clone()))
        .unwrap()
        .scan(&ScanOptions {
            filter: Some(StatsFilter {
                column: 0.into(),
                min: Some(StatValue::Int(10_000_000)),
                max: None,
            }),
            ..ScanOptions::default()
        })
        .unwrap()
        .count();
    assert_eq!(none, 0);
    let above: usize = FileReader::open(Cursor::new(bytes.clone()))
        .unwrap()
        .scan(&ScanOptions {
            filter: Some(StatsFilter {
                column: 1.into(),
                min: Some(StatValue::Float(2.0)),
                max: None,
            }),
            ..ScanOptions::default()
        })
        .unwrap()
        .map(|b| b.unwrap().num_rows())
        .sum();
    assert_eq!(above, rows, "every page holds a NaN, which sorts above 2.0");
    let below: usize = FileReader::open(Cursor::new(bytes))
        .unwrap()
        .scan(&ScanOptions {
            filter: Some(StatsFilter {
                column: 1.into(),
                min: None,
                max: Some(StatValue::Float(-2.0)),
            }),
            ..ScanOptions::default()
        })
        .unwrap()
        .count();
    assert_eq!(below, 0);
}

/// Reading into a caller's buffer gives the same bits and validity as reading an Arrow
/// array, for any row range across pages and chunks; a buffer of the wrong size or type
/// is an error, not a partial read.
#[test]
fn reads_into_a_callers_buffer() {
    use arrow_array::types::{Float32Type, Float64Type};
    let values = common::mixed_f32(40_000, 9);
    let column = common::with_nulls(&values, 7);
    let plain: ArrayRef = Arc::new(arrow_array::Float64Array::from_iter_values(
        (0..40_000).map(|i| f64::from(i) * 0.25),
    ));
    let batch = RecordBatch::try_from_iter([("f", column.clone()), ("d", plain.clone())]).unwrap();
    let options = WriteOptions {
        page_values: Some(10_000),
        ..WriteOptions::default()
    };
    let mut writer = FileWriter::try_new(Vec::new(), batch.schema().as_ref(), options).unwrap();
    writer.write_batch(&batch).unwrap();
    let bytes = writer.finish().unwrap();
    let mut reader = FileReader::open(std::io::Cursor::new(bytes)).unwrap();
    for rows in [
        0..40_000u64,
        0..1,
        9_990..10_010,
        1_000..1_025,
        39_999..40_000,
        5..5,
    ] {
        let expected = reader.read_column_range(0, rows.clone()).unwrap();
        let mut out = vec![0f32; (rows.end - rows.start) as usize];
        let nulls = reader
            .read_values_into::<Float32Type>(0, rows.clone(), &mut out)
            .unwrap();
        let expected = expected.as_any().downcast_ref::<Float32Array>().unwrap();
        assert_eq!(
            nulls.as_ref(),
            expected.nulls().filter(|n| n.null_count() > 0),
            "{rows:?}"
        );
        for (i, v) in out.iter().enumerate() {
            if expected.is_valid(i) {
                assert_eq!(v.to_bits(), expected.value(i).to_bits(), "{rows:?} row {i}");
            }
        }
        let mut doubles = vec![0f64; out.len()];
        let none = reader
            .read_values_into::<Float64Type>(1, rows.clone(), &mut doubles)
            .unwrap();
        assert!(none.is_none());
        let want: Vec<f64> = (rows.start..rows.end).map(|i| i as f64 * 0.25).collect();
        assert_eq!(doubles, want);
    }
    let mut short = vec![0u8; 7];
    let err = reader
        .read_column_range_into(0, 0..2, &mut short)
        .unwrap_err();
    assert_eq!(err.kind(), miniblock::ErrorKind::InvalidArgument, "{err}");
    let mut wrong = vec![0f64; 2];
    let err = reader
        .read_values_into::<Float64Type>(0, 0..2, &mut wrong)
        .unwrap_err();
    assert!(err.to_string().contains("Float32"), "{err}");
}

/// Booleans are stored a byte per value in pages and come back as Arrow's bits: nulls,
/// slices starting inside a byte of bits, row ranges across chunks, every encoding.
#[test]
fn boolean_columns_round_trip() {
    use arrow_array::BooleanArray;
    let n = 10_000;
    let full = BooleanArray::from_iter((0..n).map(|i| (i % 13 != 0).then_some(i % 5 < 2)));
    let array: ArrayRef = Arc::new(full.slice(3, n - 3));
    let schema = Arc::new(Schema::new(vec![Field::new("b", DataType::Boolean, true)]));
    for strategy in [
        Strategy::default(),
        Strategy::from(Encoding::Plain),
        Strategy::from(Encoding::Lz4),
        Strategy::from(Encoding::Bitpack),
        Strategy::from(Encoding::Dict),
    ] {
        let options = WriteOptions::default().with_strategy(strategy);
        let mut writer = FileWriter::try_new(Vec::new(), &schema, options).unwrap();
        writer
            .write_batch(&RecordBatch::try_new(schema.clone(), vec![array.clone()]).unwrap())
            .unwrap();
        let bytes = writer.finish().unwrap();
        let mut reader = FileReader::open(Cursor::new(bytes)).unwrap();
        assert_eq!(reader.schema().field(0).data_type(), &DataType::Boolean);
        assert_eq!(
            reader.read_column(0).unwrap().as_ref(),
            array.as_ref(),
            "{strategy:?}"
        );
        let rows = reader.read_column_range(0, 1_000..5_000).unwrap();
        assert_eq!(
            rows.as_ref(),
            array.slice(1_000, 4_000).as_ref(),
            "{strategy:?}"
        );
        reader.verify().unwrap();
    }
}

/// A source that fails every read that reaches past byte `fail_at` (a disk error in the
/// middle of a file), after the footer has been read.
struct Failing {
    inner: Cursor<Vec<u8>>,
    fail_at: u64,
    armed: Arc<std::sync::atomic::AtomicBool>,
}

impl Read for Failing {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let end = self.inner.position() + buf.len() as u64;
        if self.armed.load(Ordering::SeqCst) && end > self.fail_at {
            return Err(std::io::Error::other("the disk failed"));
        }
        self.inner.read(buf)
    }
}

impl Source for Failing {}

impl Seek for Failing {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        self.inner.seek(pos)
    }
}

/// A source that fails while pages are read is an I/O error naming the page, on one
/// thread and on several (where pages already queued are still decoded, and none waits
/// for one that was never read), and the caller's buffer is not left for a success.
#[test]
fn a_source_failing_mid_column_is_an_io_error_on_every_path() {
    let n = 200_000;
    let values: ArrayRef = Arc::new(Float32Array::from_iter_values(
        (0..n).map(|i| (i as f32 * 0.01).sin()),
    ));
    let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Float32, false)]));
    let options = WriteOptions {
        page_values: Some(10_000),
        ..WriteOptions::default()
    };
    let bytes = one_batch(&schema, vec![values], options);
    for parallel in [false, true] {
        let armed = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut reader = FileReader::open(Failing {
            fail_at: bytes.len() as u64 / 2,
            inner: Cursor::new(bytes.clone()),
            armed: armed.clone(),
        })
        .unwrap();
        reader.set_parallel(parallel);
        armed.store(true, Ordering::SeqCst);
        let mut out = vec![0f32; n];
        let err = reader
            .read_values_into::<arrow_array::types::Float32Type>(0, 0..n as u64, &mut out)
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Io, "parallel {parallel}: {err}");
        assert!(
            err.to_string().contains("page"),
            "parallel {parallel}: {err}"
        );
        let err = reader.read_column(0).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Io, "parallel {parallel}: {err}");
        // The first pages, before the failure, still read.
        let first = reader.read_column_range(0, 0..10_000).unwrap();
        assert_eq!(first.len(), 10_000);
    }
}

/// Pages decoded in parallel give what one thread gives, bit for bit: whole columns and
/// ranges, into Arrow arrays and into a caller's buffer, with nulls; and a damaged page
/// is still the error it is on one thread.
#[test]
fn parallel_page_decoding_matches_one_thread() {
    let n = 300_000;
    let values: ArrayRef = common::with_nulls(&common::mixed_f32(n, 11), 7);
    let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Float32, true)]));
    let options = WriteOptions {
        page_values: Some(20_000),
        ..WriteOptions::default()
    };
    let bytes = one_batch(&schema, vec![values.clone()], options);
    let mut one = FileReader::open(Cursor::new(bytes.clone())).unwrap();
    let mut many = FileReader::open(Cursor::new(bytes.clone())).unwrap();
    many.set_parallel(true);
    for rows in [0..n as u64, 12_345..250_001, 19_999..20_001] {
        let serial = one.read_column_range(0, rows.clone()).unwrap();
        let parallel = many.read_column_range(0, rows.clone()).unwrap();
        common::assert_same_bits(serial.as_ref(), parallel.as_ref(), &format!("{rows:?}"));
        let len = (rows.end - rows.start) as usize;
        let (mut x, mut y) = (vec![0f32; len], vec![0f32; len]);
        let nx = one
            .read_values_into::<arrow_array::types::Float32Type>(0, rows.clone(), &mut x)
            .unwrap();
        let ny = many
            .read_values_into::<arrow_array::types::Float32Type>(0, rows.clone(), &mut y)
            .unwrap();
        assert_eq!(nx, ny);
        assert!(x.iter().zip(&y).all(|(p, q)| p.to_bits() == q.to_bits()));
    }
    let whole = many.read_column(0).unwrap();
    common::assert_same_bits(values.as_ref(), whole.as_ref(), "whole column");
    // A changed byte in the data of a page in the middle.
    let mut damaged = bytes;
    let middle = damaged.len() / 2;
    damaged[middle] ^= 0x10;
    let mut reader = FileReader::open(Cursor::new(damaged)).unwrap();
    reader.set_parallel(true);
    let err = reader.read_column(0).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Corrupt, "{err}");
}

/// A source whose `lend` gives one byte fewer than asked: a bug in a source, which the
/// reader answers by reading the bytes instead, on one thread and on several.
struct ShortLender(Cursor<Vec<u8>>);

impl Read for ShortLender {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.read(buf)
    }
}

impl Seek for ShortLender {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        self.0.seek(pos)
    }
}

impl Source for ShortLender {
    fn lend(&self, offset: u64, len: usize) -> Option<&[u8]> {
        self.0
            .lend(offset, len)
            .map(|b| &b[..b.len().saturating_sub(1)])
    }
}

#[test]
fn a_source_lending_the_wrong_length_is_read_instead() {
    let options = WriteOptions {
        strategy: Strategy::Auto(miniblock::encodings::AutoOptions::default()),
        page_values: Some(4096),
        ..WriteOptions::default()
    };
    let (bytes, a, b) = write_file(40_000, &[40_000], options);
    for parallel in [false, true] {
        let mut reader = FileReader::open(ShortLender(Cursor::new(bytes.clone()))).unwrap();
        reader.set_parallel(parallel);
        common::assert_same_bits(&a, reader.read_column(0).unwrap().as_ref(), "a");
        common::assert_same_bits(&b, reader.read_column(1).unwrap().as_ref(), "b");
        let got = reader.read_column_range(1, 5_000..5_100).unwrap();
        common::assert_same_bits(&b.slice(5_000, 100), got.as_ref(), "rows of b");
    }
}
