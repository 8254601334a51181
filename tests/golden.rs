//! Golden files, written by `examples/golden.rs`: standalone pages of every encoding and
//! several widths (1 to 300 bytes, nulls, a wide chunk table) and column files of several
//! types, each decoded and compared with the bytes it must give. A change of the page or
//! file format fails here. Each set is frozen once written: `v1` holds the six encodings
//! of byte stream split and general compression, `v2` adds the ALP encodings (and its
//! `auto` column file may use them), `v3` the delta encodings, `v4` the entropy tables a
//! page shares (`alp+ans`) and `delta+ans`, `v5` entropy-coded streams in four lanes
//! (modes 4 and 5) and `alp-rd`, `v6` `bitpack` and the dictionary pages, whose items are
//! a page buffer (header bit 30), `v7` `delta`'s patched blocks (the `delta` pages of
//! 2-, 4- and 8-byte values, read by the kernel and by scalar code) with the entropy-coded
//! pages and the `auto` column file as the writer makes them since, `v8`
//! `bss+zstd+dict` (a Zstd dictionary in page buffer 0), `v9` fill pages, plain and with
//! entropy-coded run headers (`coded_fill`), and the `bss+zstd+dict` pages as the writer
//! makes them since, `v10` the entropy-coded pages with shared streams in their compact
//! modes (the page table in the mode byte, the length a varint); all must decode forever.

use std::fs;
use std::io::Cursor;
use std::path::{Path, PathBuf};

use arrow_array::Array;
use arrow_schema::DataType;
use miniblock::file::FileReader;
use miniblock::proto::encodings::ArrayEncoding;
use miniblock::{Encoding, PageDecoder};
use prost::Message;

/// The golden sets and how many encodings each covers.
const VERSIONS: [(&str, usize); 10] = [
    ("v1", 6),
    ("v2", 9),
    ("v3", 12),
    ("v4", 13),
    ("v5", 14),
    ("v6", 18),
    ("v7", 18),
    ("v8", Encoding::ALL.len()),
    ("v9", Encoding::ALL.len()),
    ("v10", Encoding::ALL.len()),
];

/// The number of golden set `version` ("v10" is 10): sets compare by it, not as text.
fn number(version: &str) -> u32 {
    version[1..].parse().expect("a set named v and a number")
}

fn dir(version: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(version)
}

/// A golden file of `version`. A set holds only the files that differ from the set
/// before it (`examples/golden.rs` writes them all; identical ones are not kept twice),
/// so a name missing from a set is read from the newest set before it that has it.
fn read_in(version: &str, name: &str) -> Vec<u8> {
    let newest = VERSIONS
        .iter()
        .position(|(v, _)| *v == version)
        .expect("a known version");
    let path = VERSIONS[..=newest]
        .iter()
        .rev()
        .map(|(v, _)| dir(v).join(name))
        .find(|p| p.exists())
        .unwrap_or_else(|| panic!("{name} is in no golden set up to {version}"));
    fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Whether an ALP or delta page carries entropy tables its chunks share.
fn has_page_tables(encoding: &ArrayEncoding) -> bool {
    use miniblock::proto::encodings::array_encoding::ArrayEncoding as Kind;
    match &encoding.array_encoding {
        Some(Kind::Alp(alp)) => !alp.page_tables.is_empty(),
        Some(Kind::Delta(delta)) => !delta.page_tables.is_empty(),
        _ => false,
    }
}

fn data_type(name: &str) -> DataType {
    match name {
        "f16" => DataType::Float16,
        "f32" => DataType::Float32,
        "f64" | "h64" => DataType::Float64,
        "i8" => DataType::Int8,
        "fsb5" => DataType::FixedSizeBinary(5),
        "fsb300" => DataType::FixedSizeBinary(300),
        "d128" => DataType::Decimal128(38, 4),
        other => panic!("unknown type {other} in the manifest"),
    }
}

#[test]
fn golden_pages_decode_to_their_bytes() {
    for (version, encodings) in VERSIONS {
        pages_decode_to_their_bytes(version, encodings);
    }
}

fn pages_decode_to_their_bytes(version: &str, encodings: usize) {
    use miniblock::proto::encodings::array_encoding::ArrayEncoding as Kind;
    let read = |name: &str| read_in(version, name);
    let manifest = String::from_utf8(read("MANIFEST.txt")).unwrap();
    let mut seen_encodings = std::collections::BTreeSet::new();
    let mut wide = 0;
    let mut with_buffers = 0;
    let mut cases = 0;
    let mut with_tables = 0;
    let (mut fills, mut coded_fills) = (0, 0);
    for line in manifest.lines().filter(|l| !l.starts_with('#')) {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [name, type_name, num_values, has_validity] = fields[..] else {
            panic!("bad manifest line {line:?}");
        };
        let num_values: u64 = num_values.parse().unwrap();
        let page = read(&format!("{name}.page"));
        let encoding = ArrayEncoding::decode(read(&format!("{name}.encoding")).as_slice()).unwrap();
        match &encoding.array_encoding {
            Some(Kind::Fill(_)) => fills += 1,
            Some(Kind::CodedFill(_)) => coded_fills += 1,
            _ => {
                seen_encodings.insert(Encoding::of(&encoding).unwrap().name());
            }
        }
        with_tables += usize::from(has_page_tables(&encoding));
        let header = u32::from_le_bytes(page[..4].try_into().unwrap());
        if header & (1 << 31) != 0 {
            wide += 1;
        }
        if header & (1 << 30) != 0 {
            with_buffers += 1;
        }
        let decoder = PageDecoder::try_new(&encoding, num_values, &page)
            .and_then(|d| d.with_data_type(&data_type(type_name)))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let array = decoder.decode().unwrap_or_else(|e| panic!("{name}: {e}"));
        let width = decoder.value_width();
        let expected = read(&format!("{type_name}.values"));
        let data = array.to_data();
        assert_eq!(
            &data.buffers()[0].as_slice()[..expected.len()],
            &expected[..],
            "{name}: values"
        );
        assert_eq!(expected.len(), num_values as usize * width, "{name}");
        match (has_validity, array.nulls()) {
            ("true", Some(nulls)) => {
                let bits = read(&format!("{type_name}.validity"));
                let valid = |i: usize| bits[i / 8] >> (i % 8) & 1 == 1;
                assert!(
                    (0..array.len()).all(|i| nulls.is_valid(i) == valid(i)),
                    "{name}: validity"
                );
            }
            ("false", None) => {}
            (flag, nulls) => panic!("{name}: manifest says {flag}, decoded {nulls:?}"),
        }
        // A chunk alone and a row range give the same bytes as the whole page.
        let last = decoder.num_chunks() - 1;
        let rows = decoder.chunk_rows(last).unwrap();
        let chunk = decoder.decode_chunk(last).unwrap();
        assert_eq!(
            chunk.to_data(),
            array.slice(rows.start, rows.len()).to_data()
        );
        cases += 1;
    }
    assert_eq!(
        seen_encodings.len(),
        encodings,
        "{version}: {seen_encodings:?}"
    );
    assert!(wide >= 1, "no golden page has a wide chunk table");
    if number(version) >= 9 {
        assert_eq!((fills, coded_fills), (1, 1), "{version}: fill pages");
    }
    if number(version) >= 6 {
        assert!(
            with_buffers >= 8,
            "{version}: {with_buffers} pages with page buffers"
        );
    }
    if number(version) >= 4 {
        assert!(
            with_tables >= 4,
            "{with_tables} golden pages with page tables"
        );
    }
    assert!(cases >= 40, "{cases} golden pages");
}

#[test]
fn golden_column_files_decode_to_their_columns() {
    for (version, _) in VERSIONS {
        column_files_decode_to_their_columns(version);
    }
}

fn column_files_decode_to_their_columns(version: &str) {
    let read = |name: &str| read_in(version, name);
    let expected = {
        let reader = arrow_ipc::reader::FileReader::try_new(
            Cursor::new(read("columns.expected.arrow")),
            None,
        )
        .unwrap();
        let batches: Vec<_> = reader.map(Result::unwrap).collect();
        assert_eq!(batches.len(), 1);
        batches.into_iter().next().unwrap()
    };
    for file in ["columns.auto.mb", "columns.bss_zstd.mb"] {
        let mut reader = FileReader::open(Cursor::new(read(file))).unwrap();
        assert_eq!(
            reader.schema().fields().len(),
            expected.num_columns(),
            "{file}"
        );
        for (i, field) in expected.schema().fields().iter().enumerate() {
            let column = reader
                .read_column(i)
                .unwrap_or_else(|e| panic!("{file}: {e}"));
            assert_eq!(
                column.data_type(),
                field.data_type(),
                "{file} {}",
                field.name()
            );
            assert_eq!(
                column.to_data(),
                expected.column(i).to_data(),
                "{file} {}",
                field.name()
            );
            let range = reader.read_column_range(i, 240..260).unwrap();
            assert_eq!(range.to_data(), expected.column(i).slice(240, 20).to_data());
            // Page statistics from v6 on, exactly what the values give; none before.
            let stats = reader.column_stats(i).unwrap();
            if number(version) >= 6 {
                let computed = miniblock::file::PageStats::of(expected.column(i).as_ref());
                assert_eq!(stats, Some(computed), "{version} {file} {}", field.name());
            } else {
                assert_eq!(stats, None, "{version} {file}");
            }
        }
    }
}
