//! The `miniblock` command: every subcommand, every input format, and every error case
//! (one line on stderr, non-zero exit, no panic, no partial output).

#[path = "../../tests/common/mod.rs"]
mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Float32Array, Float64Array, RecordBatch, StringArray};
use miniblock::proto::encodings::ArrayEncoding;
use miniblock::Encoding;
use prost::Message;

fn miniblock(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_miniblock"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn ok(args: &[&str]) -> String {
    let out = miniblock(args);
    assert!(
        out.status.success(),
        "miniblock {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Runs a command that must fail cleanly; returns its stderr.
fn fails(args: &[&str]) -> String {
    let out = miniblock(args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(
        out.status.code(),
        Some(1),
        "miniblock {args:?} should fail with 1: {stderr}"
    );
    assert!(stderr.starts_with("miniblock: error: "), "{stderr}");
    assert_eq!(
        stderr.trim_end().lines().count(),
        1,
        "one line expected: {stderr}"
    );
    assert!(
        !stderr.contains("panicked") && !stderr.contains("backtrace"),
        "{stderr}"
    );
    stderr
}

fn temp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn write_raw_f32(dir: &Path, name: &str, values: &[f32]) -> PathBuf {
    let path = dir.join(name);
    fs::write(
        &path,
        values
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect::<Vec<_>>(),
    )
    .unwrap();
    path
}

/// No leftover temporary files in `dir`.
fn assert_no_temp_files(dir: &Path) {
    for entry in fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        assert!(
            !name.starts_with(".miniblock-"),
            "temporary file left behind: {name}"
        );
    }
}

#[test]
fn every_subcommand_has_help() {
    for sub in [
        &["--help"][..],
        &["compare", "--help"],
        &["encode", "--help"],
        &["decode", "--help"],
        &["inspect", "--help"],
    ] {
        let out = ok(sub);
        assert!(out.contains("Usage:"), "{sub:?}: {out}");
    }
}

#[test]
fn raw_encode_decode_is_bit_exact_for_every_encoding() {
    let dir = temp();
    let values = common::mixed_f32(70_000, 3);
    let input = write_raw_f32(dir.path(), "series.f32", &values);
    let original = fs::read(&input).unwrap();
    for encoding in [
        "plain", "lz4", "zstd", "bss", "bss+lz4", "bss+zstd", "auto", "auto:0",
    ] {
        let encoded = dir.path().join(format!("series.{encoding}.mb"));
        let out = ok(&[
            "encode",
            s(&input),
            s(&encoded),
            "--encoding",
            encoding,
            "--page-values",
            "10000",
        ]);
        assert!(out.contains("70000 rows"), "{out}");
        let decoded = dir.path().join("back.f32");
        ok(&["decode", "-f", s(&encoded), s(&decoded)]);
        assert_eq!(fs::read(&decoded).unwrap(), original, "{encoding}");
        // a row range, across a page boundary
        ok(&[
            "decode",
            "-f",
            s(&encoded),
            s(&decoded),
            "--rows",
            "9990..20010",
        ]);
        assert_eq!(
            fs::read(&decoded).unwrap(),
            original[9990 * 4..20010 * 4],
            "{encoding} rows"
        );
        ok(&[
            "decode",
            "-f",
            s(&encoded),
            s(&decoded),
            "--rows",
            "69999..",
        ]);
        assert_eq!(
            fs::read(&decoded).unwrap(),
            original[69999 * 4..],
            "{encoding} tail"
        );
    }
    assert_no_temp_files(dir.path());
}

#[test]
fn npy_in_and_out() {
    let dir = temp();
    let values: Vec<f64> = (0..5000).map(|i| (f64::from(i) * 0.37).sin()).collect();
    // a big-endian <f8 written by hand: '>f8', 2-D shape
    let header = "{'descr': '>f8', 'fortran_order': False, 'shape': (50, 100), }";
    let mut npy = b"\x93NUMPY\x01\x00".to_vec();
    let padded = format!("{header:<117}\n");
    npy.extend_from_slice(&(padded.len() as u16).to_le_bytes());
    npy.extend_from_slice(padded.as_bytes());
    npy.extend(values.iter().flat_map(|v| v.to_be_bytes()));
    let input = dir.path().join("grid.npy");
    fs::write(&input, npy).unwrap();
    let encoded = dir.path().join("grid.mb");
    ok(&["encode", s(&input), s(&encoded)]);
    let inspect = ok(&["inspect", s(&encoded)]);
    assert!(inspect.contains("column \"grid\": Float64"), "{inspect}");
    // back out as .npy (little-endian) and as raw
    let out_npy = dir.path().join("out.npy");
    ok(&["decode", s(&encoded), s(&out_npy)]);
    let bytes = fs::read(&out_npy).unwrap();
    assert_eq!(&bytes[..6], b"\x93NUMPY");
    let header_len = usize::from(u16::from_le_bytes([bytes[8], bytes[9]]));
    assert_eq!((10 + header_len) % 64, 0);
    let header = String::from_utf8_lossy(&bytes[10..10 + header_len]);
    assert!(
        header.contains("'<f8'") && header.contains("(5000,)"),
        "{header}"
    );
    let data: Vec<f64> = bytes[10 + header_len..]
        .chunks_exact(8)
        .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
        .collect();
    assert_eq!(
        data.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        values.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    );
    // an .npy of a dtype with no fixed-width Arrow type is refused
    let mut ints = b"\x93NUMPY\x01\x00".to_vec();
    let padded = format!(
        "{:<117}\n",
        "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }"
    );
    ints.extend_from_slice(&(padded.len() as u16).to_le_bytes());
    ints.extend_from_slice(padded.as_bytes());
    ints.extend_from_slice(&[0; 8]);
    let bad = dir.path().join("complex.npy");
    fs::write(&bad, ints).unwrap();
    let err = fails(&["encode", s(&bad), s(&dir.path().join("x.mb"))]);
    assert!(err.contains("<c8"), "{err}");
}

fn mixed_batch() -> RecordBatch {
    let a: ArrayRef = Arc::new(Float32Array::from(common::mixed_f32(3000, 5)));
    let b: ArrayRef = Arc::new(Float64Array::from_iter(
        (0..3000).map(|i| (i % 10 != 0).then_some(f64::from(i) / 8.0)),
    ));
    let label: ArrayRef = Arc::new(StringArray::from_iter_values(
        (0..3000).map(|i| format!("row{i}")),
    ));
    RecordBatch::try_from_iter_with_nullable([
        ("a", a, false),
        ("b", b, true),
        ("label", label, false),
    ])
    .unwrap()
}

fn read_ipc(path: &Path) -> RecordBatch {
    let reader =
        arrow_ipc::reader::FileReader::try_new(fs::File::open(path).unwrap(), None).unwrap();
    let schema = reader.schema();
    let batches: Vec<RecordBatch> = reader.map(Result::unwrap).collect();
    arrow_select::concat::concat_batches(&schema, &batches).unwrap()
}

#[test]
fn parquet_and_ipc_inputs() {
    let dir = temp();
    let batch = mixed_batch();
    let parquet_path = dir.path().join("table.parquet");
    let mut writer = parquet::arrow::ArrowWriter::try_new(
        fs::File::create(&parquet_path).unwrap(),
        batch.schema(),
        None,
    )
    .unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    let ipc_path = dir.path().join("table.feather");
    write_feather(&ipc_path, &batch);

    for input in [&parquet_path, &ipc_path] {
        let encoded = dir.path().join("table.mb");
        ok(&[
            "encode",
            "-f",
            s(input),
            s(&encoded),
            "--page-values",
            "1000",
        ]);
        let inspect = ok(&["inspect", s(&encoded)]);
        assert!(
            inspect.contains("2 column(s)") && inspect.contains("column \"b\": Float64, nullable"),
            "{inspect}"
        );
        // a raw output of a file with two columns needs --column
        let raw_out = dir.path().join("both.bin");
        let err = fails(&["decode", s(&encoded), s(&raw_out)]);
        assert!(err.contains("--column") && err.contains("a, b"), "{err}");
        assert!(!raw_out.exists());
        let out = dir.path().join("b.arrow");
        let _ = fs::remove_file(&out);
        // Arrow output keeps validity
        ok(&["decode", "-f", s(&encoded), s(&out), "--column", "b"]);
        let back = read_ipc(&out);
        assert_eq!(back.column(0).to_data(), batch.column(1).to_data());
        ok(&[
            "decode",
            "--force",
            s(&encoded),
            s(&out),
            "--column",
            "b",
            "--rows",
            "995..2005",
            "--format",
            "arrow",
        ]);
        assert_eq!(
            read_ipc(&out).column(0).to_data(),
            batch.column(1).slice(995, 1010).to_data()
        );
        // raw output writes a null float as NaN
        let raw = dir.path().join("b.bin");
        ok(&[
            "decode",
            "-f",
            s(&encoded),
            s(&raw),
            "--column",
            "b",
            "--format",
            "raw",
            "--rows",
            "0..20",
        ]);
        let raw = fs::read(&raw).unwrap();
        assert_eq!(raw[..8], f64::NAN.to_le_bytes());
        assert_eq!(raw[8..16], (1.0f64 / 8.0).to_le_bytes());
        // only the named column
        ok(&["encode", "-f", s(input), s(&encoded), "--column", "b"]);
        assert!(ok(&["inspect", s(&encoded)]).contains("1 column(s)"));
        // a named variable-width column is an error naming it and its type
        let refused = dir.path().join("refused.mb");
        let err = fails(&["encode", s(input), s(&refused), "--column", "label"]);
        assert!(err.contains("\"label\"") && err.contains("Utf8"), "{err}");
        assert!(!refused.exists());
        let err = fails(&["encode", s(input), s(&refused), "--column", "nope"]);
        assert!(err.contains("\"nope\""), "{err}");
    }
    // a Parquet file with no fixed-width column
    let only_text = RecordBatch::try_from_iter([("label", batch.column(2).clone())]).unwrap();
    let path = dir.path().join("text.parquet");
    let mut writer = parquet::arrow::ArrowWriter::try_new(
        fs::File::create(&path).unwrap(),
        only_text.schema(),
        None,
    )
    .unwrap();
    writer.write(&only_text).unwrap();
    writer.close().unwrap();
    let err = fails(&["encode", s(&path), s(&dir.path().join("t.mb"))]);
    assert!(err.contains("no fixed-width column"), "{err}");
    assert_no_temp_files(dir.path());
}

#[test]
fn error_cases_are_one_line_with_no_output_left() {
    let dir = temp();
    let out = dir.path().join("out.mb");
    let missing = dir.path().join("missing.f32");
    assert!(fails(&["encode", s(&missing), s(&out)]).contains("missing.f32"));
    let text = dir.path().join("notes.txt");
    fs::write(&text, "hello").unwrap();
    assert!(fails(&["encode", s(&text), s(&out)]).contains("unknown extension"));
    let empty = dir.path().join("empty.f32");
    fs::write(&empty, b"").unwrap();
    assert!(fails(&["encode", s(&empty), s(&out)]).contains("empty"));
    let odd = dir.path().join("odd.f64");
    fs::write(&odd, [0u8; 12]).unwrap();
    assert!(fails(&["encode", s(&odd), s(&out)]).contains("12 bytes"));
    assert!(fails(&["compare", s(&missing)]).contains("missing.f32"));
    assert!(!out.exists());

    // a good file, then damaged copies of it
    let input = write_raw_f32(dir.path(), "x.f32", &common::mixed_f32(20_000, 8));
    ok(&["encode", s(&input), s(&out)]);
    let good = fs::read(&out).unwrap();
    let decoded = dir.path().join("x.out.f32");
    let truncated = dir.path().join("truncated.mb");
    fs::write(&truncated, &good[..good.len() / 2]).unwrap();
    assert!(fails(&["decode", s(&truncated), s(&decoded)]).contains("truncated"));
    assert!(fails(&["inspect", s(&truncated)]).contains("truncated"));
    let corrupt = dir.path().join("corrupt.mb");
    let mut bad = good.clone();
    bad[200] ^= 0x40;
    fs::write(&corrupt, &bad).unwrap();
    let err = fails(&["decode", s(&corrupt), s(&decoded)]);
    assert!(err.contains("checksum") && err.contains("page 0"), "{err}");
    assert!(!decoded.exists(), "partial output left behind");
    // an existing output is left untouched by a failed decode
    fs::write(&decoded, b"keep me").unwrap();
    fails(&["decode", s(&corrupt), s(&decoded)]);
    assert_eq!(fs::read(&decoded).unwrap(), b"keep me");
    assert!(fails(&["decode", s(&input), s(&decoded)]).contains("not a miniblock file"));
    assert!(fails(&["decode", s(&out), s(&decoded), "--rows", "5..20001"]).contains("outside"));
    assert!(fails(&["decode", s(&out), s(&decoded), "--column", "y"]).contains("\"y\""));
    assert_no_temp_files(dir.path());
}

#[test]
fn compare_reports_every_encoding_as_json_and_plots() {
    let dir = temp();
    let smooth: Vec<f32> = (0..50_000)
        .map(|i| (i as f32 * 0.001).sin() * 1000.0)
        .collect();
    let input = write_raw_f32(dir.path(), "smooth.f32", &smooth);
    let plot = dir.path().join("plot.svg");
    let out = ok(&[
        "compare",
        s(&input),
        "--json",
        "--runs",
        "2",
        "--plot",
        s(&plot),
    ]);
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // every fixed encoding, auto and auto:0, at 4 KiB and 64 KiB chunks
    let labels: Vec<String> = Encoding::ALL
        .iter()
        .map(|e| e.name().to_owned())
        .chain(["auto".to_owned(), "auto:0".to_owned()])
        .collect();
    assert_eq!(lines.len(), 2 * labels.len());
    for (i, line) in lines.iter().enumerate() {
        assert_eq!(line["dataset"], "smooth");
        assert_eq!(line["encoding"], labels[i % labels.len()].as_str());
        assert_eq!(
            line["chunk_bytes"],
            if i < labels.len() { 4096 } else { 65536 }
        );
        assert_eq!(line["values"], 50_000);
        assert_eq!(line["raw_bytes"], 200_000);
        let encoded = line["encoded_bytes"].as_f64().unwrap();
        assert!((line["ratio"].as_f64().unwrap() - 200_000.0 / encoded).abs() < 1e-9);
        assert!(
            line["encode_gbps"].as_f64().unwrap() > 0.0
                && line["decode_gbps"].as_f64().unwrap() > 0.0
        );
    }
    for rows in lines.chunks(labels.len()) {
        let best_fixed = rows[..Encoding::ALL.len()]
            .iter()
            .map(|l| l["encoded_bytes"].as_u64().unwrap())
            .min()
            .unwrap();
        for auto in &rows[Encoding::ALL.len()..] {
            // auto reports what it chose: one page of 200 KB, one encoding
            let chosen = auto["chosen"].as_object().unwrap();
            assert_eq!(chosen.values().map(|v| v.as_u64().unwrap()).sum::<u64>(), 1);
            assert!(chosen.keys().all(|k| labels.contains(k)), "{chosen:?}");
            let size = auto["encoded_bytes"].as_u64().unwrap();
            let reported = auto["size_vs_best_fixed"].as_f64().unwrap();
            assert!((reported - size as f64 / best_fixed as f64).abs() < 1e-12);
        }
        // favouring size, auto stays within 2% of the best fixed encoding
        let size_first = &rows[labels.len() - 1];
        assert_eq!(size_first["min_gain"], 0.0);
        assert!(size_first["size_vs_best_fixed"].as_f64().unwrap() <= 1.02);
        // on a smooth series, byte stream split, delta or ALP (whose delta coding follows
        // the curve) under a compressor has the best ratio
        let best: Vec<&str> = rows
            .iter()
            .filter(|l| l["best"] == true)
            .map(|l| l["encoding"].as_str().unwrap())
            .collect();
        assert!(
            best.iter().all(|b| ["bss+", "delta+", "alp+", "auto"]
                .iter()
                .any(|p| b.starts_with(p))),
            "{best:?}"
        );
    }
    let svg = fs::read_to_string(&plot).unwrap();
    roxmltree::Document::parse(&svg).expect("the plot is well-formed XML");
    assert!(
        svg.contains("decode speed")
            && svg.contains("compression ratio")
            && svg.contains(">4 KiB chunks</text>")
            && svg.contains(">64 KiB chunks</text>")
    );
    for label in &labels {
        assert!(
            svg.contains(&format!(">{label}</text>")),
            "legend lacks {label}"
        );
    }
    // the table form marks the best ratio and checks auto against the floors
    let table = ok(&[
        "compare",
        s(&input),
        "--runs",
        "1",
        "--encoding",
        "lz4,bss+lz4,auto:0",
    ]);
    assert!(
        table
            .lines()
            .any(|l| l.contains("auto:0") && l.contains("+zstd x1") && l.contains("best ratio")),
        "{table}"
    );
    assert!(
        table.contains("auto against the fixed encodings"),
        "{table}"
    );
}

#[test]
fn compare_defaults_to_the_bundled_sample() {
    let out = ok(&["compare", "--json", "--runs", "1"]);
    let datasets: std::collections::BTreeSet<String> = out
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["dataset"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert!(datasets.len() >= 3, "{datasets:?}");
    // two chunk sizes, the fixed encodings plus auto and auto:0
    assert_eq!(
        out.lines().count(),
        datasets.len() * 2 * (Encoding::ALL.len() + 2)
    );
}

#[test]
fn inspect_json_carries_the_array_encoding_bytes() {
    let dir = temp();
    let input = write_raw_f32(dir.path(), "x.f32", &common::mixed_f32(300_000, 4));
    let out = dir.path().join("x.mb");
    ok(&["encode", s(&input), s(&out), "--encoding", "bss+lz4"]);
    let json: serde_json::Value =
        serde_json::from_str(&ok(&["inspect", s(&out), "--json"])).unwrap();
    assert_eq!(json["num_rows"], 300_000);
    let pages = json["columns"][0]["pages"].as_array().unwrap();
    assert_eq!(pages.len(), 2);
    let expected = Encoding::BssLz4.compressor(32).unwrap().array_encoding();
    for page in pages {
        let hex = page["encoding_hex"].as_str().unwrap();
        let bytes: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect();
        assert_eq!(ArrayEncoding::decode(bytes.as_slice()).unwrap(), expected);
        assert_eq!(page["encoding"], "lz4 over byte_stream_split(32-bit)");
    }
    assert_eq!(pages[0]["chunks"], 256);
}

#[test]
#[cfg_attr(
    not(shared_data),
    ignore = "needs ../shared/data beside the checkout (CI has it; after adding it, touch build.rs)"
)]
fn every_shared_data_set_round_trips_through_the_cli() {
    let shared = common::shared_dir();
    let dir = temp();
    let mut files: Vec<PathBuf> = fs::read_dir(shared.join("data"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "f32" || e == "f64"))
        .collect();
    files.sort();
    assert!(files.len() >= 10, "{files:?}");
    for file in &files {
        let original = fs::read(file).unwrap();
        let ext = file.extension().unwrap().to_str().unwrap();
        for encoding in [
            "plain", "lz4", "zstd", "bss", "bss+lz4", "bss+zstd", "auto", "auto:0",
        ] {
            let encoded = dir.path().join("f.mb");
            let decoded = dir.path().join(format!("f.{ext}"));
            ok(&["encode", "-f", s(file), s(&encoded), "--encoding", encoding]);
            ok(&["decode", "-f", s(&encoded), s(&decoded)]);
            assert!(
                fs::read(&decoded).unwrap() == original,
                "{} with {encoding} is not bit-exact",
                file.display()
            );
        }
    }
}

#[test]
fn integer_decimal_and_binary_columns_go_through_the_cli() {
    let dir = temp();
    let ints: ArrayRef = Arc::new(arrow_array::Int64Array::from_iter(
        (0..50_000i64).map(|i| (i % 13 != 0).then_some(i * i % 10_007)),
    ));
    let prices: ArrayRef = Arc::new(
        arrow_array::Decimal128Array::from_iter_values((0..50_000i128).map(|i| 1999 + i % 300))
            .with_precision_and_scale(12, 2)
            .unwrap(),
    );
    let codes: ArrayRef = Arc::new(
        arrow_array::FixedSizeBinaryArray::try_from_iter(
            (0..50_000u32).map(|i| (i / 100).to_be_bytes()[1..].to_vec()),
        )
        .unwrap(),
    );
    let batch =
        RecordBatch::try_from_iter([("n", ints), ("price", prices), ("code", codes)]).unwrap();
    let input = dir.path().join("typed.parquet");
    let mut writer = parquet::arrow::ArrowWriter::try_new(
        fs::File::create(&input).unwrap(),
        batch.schema(),
        None,
    )
    .unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    let encoded = dir.path().join("typed.mb");
    let out = ok(&["encode", s(&input), s(&encoded), "--chunk-values", "4096"]);
    assert!(out.contains("3 column(s), 50000 rows"), "{out}");
    let shown = ok(&["inspect", s(&encoded)]);
    assert!(
        shown.contains("Decimal128(12, 2)") && shown.contains("FixedSizeBinary(3)"),
        "{shown}"
    );
    for (i, name) in ["n", "price", "code"].into_iter().enumerate() {
        let back = dir.path().join(format!("{name}.arrow"));
        ok(&["decode", "-f", s(&encoded), s(&back), "--column", name]);
        let read = read_ipc(&back);
        assert_eq!(
            read.column(0).to_data(),
            batch.column(i).to_data(),
            "{name}"
        );
    }
    // integers as .npy with their numpy type; others as raw records
    let npy = dir.path().join("n.npy");
    ok(&["decode", "-f", s(&encoded), s(&npy), "--column", "n"]);
    let bytes = fs::read(&npy).unwrap();
    assert!(String::from_utf8_lossy(&bytes[..128]).contains("'descr': '<i8'"));
    let npy = dir.path().join("code.npy");
    ok(&["decode", "-f", s(&encoded), s(&npy), "--column", "code"]);
    let bytes = fs::read(&npy).unwrap();
    assert!(String::from_utf8_lossy(&bytes[..128]).contains("'descr': '|V3'"));
    assert_eq!(bytes.len() % 64, (50_000 * 3) % 64);
    // compare takes them too
    let json = ok(&[
        "compare",
        s(&input),
        "--json",
        "--runs",
        "1",
        "--encoding",
        "bss+zstd,auto",
        "--chunk-values",
        "1024",
    ]);
    assert_eq!(json.lines().count(), 3 * 2, "{json}");
}

/// Writes `batch` as an uncompressed Arrow IPC file (Feather v2).
fn write_feather(path: &Path, batch: &RecordBatch) {
    let mut writer =
        arrow_ipc::writer::FileWriter::try_new(fs::File::create(path).unwrap(), &batch.schema())
            .unwrap();
    writer.write(batch).unwrap();
    writer.finish().unwrap();
}

/// Starts the binary with standard input, output and error piped.
fn spawn_piped(args: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_miniblock"))
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// Modes of a file (permission bits).
#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// Runs the binary through `sh` with `umask` set first.
#[cfg(unix)]
fn with_umask(umask: &str, args: &[&str]) -> Output {
    let quoted: Vec<String> = (1..=args.len()).map(|i| format!("\"${i}\"")).collect();
    let script = format!("umask {umask} && exec \"$0\" {}", quoted.join(" "));
    Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_miniblock"))
        .args(args)
        .output()
        .unwrap()
}

/// Nothing the user gave is overwritten: the input as output (by name, hard link or
/// symlink), an existing output without --force; with --force a symlinked output stays a
/// link and the file keeps its mode.
#[cfg(unix)]
#[test]
fn outputs_never_destroy_inputs_or_existing_files() {
    use std::os::unix::fs::PermissionsExt;
    let dir = temp();
    let input = write_raw_f32(dir.path(), "in.f32", &common::mixed_f32(5_000, 3));
    let original = fs::read(&input).unwrap();
    let hard = dir.path().join("hard.f32");
    fs::hard_link(&input, &hard).unwrap();
    let soft = dir.path().join("soft.f32");
    std::os::unix::fs::symlink(&input, &soft).unwrap();
    for out in [&input, &hard, &soft] {
        for force in [false, true] {
            let mut args = vec!["encode", s(&input), s(out)];
            if force {
                args.push("--force");
            }
            let err = fails(&args);
            assert!(err.contains("is the input"), "{err}");
            assert_eq!(fs::read(&input).unwrap(), original);
        }
    }
    let encoded = dir.path().join("x.mb");
    ok(&["encode", s(&input), s(&encoded)]);
    let encoded_bytes = fs::read(&encoded).unwrap();
    let err = fails(&["decode", s(&encoded), s(&encoded), "--format", "raw"]);
    assert!(err.contains("is the input"), "{err}");
    let err = fails(&["decode", s(&encoded), s(&encoded)]);
    assert!(err.contains("does not write .mb"), "{err}");
    assert_eq!(fs::read(&encoded).unwrap(), encoded_bytes);

    // An existing output is refused, then replaced with --force, keeping its mode.
    let other = write_raw_f32(dir.path(), "other.f32", &[1.0, 2.0]);
    let err = fails(&["encode", s(&other), s(&encoded)]);
    assert!(
        err.contains("already exists") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(fs::read(&encoded).unwrap(), encoded_bytes);
    fs::set_permissions(&encoded, fs::Permissions::from_mode(0o640)).unwrap();
    ok(&["encode", "--force", s(&other), s(&encoded)]);
    assert_ne!(fs::read(&encoded).unwrap(), encoded_bytes);
    assert_eq!(mode(&encoded), 0o640);

    // Through a symlink: the link stays, its target is replaced.
    let link = dir.path().join("link.mb");
    std::os::unix::fs::symlink(&encoded, &link).unwrap();
    let err = fails(&["encode", s(&input), s(&link)]);
    assert!(err.contains("already exists"), "{err}");
    ok(&["encode", "-f", s(&input), s(&link)]);
    assert!(fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(fs::read(&encoded).unwrap(), encoded_bytes);
    assert_no_temp_files(dir.path());
}

/// New files get 0666 less the umask, as any tool's; special files and `-` are written
/// through, not replaced.
#[cfg(unix)]
#[test]
fn outputs_respect_the_umask_and_special_files() {
    let dir = temp();
    let input = write_raw_f32(dir.path(), "in.f32", &common::mixed_f32(3_000, 5));
    for (umask, expected) in [("022", 0o644), ("077", 0o600), ("002", 0o664)] {
        let out = dir.path().join(format!("u{umask}.mb"));
        let run = with_umask(umask, &["encode", s(&input), s(&out)]);
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        assert_eq!(mode(&out), expected, "umask {umask}");
    }
    let encoded = dir.path().join("u022.mb");
    // `-` is standard output, and the summary goes to stderr.
    let to_stdout = miniblock(&["decode", s(&encoded), "-"]);
    assert!(to_stdout.status.success());
    assert_eq!(to_stdout.stdout, fs::read(&input).unwrap());
    assert!(String::from_utf8_lossy(&to_stdout.stderr).contains("wrote -"));
    // /dev/null is written through without --force and stays a device.
    ok(&["decode", s(&encoded), "/dev/null"]);
    assert!(!fs::metadata("/dev/null").unwrap().is_file());
    // A FIFO is written through.
    let fifo = dir.path().join("pipe");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || fs::read(fifo).unwrap())
    };
    ok(&["decode", s(&encoded), s(&fifo), "--format", "raw"]);
    assert_eq!(reader.join().unwrap(), fs::read(&input).unwrap());
    assert!(
        !fs::metadata(&fifo).unwrap().is_file(),
        "the FIFO was replaced"
    );
    // `-` as input, raw values of --dtype, and the file to standard output.
    let mut child = spawn_piped(&["encode", "-", "-", "--dtype", "f32"]);
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(&fs::read(&input).unwrap()).unwrap();
    }
    let piped = child.wait_with_output().unwrap();
    assert!(
        piped.status.success(),
        "{}",
        String::from_utf8_lossy(&piped.stderr)
    );
    let from_stdin = dir.path().join("stdin.mb");
    fs::write(&from_stdin, &piped.stdout).unwrap();
    let back = dir.path().join("back.f32");
    ok(&["decode", s(&from_stdin), s(&back)]);
    assert_eq!(fs::read(&back).unwrap(), fs::read(&input).unwrap());
    assert!(fails(&["encode", "-", s(&dir.path().join("n.mb"))]).contains("--dtype"));
    assert_no_temp_files(dir.path());
}

/// SIGTERM and SIGINT during an encode remove its temporary file.
#[cfg(unix)]
#[test]
fn interrupts_remove_the_temporary_file() {
    for signal in ["TERM", "INT"] {
        let dir = temp();
        let out = dir.path().join("out.mb");
        let mut child = spawn_piped(&["encode", "-", s(&out), "--dtype", "f64"]);
        let mut stdin = child.stdin.take().unwrap();
        {
            use std::io::Write;
            stdin.write_all(&vec![0u8; 8 << 20]).unwrap();
        }
        // Wait for the temporary file, then interrupt while stdin is still open.
        let temp_exists = || {
            fs::read_dir(dir.path()).unwrap().any(|e| {
                e.unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with(".miniblock-")
            })
        };
        let start = std::time::Instant::now();
        while !temp_exists() {
            assert!(start.elapsed().as_secs() < 20, "no temporary file appeared");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let killed = Command::new("kill")
            .args([format!("-{signal}"), child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let status = child.wait().unwrap();
        drop(stdin);
        assert!(!status.success(), "SIG{signal}");
        assert_no_temp_files(dir.path());
        assert!(!out.exists(), "SIG{signal}: a partial output was left");
    }
}

/// A reader that closes standard output (`| head`) ends the command quietly.
#[test]
fn a_closed_stdout_ends_quietly() {
    let dir = temp();
    let input = write_raw_f32(dir.path(), "x.f32", &common::mixed_f32(20_000, 2));
    let encoded = dir.path().join("x.mb");
    ok(&["encode", s(&input), s(&encoded), "--page-values", "100"]);
    for args in [
        vec!["inspect", s(&encoded)],
        vec!["compare", s(&input), "--runs", "1"],
        vec!["decode", s(&encoded), "-"],
    ] {
        let mut child = spawn_piped(&args);
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains("panicked") && !stderr.contains("error"),
            "{args:?}: {stderr}"
        );
        assert_ne!(out.status.code(), Some(101), "{args:?}");
    }
}

/// Two columns of one name (from an Arrow file, or a repeated --column) are refused before
/// anything is written.
#[test]
fn duplicate_column_names_are_refused_before_writing() {
    let dir = temp();
    let a: ArrayRef = Arc::new(Float64Array::from(vec![1.0, 2.0]));
    let b: ArrayRef = Arc::new(Float64Array::from(vec![3.0, 4.0]));
    let schema = Arc::new(arrow_schema::Schema::new(vec![
        arrow_schema::Field::new("x", arrow_schema::DataType::Float64, false),
        arrow_schema::Field::new("x", arrow_schema::DataType::Float64, false),
    ]));
    let batch = RecordBatch::try_new(schema.clone(), vec![a, b]).unwrap();
    let input = dir.path().join("dup.arrow");
    write_feather(&input, &batch);
    let out = dir.path().join("dup.mb");
    let err = fails(&["encode", s(&input), s(&out)]);
    assert!(err.contains("\"x\""), "{err}");
    assert!(!out.exists());
    let err = fails(&[
        "encode",
        s(&input),
        s(&out),
        "--column",
        "x",
        "--column",
        "x",
    ]);
    assert!(err.contains("twice"), "{err}");
    assert!(!out.exists());
    assert_no_temp_files(dir.path());
}

/// Feather as pandas and pyarrow write it (LZ4-compressed IPC files), Zstd-compressed IPC
/// streams (named .arrow or .arrows), Brotli Parquet and float dictionary columns all
/// encode; columns that cannot be encoded are named on stderr.
#[test]
fn compressed_ipc_streams_brotli_parquet_and_dictionaries_are_read() {
    use arrow_ipc::writer::{IpcWriteOptions, StreamWriter};
    use arrow_ipc::CompressionType;
    let dir = temp();
    let batch = mixed_batch();
    let values: ArrayRef = Arc::new(Float64Array::from(vec![1.5, -0.0, 2.5]));
    let keys = arrow_array::Int8Array::from(vec![Some(0), Some(2), None, Some(1), Some(0)]);
    let dictionary: ArrayRef = Arc::new(arrow_array::DictionaryArray::new(keys, values));
    let dict_batch = RecordBatch::try_from_iter([("d", dictionary)]).unwrap();
    let expected_dict = Float64Array::from(vec![Some(1.5), Some(2.5), None, Some(-0.0), Some(1.5)]);
    for compression in [CompressionType::LZ4_FRAME, CompressionType::ZSTD] {
        let options = IpcWriteOptions::default()
            .try_with_compression(Some(compression))
            .unwrap();
        for (name, stream) in [("f.feather", false), ("s.arrow", true), ("s.arrows", true)] {
            let path = dir.path().join(name);
            let file = fs::File::create(&path).unwrap();
            if stream {
                let mut w =
                    StreamWriter::try_new_with_options(file, &batch.schema(), options.clone())
                        .unwrap();
                w.write(&batch).unwrap();
                w.finish().unwrap();
            } else {
                let mut w = arrow_ipc::writer::FileWriter::try_new_with_options(
                    file,
                    &batch.schema(),
                    options.clone(),
                )
                .unwrap();
                w.write(&batch).unwrap();
                w.finish().unwrap();
            }
            let out = dir.path().join("ipc.mb");
            let run = miniblock(&["encode", "-f", s(&path), s(&out)]);
            let stderr = String::from_utf8_lossy(&run.stderr);
            assert!(run.status.success(), "{name} {compression:?}: {stderr}");
            assert!(stderr.contains("skipped: label (Utf8)"), "{stderr}");
            assert!(stderr.contains("took 2 of 3 columns"), "{stderr}");
            let back = dir.path().join("b.arrow");
            ok(&["decode", "-f", s(&out), s(&back), "--column", "b"]);
            assert_eq!(
                read_ipc(&back).column(0).to_data(),
                batch.column(1).to_data()
            );
        }
    }
    // Brotli Parquet.
    let path = dir.path().join("brotli.parquet");
    let props = parquet::file::properties::WriterProperties::builder()
        .set_compression(parquet::basic::Compression::BROTLI(
            parquet::basic::BrotliLevel::default(),
        ))
        .build();
    let mut writer = parquet::arrow::ArrowWriter::try_new(
        fs::File::create(&path).unwrap(),
        batch.schema(),
        Some(props),
    )
    .unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    let out = dir.path().join("brotli.mb");
    ok(&["encode", s(&path), s(&out)]);
    let back = dir.path().join("brotli.arrow");
    ok(&["decode", s(&out), s(&back), "--column", "b"]);
    assert_eq!(
        read_ipc(&back).column(0).to_data(),
        batch.column(1).to_data()
    );
    // And the same dictionary column in a Feather file.
    let feather = dir.path().join("dict.feather");
    write_feather(&feather, &dict_batch);
    let out = dir.path().join("dict.mb");
    ok(&["encode", s(&feather), s(&out)]);
    let back = dir.path().join("dict.arrow");
    ok(&["decode", s(&out), s(&back)]);
    assert_eq!(read_ipc(&back).column(0).to_data(), expected_dict.to_data());
}

/// A copied binary finds the sample in `data/` beside it (not only in the source tree).
#[test]
fn a_copied_binary_finds_the_sample_beside_it() {
    let dir = temp();
    let bin = dir.path().join("bin");
    fs::create_dir_all(bin.join("data")).unwrap();
    let exe = bin.join("miniblock");
    fs::copy(env!("CARGO_BIN_EXE_miniblock"), &exe).unwrap();
    write_raw_f32(
        &bin.join("data"),
        "beside_me.f32",
        &common::mixed_f32(3_000, 4),
    );
    let out = Command::new(&exe)
        .args([
            "compare",
            "--runs",
            "1",
            "--chunk-values",
            "1024",
            "--encoding",
            "bss",
        ])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("beside_me"));
}

/// `decode` refuses names it would mislabel (f32 values in a `.f64` file, raw bytes under
/// `.txt` or `.csv`), says how many nulls it wrote as zero, and `verify` checks every
/// checksum and decodes every page, naming the damage it finds.
#[test]
fn decode_refuses_mislabelled_outputs_and_verify_finds_damage() {
    let dir = temp();
    let values = common::mixed_f32(10_000, 6);
    let input = write_raw_f32(dir.path(), "x.f32", &values);
    let encoded = dir.path().join("x.mb");
    ok(&["encode", s(&input), s(&encoded)]);
    for (name, expected) in [
        ("x.f64", "not Float64"),
        ("x.txt", "does not write .txt"),
        ("x.csv", "does not write .csv"),
    ] {
        let out = dir.path().join(name);
        let err = fails(&["decode", s(&encoded), s(&out)]);
        assert!(err.contains(expected), "{name}: {err}");
        assert!(!out.exists());
    }
    ok(&["decode", s(&encoded), s(&dir.path().join("x.bin"))]);
    ok(&[
        "decode",
        s(&encoded),
        s(&dir.path().join("y.f64")),
        "--format",
        "raw",
    ]);

    // Nulls are written as pandas' `to_numpy` gives them (NaN, NaT, else zero), and the
    // summary says how many and as what.
    let ipc = dir.path().join("n.arrow");
    let column: ArrayRef = Arc::new(Float64Array::from(vec![Some(1.0), None, None, Some(4.0)]));
    let stamps: ArrayRef = Arc::new(arrow_array::TimestampMillisecondArray::from(vec![
        Some(5),
        None,
        Some(7),
        None,
    ]));
    let counts: ArrayRef = Arc::new(arrow_array::Int32Array::from(vec![
        None,
        Some(2),
        Some(3),
        None,
    ]));
    let batch = RecordBatch::try_from_iter([("n", column), ("ts", stamps), ("k", counts)]).unwrap();
    write_feather(&ipc, &batch);
    let nulls = dir.path().join("n.mb");
    ok(&["encode", s(&ipc), s(&nulls)]);
    let floats = dir.path().join("n.f64");
    let said = ok(&["decode", s(&nulls), s(&floats), "--column", "n"]);
    assert!(said.contains("2 null(s) written as NaN"), "{said}");
    let bits: Vec<u64> = fs::read(&floats)
        .unwrap()
        .chunks_exact(8)
        .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
        .collect();
    let nan = f64::NAN.to_bits();
    assert_eq!(bits, [1f64.to_bits(), nan, nan, 4f64.to_bits()]);
    let times = dir.path().join("ts.npy");
    let said = ok(&["decode", s(&nulls), s(&times), "--column", "ts"]);
    assert!(said.contains("2 null(s) written as NaT"), "{said}");
    let npy = fs::read(&times).unwrap();
    let values: Vec<i64> = npy[npy.len() - 32..]
        .chunks_exact(8)
        .map(|b| i64::from_le_bytes(b.try_into().unwrap()))
        .collect();
    assert_eq!(values, [5, i64::MIN, 7, i64::MIN]);
    let ints = dir.path().join("k.npy");
    let said = ok(&["decode", s(&nulls), s(&ints), "--column", "k"]);
    assert!(said.contains("2 null(s) written as zero"), "{said}");

    // verify: good files pass, one changed byte anywhere in the data is named.
    let said = ok(&["verify", s(&encoded), s(&nulls)]);
    assert!(said.contains("ok:") && said.contains("6 null(s)"), "{said}");
    let good = fs::read(&encoded).unwrap();
    for pos in (8..good.len() - 200).step_by(997) {
        let mut damaged = good.clone();
        damaged[pos] ^= 0x04;
        let path = dir.path().join("damaged.mb");
        fs::write(&path, &damaged).unwrap();
        let err = fails(&["verify", s(&path)]);
        assert!(
            err.contains("checksum") || err.contains("corrupt") || err.contains("page"),
            "byte {pos}: {err}"
        );
    }
}

/// A `.npy` file as numpy writes it: version 1.0, the header padded to 64 bytes. A
/// structured `descr` (a list) is written as it is, any other quoted.
fn npy_bytes(descr: &str, shape: &str, fortran: bool, data: &[u8]) -> Vec<u8> {
    let order = if fortran { "True" } else { "False" };
    let descr = if descr.starts_with('[') {
        descr.to_owned()
    } else {
        format!("'{descr}'")
    };
    let mut dict = format!("{{'descr': {descr}, 'fortran_order': {order}, 'shape': {shape}, }}");
    let unpadded = 10 + dict.len() + 1;
    dict.push_str(&" ".repeat(unpadded.next_multiple_of(64) - unpadded));
    dict.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out.extend_from_slice(data);
    out
}

/// Every fixed-width numpy dtype the tool writes is read back (either byte order, any
/// shape in C order), datetime64/timedelta64 keep their type through encode and decode,
/// and structured dtypes and Fortran-order matrices are refused with a clear message.
#[test]
fn npy_dtypes_round_trip_and_odd_ones_are_refused() {
    let dir = temp();
    let little: Vec<u8> = (0u8..=239).collect(); // 240 bytes: whole values of every width
    for (descr, width, out_descr) in [
        ("<f2", 2, "<f2"),
        ("<f4", 4, "<f4"),
        ("<f8", 8, "<f8"),
        ("|i1", 1, "|i1"),
        ("|u1", 1, "|u1"),
        ("<i2", 2, "<i2"),
        ("<i4", 4, "<i4"),
        ("<i8", 8, "<i8"),
        ("<u2", 2, "<u2"),
        ("<u4", 4, "<u4"),
        ("<u8", 8, "<u8"),
        ("<M8[us]", 8, "<M8[us]"),
        ("<m8[ms]", 8, "<m8[ms]"),
        (">i4", 4, "<i4"),
        (">f8", 8, "<f8"),
        (">M8[ns]", 8, "<M8[ns]"),
    ] {
        let data = if descr.starts_with('>') {
            // The same values big-endian: each value's bytes reversed.
            little
                .chunks_exact(width)
                .flat_map(|v| v.iter().rev().copied())
                .collect()
        } else {
            little.clone()
        };
        let shape = format!("(2, {})", 240 / width / 2);
        let input = dir.path().join("in.npy");
        fs::write(&input, npy_bytes(descr, &shape, false, &data)).unwrap();
        let encoded = dir.path().join("in.mb");
        ok(&["encode", "-f", s(&input), s(&encoded)]);
        let out = dir.path().join("out.npy");
        ok(&["decode", "-f", s(&encoded), s(&out)]);
        let written = fs::read(&out).unwrap();
        let header = String::from_utf8_lossy(&written[10..written.len() - 240]);
        assert!(
            header.contains(&format!("'descr': '{out_descr}'")),
            "{descr}: {header}"
        );
        assert_eq!(&written[written.len() - 240..], &little[..], "{descr}");
    }
    for (descr, shape, fortran, expected) in [
        ("[('a', '<f4'), ('b', '<i4')]", "(10,)", false, "structured"),
        ("<f8", "(3, 10)", true, "Fortran-order"),
        ("<c16", "(15,)", false, "complex"),
        ("<U4", "(15,)", false, "not a fixed-width number"),
        ("<M8[D]", "(30,)", false, "time unit"),
    ] {
        let input = dir.path().join("odd.npy");
        fs::write(&input, npy_bytes(descr, shape, fortran, &little[..80])).unwrap();
        let err = fails(&["encode", "-f", s(&input), s(&dir.path().join("odd.mb"))]);
        assert!(err.contains(expected), "{descr}: {err}");
    }
    // A 1-D Fortran-order array is the same as C order.
    let input = dir.path().join("f1.npy");
    fs::write(&input, npy_bytes("<f8", "(30,)", true, &little)).unwrap();
    ok(&["encode", s(&input), s(&dir.path().join("f1.mb"))]);
}

/// Without `--column`, `.arrow`, `.feather` and `.parquet` outputs hold the whole table:
/// every column with its type (time zone, decimal precision and scale), nulls, and the
/// field and schema metadata the input had.
#[test]
fn decode_writes_whole_tables_with_metadata() {
    use std::collections::HashMap;
    let dir = temp();
    let rows = 300_000;
    let ts: ArrayRef = Arc::new(
        arrow_array::TimestampMicrosecondArray::from_iter(
            (0..rows).map(|i| (i % 7 != 0).then_some(i64::from(i) * 1_000)),
        )
        .with_timezone("Europe/Paris"),
    );
    let dec: ArrayRef = Arc::new(
        arrow_array::Decimal128Array::from_iter_values((0..rows).map(|i| i128::from(i) * 3))
            .with_precision_and_scale(20, 3)
            .unwrap(),
    );
    let x: ArrayRef = Arc::new(Float32Array::from_iter_values(
        (0..rows).map(|i| i as f32 * 0.5),
    ));
    let field_meta = HashMap::from([("unit".to_owned(), "degC".to_owned())]);
    let schema = Arc::new(arrow_schema::Schema::new_with_metadata(
        vec![
            arrow_schema::Field::new("ts", ts.data_type().clone(), true),
            arrow_schema::Field::new("dec", dec.data_type().clone(), false),
            arrow_schema::Field::new("x", arrow_schema::DataType::Float32, false)
                .with_metadata(field_meta.clone()),
        ],
        HashMap::from([("source".to_owned(), "station 7".to_owned())]),
    ));
    let batch = RecordBatch::try_new(schema.clone(), vec![ts, dec, x]).unwrap();
    let input = dir.path().join("t.feather");
    write_feather(&input, &batch);
    let encoded = dir.path().join("t.mb");
    ok(&["encode", s(&input), s(&encoded)]);
    for name in ["all.arrow", "all.feather"] {
        let out = dir.path().join(name);
        let said = ok(&["decode", s(&encoded), s(&out)]);
        assert!(said.contains("3 columns"), "{said}");
        let back = read_ipc(&out);
        assert_eq!(back.schema(), schema, "{name}");
        assert_eq!(back.columns().len(), 3);
        for (a, b) in back.columns().iter().zip(batch.columns()) {
            assert_eq!(a.to_data(), b.to_data(), "{name}");
        }
    }
    let out = dir.path().join("all.parquet");
    ok(&["decode", s(&encoded), s(&out), "--rows", "1000..250000"]);
    let builder = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
        fs::File::open(&out).unwrap(),
    )
    .unwrap();
    let back_schema = builder.schema().clone();
    let reader = builder.build().unwrap();
    let batches: Vec<RecordBatch> = reader.map(Result::unwrap).collect();
    let back = arrow_select::concat::concat_batches(&back_schema, &batches).unwrap();
    assert_eq!(back.num_rows(), 249_000);
    assert_eq!(back_schema.field(2).metadata(), &field_meta);
    assert_eq!(back_schema.metadata()["source"], "station 7");
    for (a, b) in back.columns().iter().zip(batch.columns()) {
        assert_eq!(a.to_data(), b.slice(1000, 249_000).to_data());
    }
    // Two named columns, in the order named.
    let out = dir.path().join("two.arrow");
    ok(&[
        "decode",
        s(&encoded),
        s(&out),
        "--column",
        "x",
        "--column",
        "ts",
    ]);
    let back = read_ipc(&out);
    assert_eq!(back.schema().field(0).name(), "x");
    assert_eq!(back.column(1).to_data(), batch.column(0).to_data());
}

/// Runs a command whose arguments are wrong: status 2, one line naming the problem.
fn bad_argument(args: &[&str]) -> String {
    let out = miniblock(args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "miniblock {args:?}: {stderr}");
    assert!(stderr.starts_with("miniblock: error: "), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(out.stdout.is_empty());
    stderr
}

fn write_parquet(path: &Path, batch: &RecordBatch) {
    let mut writer =
        parquet::arrow::ArrowWriter::try_new(fs::File::create(path).unwrap(), batch.schema(), None)
            .unwrap();
    writer.write(batch).unwrap();
    writer.close().unwrap();
}

/// `--progress always` lines on stderr: `what: P% (DONE of TOTAL), T s elapsed`, with
/// `, about L s left` on every line before the last.
fn progress_lines<'a>(stderr: &'a str, what: &str) -> Vec<(u64, &'a str, &'a str)> {
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix(what)?.strip_prefix(": "))
        .map(|rest| {
            let (percent, counts) = rest.split_once("% (").unwrap();
            let (counts, times) = counts.split_once(')').unwrap();
            let (done, total) = counts.split_once(" of ").unwrap();
            let percent: u64 = percent.parse().unwrap();
            assert!(times.contains(" s elapsed"), "{rest}");
            assert_eq!(times.contains(" s left"), percent < 100, "{rest}");
            (percent, done, total)
        })
        .collect()
}

#[test]
fn progress_counts_one_unit_against_its_total_and_ends_at_it() {
    let dir = temp();
    let values = common::mixed_f32(600_000, 3);
    let raw = write_raw_f32(dir.path(), "v.f32", &values);
    let parquet = dir.path().join("t.parquet");
    write_parquet(&parquet, &mixed_batch());
    // Runs `args` with `--progress always`; returns the total its `what` lines end at.
    let total = |what: &str, args: &[&str]| {
        let mut all = vec!["--progress", "always"];
        all.extend_from_slice(args);
        let out = miniblock(&all);
        assert!(out.status.success(), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let lines = progress_lines(&stderr, what);
        assert!(!lines.is_empty(), "no {what} progress in {stderr}");
        let (last_percent, last_done, last_total) = *lines.last().unwrap();
        // Ends at its total, and never counts past it; both sides in one unit.
        assert_eq!((last_percent, last_done), (100, last_total), "{stderr}");
        let mut previous = 0;
        for (percent, done, total) in &lines {
            assert_eq!(*total, last_total, "{stderr}");
            assert_eq!(
                done.split(' ').nth(1),
                total.split(' ').nth(1),
                "units differ: {stderr}"
            );
            assert!(*percent >= previous && *percent <= 100, "{stderr}");
            previous = *percent;
        }
        last_total.to_owned()
    };
    let (mb, table, back) = (
        dir.path().join("v.mb"),
        dir.path().join("t.mb"),
        dir.path().join("back.f32"),
    );
    // encode: bytes of values, raw and Parquet (not the file's compressed size); Parquet
    // has 3000 rows of f32 + f64 (the string column is skipped)
    assert_eq!(
        total("encoding", &["encode", s(&raw), "-o", s(&mb)]),
        "2.29 MiB"
    );
    assert_eq!(
        total("encoding", &["encode", s(&parquet), "-o", s(&table)]),
        "35.16 KiB"
    );
    // decode: decoded bytes against the decoded total
    assert_eq!(
        total("decoding", &["decode", s(&mb), "-o", s(&back)]),
        "2.29 MiB"
    );
    // verify: the pages' stored bytes against their total
    let stored: u64 = {
        let reader = miniblock::file::FileReader::open(fs::File::open(&mb).unwrap()).unwrap();
        reader.footer().columns[0]
            .pages
            .iter()
            .map(|p| p.length)
            .sum()
    };
    let verified = total("verifying", &["verify", s(&mb)]);
    assert!(
        verified.ends_with("MiB") || verified.ends_with("KiB"),
        "{verified} of {stored} bytes"
    );
    // compare: measurements against the measurements planned
    let compare = [
        "compare",
        s(&raw),
        "--runs",
        "1",
        "--encoding",
        "lz4,bss+zstd,auto",
    ];
    assert_eq!(total("measuring v", &compare), "6 measurements");
    // -q: no progress, no summary
    let out = miniblock(&[
        "-q",
        "--progress",
        "always",
        "encode",
        s(&raw),
        "-f",
        "-o",
        s(&dir.path().join("v.mb")),
    ]);
    assert!(out.status.success() && out.stdout.is_empty() && out.stderr.is_empty());
    // without a terminal and by default: nothing on stderr
    let out = miniblock(&[
        "decode",
        s(&dir.path().join("v.mb")),
        "-f",
        "-o",
        s(&dir.path().join("back.f32")),
    ]);
    assert!(out.status.success() && out.stderr.is_empty());
}

#[test]
fn flags_follow_the_conventions() {
    let dir = temp();
    let values = common::mixed_f32(5_000, 9);
    let raw = write_raw_f32(dir.path(), "v.f32", &values);
    // --version, and examples in every --help
    assert!(ok(&["--version"]).starts_with("miniblock "));
    assert!(ok(&["-V"]).starts_with("miniblock "));
    for sub in [
        "compare",
        "encode",
        "decode",
        "inspect",
        "verify",
        "sql",
        "completions",
    ] {
        let help = ok(&[sub, "--help"]);
        assert!(help.contains("Examples:\n  miniblock"), "{sub}: {help}");
        assert!(
            !help.lines().any(|l| l.trim() == "\\"),
            "{sub}: a stray backslash line: {help}"
        );
    }
    assert!(ok(&["--help"]).contains("Exit status"));
    // encode with no output writes INPUT.mb beside it; -o, -c and OUTPUT write the same bytes
    ok(&["encode", s(&raw)]);
    let default = fs::read(dir.path().join("v.mb")).unwrap();
    ok(&["encode", s(&raw), "-o", s(&dir.path().join("o.mb"))]);
    ok(&["encode", s(&raw), s(&dir.path().join("p.mb")), "-j", "1"]);
    let stdout = miniblock(&["encode", s(&raw), "-c"]);
    assert!(stdout.status.success());
    assert_eq!(fs::read(dir.path().join("o.mb")).unwrap(), default);
    assert_eq!(fs::read(dir.path().join("p.mb")).unwrap(), default);
    assert_eq!(stdout.stdout, default);
    // -f overwrites, without it the existing file is kept
    assert!(fails(&["encode", s(&raw)]).contains("-f/--force"));
    ok(&["encode", s(&raw), "-f", "-q"]);
    // decode -c writes the values to standard output
    let out = miniblock(&["decode", s(&dir.path().join("v.mb")), "-c"]);
    assert!(out.status.success());
    assert_eq!(out.stdout, fs::read(&raw).unwrap());
    assert!(fails(&["decode", s(&dir.path().join("v.mb"))]).contains("-o OUTPUT"));
    // argument errors: one line, status 2, naming the flag in plain words
    let e = bad_argument(&["encode", s(&raw), "--zstd-level", "99"]);
    assert!(
        e.contains("--zstd-level") && e.contains("from -131072 (fastest) to 22"),
        "{e}"
    );
    assert!(!e.contains("..="), "{e}");
    let e = bad_argument(&["encode", s(&raw), "--chunk-values", "100"]);
    assert!(
        e.contains("--chunk-values") && e.contains("power of two from 256 to 65536"),
        "{e}"
    );
    let e = bad_argument(&["compare", s(&raw), "--chunk-values", "1024,3000"]);
    assert!(e.contains("'3000'"), "{e}");
    bad_argument(&["encode", s(&raw), "-o", "a.mb", "b.mb"]);
    bad_argument(&["encode", s(&raw), "-c", "-o", "a.mb"]);
    bad_argument(&["frobnicate"]);
    bad_argument(&["encode"]);
    bad_argument(&["-j", "0", "encode", s(&raw)]);
    // --rows reversed is called reversed
    let e = fails(&[
        "decode",
        s(&dir.path().join("v.mb")),
        "x.f32",
        "--rows",
        "100..50",
    ]);
    assert!(e.contains("reversed"), "{e}");
    // a column that is not there: the columns that are
    let parquet = dir.path().join("t.parquet");
    write_parquet(&parquet, &mixed_batch());
    let e = fails(&["encode", s(&parquet), "-o", "x.mb", "--column", "nope"]);
    assert!(
        e.contains("\"nope\"")
            && e.contains("a (Float32)")
            && e.contains("label (Utf8, not encodable)"),
        "{e}"
    );
    // inspect on a Parquet, Arrow or raw file says what it is and lists its columns
    let text = ok(&["inspect", s(&parquet)]);
    assert!(
        text.contains("a Parquet file, not a miniblock file") && text.contains("3000 rows"),
        "{text}"
    );
    assert!(
        text.contains("a (Float32), b (Float64), label (Utf8, not encodable)"),
        "{text}"
    );
    let feather = dir.path().join("t.feather");
    write_feather(&feather, &mixed_batch());
    let said = ok(&["inspect", s(&feather)]);
    assert!(
        said.contains("an Arrow IPC file, not a miniblock file") && !said.contains("file file"),
        "{said}"
    );
    // Its rows, summed over its record batches from their headers.
    let batches = dir.path().join("three.feather");
    let batch = mixed_batch();
    let mut writer = arrow_ipc::writer::FileWriter::try_new(
        fs::File::create(&batches).unwrap(),
        &batch.schema(),
    )
    .unwrap();
    for _ in 0..3 {
        writer.write(&batch).unwrap();
    }
    writer.finish().unwrap();
    let said = ok(&["inspect", s(&batches)]);
    let rows = 3 * batch.num_rows();
    assert!(said.contains(&format!("bytes, {rows} rows, ")), "{said}");
    // a miniblock file is inspected as one whatever its name says
    let named_arrow = dir.path().join("really_miniblock.arrow");
    ok(&["encode", s(&raw), "-o", s(&named_arrow)]);
    assert!(ok(&["inspect", s(&named_arrow)]).contains("values: min"));
    let json: serde_json::Value =
        serde_json::from_str(&ok(&["inspect", s(&parquet), "--json"])).unwrap();
    assert_eq!(
        (json["format"].as_str(), json["num_rows"].as_u64()),
        (Some("Parquet"), Some(3000))
    );
    assert_eq!(json["columns"][2]["type"], "Utf8");
    // completions for the usual shells name every subcommand
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let script = ok(&["completions", shell]);
        for sub in ["compare", "encode", "decode", "inspect", "verify"] {
            assert!(script.contains(sub), "{shell} lacks {sub}");
        }
    }
}

#[test]
fn inspect_shows_min_max_nulls_and_nans_per_column() {
    let dir = temp();
    let f: ArrayRef = Arc::new(Float64Array::from(vec![
        Some(f64::NAN),
        Some(-0.0),
        None,
        Some(2.5e-310),
        Some(-7.25),
        Some(f64::INFINITY),
        Some(f64::from_bits(0x7ff8_0000_dead_beef)),
    ]));
    let t: ArrayRef = Arc::new(
        arrow_array::TimestampMillisecondArray::from(vec![
            Some(86_400_000),
            None,
            Some(0),
            Some(1_700_000_000_000),
            None,
            Some(5),
            Some(6),
        ])
        .with_timezone("UTC"),
    );
    let batch = RecordBatch::try_from_iter([("f", f), ("t", t)]).unwrap();
    let parquet = dir.path().join("s.parquet");
    write_parquet(&parquet, &batch);
    let mb = dir.path().join("s.mb");
    ok(&["encode", s(&parquet), "-o", s(&mb), "--page-values", "3"]);
    let text = ok(&["inspect", s(&mb)]);
    assert!(
        text.contains("values: min -7.25, max inf, 1 null(s), 2 NaN(s)"),
        "{text}"
    );
    assert!(
        text.contains("values: min 1970-01-01T00:00:00Z, max 2023-11-14T22:13:20Z, 2 null(s)\n"),
        "{text}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&ok(&["inspect", s(&mb), "--json"])).unwrap();
    let f = &json["columns"][0];
    assert_eq!(
        (f["min"].as_str(), f["max"].as_str()),
        (Some("-7.25"), Some("inf"))
    );
    assert_eq!(
        (f["nulls"].as_u64(), f["nans"].as_u64()),
        (Some(1), Some(2))
    );
    let t = &json["columns"][1];
    assert_eq!((t["nulls"].as_u64(), t["nans"].as_u64()), (Some(2), None));
}

/// A legend mark's look, wherever it is drawn: its element, radius, colours, and its
/// points relative to their centre.
fn mark_signature(mark: roxmltree::Node) -> String {
    let points = mark.attribute("points").map_or_else(String::new, |p| {
        let xy: Vec<(f64, f64)> = p
            .split(' ')
            .map(|pair| {
                let (x, y) = pair.split_once(',').unwrap();
                (x.parse().unwrap(), y.parse().unwrap())
            })
            .collect();
        let (cx, cy) = (
            xy.iter().map(|p| p.0).sum::<f64>() / xy.len() as f64,
            xy.iter().map(|p| p.1).sum::<f64>() / xy.len() as f64,
        );
        xy.iter()
            .map(|(x, y)| format!("{:.0},{:.0}", x - cx, y - cy))
            .collect::<Vec<_>>()
            .join(" ")
    });
    format!(
        "{} r={} fill={} stroke={} [{points}]",
        mark.tag_name().name(),
        mark.attribute("r").unwrap_or("-"),
        mark.attribute("fill").unwrap_or("-"),
        mark.attribute("stroke").unwrap_or("-"),
    )
}

/// Names with characters XML must escape, and the `--` an XML comment cannot hold.
const AWKWARD: &str = "a--b&c'd\"e";

#[test]
fn plots_are_well_formed_for_1_5_and_13_data_sets() {
    let dir = temp();
    let mut files = Vec::new();
    for i in 0..13 {
        let name = if i == 0 {
            format!("{AWKWARD}.f32")
        } else {
            format!("set_{i:02}_with_a_rather_long_name.f32")
        };
        let values: Vec<f32> = (0..3000)
            .map(|j| ((j * (i + 1)) as f32 * 0.01).sin())
            .collect();
        files.push(write_raw_f32(dir.path(), &name, &values));
    }
    for n in [1, 5, 13] {
        let plot = dir.path().join(format!("p{n}.svg"));
        let mut args = vec![
            "compare",
            "--runs",
            "1",
            "--encoding",
            "lz4,bss+zstd,auto",
            "--chunk-values",
            "256,1024,4096",
            "--plot",
            s(&plot),
        ];
        args.extend(files[..n].iter().map(|p| s(p)));
        ok(&args);
        let svg = fs::read_to_string(&plot).unwrap();
        // roxmltree refuses duplicate attributes, bad escapes and broken comments
        let doc = roxmltree::Document::parse(&svg)
            .unwrap_or_else(|e| panic!("{n} data sets: {e}\n{svg}"));
        assert_eq!(doc.root_element().tag_name().name(), "svg");
        let texts: Vec<&str> = doc
            .descendants()
            .filter(|e| e.has_tag_name("text"))
            .filter_map(|e| e.text())
            .collect();
        // full names in the legend
        for file in &files[..n] {
            let stem = file.file_stem().unwrap().to_str().unwrap();
            assert!(texts.contains(&stem), "{n}: legend lacks {stem}: {texts:?}");
        }
        // one mark per data set, encoding and chunk size, each with its title
        let titles = doc
            .descendants()
            .filter(|e| e.has_tag_name("title"))
            .count();
        assert_eq!(titles, n * 3 * 3);
        // the legend's marks tell every data set apart (shape and centre mark)
        let legend: std::collections::BTreeSet<String> = doc
            .descendants()
            .filter(|e| {
                e.has_tag_name("text")
                    && e.text()
                        .is_some_and(|t| files[..n].iter().any(|f| f.file_stem().unwrap() == t))
            })
            .map(|text| {
                let mut marks = Vec::new();
                let mut node = text.prev_sibling_element();
                while let Some(m) = node.filter(|m| !m.has_tag_name("text")) {
                    marks.push(mark_signature(m));
                    node = m.prev_sibling_element();
                }
                marks.join(" + ")
            })
            .collect();
        assert_eq!(legend.len(), n, "{n}: {legend:?}");
    }
    // a .png path and a missing folder are refused before anything is measured
    let e = fails(&[
        "compare",
        s(&files[0]),
        "--plot",
        s(&dir.path().join("p.png")),
    ]);
    assert!(e.contains("SVG"), "{e}");
    let out = miniblock(&[
        "compare",
        s(&files[0]),
        "--plot",
        s(&dir.path().join("no/p.svg")),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty(), "measured before refusing");
    let out = miniblock(&[
        "compare",
        s(&files[0]),
        "--plot",
        s(&dir.path().join("p1.svg")),
    ]);
    assert!(out.stdout.is_empty() && String::from_utf8_lossy(&out.stderr).contains("-f/--force"));
}

#[test]
fn compare_samples_large_inputs_labels_equal_stems_and_checks_sizes() {
    let dir = temp();
    // 4 pages of 1 MiB; at most 1 MiB measured: one page, the first
    let values = common::mixed_f32(1 << 20, 5);
    let big = write_raw_f32(dir.path(), "big.f32", &values);
    let json = ok(&[
        "compare",
        s(&big),
        "--json",
        "--runs",
        "1",
        "--encoding",
        "lz4",
        "--chunk-values",
        "1024",
        "--sample-mib",
        "1",
    ]);
    let line: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(
        (
            line["pages_measured"].as_u64(),
            line["pages_in_input"].as_u64()
        ),
        (Some(1), Some(4))
    );
    assert_eq!(line["values"], 1 << 18);
    let table = ok(&[
        "compare",
        s(&big),
        "--runs",
        "1",
        "--encoding",
        "lz4",
        "--chunk-values",
        "1024",
        "--sample-mib",
        "2",
    ]);
    assert!(
        table.contains("big: measured on 2 of its 4 pages"),
        "{table}"
    );
    let json = ok(&[
        "compare",
        s(&big),
        "--json",
        "--runs",
        "1",
        "--encoding",
        "lz4",
        "--chunk-values",
        "1024",
        "--sample-mib",
        "0",
    ]);
    let line: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(line["pages_measured"], 4);
    // two inputs with one stem get their folders in the label
    for sub in ["a", "b"] {
        fs::create_dir(dir.path().join(sub)).unwrap();
        write_raw_f32(&dir.path().join(sub), "x.f32", &values[..5000]);
    }
    let json = ok(&[
        "compare",
        s(&dir.path().join("a/x.f32")),
        s(&dir.path().join("b/x.f32")),
        "--json",
        "--runs",
        "1",
        "--encoding",
        "lz4",
    ]);
    let labels: std::collections::BTreeSet<String> = json
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["dataset"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(labels.into_iter().collect::<Vec<_>>(), ["a/x", "b/x"]);
    // --check: the verdicts are on size only (speed is a figure); every row passes here,
    // so the status is 0 (the failing side is `compare`'s unit test).
    let smooth: Vec<f32> = (0..50_000).map(|i| (i / 7) as f32).collect();
    let input = write_raw_f32(dir.path(), "steps.f32", &smooth);
    let table = ok(&[
        "compare",
        s(&input),
        "--runs",
        "1",
        "--encoding",
        "lz4,auto,auto:0",
        "--check",
    ]);
    let verdicts: Vec<&str> = table
        .lines()
        .skip_while(|l| !l.starts_with("auto against"))
        .skip(2)
        .map(|l| l.split_whitespace().last().unwrap())
        .collect();
    assert_eq!(verdicts, ["pass"; 4], "{table}");
}

#[test]
fn an_interrupted_bar_is_cleared_from_the_terminal() {
    // `script` (util-linux) gives the command a terminal, where the bar is drawn.
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("SKIPPED an_interrupted_bar_is_cleared_from_the_terminal: no `script` command for a terminal");
        return;
    }
    let dir = temp();
    let values: Vec<f32> = (0..2_000_000).map(|i| (i as f32 * 0.001).sin()).collect();
    let input = write_raw_f32(dir.path(), "big.f32", &values);
    let command = format!(
        "'{}' compare '{}' --runs 1000 --encoding zstd,bss+zstd & sleep 2; kill -INT $!; wait $!; echo status=$?",
        env!("CARGO_BIN_EXE_miniblock"),
        s(&input)
    );
    let out = Command::new("script")
        .args(["-qfec", &command, "/dev/null"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let last_bar = text.rfind("measuring big [").expect("a bar was drawn");
    let after = &text[last_bar..];
    let cleared = after.find("\r\x1b[2K").expect("the bar was cleared");
    // Nothing is drawn after the clearing but the status: 130, as for SIGINT.
    assert_eq!(
        after[cleared..].trim_start_matches("\r\x1b[2K").trim(),
        "status=130",
        "{after:?}"
    );
}

/// `.lance` outputs are Lance files that decode back bit for bit; Lance files written by
/// pylance are inputs of `decode`, `inspect` and `encode`; what Lance cannot express, and
/// columns that are not fixed-width, are named.
#[test]
fn lance_files_in_and_out() {
    let dir = tempfile::tempdir().unwrap();
    let lance = dir.path().join("d.lance");
    let back = dir.path().join("back.f64");
    let (lance_s, back_s) = (lance.to_str().unwrap(), back.to_str().unwrap());
    for encoding in ["auto", "bss+zstd", "bss+lz4", "plain"] {
        let out = ok(&[
            "encode",
            "../data/tmy3_Dry_bulb.f64",
            lance_s,
            "--encoding",
            encoding,
            "-f",
        ]);
        assert!(out.contains("a Lance 2.1 file"), "{out}");
        ok(&["decode", lance_s, back_s, "-f"]);
        assert_eq!(
            fs::read(&back).unwrap(),
            fs::read("../data/tmy3_Dry_bulb.f64").unwrap()
        );
    }
    let err = fails(&[
        "encode",
        "../data/tmy3_Dry_bulb.f64",
        lance_s,
        "--encoding",
        "alp+zstd",
        "-f",
    ]);
    assert!(
        err.contains("alp+zstd has no Lance 2.1 equivalent"),
        "{err}"
    );

    // compare measures every column of a Lance file written in several pages.
    let out = ok(&[
        "compare",
        "../tests/lance/pages_2.2.lance",
        "--encoding",
        "bss+zstd",
        "--runs",
        "1",
    ]);
    for column in ["x64", "x32", "n64", "n32"] {
        assert!(out.contains(&format!("pages_2.2:{column}")), "{out}");
    }
    // A small nullable page in one 64 KiB chunk: auto meets its size floors there too
    // (a window of the chunk once led it to ALP, five times the best size).
    let out = ok(&[
        "compare",
        "../tests/lance/zstd_bss_2.1.lance",
        "--runs",
        "1",
        "--check",
    ]);
    assert!(!out.contains("FAIL"), "{out}");
    let out = ok(&["inspect", "../tests/lance/default_2.1.lance"]);
    assert!(
        out.contains("column \"x64\": 1 page(s): mini-block: rle of flat 64-bit"),
        "{out}"
    );
    let out = ok(&["inspect", "../tests/lance/mixed_2.2.lance"]);
    assert!(
        out.contains("Lance (format 2.2)") && out.contains("label (Utf8, not encodable)"),
        "{out}"
    );
    let err = fails(&[
        "decode",
        "../tests/lance/mixed_2.2.lance",
        back_s,
        "--column",
        "label",
        "-f",
    ]);
    assert!(err.contains("\"label\" is string"), "{err}");
    let bin = dir.path().join("b.bin");
    ok(&[
        "decode",
        "../tests/lance/mixed_2.2.lance",
        bin.to_str().unwrap(),
        "--column",
        "b",
    ]);
    assert_eq!(
        fs::read(&bin).unwrap(),
        [1i32, 2, 3]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect::<Vec<_>>()
    );
    let mb = dir.path().join("m.mb");
    let out = miniblock(&[
        "encode",
        "../tests/lance/mixed_2.2.lance",
        mb.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("skipped: label (string)") && stderr.contains("took 2 of 3 columns"),
        "{stderr}"
    );
}

#[test]
#[cfg_attr(
    not(feature = "sql"),
    ignore = "needs the sql feature: cargo test -p miniblock-cli --features sql"
)]
fn sql_queries_column_files_named_in_from() {
    let dir = temp();
    let mb = dir.path().join("parts");
    fs::create_dir_all(&mb).unwrap();
    for part in ["a.mb", "b.mb"] {
        ok(&[
            "encode",
            "../data/tmy3_Dry_bulb.f64",
            s(&mb.join(part)),
            "-q",
        ]);
    }
    let values: Vec<f64> = fs::read("../data/tmy3_Dry_bulb.f64")
        .unwrap()
        .chunks_exact(8)
        .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
        .collect();
    let (lo, hi) = values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &v| {
            (l.min(v), h.max(v))
        });
    let one = mb.join("a.mb");
    let query = format!(
        "SELECT count(*) AS n, min(tmy3_Dry_bulb) AS lo, max(tmy3_Dry_bulb) AS hi FROM '{}'",
        one.display()
    );
    // JSON: one object per row.
    let json = ok(&["sql", "--format", "json", &query]);
    let row: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(row["n"], values.len());
    assert_eq!(row["lo"].as_f64(), Some(lo));
    assert_eq!(row["hi"].as_f64(), Some(hi));
    // A null is written as `null`, not left out: readers that go by position keep
    // their columns.
    let nulls = ok(&[
        "sql",
        "--format",
        "json",
        &format!(
            "SELECT count(*) AS n, CAST(NULL AS DOUBLE) AS missing FROM '{}'",
            one.display()
        ),
    ]);
    let row: serde_json::Value = serde_json::from_str(nulls.trim()).unwrap();
    assert_eq!(row["n"], values.len());
    assert!(
        row.as_object().unwrap().get("missing") == Some(&serde_json::Value::Null),
        "{nulls}"
    );
    // CSV: a header, then the rows.
    let csv = ok(&["sql", "--format", "csv", &query]);
    assert_eq!(csv.lines().next(), Some("n,lo,hi"));
    assert_eq!(csv.lines().count(), 2);
    // A table (the default) of every row a filter keeps, over a glob of two files.
    let warm = values.iter().filter(|&&v| v > 30.0).count();
    assert!(warm > 10);
    let glob = format!("'{}/*.mb'", mb.display());
    let rows = ok(&[
        "sql",
        "--format",
        "json",
        &format!("SELECT tmy3_Dry_bulb FROM {glob} WHERE tmy3_Dry_bulb > 30 ORDER BY 1"),
    ]);
    assert_eq!(rows.lines().count(), 2 * warm);
    let table = ok(&["sql", &format!("SELECT count(*) FROM {glob}")]);
    assert!(
        table.contains(&format!("| {} ", 2 * values.len())),
        "{table}"
    );
    assert!(table.lines().next().unwrap().starts_with("+-"), "{table}");
    // Errors are one line.
    let err = fails(&["sql", "SELEC 1"]);
    assert!(
        err.contains("SQL") || err.contains("syntax") || err.contains("Expected"),
        "{err}"
    );
    let err = fails(&[
        "sql",
        &format!("SELECT * FROM '{}/none/*.mb'", dir.path().display()),
    ]);
    assert!(err.contains("no column files"), "{err}");
    let err = fails(&["sql", &format!("SELECT nope FROM '{}'", one.display())]);
    assert!(err.contains("nope"), "{err}");
    let empty = dir.path().join("emptydir");
    fs::create_dir(&empty).unwrap();
    let err = fails(&["sql", &format!("SELECT * FROM '{}'", empty.display())]);
    assert!(err.contains("empty directory"), "{err}");
}

/// A build without the `sql` feature still takes `miniblock sql`, and says in one line
/// how to get a build with it.
#[test]
#[cfg(not(feature = "sql"))]
fn sql_without_the_feature_says_how_to_get_it() {
    let err = fails(&["sql", "SELECT 1"]);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("--features sql"), "{err}");
}

/// The README's picture (`docs/sample.svg`, drawn by `scripts/plot-sample`) shows every
/// encoding's ratio on the bundled sample as the encoders make it now: an encoder change
/// that moves a ratio fails here until the picture is drawn again. (Speeds are this
/// machine's and are not compared.)
#[test]
fn the_readme_plot_matches_the_encoders() {
    let svg = fs::read_to_string("../docs/sample.svg").unwrap();
    let encodings = fs::read_to_string("../docs/sample-encodings.txt").unwrap();
    let drawn: Vec<(String, f64)> = svg
        .split("<title>")
        .skip(1)
        .filter_map(|t| t.split_once("</title>").map(|(t, _)| t))
        .filter_map(|t| {
            let (mark, rest) = t.split_once(": ratio ")?;
            let ratio = rest.split_once(',')?.0.parse().ok()?;
            Some((mark.to_owned(), ratio))
        })
        .collect();
    let json = ok(&[
        "compare",
        "--json",
        "--runs",
        "1",
        "--encoding",
        encodings.trim(),
    ]);
    let mut now = std::collections::HashMap::new();
    for line in json.lines() {
        let row: serde_json::Value = serde_json::from_str(line).unwrap();
        let mark = format!(
            "{}, {}, {} KiB chunks",
            row["dataset"].as_str().unwrap(),
            row["encoding"].as_str().unwrap(),
            row["chunk_bytes"].as_u64().unwrap() / 1024
        );
        now.insert(mark, row["ratio"].as_f64().unwrap());
    }
    assert_eq!(
        drawn.len(),
        now.len(),
        "the picture has {} marks, compare measures {}: run scripts/plot-sample",
        drawn.len(),
        now.len()
    );
    for (mark, ratio) in &drawn {
        let current = now
            .get(mark)
            .unwrap_or_else(|| panic!("{mark} is no longer measured: run scripts/plot-sample"));
        assert_eq!(
            format!("{ratio:.3}"),
            format!("{current:.3}"),
            "{mark}: the picture shows ratio {ratio}, the encoder now makes {current}: run scripts/plot-sample"
        );
    }
}

/// A file of a known format (netCDF, HDF5, Parquet, ...) is not taken as raw floats
/// unless `--raw` says so, and `inspect` names it and says what to do instead.
#[test]
fn known_formats_are_not_taken_as_raw_floats() {
    let dir = temp();
    let mut classic = b"CDF\x01".to_vec();
    classic.extend(std::iter::repeat_n(7u8, 4092));
    let nc = dir.path().join("slp.nc");
    fs::write(&nc, &classic).unwrap();
    let out = dir.path().join("slp.mb");
    let err = fails(&["encode", s(&nc), s(&out), "--dtype", "f32"]);
    assert!(
        err.contains("netCDF") && err.contains("nccopy") && err.contains("--raw"),
        "{err}"
    );
    assert!(!out.exists());
    ok(&["encode", s(&nc), s(&out), "--dtype", "f32", "--raw", "-q"]);
    assert!(out.exists());
    let said = ok(&["inspect", s(&nc)]);
    assert!(
        said.contains("a netCDF classic file, not a miniblock file") && said.contains("409"),
        "{said}"
    );
    // HDF5, with its signature after a 512-byte user block, under a raw float extension.
    let mut hdf5 = vec![0u8; 512];
    hdf5.extend_from_slice(b"\x89HDF\r\n\x1a\n");
    hdf5.resize(4096, 0);
    let h5 = dir.path().join("grid.f32");
    fs::write(&h5, &hdf5).unwrap();
    let err = fails(&["encode", s(&h5), s(&dir.path().join("grid.mb"))]);
    assert!(err.contains("HDF5") && err.contains("h5repack"), "{err}");
    let err = fails(&["compare", s(&h5)]);
    assert!(err.contains("HDF5"), "{err}");
    let named = dir.path().join("grid.h5");
    fs::write(&named, &hdf5).unwrap();
    let err = fails(&["encode", s(&named), s(&dir.path().join("g.mb"))]);
    assert!(
        err.contains("HDF5") && !err.contains("unknown extension"),
        "{err}"
    );
    let said = ok(&["inspect", "--json", s(&named)]);
    let row: serde_json::Value = serde_json::from_str(said.trim()).unwrap();
    assert_eq!(row["format"], "an HDF5 (or netCDF-4) file");
    assert_eq!(row["miniblock"], false);
    // A Parquet file given --dtype is named too.
    let pq = dir.path().join("t.parquet");
    write_parquet(&pq, &mixed_batch());
    let err = fails(&[
        "encode",
        s(&pq),
        s(&dir.path().join("t.mb")),
        "--dtype",
        "f64",
    ]);
    assert!(err.contains("a Parquet file"), "{err}");
}

/// `encode --help` says which columns it takes, and a missing argument is named in the
/// one-line error.
#[test]
fn help_screens_and_missing_arguments() {
    let help = ok(&["encode", "--help"]);
    assert!(!help.contains("every float column"), "{help}");
    let out = miniblock(&["encode"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("<INPUT>"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}

/// A Parquet input's schema metadata (pandas' `pandas` key, which tells it a float column
/// is really a nullable `Int64`) and field metadata come back in a Parquet output.
#[test]
fn parquet_inputs_keep_their_schema_metadata() {
    let dir = temp();
    let pandas = r#"{"index_columns": [], "columns": [{"name": "i64n", "pandas_type": "int64", "numpy_type": "Int64"}]}"#;
    let ints: ArrayRef = Arc::new(arrow_array::Int64Array::from(vec![Some(1), None, Some(3)]));
    let field = arrow_schema::Field::new("i64n", arrow_schema::DataType::Int64, true)
        .with_metadata([("unit".to_owned(), "m".to_owned())].into());
    let schema = Arc::new(arrow_schema::Schema::new_with_metadata(
        vec![field],
        [("pandas".to_owned(), pandas.to_owned())].into(),
    ));
    let batch = RecordBatch::try_new(schema, vec![ints]).unwrap();
    let input = dir.path().join("num.parquet");
    write_parquet(&input, &batch);
    let encoded = dir.path().join("num.mb");
    ok(&["encode", s(&input), s(&encoded), "-q"]);
    let back = dir.path().join("back.parquet");
    ok(&["decode", s(&encoded), s(&back), "-q"]);
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
        fs::File::open(&back).unwrap(),
    )
    .unwrap();
    let got = reader.schema();
    assert_eq!(
        got.metadata().get("pandas").map(String::as_str),
        Some(pandas),
        "{got:?}"
    );
    assert_eq!(
        got.field(0).metadata().get("unit").map(String::as_str),
        Some("m"),
        "{got:?}"
    );
}

/// An existing output is refused before the input is read, so no `skipped:` line comes
/// before the refusal; the summary of a finished encode says how long it took.
#[test]
fn an_existing_output_is_refused_before_the_input_is_read() {
    let dir = temp();
    let batch = mixed_batch();
    let input = dir.path().join("df.feather");
    write_feather(&input, &batch);
    let said = ok(&["encode", s(&input)]);
    assert!(
        said.starts_with("wrote ") && said.trim_end().ends_with(" s"),
        "{said}"
    );
    // `fails` asserts a single line on stderr: the refusal alone.
    let err = fails(&["encode", s(&input)]);
    assert!(err.contains("already exists"), "{err}");
}

/// A CSV (or TSV) input is typed by inference over the whole file: a column of integers
/// whose last row holds a decimal is a float column; text columns are skipped and named.
#[test]
fn csv_inputs_are_encoded() {
    let dir = temp();
    let mut text = String::from("id,temp,station\n");
    for i in 0..5000 {
        use std::fmt::Write as _;
        writeln!(text, "{i},{},st{}", i % 40, i % 7).unwrap();
    }
    text.push_str("5000,21.5,st0\n");
    let input = dir.path().join("df.csv");
    fs::write(&input, &text).unwrap();
    let encoded = dir.path().join("df.mb");
    let out = miniblock(&["encode", s(&input), s(&encoded)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("skipped: station"), "{stderr}");
    let back = dir.path().join("back.arrow");
    ok(&["decode", s(&encoded), s(&back), "-q"]);
    let batch = read_ipc(&back);
    assert_eq!(batch.num_rows(), 5001);
    let temp = batch
        .column_by_name("temp")
        .unwrap()
        .as_any()
        .downcast_ref::<Float64Array>()
        .unwrap();
    assert_eq!(temp.value(5000).to_bits(), 21.5f64.to_bits());
    assert_eq!(temp.value(41).to_bits(), 1.0f64.to_bits());
    let tsv = dir.path().join("df.tsv");
    fs::write(&tsv, text.replace(',', "\t")).unwrap();
    ok(&["encode", s(&tsv), s(&dir.path().join("tsv.mb")), "-q"]);

    // --csv-type overrides what inference chose; a name or type it does not know, or an
    // input that is not CSV, is refused in one line.
    let typed = dir.path().join("typed.mb");
    ok(&[
        "encode",
        s(&input),
        s(&typed),
        "--csv-type",
        "id=Int32",
        "--csv-type",
        "temp=Decimal128(6, 1)",
        "-q",
    ]);
    let back = dir.path().join("typed.arrow");
    ok(&["decode", s(&typed), s(&back), "-q"]);
    let batch = read_ipc(&back);
    let schema = batch.schema();
    assert_eq!(schema.field(0).data_type(), &arrow_schema::DataType::Int32);
    assert_eq!(
        schema.field(1).data_type(),
        &arrow_schema::DataType::Decimal128(6, 1)
    );
    let temp = batch
        .column(1)
        .as_any()
        .downcast_ref::<arrow_array::Decimal128Array>()
        .unwrap();
    assert_eq!(temp.value(5000), 215);
    let err = fails(&["encode", s(&input), "--csv-type", "nope=Int32", "-f"]);
    assert!(
        err.contains("no such column") && err.contains("\"station\""),
        "{err}"
    );
    let err = bad_argument(&["encode", s(&input), "--csv-type", "id=Int99"]);
    assert!(err.contains("not an Arrow type"), "{err}");
    let err = fails(&["encode", s(&back), "--csv-type", "id=Int32", "-f"]);
    assert!(err.contains("CSV and TSV inputs"), "{err}");
}

/// A Lance file whose only column is a string column (as pylance 14.0.2 writes
/// `pa.table({"s": ["a", "bb", None, "ccc"]})`) has nothing `decode` reads: an error that
/// says so, not a panic.
#[test]
fn a_lance_file_of_strings_only_is_an_error_not_a_panic() {
    let dir = temp();
    let out = dir.path().join("s.arrow");
    let err = fails(&["decode", "../tests/lance/strings_2.2.lance", s(&out)]);
    assert!(err.contains("no column"), "{err}");
    assert!(!out.exists());
    let said = ok(&["inspect", "../tests/lance/strings_2.2.lance"]);
    assert!(said.contains("s (Utf8"), "{said}");
}

/// Lance files carry no checksums: every command that reads one says so once, and
/// `verify` checks what can be checked (structure, every page decoded, row counts) and
/// says that the values cannot be.
#[test]
fn lance_inputs_are_said_to_be_unverifiable() {
    let dir = temp();
    let said = ok(&["verify", "../tests/lance/default_2.2.lance"]);
    assert!(
        said.contains("structure ok") && said.contains("values not verifiable"),
        "{said}"
    );
    let said = ok(&["verify", "../tests/lance/mixed_2.2.lance"]);
    assert!(said.contains("does not decode (label)"), "{said}");
    let out = miniblock(&[
        "decode",
        "../tests/lance/default_2.2.lance",
        s(&dir.path().join("d.arrow")),
    ]);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.matches("carry no checksums").count(), 1, "{stderr}");
    let json: serde_json::Value = serde_json::from_str(&ok(&[
        "inspect",
        "--json",
        "../tests/lance/default_2.2.lance",
    ]))
    .unwrap();
    assert_eq!(json["values_verifiable"], false);
    // Damaged structure is found: the first page's data cut out of the file, so every
    // offset after it points past the end.
    let bytes = fs::read("../tests/lance/pages_2.2.lance").unwrap();
    let damaged = dir.path().join("damaged.lance");
    fs::write(&damaged, [&bytes[..64], &bytes[4096..]].concat()).unwrap();
    let err = fails(&["verify", s(&damaged)]);
    assert!(err.contains("damaged.lance"), "{err}");
}

/// Values the query engine cannot handle never crash `miniblock sql`: decimals whose
/// scale engines cannot rescale are refused when written, and a panic inside DataFusion
/// (Date64 at i64's extremes, in its statistics display) is one line and status 1.
#[test]
fn sql_never_crashes_on_what_the_writer_accepts() {
    use arrow_array::{Date64Array, Decimal128Array};
    let dir = temp();
    let decimals: ArrayRef = Arc::new(
        Decimal128Array::from(vec![1i128, 2, 3])
            .with_precision_and_scale(38, -50)
            .unwrap(),
    );
    let ipc = dir.path().join("dec.arrow");
    write_feather(
        &ipc,
        &RecordBatch::try_from_iter([("c", decimals)]).unwrap(),
    );
    let err = fails(&["encode", s(&ipc), s(&dir.path().join("dec.mb"))]);
    assert!(err.contains("scale"), "{err}");
    let dates: ArrayRef = Arc::new(Date64Array::from(vec![i64::MIN, 0, i64::MAX]));
    let ipc = dir.path().join("dates.arrow");
    write_feather(&ipc, &RecordBatch::try_from_iter([("c", dates)]).unwrap());
    let mb = dir.path().join("dates.mb");
    ok(&["encode", s(&ipc), s(&mb), "-q"]);
    for query in [
        "SELECT min(c) FROM '{}'",
        "SELECT max(c), count(*) FROM '{}'",
    ] {
        let out = miniblock(&["sql", &query.replace("{}", s(&mb))]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(matches!(out.status.code(), Some(0 | 1)), "{query}: {out:?}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(stderr.trim_end().lines().count() <= 1, "{stderr}");
    }
}

/// An output that is a special file is written through and not read back for the
/// summary: `encode` to `/dev/null` succeeds and says what it wrote.
#[test]
fn encode_to_dev_null_succeeds() {
    let dir = temp();
    let values = common::mixed_f32(5_000, 3);
    let raw = write_raw_f32(dir.path(), "v.f32", &values);
    let said = ok(&["encode", s(&raw), "/dev/null"]);
    assert!(
        said.starts_with("wrote /dev/null: 1 column(s), 5000 rows"),
        "{said}"
    );
}

/// Runs the binary with `stdin` and `stdout` as given; returns its status code and stderr.
#[cfg(unix)]
fn with_stdio(
    args: &[&str],
    stdin: std::process::Stdio,
    stdout: std::process::Stdio,
) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_miniblock"))
        .args(args)
        .stdin(stdin)
        .stdout(stdout)
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Standard input and output are checked like named files: the file the shell opened
/// there is never the one overwritten (`1<>in`, `>> in`, `-f -o in < in`), a closed
/// standard output is an error rather than data silently lost, `/dev/stdout` is written
/// through with the summary on stderr, and a reader closing the pipe ends every format
/// quietly with 141.
#[cfg(unix)]
#[test]
fn standard_streams_are_checked_like_files() {
    use std::process::Stdio;
    let dir = temp();
    let values = common::mixed_f32(200_000, 5);
    let raw = write_raw_f32(dir.path(), "v.f32", &values);
    let encoded = dir.path().join("v.mb");
    ok(&["encode", s(&raw), s(&encoded)]);
    let (raw_bytes, mb_bytes) = (fs::read(&raw).unwrap(), fs::read(&encoded).unwrap());
    let open_rw = |p: &Path| {
        fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(p)
            .unwrap()
    };
    let open_append = |p: &Path| fs::OpenOptions::new().append(true).open(p).unwrap();

    let decode_raw = ["decode", s(&encoded), "-c", "--format", "raw"];
    for (what, stdout) in [("1<>", open_rw(&encoded)), (">>", open_append(&encoded))] {
        let (code, stderr) = with_stdio(&decode_raw, Stdio::null(), Stdio::from(stdout));
        assert_eq!(code, Some(1), "{what}: {stderr}");
        assert!(
            stderr.contains("standard output is the input"),
            "{what}: {stderr}"
        );
        assert_eq!(
            fs::read(&encoded).unwrap(),
            mb_bytes,
            "{what}: the input changed"
        );
    }
    let (code, stderr) = with_stdio(
        &["encode", "-", "--dtype", "f32", "-f", "-o", s(&raw)],
        Stdio::from(fs::File::open(&raw).unwrap()),
        Stdio::null(),
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("is standard input"), "{stderr}");
    assert_eq!(fs::read(&raw).unwrap(), raw_bytes, "the input was replaced");

    // fd 1 closed: the runtime puts /dev/null there, which must not swallow the data.
    let out = Command::new("sh")
        .args(["-c", "exec \"$0\" decode \"$1\" -c --format raw >&-"])
        .args([env!("CARGO_BIN_EXE_miniblock"), s(&encoded)])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("standard output is closed"), "{stderr}");
    // ... while a shell's >/dev/null is a wish to discard.
    let (code, stderr) = with_stdio(&decode_raw, Stdio::null(), Stdio::null());
    assert_eq!(code, Some(0), "{stderr}");

    // -o /dev/stdout into a file: the same bytes as a named output, the summary apart.
    let through = dir.path().join("through.mb");
    let (code, stderr) = with_stdio(
        &["encode", s(&raw), "-o", "/dev/stdout"],
        Stdio::null(),
        Stdio::from(fs::File::create(&through).unwrap()),
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(fs::read(&through).unwrap(), mb_bytes);
    assert!(stderr.contains("wrote standard output"), "{stderr}");

    let query = format!("SELECT * FROM '{}'", s(&encoded));
    let mut piped = vec![
        vec!["encode", s(&raw), "-c"],
        vec!["decode", s(&encoded), "--format", "parquet", "-c"],
        vec!["decode", s(&encoded), "--format", "arrow", "-c"],
    ];
    if cfg!(feature = "sql") {
        piped.push(vec!["sql", "--format", "csv", &query]);
        piped.push(vec!["sql", "--format", "json", &query]);
    }
    for args in piped {
        let mut child = spawn_piped(&args);
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(141), "{args:?}: {stderr}");
        assert!(stderr.trim().is_empty(), "{args:?}: {stderr}");
    }
}

/// A temporary output that a killed run left behind is reported, not silently kept or
/// removed (another run may be writing it).
#[test]
fn leftover_temporary_outputs_are_reported() {
    let dir = temp();
    let raw = write_raw_f32(dir.path(), "v.f32", &common::mixed_f32(1_000, 1));
    let leftover = dir.path().join(".miniblock-Ab12Cd.tmp");
    fs::write(&leftover, [0u8; 100]).unwrap();
    let out = miniblock(&["encode", s(&raw), s(&dir.path().join("v.mb"))]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(".miniblock-Ab12Cd.tmp (100 bytes) is a partial output"),
        "{stderr}"
    );
    assert!(leftover.exists());
}

/// Footer statistics that lie (with a correct footer checksum) change what `sql` answers
/// from them; `sql --verify` checks the files first and refuses them, naming the page.
#[cfg(feature = "sql")]
#[test]
fn sql_verify_catches_lying_statistics() {
    let dir = temp();
    let raw = write_raw_f32(dir.path(), "v.f32", &[1.0, 2.0, 3.0, 4.0]);
    let honest = dir.path().join("v.mb");
    ok(&["encode", s(&raw), s(&honest)]);
    let lying = dir.path().join("lying.mb");
    let bytes = common::with_footer(&fs::read(&honest).unwrap(), |footer| {
        let stats = footer.columns[0].pages[0].statistics.as_mut().unwrap();
        stats.max = Some(99.0f32.to_le_bytes().to_vec());
    });
    fs::write(&lying, bytes).unwrap();
    let query = |file: &Path| format!("SELECT max(v) FROM '{}'", s(file));
    assert!(ok(&["sql", "--format", "csv", &query(&honest)]).contains('4'));
    assert!(ok(&["sql", "--format", "csv", &query(&honest), "--verify"]).contains('4'));
    // Unverified, the footer is believed ...
    assert!(ok(&["sql", "--format", "csv", &query(&lying)]).contains("99"));
    // ... verified, it is refused.
    let err = fails(&["sql", "--verify", &query(&lying)]);
    assert!(err.contains("statistics disagree"), "{err}");
}

/// Boolean columns (a DataFrame's flag column) are encoded, not skipped: through Parquet
/// and Arrow with their nulls, through `.npy` as numpy's bool, and queried in SQL.
#[test]
fn boolean_columns_round_trip() {
    use arrow_array::BooleanArray;
    let dir = temp();
    let n = 20_000;
    let flag: ArrayRef = Arc::new(BooleanArray::from_iter(
        (0..n).map(|i| (i % 97 != 0).then_some(i % 3 == 0 || i % 7 == 1)),
    ));
    let all: ArrayRef = Arc::new(BooleanArray::from(vec![true; n]));
    let x: ArrayRef = Arc::new(Float64Array::from_iter_values((0..n).map(|i| i as f64)));
    let batch =
        RecordBatch::try_from_iter([("x", x), ("flag", flag.clone()), ("all", all)]).unwrap();
    let parquet = dir.path().join("b.parquet");
    write_parquet(&parquet, &batch);
    let encoded = dir.path().join("b.mb");
    let said = String::from_utf8(miniblock(&["encode", s(&parquet), s(&encoded)]).stderr).unwrap();
    assert!(!said.contains("skipped"), "{said}");
    let back = dir.path().join("back.arrow");
    ok(&["decode", s(&encoded), s(&back)]);
    let read = read_ipc(&back);
    assert_eq!(read.schema().fields(), batch.schema().fields());
    for c in 0..3 {
        assert_eq!(
            read.column(c).as_ref(),
            batch.column(c).as_ref(),
            "column {c}"
        );
    }
    // An all-true column costs next to nothing; the checksums and decode hold.
    assert!(ok(&["inspect", s(&encoded)]).contains("column \"all\": Boolean"));
    ok(&["verify", s(&encoded)]);

    // numpy bool in and out (nulls are written as false, and said).
    let bools: Vec<u8> = (0..1000).map(|i| u8::from(i % 3 == 0)).collect();
    let npy = dir.path().join("b.npy");
    fs::write(&npy, npy_bytes("|b1", "(1000,)", false, &bools)).unwrap();
    let from_npy = dir.path().join("n.mb");
    ok(&["encode", s(&npy), s(&from_npy)]);
    let out = dir.path().join("n.npy");
    ok(&["decode", s(&from_npy), s(&out)]);
    assert_eq!(fs::read(&out).unwrap(), fs::read(&npy).unwrap());
    let out = dir.path().join("flag.npy");
    let said = ok(&["decode", s(&encoded), "--column", "flag", s(&out)]);
    assert!(said.contains("null(s) written as zero"), "{said}");

    if cfg!(feature = "sql") {
        let expected = (0..n)
            .filter(|i| i % 97 != 0 && (i % 3 == 0 || i % 7 == 1))
            .count();
        let csv = ok(&[
            "sql",
            "--format",
            "csv",
            &format!("SELECT count(*) FROM '{}' WHERE flag", s(&encoded)),
        ]);
        assert_eq!(
            csv.lines().nth(1),
            Some(expected.to_string().as_str()),
            "{csv}"
        );
    }
}

/// `miniblock sql "COPY (...) TO 'x.mb'"` writes a column file the other commands read,
/// and never replaces one.
#[cfg(feature = "sql")]
#[test]
fn sql_copy_to_writes_a_column_file() {
    let dir = temp();
    let raw = write_raw_f32(dir.path(), "v.f32", &common::mixed_f32(10_000, 4));
    let encoded = dir.path().join("v.mb");
    ok(&["encode", s(&raw), s(&encoded)]);
    let copied = dir.path().join("big.mb");
    let copy = format!(
        "COPY (SELECT v, v > 0 AS positive FROM '{}' WHERE v > -1) TO '{}'",
        s(&encoded),
        s(&copied)
    );
    ok(&["sql", &copy]);
    ok(&["verify", s(&copied)]);
    // The answers only (the header names the file).
    let answer = |sql: String| {
        ok(&["sql", "--format", "csv", &sql])
            .lines()
            .nth(1)
            .map(str::to_owned)
    };
    assert_eq!(
        answer(format!(
            "SELECT count(*), sum(CAST(positive AS INT)) FROM '{}'",
            s(&copied)
        )),
        answer(format!(
            "SELECT count(*), sum(CAST(v > 0 AS INT)) FROM '{}' WHERE v > -1",
            s(&encoded)
        ))
    );
    let before = fs::read(&copied).unwrap();
    let err = fails(&["sql", &copy]);
    assert!(err.contains("already exists"), "{err}");
    assert_eq!(fs::read(&copied).unwrap(), before);
}

/// A legitimate bomb under a memory limit: a column file of one 5-byte fill chunk that
/// stands for 65,536 values of 16 KiB (1 GiB) is verified and decoded with less address
/// space than that: the command fails with an out-of-memory error, not an abort.
#[cfg(target_os = "linux")]
#[test]
fn a_bomb_under_a_memory_limit_is_an_error_not_an_abort() {
    // One run of all 65,536 values, nothing else.
    let bytes = common::wide_fill_file(&[0x01, 0x00, 0x80, 0x80, 0x04]);
    let dir = temp();
    let bomb = dir.path().join("bomb.mb");
    fs::write(&bomb, &bytes).unwrap();
    // Whole, it needs its 1 GiB: refused cleanly under a 700 MB limit.
    for args in [
        vec!["verify", s(&bomb)],
        vec![
            "decode",
            s(&bomb),
            "--rows",
            "0..65536",
            "-o",
            s(&dir.path().join("out.arrow")),
        ],
    ] {
        let out = Command::new("sh")
            .args(["-c", "ulimit -v 700000 && exec \"$@\"", "sh"])
            .arg(env!("CARGO_BIN_EXE_miniblock"))
            .args(&args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains("out of memory"), "{args:?}: {stderr}");
        assert!(
            !stderr.contains("memory allocation of"),
            "{args:?}: {stderr}"
        );
    }
    assert!(!dir.path().join("out.arrow").exists());
    // Ten of its rows cost ten rows.
    let ten = dir.path().join("ten.arrow");
    let out = Command::new("sh")
        .args(["-c", "ulimit -v 700000 && exec \"$@\"", "sh"])
        .arg(env!("CARGO_BIN_EXE_miniblock"))
        .args(["decode", s(&bomb), "--rows", "100..110", "-o", s(&ten)])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(read_ipc(&ten).num_rows(), 10);
}
