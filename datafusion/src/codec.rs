//! [`MiniblockCodec`]: scans that travel, for engines that ship plans to executors
//! (Ballista, datafusion-ray).

use std::sync::Arc;

use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::catalog::TableProvider;
use datafusion::common::{not_impl_err, plan_err, DataFusionError, Result, TableReference};
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{Extension, LogicalPlan};
use datafusion::physical_plan::ExecutionPlan;
use datafusion_proto::logical_plan::LogicalExtensionCodec;
use datafusion_proto::physical_plan::{PhysicalExtensionCodec, PhysicalProtoConverterExtension};
use datafusion_proto::protobuf;
use object_store::path::Path;
use prost::Message;

use crate::exec::{MiniblockScanExec, ScanFile, Unit};
use crate::MiniblockTable;

/// Serializes miniblock tables and scans inside `datafusion-proto` plans.
///
/// - As a `PhysicalExtensionCodec`, [`MiniblockScanExec`]: the store URL, the files'
///   paths, the table's schema, the projection and each partition's row ranges. An
///   executor that decodes it opens the files itself (their footers, once per file)
///   from its own object store registry, and reads just its partitions.
/// - As a `LogicalExtensionCodec`, [`MiniblockTable`] in a logical plan (what a client
///   sends a scheduler): the store URL and the paths; the decoded table opens its files
///   on its first scan and checks them against the schema the plan carries.
///
/// Decoding trusts nothing: a projection past the schema, a file index past the files or
/// a reversed range is an error, and rows past a file's end fail when read.
#[derive(Debug, Default, Clone, Copy)]
pub struct MiniblockCodec;

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
        _ctx: &TaskContext,
        _proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<Arc<dyn ExecutionPlan>> {
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
        _proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<()> {
        let Some(scan) = node.downcast_ref::<MiniblockScanExec>() else {
            return plan_err!(
                "MiniblockCodec encodes miniblock scans, not {}",
                node.name()
            );
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
        wire.encode(buf)
            .map_err(|e| DataFusionError::Internal(format!("encoding a miniblock scan: {e}")))
    }
}

impl LogicalExtensionCodec for MiniblockCodec {
    fn try_decode(
        &self,
        _buf: &[u8],
        _inputs: &[LogicalPlan],
        _ctx: &TaskContext,
    ) -> Result<Extension> {
        not_impl_err!("MiniblockCodec has no logical plan nodes, only tables")
    }

    fn try_encode(&self, _node: &Extension, _buf: &mut Vec<u8>) -> Result<()> {
        not_impl_err!("MiniblockCodec has no logical plan nodes, only tables")
    }

    fn try_decode_table_provider(
        &self,
        buf: &[u8],
        _table_ref: &TableReference,
        schema: SchemaRef,
        _ctx: &TaskContext,
    ) -> Result<Arc<dyn TableProvider>> {
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
            return plan_err!("MiniblockCodec encodes miniblock tables, not {table_ref}");
        };
        TableNode {
            store_url: table.store_url().as_str().to_string(),
            paths: table.paths().map(ToString::to_string).collect(),
        }
        .encode(buf)
        .map_err(|e| DataFusionError::Internal(format!("encoding a miniblock table: {e}")))
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
    use datafusion_proto::physical_plan::DefaultPhysicalProtoConverter;

    use super::*;

    fn scan(partitions: Vec<PartitionNode>, projection: Vec<u32>, paths: usize) -> Vec<u8> {
        let schema = Schema::new(vec![Field::new("x", DataType::Float64, true)]);
        ScanNode {
            store_url: "file://".into(),
            paths: (0..paths).map(|i| format!("data/{i}.mb")).collect(),
            schema: Some((&schema).try_into().unwrap()),
            projection,
            partitions,
        }
        .encode_to_vec()
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
                &MiniblockCodec,
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
            (vec![0xFF; 9], "parse"),
        ] {
            let err = decode(&bytes).unwrap_err().to_string();
            assert!(err.contains(why), "{why}: {err}");
        }
        let mut no_schema =
            ScanNode::decode(scan(vec![unit(0, 0, 1)], vec![0], 1).as_slice()).unwrap();
        no_schema.schema = None;
        assert!(decode(&no_schema.encode_to_vec()).is_err());
    }
}
