//! Structure-aware Lance schemas: a small valid Lance file (three f64 columns) whose
//! schema (global buffer 0) is replaced by arbitrary fields, a few of them repeated up to
//! 200,000 times: any kind, id and parent id (cycles, self-parents, missing parents,
//! duplicates), logical types from the ones Lance writes and garbage, and any row count.
//! Opening must return Ok or Err in time linear in the fields (the run's timeout catches
//! a quadratic open), never panic, and reading the fields must stay within the bytes.
#![no_main]

use std::io::Cursor;
use std::sync::{Arc, OnceLock};

use arbitrary::Arbitrary;
use arrow_array::{ArrayRef, Float64Array, RecordBatch};
use libfuzzer_sys::fuzz_target;
use miniblock::lance::{LanceReader, LanceWriteOptions, LanceWriter};
use miniblock::proto::lance::{field, Field, FileDescriptor, Schema};
use prost::Message;

#[derive(Debug, Arbitrary)]
struct FieldSpec {
    kind: u8,
    name: u8,
    id: i16,
    parent_id: i16,
    logical_type: u8,
    nullable: bool,
}

#[derive(Debug, Arbitrary)]
struct Claim {
    fields: Vec<FieldSpec>,
    repeat: u16,
    length: u64,
}

const TYPES: [&str; 12] = [
    "double", "float", "int64", "uint8", "halffloat", "date32:day", "timestamp:us:-",
    "decimal:128:38:2", "fixed_size_binary:16", "string", "struct", "not a type",
];

/// A valid Lance file of three f64 columns of 3 rows, made once.
fn base() -> &'static [u8] {
    static FILE: OnceLock<Vec<u8>> = OnceLock::new();
    FILE.get_or_init(|| {
        let column: ArrayRef = Arc::new(Float64Array::from(vec![1.0, -0.0, f64::NAN]));
        let batch = RecordBatch::try_from_iter([
            ("a", column.clone()),
            ("b", column.clone()),
            ("c", column),
        ])
        .unwrap();
        let mut writer =
            LanceWriter::try_new(Vec::new(), &batch.schema(), LanceWriteOptions::default())
                .unwrap();
        writer.write_batch(&batch).unwrap();
        writer.finish().unwrap()
    })
}

/// `file` with global buffer 0 replaced by `descriptor` (placed after the data, before
/// the column metadata, which moves up accordingly).
fn with_descriptor(file: &[u8], descriptor: &[u8]) -> Vec<u8> {
    let at = |i: usize| u64::from_le_bytes(file[i..i + 8].try_into().unwrap()) as usize;
    let footer = file.len() - 40;
    let (first_meta, meta_table, global_table) = (at(footer), at(footer + 8), at(footer + 16));
    let columns = u32::from_le_bytes(file[footer + 28..footer + 32].try_into().unwrap()) as usize;
    let mut out = file[..first_meta].to_vec();
    let descriptor_at = out.len() as u64;
    out.extend_from_slice(descriptor);
    let new_first_meta = out.len() as u64;
    let mut table = Vec::new();
    for c in 0..columns {
        let (pos, len) = (at(meta_table + 16 * c), at(meta_table + 16 * c + 8));
        table.extend_from_slice(&(out.len() as u64).to_le_bytes());
        table.extend_from_slice(&(len as u64).to_le_bytes());
        out.extend_from_slice(&file[pos..pos + len]);
    }
    let new_meta_table = out.len() as u64;
    out.extend_from_slice(&table);
    let new_global_table = out.len() as u64;
    let mut globals = file[global_table..footer].to_vec();
    globals[..8].copy_from_slice(&descriptor_at.to_le_bytes());
    globals[8..16].copy_from_slice(&(descriptor.len() as u64).to_le_bytes());
    out.extend_from_slice(&globals);
    out.extend_from_slice(&new_first_meta.to_le_bytes());
    out.extend_from_slice(&new_meta_table.to_le_bytes());
    out.extend_from_slice(&new_global_table.to_le_bytes());
    out.extend_from_slice(&file[footer + 24..]);
    out
}

fuzz_target!(|claim: Claim| {
    if claim.fields.is_empty() {
        return;
    }
    let total = ((usize::from(claim.repeat) + 1) * claim.fields.len()).min(200_000);
    let fields = (0..total)
        .map(|i| {
            let spec = &claim.fields[i % claim.fields.len()];
            // Repeats get ids and parents of their own, so a long schema can be a
            // long chain or a wide tree rather than one node repeated.
            let shift = (i / claim.fields.len()) as i32 * claim.fields.len() as i32;
            Field {
                r#type: match spec.kind % 4 {
                    0 => field::Type::Parent as i32,
                    1 => field::Type::Repeated as i32,
                    2 => field::Type::Leaf as i32,
                    _ => i32::from(spec.kind),
                },
                name: format!("f{}", spec.name),
                id: i32::from(spec.id).wrapping_add(shift),
                parent_id: if spec.parent_id < 0 {
                    -1
                } else {
                    i32::from(spec.parent_id).wrapping_add(shift)
                },
                logical_type: TYPES[usize::from(spec.logical_type) % TYPES.len()].into(),
                nullable: spec.nullable,
                ..Field::default()
            }
        })
        .collect();
    let descriptor = FileDescriptor {
        schema: Some(Schema {
            fields,
            ..Schema::default()
        }),
        length: claim.length,
    }
    .encode_to_vec();
    let file = with_descriptor(base(), &descriptor);
    let Ok(mut reader) = LanceReader::open(Cursor::new(file)) else {
        return;
    };
    for field in 0..reader.fields().len().min(8) {
        let _ = reader.read_column(field);
    }
});
