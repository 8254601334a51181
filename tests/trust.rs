//! Trust: every single-byte change to a real column file is detected, and one file or
//! page decodes from 8 threads at once to identical results.

mod common;

use std::io::Cursor;
use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::{ArrayRef, Float64Array, RecordBatch};
use miniblock::encodings::{MiniBlockCompressor, MiniBlockDecompressor};
use miniblock::file::{FileReader, FileWriter, WriteOptions};
use miniblock::{Encoding, ErrorKind, PageDecoder, PageEncoder};

fn bundled_f64(name: &str) -> Vec<f64> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("data")
        .join(name);
    std::fs::read(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .chunks_exact(8)
        .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
        .collect()
}

fn small_file() -> (Vec<u8>, ArrayRef) {
    let values = bundled_f64("tmy3_Dry_bulb.f64");
    let column: ArrayRef = Arc::new(Float64Array::from_iter(
        values
            .iter()
            .enumerate()
            .map(|(i, v)| (i % 97 != 0).then_some(*v)),
    ));
    let batch = RecordBatch::try_from_iter([("dry_bulb", column.clone())]).unwrap();
    let options = WriteOptions {
        strategy: Encoding::BssLz4.into(),
        page_values: Some(3000),
        ..WriteOptions::default()
    };
    let mut writer = FileWriter::try_new(Vec::new(), batch.schema().as_ref(), options).unwrap();
    writer.write_batch(&batch).unwrap();
    (writer.finish().unwrap(), column)
}

fn read_all(bytes: &[u8]) -> miniblock::Result<ArrayRef> {
    let mut reader = FileReader::open(Cursor::new(bytes))?;
    reader.read_column(0)
}

#[test]
fn every_single_byte_change_is_detected() {
    let (bytes, column) = small_file();
    assert_eq!(read_all(&bytes).unwrap().to_data(), column.to_data());
    for pos in 0..bytes.len() {
        for flip in [0x01u8, 0x80] {
            let mut damaged = bytes.clone();
            damaged[pos] ^= flip;
            let err =
                read_all(&damaged).expect_err(&format!("change at byte {pos} went unnoticed"));
            assert!(
                matches!(
                    err.kind(),
                    ErrorKind::Corrupt | ErrorKind::Truncated | ErrorKind::Unsupported
                ),
                "byte {pos}: {err}"
            );
        }
    }
}

#[test]
fn every_prefix_of_a_file_is_truncated() {
    let (bytes, _) = small_file();
    for cut in 0..bytes.len() {
        let err = read_all(&bytes[..cut]).unwrap_err();
        assert_eq!(
            err.kind(),
            ErrorKind::Truncated,
            "prefix of {cut} bytes: {err}"
        );
    }
}

#[test]
fn codec_types_are_send_and_sync() {
    fn check<T: Send + Sync + ?Sized>() {}
    check::<dyn MiniBlockCompressor>();
    check::<dyn MiniBlockDecompressor>();
    check::<PageEncoder>();
    check::<PageDecoder<'static>>();
    check::<FileReader<Cursor<Vec<u8>>>>();
    check::<FileWriter<Vec<u8>>>();
}

#[test]
fn eight_threads_decode_one_file_and_one_page() {
    let (bytes, column) = small_file();
    let expected = column.to_data();
    let page = PageEncoder::new(Encoding::BssLz4.compressor(64).unwrap())
        .encode(column.as_ref())
        .unwrap();
    let page_bytes = page.to_bytes();
    let decoder = PageDecoder::try_new(&page.encoding, page.num_values, &page_bytes).unwrap();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|t| {
                let (bytes, decoder, expected, column) = (&bytes, &decoder, &expected, &column);
                scope.spawn(move || {
                    for round in 0..20 {
                        // each thread its own reader over the shared bytes
                        assert_eq!(&read_all(bytes).unwrap().to_data(), expected);
                        // one decoder shared by all threads
                        assert_eq!(&decoder.decode().unwrap().to_data(), expected);
                        let c = (t * 7 + round) % decoder.num_chunks();
                        let rows = decoder.chunk_rows(c).unwrap();
                        let chunk = decoder.decode_chunk(c).unwrap();
                        assert_eq!(
                            chunk.to_data(),
                            column.slice(rows.start, rows.len()).to_data()
                        );
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
    });
}

/// Every byte a range read returns is covered by a verified checksum: a change anywhere in
/// a page's data is reported by every row range that fetches the changed chunk (it used
/// to be reported only by whole-page reads), and ranges that do not fetch it still read.
#[test]
fn range_reads_detect_changed_chunks() {
    let (bytes, column) = small_file();
    let reader = FileReader::open(Cursor::new(&bytes)).unwrap();
    let pages = reader.footer().columns[0].pages.clone();
    let first = &pages[0];
    assert_eq!(
        first.chunk_crc32c.len() * 4,
        first.chunk_table.len(),
        "one CRC32C per chunk"
    );
    let rows = column.len() as u64;
    let ranges = [
        0..1,
        100..2000,
        2999..3001,
        0..rows,
        5000..5001,
        rows - 1..rows,
    ];
    // Byte and row extents of the first page's chunks (narrow entries: u16 size, log).
    let mut extents = Vec::new();
    let (mut offset, mut row) = (first.offset, 0u64);
    for entry in first.chunk_table.chunks_exact(4) {
        let size = u64::from(u16::from_le_bytes([entry[0], entry[1]]));
        let count = if entry[2] == 0 {
            first.num_values - row
        } else {
            1 << entry[2]
        };
        extents.push((offset..offset + size, row..row + count));
        offset += size;
        row += count;
    }
    assert!(extents.len() > 2);
    for pos in (first.offset..first.offset + first.length).step_by(7) {
        let mut damaged = bytes.clone();
        damaged[pos as usize] ^= 0x10;
        let (_, chunk_rows) = extents.iter().find(|(b, _)| b.contains(&pos)).unwrap();
        let mut reader = FileReader::open(Cursor::new(&damaged)).unwrap();
        for range in ranges.clone() {
            let array = reader.read_column_range(0, range.clone());
            let fetched = range.start < chunk_rows.end && chunk_rows.start < range.end;
            match array {
                Err(e) => assert!(fetched, "byte {pos}, rows {range:?}: {e}"),
                Ok(array) => {
                    assert!(
                        !fetched,
                        "byte {pos} changed, rows {range:?} read without error"
                    );
                    let expected = column.slice(range.start as usize, array.len());
                    assert_eq!(array.to_data(), expected.to_data(), "byte {pos}");
                }
            }
        }
    }
}

/// A page whose chunks carry validity under a footer that says the column has no nulls
/// is corrupt: decoding it would drop the nulls.
#[test]
fn nulls_under_a_non_nullable_footer_are_corrupt() {
    let (bytes, _) = small_file();
    let lying = common::with_footer(&bytes, |footer| footer.columns[0].nullable = false);
    let mut reader = FileReader::open(Cursor::new(&lying)).unwrap();
    for range in [0..reader.num_rows(), 0..5] {
        let err = reader.read_column_range(0, range).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Corrupt, "{err}");
        assert!(err.to_string().contains("not nullable"), "{err}");
    }
}

/// Files written before chunk checksums existed: a range read fetches the whole page and
/// checks its page checksum, so a change in a chunk the range does not touch is reported.
#[test]
fn range_reads_of_pages_without_chunk_checksums_verify_the_page() {
    let (bytes, column) = small_file();
    let old = common::with_footer(&bytes, |footer| {
        for page in &mut footer.columns[0].pages {
            page.chunk_crc32c.clear();
        }
    });
    let mut reader = FileReader::open(Cursor::new(&old)).unwrap();
    let page = reader.footer().columns[0].pages[0].clone();
    assert_eq!(
        reader.read_column_range(0, 0..10).unwrap().to_data(),
        column.slice(0, 10).to_data()
    );
    let mut damaged = old.clone();
    damaged[(page.offset + page.length - 1) as usize] ^= 1;
    let mut reader = FileReader::open(Cursor::new(&damaged)).unwrap();
    let err = reader.read_column_range(0, 0..10).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Corrupt, "{err}");
    reader.set_verify_checksums(false);
    assert!(reader.read_column_range(0, 0..10).is_ok());
}

/// A source whose bytes all its clones share, so a test can change the file under
/// readers that are clones of one another (as a file on disk changes under both).
#[derive(Clone)]
struct SharedBytes {
    bytes: Arc<std::sync::RwLock<Vec<u8>>>,
    pos: u64,
}

impl std::io::Read for SharedBytes {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let bytes = self.bytes.read().unwrap();
        let start = usize::try_from(self.pos).unwrap().min(bytes.len());
        let n = out.len().min(bytes.len() - start);
        out[..n].copy_from_slice(&bytes[start..start + n]);
        self.pos += n as u64;
        Ok(n)
    }
}

impl miniblock::file::Source for SharedBytes {}

impl std::io::Seek for SharedBytes {
    fn seek(&mut self, to: std::io::SeekFrom) -> std::io::Result<u64> {
        let len = self.bytes.read().unwrap().len() as u64;
        let pos = match to {
            std::io::SeekFrom::Start(p) => Some(p),
            std::io::SeekFrom::End(d) => len.checked_add_signed(d),
            std::io::SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        self.pos = pos.ok_or(std::io::ErrorKind::InvalidInput)?;
        Ok(self.pos)
    }
}

/// Clones share the decoders they build, but a verifying reader never uses one that an
/// unverifying clone built from page buffers nobody checked: a damaged dictionary read
/// by the clone is still refused by the verifying reader.
#[test]
fn a_verifying_reader_never_uses_what_an_unverifying_clone_built() {
    let values: Vec<f64> = (0..20_000)
        .map(|i| f64::from(i % 37) * 0.5 + 0.25)
        .collect();
    let column: ArrayRef = Arc::new(Float64Array::from(values.clone()));
    let batch = RecordBatch::try_from_iter([("v", column.clone())]).unwrap();
    let options = WriteOptions::default().with_strategy(Encoding::Dict);
    let mut writer = FileWriter::try_new(Vec::new(), batch.schema().as_ref(), options).unwrap();
    writer.write_batch(&batch).unwrap();
    let bytes = writer.finish().unwrap();
    let source = SharedBytes {
        bytes: Arc::new(std::sync::RwLock::new(bytes)),
        pos: 0,
    };
    let mut verifying = FileReader::open(source.clone()).unwrap();
    let page = verifying.footer().columns[0].pages[0].clone();
    assert!(
        page.buffer_sizes.first().is_some_and(|&n| n > 16),
        "a dictionary page keeps its values in a page buffer: {page:?}"
    );
    let mut trusting = verifying.clone();
    trusting.set_verify_checksums(false);
    // One of the dictionary's values changes on disk.
    source.bytes.write().unwrap()[(page.offset + page.length + 9) as usize] ^= 0x10;
    let _ = trusting.read_column_range(0, 0..20_000);
    match verifying.read_column_range(0, 0..20_000) {
        Err(e) => assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}"),
        Ok(got) => assert_eq!(got.to_data(), column.to_data(), "wrong values read as good"),
    }
}

/// A footer whose decimal scale exceeds its precision (Arrow cannot build such arrays,
/// and readers of the type panicked on it) is corrupt, whatever its checksum says.
#[test]
fn decimal_types_are_checked_in_the_footer() {
    use arrow_array::Decimal128Array;
    let column: ArrayRef = Arc::new(
        Decimal128Array::from(vec![1i128, 22, 333])
            .with_precision_and_scale(10, 2)
            .unwrap(),
    );
    let batch = RecordBatch::try_from_iter([("d", column)]).unwrap();
    let mut writer =
        FileWriter::try_new(Vec::new(), batch.schema().as_ref(), WriteOptions::default()).unwrap();
    writer.write_batch(&batch).unwrap();
    let bytes = writer.finish().unwrap();
    assert!(FileReader::open(Cursor::new(&bytes)).is_ok());
    for (precision, scale) in [(1, 4), (10, -39), (0, 0), (39, 2)] {
        let lying = common::with_footer(&bytes, |footer| {
            footer.columns[0].precision = precision;
            footer.columns[0].scale = scale;
        });
        match FileReader::open(Cursor::new(&lying)) {
            Err(e) => assert_eq!(e.kind(), ErrorKind::Corrupt, "({precision}, {scale}): {e}"),
            Ok(_) => panic!("Decimal128({precision}, {scale}) was accepted"),
        }
    }
}

/// A footer listing no column (which the writer never writes) is corrupt on open, so no
/// reader of the file, nor any command, indexes a column that is not there.
#[test]
fn a_footer_of_no_column_is_corrupt() {
    let (bytes, _) = small_file();
    let empty = common::with_footer(&bytes, |footer| footer.columns.clear());
    match FileReader::open(Cursor::new(&empty)) {
        Err(e) => assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}"),
        Ok(_) => panic!("a footer of no column was accepted"),
    }
}
