//! [`MiniblockCodec`]: scans that travel, for engines that ship plans to executors
//! (Ballista, datafusion-ray).

use std::sync::Arc;

use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::catalog::TableProvider;
use datafusion::common::{plan_err, DataFusionError, Result, TableReference};
use datafusion::datasource::file_format::FileFormatFactory;
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{
    AggregateUDF, Extension, HigherOrderUDF, LogicalPlan, ScalarUDF, WindowUDF,
};
use datafusion::physical_expr_common::physical_expr::proto_decode::PhysicalExprDecodeCtx;
use datafusion::physical_expr_common::physical_expr::proto_encode::PhysicalExprEncodeCtx;
use datafusion::physical_plan::{ExecutionPlan, PhysicalExpr};
use datafusion_proto::logical_plan::{DefaultLogicalExtensionCodec, LogicalExtensionCodec};
use datafusion_proto::physical_plan::{
    DefaultPhysicalExtensionCodec, PhysicalExtensionCodec, PhysicalProtoConverterExtension,
};
use datafusion_proto::protobuf;
use object_store::path::Path;
use prost::Message;

use crate::exec::{MiniblockScanExec, ScanFile, Unit};
use crate::MiniblockTable;

/// Serializes miniblock tables and scans inside `datafusion-proto` plans, and hands
/// every other node to the codecs it wraps (Ballista's own, in a Ballista cluster).
///
/// - As a `PhysicalExtensionCodec`, [`MiniblockScanExec`]: the store URL, the files'
///   paths, the table's schema, the projection and each partition's row ranges. An
///   executor that decodes it opens the files itself (their footers, once per file)
///   from its own object store registry, and reads just its partitions.
/// - As a `LogicalExtensionCodec`, [`MiniblockTable`] in a logical plan (what a client
///   sends a scheduler): the store URL and the paths; the decoded table opens its files
///   on its first scan and checks them against the schema the plan carries.
/// - Any other plan node or table provider goes to the wrapped codec; file formats,
///   extension nodes and functions too. Each buffer this codec writes for a plan node or
///   table starts with one byte saying whose it is (0 ours, 1 the wrapped codec's), so a
///   decoder sends it back to the codec that wrote it.
///
/// Decoding trusts nothing: a projection past the schema, a file index past the files or
/// a reversed range is an error, and rows past a file's end fail when read.
#[derive(Debug, Clone)]
pub struct MiniblockCodec {
    logical: Arc<dyn LogicalExtensionCodec>,
    physical: Arc<dyn PhysicalExtensionCodec>,
}

/// Wraps DataFusion's default codecs, which refuse every node of their own.
impl Default for MiniblockCodec {
    fn default() -> Self {
        Self::wrapping(
            Arc::new(DefaultLogicalExtensionCodec {}),
            Arc::new(DefaultPhysicalExtensionCodec {}),
        )
    }
}

impl MiniblockCodec {
    /// A codec for miniblock tables and scans that hands every other node to `logical`
    /// and `physical`.
    pub fn wrapping(
        logical: Arc<dyn LogicalExtensionCodec>,
        physical: Arc<dyn PhysicalExtensionCodec>,
    ) -> Self {
        Self { logical, physical }
    }
}

/// The first byte of a buffer this codec wrote: a miniblock node follows.
const OURS: u8 = 0;
/// The first byte of a buffer this codec wrote: the wrapped codec's bytes follow.
const WRAPPED: u8 = 1;

/// Whose a buffer is, and the bytes after its first.
fn owner(buf: &[u8]) -> Result<(bool, &[u8])> {
    match buf.split_first() {
        Some((&OURS, rest)) => Ok((true, rest)),
        Some((&WRAPPED, rest)) => Ok((false, rest)),
        Some((other, _)) => plan_err!("a plan node marked {other}, not a miniblock codec's"),
        None => plan_err!("an empty plan node where a miniblock codec's was expected"),
    }
}

/// Appends `WRAPPED` and what `encode` writes; on an error, leaves `buf` as it was (a
/// composed codec tries the next codec with the same buffer).
fn wrapped(buf: &mut Vec<u8>, encode: impl FnOnce(&mut Vec<u8>) -> Result<()>) -> Result<()> {
    let len = buf.len();
    buf.push(WRAPPED);
    encode(buf).inspect_err(|_| buf.truncate(len))
}

/// `MiniblockScanExec` on the wire.
#[derive(Clone, PartialEq, Message)]
struct ScanNode {
    #[prost(string, tag = "1")]
    store_url: String,
    #[prost(string, repeated, tag = "2")]
    paths: Vec<String>,
    #[prost(message, optional, tag = "3")]
    schema: Option<protobuf::Schema>,
    #[prost(uint32, repeated, tag = "4")]
    projection: Vec<u32>,
    #[prost(message, repeated, tag = "5")]
    partitions: Vec<PartitionNode>,
}

/// `MiniblockTable` on the wire (the plan carries its schema).
#[derive(Clone, PartialEq, Message)]
struct TableNode {
    #[prost(string, tag = "1")]
    store_url: String,
    #[prost(string, repeated, tag = "2")]
    paths: Vec<String>,
}

#[derive(Clone, PartialEq, Message)]
struct PartitionNode {
    #[prost(message, repeated, tag = "1")]
    units: Vec<UnitNode>,
}

#[derive(Clone, PartialEq, Message)]
struct UnitNode {
    #[prost(uint32, tag = "1")]
    file: u32,
    #[prost(uint64, tag = "2")]
    start: u64,
    #[prost(uint64, tag = "3")]
    end: u64,
}

impl PhysicalExtensionCodec for MiniblockCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        ctx: &TaskContext,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let (ours, buf) = owner(buf)?;
        if !ours {
            return self.physical.try_decode(buf, inputs, ctx, proto_converter);
        }
        if !inputs.is_empty() {
            return plan_err!(
                "a miniblock scan has no inputs, this one came with {}",
                inputs.len()
            );
        }
        let node = ScanNode::decode(buf).map_err(|e| {
            DataFusionError::Plan(format!("a miniblock scan that does not parse: {e}"))
        })?;
        let Some(schema) = node.schema.as_ref() else {
            return plan_err!("a miniblock scan without a schema");
        };
        let schema = Arc::new(Schema::try_from(schema)?);
        let files: Arc<[ScanFile]> = paths(&node.paths)?
            .into_iter()
            .map(ScanFile::unopened)
            .collect();
        let partitions = node
            .partitions
            .iter()
            .map(|p| {
                p.units
                    .iter()
                    .map(|u| Unit {
                        file: u.file as usize,
                        rows: u.start..u.end,
                    })
                    .collect()
            })
            .collect();
        let exec = MiniblockScanExec::try_new(
            ObjectStoreUrl::parse(&node.store_url)?,
            files,
            schema,
            node.projection.iter().map(|&c| c as usize).collect(),
            partitions,
        )?;
        Ok(Arc::new(exec))
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<()> {
        let Some(scan) = node.downcast_ref::<MiniblockScanExec>() else {
            return wrapped(buf, |buf| {
                self.physical
                    .try_encode(Arc::clone(&node), buf, proto_converter)
            });
        };
        let wire = ScanNode {
            store_url: scan.store_url().as_str().to_string(),
            paths: scan.files().iter().map(|f| f.path.to_string()).collect(),
            schema: Some(scan.file_schema().as_ref().try_into()?),
            projection: scan.projection().iter().map(|&c| c as u32).collect(),
            partitions: scan
                .partitions()
                .iter()
                .map(|units| PartitionNode {
                    units: units
                        .iter()
                        .map(|u| UnitNode {
                            file: u.file as u32,
                            start: u.rows.start,
                            end: u.rows.end,
                        })
                        .collect(),
                })
                .collect(),
        };
        buf.push(OURS);
        wire.encode(buf)
            .map_err(|e| DataFusionError::Internal(format!("encoding a miniblock scan: {e}")))
    }

    fn try_decode_udf(&self, name: &str, buf: &[u8]) -> Result<Arc<ScalarUDF>> {
        self.physical.try_decode_udf(name, buf)
    }

    fn try_encode_udf(&self, node: &ScalarUDF, buf: &mut Vec<u8>) -> Result<()> {
        self.physical.try_encode_udf(node, buf)
    }

    fn try_decode_higher_order_function(
        &self,
        name: &str,
        buf: &[u8],
    ) -> Result<Arc<HigherOrderUDF>> {
        self.physical.try_decode_higher_order_function(name, buf)
    }

    fn try_encode_higher_order_function(
        &self,
        node: &HigherOrderUDF,
        buf: &mut Vec<u8>,
    ) -> Result<()> {
        self.physical.try_encode_higher_order_function(node, buf)
    }

    fn try_decode_expr(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn PhysicalExpr>],
        ctx: &PhysicalExprDecodeCtx<'_>,
    ) -> Result<Arc<dyn PhysicalExpr>> {
        self.physical.try_decode_expr(buf, inputs, ctx)
    }

    fn try_encode_expr(
        &self,
        node: &Arc<dyn PhysicalExpr>,
        buf: &mut Vec<u8>,
        ctx: &PhysicalExprEncodeCtx<'_>,
    ) -> Result<()> {
        self.physical.try_encode_expr(node, buf, ctx)
    }

    fn try_decode_udaf(&self, name: &str, buf: &[u8]) -> Result<Arc<AggregateUDF>> {
        self.physical.try_decode_udaf(name, buf)
    }

    fn try_encode_udaf(&self, node: &AggregateUDF, buf: &mut Vec<u8>) -> Result<()> {
        self.physical.try_encode_udaf(node, buf)
    }

    fn try_decode_udwf(&self, name: &str, buf: &[u8]) -> Result<Arc<WindowUDF>> {
        self.physical.try_decode_udwf(name, buf)
    }

    fn try_encode_udwf(&self, node: &WindowUDF, buf: &mut Vec<u8>) -> Result<()> {
        self.physical.try_encode_udwf(node, buf)
    }
}

impl LogicalExtensionCodec for MiniblockCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[LogicalPlan],
        ctx: &TaskContext,
    ) -> Result<Extension> {
        self.logical.try_decode(buf, inputs, ctx)
    }

    fn try_encode(&self, node: &Extension, buf: &mut Vec<u8>) -> Result<()> {
        self.logical.try_encode(node, buf)
    }

    fn try_decode_table_provider(
        &self,
        buf: &[u8],
        table_ref: &TableReference,
        schema: SchemaRef,
        ctx: &TaskContext,
    ) -> Result<Arc<dyn TableProvider>> {
        let (ours, buf) = owner(buf)?;
        if !ours {
            return self
                .logical
                .try_decode_table_provider(buf, table_ref, schema, ctx);
        }
        let node = TableNode::decode(buf).map_err(|e| {
            DataFusionError::Plan(format!("a miniblock table that does not parse: {e}"))
        })?;
        if node.paths.is_empty() {
            return plan_err!("a miniblock table of no files");
        }
        Ok(Arc::new(MiniblockTable::unopened(
            ObjectStoreUrl::parse(&node.store_url)?,
            paths(&node.paths)?,
            schema,
        )))
    }

    fn try_encode_table_provider(
        &self,
        table_ref: &TableReference,
        node: Arc<dyn TableProvider>,
        buf: &mut Vec<u8>,
    ) -> Result<()> {
        let Some(table) = node.downcast_ref::<MiniblockTable>() else {
            return wrapped(buf, |buf| {
                self.logical
                    .try_encode_table_provider(table_ref, Arc::clone(&node), buf)
            });
        };
        buf.push(OURS);
        TableNode {
            store_url: table.store_url().as_str().to_string(),
            paths: table.paths().map(ToString::to_string).collect(),
        }
        .encode(buf)
        .map_err(|e| DataFusionError::Internal(format!("encoding a miniblock table: {e}")))
    }

    fn try_decode_file_format(
        &self,
        buf: &[u8],
        ctx: &TaskContext,
    ) -> Result<Arc<dyn FileFormatFactory>> {
        self.logical.try_decode_file_format(buf, ctx)
    }

    fn try_encode_file_format(
        &self,
        buf: &mut Vec<u8>,
        node: Arc<dyn FileFormatFactory>,
    ) -> Result<()> {
        self.logical.try_encode_file_format(buf, node)
    }

    fn try_decode_udf(&self, name: &str, buf: &[u8]) -> Result<Arc<ScalarUDF>> {
        self.logical.try_decode_udf(name, buf)
    }

    fn try_encode_udf(&self, node: &ScalarUDF, buf: &mut Vec<u8>) -> Result<()> {
        self.logical.try_encode_udf(node, buf)
    }

    fn try_decode_higher_order_function(
        &self,
        name: &str,
        buf: &[u8],
    ) -> Result<Arc<HigherOrderUDF>> {
        self.logical.try_decode_higher_order_function(name, buf)
    }

    fn try_encode_higher_order_function(
        &self,
        node: &HigherOrderUDF,
        buf: &mut Vec<u8>,
    ) -> Result<()> {
        self.logical.try_encode_higher_order_function(node, buf)
    }

    fn try_decode_udaf(&self, name: &str, buf: &[u8]) -> Result<Arc<AggregateUDF>> {
        self.logical.try_decode_udaf(name, buf)
    }

    fn try_encode_udaf(&self, node: &AggregateUDF, buf: &mut Vec<u8>) -> Result<()> {
        self.logical.try_encode_udaf(node, buf)
    }

    fn try_decode_udwf(&self, name: &str, buf: &[u8]) -> Result<Arc<WindowUDF>> {
        self.logical.try_decode_udwf(name, buf)
    }

    fn try_encode_udwf(&self, node: &WindowUDF, buf: &mut Vec<u8>) -> Result<()> {
        self.logical.try_encode_udwf(node, buf)
    }
}

fn paths(paths: &[String]) -> Result<Vec<Path>> {
    paths
        .iter()
        .map(Path::parse)
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| DataFusionError::Plan(format!("a miniblock file path: {e}")))
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::datatypes::{DataType, Field};
    use datafusion::catalog::MemTable;
    use datafusion::datasource::empty::EmptyTable;
    use datafusion::physical_plan::empty::EmptyExec;
    use datafusion::physical_plan::placeholder_row::PlaceholderRowExec;
    use datafusion_proto::physical_plan::DefaultPhysicalProtoConverter;

    use super::*;

    fn scan(partitions: Vec<PartitionNode>, projection: Vec<u32>, paths: usize) -> Vec<u8> {
        let schema = Schema::new(vec![Field::new("x", DataType::Float64, true)]);
        let mut buf = vec![OURS];
        ScanNode {
            store_url: "file://".into(),
            paths: (0..paths).map(|i| format!("data/{i}.mb")).collect(),
            schema: Some((&schema).try_into().unwrap()),
            projection,
            partitions,
        }
        .encode(&mut buf)
        .unwrap();
        buf
    }

    fn unit(file: u32, start: u64, end: u64) -> PartitionNode {
        PartitionNode {
            units: vec![UnitNode { file, start, end }],
        }
    }

    #[test]
    fn hostile_scans_are_errors() {
        let ctx = TaskContext::default();
        let decode = |buf: &[u8]| {
            PhysicalExtensionCodec::try_decode(
                &MiniblockCodec::default(),
                buf,
                &[],
                &ctx,
                &DefaultPhysicalProtoConverter {},
            )
        };
        assert!(decode(&scan(vec![unit(0, 0, 10)], vec![0], 1)).is_ok());
        for (bytes, why) in [
            (scan(vec![unit(1, 0, 10)], vec![0], 1), "file"),
            (scan(vec![unit(0, 10, 0)], vec![0], 1), "rows"),
            (scan(vec![unit(0, 0, 10)], vec![1], 1), "column"),
            (scan(vec![], vec![0], 1), "no partitions"),
            ([&[OURS][..], &[0xFF; 8]].concat(), "parse"),
        ] {
            let err = decode(&bytes).unwrap_err().to_string();
            assert!(err.contains(why), "{why}: {err}");
        }
        let mut no_schema = ScanNode::decode(&scan(vec![unit(0, 0, 1)], vec![0], 1)[1..]).unwrap();
        no_schema.schema = None;
        let mut bytes = vec![OURS];
        no_schema.encode(&mut bytes).unwrap();
        assert!(decode(&bytes).is_err());
        // Neither ours nor the wrapped codec's.
        for bytes in [&[][..], &[2], &[0xFF, 0]] {
            assert!(decode(bytes)
                .unwrap_err()
                .to_string()
                .contains("miniblock codec"));
        }
    }

    /// Stands for the codecs a cluster brings (Ballista's): knows `EmptyExec` and
    /// `EmptyTable`, by name.
    #[derive(Debug)]
    struct Other;

    impl PhysicalExtensionCodec for Other {
        fn try_decode(
            &self,
            buf: &[u8],
            _inputs: &[Arc<dyn ExecutionPlan>],
            _ctx: &TaskContext,
            _proto_converter: &dyn PhysicalProtoConverterExtension,
        ) -> Result<Arc<dyn ExecutionPlan>> {
            if buf != b"EmptyExec" {
                return plan_err!("not an EmptyExec");
            }
            Ok(Arc::new(EmptyExec::new(Arc::new(Schema::empty()))))
        }

        fn try_encode(
            &self,
            node: Arc<dyn ExecutionPlan>,
            buf: &mut Vec<u8>,
            _proto_converter: &dyn PhysicalProtoConverterExtension,
        ) -> Result<()> {
            if node.name() != "EmptyExec" {
                return plan_err!("{} is not an EmptyExec", node.name());
            }
            buf.extend_from_slice(b"EmptyExec");
            Ok(())
        }
    }

    impl LogicalExtensionCodec for Other {
        fn try_decode(
            &self,
            _buf: &[u8],
            _inputs: &[LogicalPlan],
            _ctx: &TaskContext,
        ) -> Result<Extension> {
            plan_err!("no extension nodes")
        }

        fn try_encode(&self, _node: &Extension, _buf: &mut Vec<u8>) -> Result<()> {
            plan_err!("no extension nodes")
        }

        fn try_decode_table_provider(
            &self,
            buf: &[u8],
            _table_ref: &TableReference,
            schema: SchemaRef,
            _ctx: &TaskContext,
        ) -> Result<Arc<dyn TableProvider>> {
            if buf != b"EmptyTable" {
                return plan_err!("not an EmptyTable");
            }
            Ok(Arc::new(EmptyTable::new(schema)))
        }

        fn try_encode_table_provider(
            &self,
            _table_ref: &TableReference,
            node: Arc<dyn TableProvider>,
            buf: &mut Vec<u8>,
        ) -> Result<()> {
            if node.downcast_ref::<EmptyTable>().is_none() {
                return plan_err!("not an EmptyTable");
            }
            buf.extend_from_slice(b"EmptyTable");
            Ok(())
        }
    }

    #[test]
    fn other_nodes_go_to_the_wrapped_codecs_and_come_back_from_them() {
        let codec = MiniblockCodec::wrapping(Arc::new(Other), Arc::new(Other));
        let ctx = TaskContext::default();
        let converter = DefaultPhysicalProtoConverter {};
        let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Int32, true)]));
        // A buffer already holding bytes, as a composed codec may hand over.
        let mut buf = vec![7];
        let empty: Arc<dyn ExecutionPlan> = Arc::new(EmptyExec::new(Arc::clone(&schema)));
        PhysicalExtensionCodec::try_encode(&codec, empty, &mut buf, &converter).unwrap();
        assert_eq!(buf, b"\x07\x01EmptyExec");
        let back =
            PhysicalExtensionCodec::try_decode(&codec, &buf[1..], &[], &ctx, &converter).unwrap();
        assert_eq!(back.name(), "EmptyExec");
        // A node neither knows: an error, and the buffer as it was.
        let placeholder: Arc<dyn ExecutionPlan> =
            Arc::new(PlaceholderRowExec::new(Arc::clone(&schema)));
        let mut buf = vec![7];
        assert!(
            PhysicalExtensionCodec::try_encode(&codec, placeholder, &mut buf, &converter).is_err()
        );
        assert_eq!(buf, [7]);
        // Tables alike.
        let table = TableReference::bare("t");
        let mut buf = Vec::new();
        let empty: Arc<dyn TableProvider> = Arc::new(EmptyTable::new(Arc::clone(&schema)));
        codec
            .try_encode_table_provider(&table, empty, &mut buf)
            .unwrap();
        assert_eq!(buf, b"\x01EmptyTable");
        let back = codec
            .try_decode_table_provider(&buf, &table, Arc::clone(&schema), &ctx)
            .unwrap();
        assert!(back.downcast_ref::<EmptyTable>().is_some());
        let memory: Arc<dyn TableProvider> =
            Arc::new(MemTable::try_new(Arc::clone(&schema), vec![vec![]]).unwrap());
        let mut buf = Vec::new();
        assert!(codec
            .try_encode_table_provider(&table, memory, &mut buf)
            .is_err());
        assert!(buf.is_empty());
        // The wrapped codec's bytes marked as ours are ours to parse, and fail there.
        let mut swapped = b"\x00EmptyTable".to_vec();
        assert!(codec
            .try_decode_table_provider(&swapped, &table, Arc::clone(&schema), &ctx)
            .is_err());
        swapped[0] = WRAPPED;
        assert!(codec
            .try_decode_table_provider(&swapped, &table, schema, &ctx)
            .is_ok());
    }
}
