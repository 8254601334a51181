//! Hostile counts and sizes are rejected before any large allocation: a counting global
//! allocator measures the peak bytes live while each hostile input is decoded.

mod common;
mod counting;

use counting::{measure, serial};
use std::io::Cursor;
use std::time::Duration;

use miniblock::file::{FileReader, FORMAT_VERSION, MAGIC};
use miniblock::proto::file as pb;
use miniblock::{Encoding, PageDecoder};
use prost::Message;

/// A file made of a header, `data`, a footer of `columns` and a correct trailer.
fn file_with_footer(data: &[u8], num_rows: u64, columns: Vec<pb::Column>) -> Vec<u8> {
    let mut bytes = MAGIC.to_vec();
    bytes.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    bytes.extend_from_slice(data);
    let footer = pb::Footer {
        format_version: FORMAT_VERSION,
        num_rows,
        columns,
        ..pb::Footer::default()
    }
    .encode_to_vec();
    bytes.extend_from_slice(&footer);
    bytes.extend_from_slice(&(footer.len() as u32).to_le_bytes());
    bytes.extend_from_slice(&crc32c::crc32c(&footer).to_le_bytes());
    bytes.extend_from_slice(&MAGIC);
    bytes
}

fn page(offset: u64, length: u64, num_values: u64, table: Vec<u8>) -> pb::Page {
    pb::Page {
        offset,
        length,
        num_values,
        encoding: Some(Encoding::BssLz4.compressor(64).unwrap().array_encoding()),
        chunk_table: table,
        crc32c: 0,
        ..pb::Page::default()
    }
}

fn column(pages: Vec<pb::Page>) -> pb::Column {
    pb::Column {
        name: "x".into(),
        value_type: pb::ValueType::Float64 as i32,
        nullable: true,
        pages,
        ..pb::Column::default()
    }
}

/// Decodes an input; true when it was rejected.
type Check = Box<dyn Fn(&[u8]) -> bool>;

#[test]
fn huge_claims_allocate_little_and_fail_fast() {
    let serial = serial();
    let encoding = Encoding::BssLz4.compressor(64).unwrap().array_encoding();
    let huge = 1u64 << 40;
    let mut cases: Vec<(&str, Vec<u8>, Check)> = Vec::new();
    // Pages: counts and sizes that do not fit the bytes.
    for (what, num_values, page) in [
        (
            "2^40 values, one chunk",
            huge,
            vec![1, 0, 0, 0, 0xFF, 0xFF, 0, 2, 0, 0, 0, 0],
        ),
        (
            "u64::MAX values",
            u64::MAX,
            vec![1, 0, 0, 0, 0xFF, 0xFF, 0, 2],
        ),
        (
            "u32::MAX chunks in 12 bytes",
            huge,
            vec![0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 16, 2, 0, 0, 0, 0],
        ),
        (
            "max-size compressed chunks of nothing",
            1 << 17,
            vec![2, 0, 0, 0, 0xFF, 0xFF, 16, 2, 0xFF, 0xFF, 0, 2],
        ),
    ] {
        let encoding = encoding.clone();
        cases.push((
            what,
            page,
            Box::new(move |bytes: &[u8]| {
                PageDecoder::try_new(&encoding, num_values, bytes)
                    .and_then(|d| d.decode())
                    .is_err()
            }),
        ));
    }
    // Zstd allows 32768x expansion, so a chunk table of tiny "compressed" chunks passes
    // the table checks; the frames must then record their sizes before anything is
    // allocated for them, and output grows only as chunks decode.
    let zstd = Encoding::BssZstd.compressor(64).unwrap().array_encoding();
    let lying_zstd_page = |chunks: usize, wide: bool| {
        let mut page = Vec::new();
        let header = chunks as u32 | if wide { 1 << 31 } else { 0 };
        page.extend_from_slice(&header.to_le_bytes());
        for i in 0..chunks {
            let log = if i + 1 == chunks {
                0
            } else if wide {
                16
            } else {
                9
            };
            if wide {
                page.extend_from_slice(&8u32.to_le_bytes());
                page.extend_from_slice(&[log, 2, 0, 0]);
            } else {
                page.extend_from_slice(&[8, 0, log, 2]);
            }
        }
        for _ in 0..chunks {
            // a zstd magic and a frame header without a content size
            page.extend_from_slice(&[0x28, 0xB5, 0x2F, 0xFD, 0x00, 0x00, 0x00, 0x00]);
        }
        page
    };
    for (what, chunks, wide, per_chunk) in [
        (
            "4096 zstd chunks of 8 bytes claiming 4 KiB each",
            4096,
            false,
            512u64,
        ),
        (
            "64 zstd chunks of 8 bytes claiming 512 KiB each",
            64,
            true,
            65536,
        ),
    ] {
        let zstd = zstd.clone();
        let num_values = (chunks as u64 - 1) * per_chunk + 1;
        cases.push((
            what,
            lying_zstd_page(chunks, wide),
            Box::new(move |bytes: &[u8]| {
                PageDecoder::try_new(&zstd, num_values, bytes)
                    .and_then(|d| d.decode())
                    .is_err()
            }),
        ));
    }
    // The same page inside a file.
    {
        let page_bytes = lying_zstd_page(4096, false);
        let table = page_bytes[4..4 + 4096 * 4].to_vec();
        let data = page_bytes[4 + 4096 * 4..].to_vec();
        let mut lying = page(8, data.len() as u64, 4095 * 512 + 1, table);
        lying.encoding = Some(zstd.clone());
        let file = file_with_footer(&data, 4095 * 512 + 1, vec![column(vec![lying])]);
        cases.push((
            "file page of 4096 lying zstd chunks",
            file,
            Box::new(|bytes: &[u8]| match FileReader::open(Cursor::new(bytes)) {
                Err(_) => true,
                Ok(mut reader) => {
                    reader.set_verify_checksums(false);
                    reader.read_column(0).is_err()
                }
            }),
        ));
    }
    // Files: footers whose counts and lengths lie.
    let data = vec![0u8; 64];
    let files = [
        (
            "page of u64::MAX bytes",
            file_with_footer(
                &data,
                huge,
                vec![column(vec![page(
                    8,
                    u64::MAX,
                    huge,
                    vec![0xFF, 0xFF, 0, 2],
                )])],
            ),
        ),
        (
            "2^40 rows in a one-chunk page",
            file_with_footer(
                &data,
                huge,
                vec![column(vec![page(8, 64, huge, vec![64, 0, 0, 2])])],
            ),
        ),
        (
            "rows that overflow",
            file_with_footer(
                &data,
                5,
                vec![column(vec![
                    page(8, 32, u64::MAX, vec![32, 0, 0, 2]),
                    page(40, 32, 6, vec![32, 0, 0, 2]),
                ])],
            ),
        ),
        ("footer length u32::MAX", {
            let mut f = file_with_footer(&data, 0, vec![]);
            let n = f.len();
            f[n - 12..n - 8].copy_from_slice(&u32::MAX.to_le_bytes());
            f
        }),
    ];
    for (what, bytes) in files {
        cases.push((
            what,
            bytes,
            Box::new(|bytes: &[u8]| match FileReader::open(Cursor::new(bytes)) {
                Err(_) => true,
                Ok(mut reader) => reader.read_column(0).is_err(),
            }),
        ));
    }
    for (what, input, fails) in &cases {
        let mut failed = false;
        let (peak, elapsed) = measure(&serial, || failed = fails(input));
        assert!(failed, "{what}: accepted");
        assert!(
            peak <= 64 * input.len() + 64 * 1024,
            "{what}: {peak} bytes allocated for {} input bytes",
            input.len()
        );
        assert!(elapsed < Duration::from_secs(1), "{what}: took {elapsed:?}");
    }
}

/// A standalone page (`u32 header | table | data`) of `chunks`, each given as its table
/// entry fields and its bytes; `wide` picks 8-byte entries.
fn standalone_page(wide: bool, chunks: &[(u32, u8, u8)], data: &[u8]) -> Vec<u8> {
    let header = chunks.len() as u32 | if wide { 1 << 31 } else { 0 };
    let mut page = header.to_le_bytes().to_vec();
    for &(num_bytes, log, flags) in chunks {
        if wide {
            page.extend_from_slice(&num_bytes.to_le_bytes());
            page.extend_from_slice(&[log, flags, 0, 0]);
        } else {
            page.extend_from_slice(&(num_bytes as u16).to_le_bytes());
            page.extend_from_slice(&[log, flags]);
        }
    }
    page.extend_from_slice(data);
    page
}

/// The bound docs/reliability.md states for a hostile page: a few times the bytes present (the
/// output reserve is at most 8x the data plus 1 MiB; a parsed chunk table takes 12x its 4-byte
/// entries) plus a small constant. No output is returned, so none is asked for.
fn assert_bounded(
    serial: &std::sync::MutexGuard<'static, ()>,
    what: &str,
    input: usize,
    run: impl FnOnce() -> bool,
) {
    let mut failed = false;
    let (peak, elapsed) = measure(serial, || failed = run());
    assert!(failed, "{what}: accepted");
    assert!(
        peak <= 12 * input + (2 << 20),
        "{what}: {peak} bytes allocated for {input} input bytes"
    );
    assert!(elapsed < Duration::from_secs(5), "{what}: took {elapsed:?}");
}

/// The attacks of the review: validity reserved for claimed rows, scratch zero-filled for
/// a claimed chunk size before its frame header was read, LZ4 chunks claiming 256x.
#[test]
fn claimed_counts_do_not_drive_allocation() {
    let serial = serial();
    // 100,000 BSS+Zstd chunks of 1-byte values, each claiming 65,536 values in 2 bytes
    // (within Zstd's 32768x), the last with validity: ~800 MB of validity was reserved.
    let chunks = 100_000usize;
    let mut entries = vec![(2u32, 16u8, 2u8); chunks - 1];
    entries.push((8192 + 2, 0, 3));
    let mut data = vec![0u8; (chunks - 1) * 2];
    data.extend(std::iter::repeat_n(0xFF, 8192));
    data.extend_from_slice(&[0, 0]);
    let page = standalone_page(false, &entries, &data);
    let encoding = Encoding::BssZstd.compressor(8).unwrap().array_encoding();
    let num_values = chunks as u64 * 65536;
    assert_bounded(
        &serial,
        "100,000 chunks claiming 65,536 values",
        page.len(),
        || {
            PageDecoder::try_new(&encoding, num_values, &page)
                .and_then(|d| d.decode())
                .is_err()
        },
    );

    // One wide-table Zstd chunk of 16,384-byte values (1 GiB claimed, the largest chunk
    // an encoder writes) from 128 KiB: once with no frame header, once with a frame
    // header that records exactly the claimed size over garbage.
    let values = 65_536u64;
    let mut headed = vec![0x28, 0xB5, 0x2F, 0xFD, 0xE0];
    headed.extend_from_slice(&(values * 16_384).to_le_bytes());
    for (what, prefix) in [
        ("no frame header", vec![]),
        ("a lying frame header", headed),
    ] {
        let mut data = prefix;
        data.resize(128 * 1024, 0x5A);
        let page = standalone_page(true, &[(data.len() as u32, 0, 2)], &data);
        for encoding in [Encoding::Zstd, Encoding::BssZstd] {
            let message = encoding.compressor(16_384 * 8).unwrap().array_encoding();
            assert_bounded(
                &serial,
                &format!("{encoding} 1 GiB chunk, {what}"),
                page.len(),
                || {
                    PageDecoder::try_new(&message, values, &page)
                        .and_then(|d| d.decode())
                        .is_err()
                },
            );
            assert_bounded(
                &serial,
                &format!("{encoding} 1 GiB chunk, {what}, rows 1..2"),
                page.len(),
                || {
                    PageDecoder::try_new(&message, values, &page)
                        .and_then(|d| d.decode_range(1..2))
                        .is_err()
                },
            );
        }
    }
    // 1,000 delta+ans chunks of 3 bytes, each claiming 65,536 f32 values (within the
    // encoding's expansion): whole chunks decode in runs, and a run's output must not be
    // set aside for all of its claimed rows before any of them decodes.
    let chunks = 1_000usize;
    let mut entries = vec![(3u32, 16u8, 0u8); chunks - 1];
    entries.push((3, 0, 0));
    let data: Vec<u8> = std::iter::repeat_n([0xC1u8, 9, 0], chunks)
        .flatten()
        .collect();
    let page = standalone_page(false, &entries, &data);
    let message = Encoding::DeltaAns.compressor(32).unwrap().array_encoding();
    assert_bounded(
        &serial,
        "1,000 delta+ans chunks claiming 65,536 values",
        page.len(),
        || {
            PageDecoder::try_new(&message, chunks as u64 * 65_536, &page)
                .and_then(|d| d.decode())
                .is_err()
        },
    );

    // A 5-byte fill chunk whose one run claims all but one of 65,536 values of 16 KiB
    // (1 GiB) and whose inner chunk, holding that last value, is missing: the run header
    // and the inner chunk are checked before the chunk's output is allocated.
    let message = common::wide_fill_encoding();
    let data = [0x01, 0x00, 0xFF, 0xFF, 0x03];
    let page = standalone_page(true, &[(data.len() as u32, 0, 0)], &data);
    assert_bounded(&serial, "fill chunk claiming 1 GiB", page.len(), || {
        PageDecoder::try_new(&message, 65_536, &page)
            .and_then(|d| d.decode())
            .is_err()
    });
    assert_bounded(
        &serial,
        "fill chunk claiming 1 GiB, rows 0..1",
        page.len(),
        || {
            PageDecoder::try_new(&message, 65_536, &page)
                .and_then(|d| d.decode_range(0..1))
                .is_err()
        },
    );

    // A coded fill chunk (`coded_fill`) claiming 65,535 runs whose 393,210 bytes of pairs
    // are a 2-byte constant stream: a header claiming more than 32 times its coded bytes
    // is an error (the decoder checks it before it sizes the pairs' buffer).
    let coded = {
        use miniblock::proto::encodings::array_encoding::ArrayEncoding as Kind;
        let Some(Kind::Fill(mut fill)) = common::wide_fill_encoding().array_encoding else {
            unreachable!()
        };
        // One page table: log 5, symbols 0 and 1 (counts 24 and 8).
        fill.run_tables = vec![0x01, 0x05, 0x01, 0x05, 0x00, 0x01, 0x18, 0x01];
        miniblock::proto::encodings::ArrayEncoding {
            array_encoding: Some(Kind::CodedFill(fill)),
        }
    };
    let coded_data = [0xFF, 0xFF, 0x07, 0xFA, 0xFF, 0x17, 0x01, 0x01];
    let coded_page = standalone_page(true, &[(coded_data.len() as u32, 0, 0)], &coded_data);
    assert_bounded(
        &serial,
        "coded fill chunk claiming 393,210 header bytes",
        coded_page.len(),
        || {
            PageDecoder::try_new(&coded, 65_536, &coded_page)
                .and_then(|d| d.decode())
                .is_err()
        },
    );

    // The same chunk in a column file whose checksums are right, read whole, by one
    // row and verified.
    let file = common::wide_fill_file(&data);
    let open = || FileReader::open(Cursor::new(file.clone())).unwrap();
    assert_bounded(&serial, "fill file claiming 1 GiB", file.len(), || {
        open().read_column(0).is_err()
    });
    assert_bounded(
        &serial,
        "fill file claiming 1 GiB, rows 0..1",
        file.len(),
        || open().read_column_range(0, 0..1).is_err(),
    );
    assert_bounded(
        &serial,
        "fill file claiming 1 GiB, verified",
        file.len(),
        || open().verify().is_err(),
    );

    // More than an encoder writes: one 4 GiB chunk is refused before anything else.
    let data = vec![0u8; 128 * 1024];
    let page = standalone_page(true, &[(data.len() as u32, 0, 2)], &data);
    let message = Encoding::Zstd
        .compressor(65_536 * 8)
        .unwrap()
        .array_encoding();
    assert_bounded(&serial, "4 GiB chunk", page.len(), || {
        PageDecoder::try_new(&message, 65_536, &page).is_err()
    });

    // LZ4: four 4 MiB chunks claiming 1 GiB each (256x, within LZ4's bound) in a 16 MiB
    // page whose blocks are well-formed but decode to far less.
    let block: Vec<u8> = std::iter::repeat_n([0x0Fu8, 1, 0, 0xFF, 0xFF, 0x10], 4 * 1024 * 1024 / 6)
        .flatten()
        .chain([0x10, 0x55])
        .collect();
    let entries = [
        (block.len() as u32, 16, 2),
        (block.len() as u32, 16, 2),
        (block.len() as u32, 16, 2),
        (block.len() as u32, 0, 2),
    ];
    let data: Vec<u8> = (0..4).flat_map(|_| block.iter().copied()).collect();
    let page = standalone_page(true, &entries, &data);
    for encoding in [Encoding::Lz4, Encoding::BssLz4] {
        let message = encoding.compressor(16_384 * 8).unwrap().array_encoding();
        assert_bounded(
            &serial,
            &format!("{encoding} 16 MiB page claiming 4 GiB"),
            page.len(),
            || {
                PageDecoder::try_new(&message, 4 * 65_536, &page)
                    .and_then(|d| d.decode())
                    .is_err()
            },
        );
        assert_bounded(
            &serial,
            &format!("{encoding} 16 MiB page claiming 4 GiB, rows 1..2"),
            page.len(),
            || {
                PageDecoder::try_new(&message, 4 * 65_536, &page)
                    .and_then(|d| d.decode_range(1..2))
                    .is_err()
            },
        );
    }
}

/// A legitimate bomb: a small file of one page of 2^24 equal f64 values (128 MiB) is
/// verified in slices, not as the whole page (128 MiB at once before); its rows are read
/// by the chunks they touch.
#[test]
fn long_runs_are_verified_in_slices() {
    use miniblock::arrow::array::{Float64Array, RecordBatch};
    use miniblock::arrow::schema::{DataType, Field, Schema};
    use miniblock::file::{FileWriter, WriteOptions};
    use std::sync::Arc;

    let serial = serial();
    let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Float64, false)]));
    let options = WriteOptions {
        page_values: Some(1 << 24),
        ..WriteOptions::default()
    };
    let mut writer = FileWriter::try_new(Vec::new(), &schema, options).unwrap();
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![Arc::new(Float64Array::from(vec![-1e34; 1 << 20]))],
    )
    .unwrap();
    for _ in 0..16 {
        writer.write_batch(&batch).unwrap();
    }
    let file = writer.finish().unwrap();
    assert!(file.len() < 1 << 20, "{} bytes", file.len());
    let mut reader = FileReader::open(Cursor::new(file)).unwrap();
    let (peak, _) = measure(&serial, || {
        let summary = reader.verify().unwrap();
        assert_eq!(summary.pages, 1);
    });
    // A few buffers of one 16 MiB slice (the values, and the dictionary's indices or
    // the inner encoding's output for them), never the 128 MiB page.
    assert!(peak < 48 << 20, "verify allocated {peak} bytes");
    let (peak, _) = measure(&serial, || {
        let rows = reader.read_column_range(0, 1_000_000..1_000_010).unwrap();
        assert_eq!(rows.len(), 10);
    });
    // The page's parsed chunk table (32,768 entries) is most of it.
    assert!(peak < 4 << 20, "10 rows allocated {peak} bytes");

    // One 5-byte fill chunk: a single run of 65,536 values of 16 KiB (1 GiB). Ten of
    // its rows cost ten rows.
    let message = common::wide_fill_encoding();
    let data = [0x01, 0x00, 0x80, 0x80, 0x04];
    let page = standalone_page(true, &[(data.len() as u32, 0, 0)], &data);
    let (peak, _) = measure(&serial, || {
        let rows = PageDecoder::try_new(&message, 65_536, &page)
            .and_then(|d| d.decode_range(30_000..30_010))
            .unwrap();
        let rows = rows.to_data();
        assert!(rows.buffers()[0].as_slice().iter().all(|&b| b == 7));
        assert_eq!(rows.len(), 10);
    });
    assert!(
        peak < 1 << 20,
        "10 rows of a 1 GiB fill chunk allocated {peak} bytes"
    );
}

/// A footer of 200,000 columns opens in time proportional to its size (the duplicate-name
/// check was quadratic), once with distinct names and once with the last name repeated.
#[test]
fn many_columns_open_in_linear_time() {
    let serial = serial();
    let columns = |n: usize, repeat_last: bool| -> Vec<pb::Column> {
        (0..n)
            .map(|i| pb::Column {
                name: if repeat_last && i + 1 == n {
                    "c0".to_owned()
                } else {
                    format!("c{i}")
                },
                value_type: pb::ValueType::Float64 as i32,
                ..pb::Column::default()
            })
            .collect()
    };
    for repeat_last in [false, true] {
        let file = file_with_footer(&[], 0, columns(200_000, repeat_last));
        assert!(file.len() > 1_000_000);
        let mut failed = false;
        let (peak, elapsed) = measure(&serial, || {
            failed = FileReader::open(Cursor::new(&file)).is_err();
        });
        assert_eq!(failed, repeat_last, "repeat_last {repeat_last}");
        assert!(
            peak <= 64 * file.len(),
            "{peak} bytes for a {}-byte file",
            file.len()
        );
        assert!(
            elapsed < Duration::from_secs(10),
            "{} bytes of footer took {elapsed:?}",
            file.len()
        );
    }
}

/// A Lance file rebuilt with its column metadata changed by `edit`, and its schema
/// (global buffer 0) replaced by `descriptor` when one is given (placed after the data):
/// data as it was, then the new metadata, offset tables and footer.
fn lance_rebuilt(
    file: &[u8],
    descriptor: Option<&[u8]>,
    edit: impl Fn(&mut miniblock::proto::lance::ColumnMetadata),
) -> Vec<u8> {
    use miniblock::proto::lance::ColumnMetadata;
    let at = |i: usize| u64::from_le_bytes(file[i..i + 8].try_into().unwrap()) as usize;
    let footer = file.len() - 40;
    let (first_meta, meta_table, global_table) = (at(footer), at(footer + 8), at(footer + 16));
    let columns = u32::from_le_bytes(file[footer + 28..footer + 32].try_into().unwrap()) as usize;
    let mut out = file[..first_meta].to_vec();
    let mut globals = file[global_table..footer].to_vec();
    if let Some(descriptor) = descriptor {
        globals[..8].copy_from_slice(&(out.len() as u64).to_le_bytes());
        globals[8..16].copy_from_slice(&(descriptor.len() as u64).to_le_bytes());
        out.extend_from_slice(descriptor);
    }
    let new_first_meta = out.len() as u64;
    let mut table = Vec::new();
    for c in 0..columns {
        let (pos, len) = (at(meta_table + 16 * c), at(meta_table + 16 * c + 8));
        let mut meta = ColumnMetadata::decode(&file[pos..pos + len]).unwrap();
        edit(&mut meta);
        let bytes = meta.encode_to_vec();
        table.extend_from_slice(&(out.len() as u64).to_le_bytes());
        table.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        out.extend_from_slice(&bytes);
    }
    let new_meta_table = out.len() as u64;
    out.extend_from_slice(&table);
    let new_global_table = out.len() as u64;
    out.extend_from_slice(&globals);
    out.extend_from_slice(&new_first_meta.to_le_bytes());
    out.extend_from_slice(&new_meta_table.to_le_bytes());
    out.extend_from_slice(&new_global_table.to_le_bytes());
    out.extend_from_slice(&file[footer + 24..]);
    out
}

/// Lance pages claiming far more rows, items or dictionary entries than their bytes hold
/// are refused without allocating for the claims.
#[test]
fn lance_claims_do_not_drive_allocation() {
    use miniblock::lance::LanceReader;
    use miniblock::proto::lance::{page_layout::Layout, Any, PageLayout};
    let serial = serial();
    let read = |bytes: &[u8]| -> bool {
        let Ok(mut reader) = LanceReader::open(Cursor::new(bytes)) else {
            return true;
        };
        (0..reader.fields().len()).any(|f| reader.read_column(f).is_err())
    };
    let edit_layout = |meta: &mut miniblock::proto::lance::ColumnMetadata,
                       f: &dyn Fn(&mut PageLayout, &mut u64)| {
        for page in &mut meta.pages {
            let Some(miniblock::proto::lance::encoding::Location::Direct(direct)) =
                page.encoding.as_mut().and_then(|e| e.location.as_mut())
            else {
                continue;
            };
            let mut any = Any::decode(direct.encoding.as_slice()).unwrap();
            let mut layout = PageLayout::decode(any.value.as_slice()).unwrap();
            f(&mut layout, &mut page.length);
            any.value = layout.encode_to_vec();
            direct.encoding = any.encode_to_vec();
        }
    };
    for name in ["default_2.1", "default_2.2", "zstd_bss_2.1"] {
        let file = std::fs::read(format!("tests/lance/{name}.lance")).unwrap();
        let huge_rows = lance_rebuilt(&file, None, |meta| {
            edit_layout(meta, &|layout, length| {
                *length = 1 << 40;
                if let Some(Layout::MiniBlockLayout(mb)) = &mut layout.layout {
                    mb.num_items = 1 << 40;
                }
            });
        });
        assert_bounded(&serial, &format!("{name}: 2^40 rows"), file.len(), || {
            read(&huge_rows)
        });
        let huge_dictionary = lance_rebuilt(&file, None, |meta| {
            edit_layout(meta, &|layout, _| {
                if let Some(Layout::MiniBlockLayout(mb)) = &mut layout.layout {
                    mb.num_dictionary_items = u64::MAX / 2;
                }
            });
        });
        if name == "default_2.2" {
            assert_bounded(
                &serial,
                &format!("{name}: 2^63 dictionary items"),
                file.len(),
                || read(&huge_dictionary),
            );
        }
        let constant = lance_rebuilt(&file, None, |meta| {
            edit_layout(meta, &|layout, length| {
                *length = 1 << 40;
                layout.layout = Some(Layout::ConstantLayout(
                    miniblock::proto::lance::ConstantLayout {
                        layers: vec![1],
                        inline_value: Some(vec![0; 8]),
                        ..Default::default()
                    },
                ));
            });
            for page in &mut meta.pages {
                page.buffer_offsets.clear();
                page.buffer_sizes.clear();
            }
        });
        assert_bounded(
            &serial,
            &format!("{name}: constant page of 2^40 rows"),
            file.len(),
            || read(&constant),
        );
    }
}

/// A Lance schema of 160,000 fields (half of them children of the other half) opens, or
/// is refused, in time linear in its fields: finding each field's children was a scan of
/// all fields (147 s of CPU for such a file).
#[test]
fn lance_schemas_of_many_fields_open_in_linear_time() {
    use miniblock::arrow::array::{ArrayRef, Float64Array, RecordBatch};
    use miniblock::lance::{LanceReader, LanceWriteOptions, LanceWriter};
    use miniblock::proto::lance::{field, Field, FileDescriptor, Schema};
    let serial = serial();
    let column: ArrayRef = std::sync::Arc::new(Float64Array::from(vec![1.0, 2.0]));
    let batch = RecordBatch::try_from_iter([("a", column)]).unwrap();
    let mut writer =
        LanceWriter::try_new(Vec::new(), &batch.schema(), LanceWriteOptions::default()).unwrap();
    writer.write_batch(&batch).unwrap();
    let base = writer.finish().unwrap();
    let fields = (0..160_000)
        .map(|i: i32| Field {
            r#type: field::Type::Leaf as i32,
            name: format!("f{i}"),
            id: i,
            parent_id: if i % 2 == 0 { -1 } else { i - 1 },
            logical_type: "double".into(),
            ..Field::default()
        })
        .collect();
    let descriptor = FileDescriptor {
        schema: Some(Schema {
            fields,
            ..Schema::default()
        }),
        length: 2,
    }
    .encode_to_vec();
    let file = lance_rebuilt(&base, Some(&descriptor), |_| {});
    let (peak, elapsed) = measure(&serial, || {
        let _ = LanceReader::open(Cursor::new(&file));
    });
    assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");
    assert!(peak <= 64 * file.len(), "{peak} bytes");
}
