//! miniblock as a [zarrs](https://zarrs.dev) array-to-bytes codec.
//!
//! The codec's name in array metadata is `"miniblock"`, with the configuration
//! zarr-python's `miniblock.zarr.Miniblock` writes and reads:
//!
//! ```json
//! {"name": "miniblock", "configuration": {"encoding": "auto", "chunk_values": 4096}}
//! ```
//!
//! `encoding` is any name the `miniblock` command takes (default `"auto"`), and
//! `chunk_values` is a power of two from 256 to 65536 (left out for the default,
//! [`CONTAINER_CHUNK_VALUES`]). Any
//! other key is refused. Each Zarr chunk is one miniblock
//! [frame](miniblock::frame), which holds its own type and shape, so arrays written by
//! zarrs read in zarr-python and the other way round.
//!
//! The codec registers itself with zarrs' plugin registry (`inventory`). A binary must
//! name this crate (`use miniblock_zarrs as _;`, or call [`register`]), or the linker
//! drops the registration and zarrs says "codec miniblock is not supported".
//!
//! Data types: bool, int8-64, uint8-64, float16/32/64.

use std::borrow::Cow;
use std::num::NonZeroU64;
use std::sync::Arc;

use miniblock::encodings::Strategy;
use miniblock::frame::{self, FrameDecoder, FrameOptions, FrameType};
use serde::{Deserialize, Serialize};
use zarrs::array::data_type::{
    BoolDataType, Float16DataType, Float32DataType, Float64DataType, Int16DataType, Int32DataType,
    Int64DataType, Int8DataType, UInt16DataType, UInt32DataType, UInt64DataType, UInt8DataType,
};
use zarrs::array::{DataType, FillValue};
use zarrs_codec::{
    ArrayBytes, ArrayBytesRaw, ArrayCodecTraits, ArrayToBytesCodecTraits, BytesRepresentation,
    Codec, CodecError, CodecMetadataOptions, CodecOptions, CodecPluginV3, CodecTraits,
    CodecTraitsV3, PartialDecoderCapability, PartialEncoderCapability, RecommendedConcurrency,
};
use zarrs_metadata::v3::MetadataV3;
use zarrs_metadata::{Configuration, ConfigurationSerialize};
use zarrs_plugin::{PluginCreateError, ZarrVersion};

/// Values per miniblock chunk when the configuration leaves `chunk_values` out (as
/// zarr-python's codec does): zarrs decodes whole Zarr chunks, so the small miniblocks
/// that make row ranges cheap elsewhere buy nothing here, and 8192-value ones compress
/// better and decode faster.
pub const CONTAINER_CHUNK_VALUES: usize = 8192;

/// The codec's configuration, as stored in array metadata.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MiniblockCodecConfiguration {
    /// `auto`, `auto:0`, or a fixed encoding's name.
    #[serde(default = "default_encoding")]
    pub encoding: String,
    /// Values per miniblock chunk; `None` for the default (4 KiB of values).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk_values: Option<usize>,
}

fn default_encoding() -> String {
    "auto".to_owned()
}

impl Default for MiniblockCodecConfiguration {
    fn default() -> Self {
        Self {
            encoding: default_encoding(),
            chunk_values: None,
        }
    }
}

impl ConfigurationSerialize for MiniblockCodecConfiguration {}

/// The `miniblock` array-to-bytes codec.
#[derive(Debug, Clone)]
pub struct MiniblockCodec {
    configuration: MiniblockCodecConfiguration,
    options: FrameOptions,
}

zarrs_plugin::impl_extension_aliases!(MiniblockCodec, v3: "miniblock");

inventory::submit! {
    CodecPluginV3::new::<MiniblockCodec>()
}

/// Does nothing but makes a binary name this crate, so that the linker keeps the codec's
/// registration.
pub fn register() {}

impl MiniblockCodec {
    /// A codec with `configuration`, checked.
    pub fn new(configuration: MiniblockCodecConfiguration) -> Result<Self, PluginCreateError> {
        let strategy: Strategy = configuration
            .encoding
            .parse()
            .map_err(|e: miniblock::Error| PluginCreateError::Other(e.to_string()))?;
        let options = FrameOptions::default()
            .with_strategy(strategy)
            .with_chunk_values(Some(
                configuration.chunk_values.unwrap_or(CONTAINER_CHUNK_VALUES),
            ))
            .map_err(|e| PluginCreateError::Other(e.to_string()))?;
        Ok(Self {
            configuration,
            options,
        })
    }
}

impl CodecTraitsV3 for MiniblockCodec {
    fn create(metadata: &MetadataV3) -> Result<Codec, PluginCreateError> {
        let configuration: MiniblockCodecConfiguration = metadata
            .to_typed_configuration()
            .map_err(|e| PluginCreateError::Other(format!("miniblock codec configuration: {e}")))?;
        Ok(Codec::ArrayToBytes(Arc::new(MiniblockCodec::new(
            configuration,
        )?)))
    }
}

impl CodecTraits for MiniblockCodec {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn configuration(
        &self,
        _version: ZarrVersion,
        _options: &CodecMetadataOptions,
    ) -> Option<Configuration> {
        Some(self.configuration.clone().into())
    }

    fn partial_decoder_capability(&self) -> PartialDecoderCapability {
        PartialDecoderCapability {
            partial_read: false,
            partial_decode: false,
        }
    }

    fn partial_encoder_capability(&self) -> PartialEncoderCapability {
        PartialEncoderCapability {
            partial_encode: false,
        }
    }
}

impl ArrayCodecTraits for MiniblockCodec {
    fn recommended_concurrency(
        &self,
        _shape: &[NonZeroU64],
        _data_type: &DataType,
    ) -> Result<RecommendedConcurrency, CodecError> {
        // A chunk is one page, encoded and decoded on one thread.
        Ok(RecommendedConcurrency::new_maximum(1))
    }
}

/// The frame type of a zarrs data type (values little-endian, as zarrs holds them).
fn frame_type(data_type: &DataType) -> Result<FrameType, CodecError> {
    let dtype = if data_type.is::<BoolDataType>() {
        "|b1"
    } else if data_type.is::<Int8DataType>() {
        "|i1"
    } else if data_type.is::<Int16DataType>() {
        "<i2"
    } else if data_type.is::<Int32DataType>() {
        "<i4"
    } else if data_type.is::<Int64DataType>() {
        "<i8"
    } else if data_type.is::<UInt8DataType>() {
        "|u1"
    } else if data_type.is::<UInt16DataType>() {
        "<u2"
    } else if data_type.is::<UInt32DataType>() {
        "<u4"
    } else if data_type.is::<UInt64DataType>() {
        "<u8"
    } else if data_type.is::<Float16DataType>() {
        "<f2"
    } else if data_type.is::<Float32DataType>() {
        "<f4"
    } else if data_type.is::<Float64DataType>() {
        "<f8"
    } else {
        return Err(CodecError::Other(format!(
            "the miniblock codec takes bool, integer and float arrays, not {data_type:?}"
        )));
    };
    FrameType::from_numpy(dtype).map_err(|e| CodecError::Other(e.to_string()))
}

fn element_count(shape: &[NonZeroU64]) -> Result<u64, CodecError> {
    shape
        .iter()
        .try_fold(1u64, |n, d| n.checked_mul(d.get()))
        .ok_or_else(|| CodecError::Other("chunk shape overflows".to_owned()))
}

impl ArrayToBytesCodecTraits for MiniblockCodec {
    fn into_dyn(self: Arc<Self>) -> Arc<dyn ArrayToBytesCodecTraits> {
        self as Arc<dyn ArrayToBytesCodecTraits>
    }

    fn encode<'a>(
        &self,
        bytes: ArrayBytes<'a>,
        shape: &[NonZeroU64],
        data_type: &DataType,
        _fill_value: &FillValue,
        _options: &CodecOptions,
    ) -> Result<ArrayBytesRaw<'a>, CodecError> {
        let value_type = frame_type(data_type)?;
        let bytes = bytes.into_fixed()?;
        let shape: Vec<u64> = shape.iter().map(|d| d.get()).collect();
        let blob = frame::encode(&bytes, &value_type, &shape, None, &self.options)
            .map_err(|e| CodecError::Other(format!("miniblock: {e}")))?;
        Ok(Cow::Owned(blob))
    }

    fn decode<'a>(
        &self,
        bytes: ArrayBytesRaw<'a>,
        shape: &[NonZeroU64],
        data_type: &DataType,
        _fill_value: &FillValue,
        _options: &CodecOptions,
    ) -> Result<ArrayBytes<'a>, CodecError> {
        let expected = frame_type(data_type)?;
        let frame =
            FrameDecoder::new(&bytes).map_err(|e| CodecError::Other(format!("miniblock: {e}")))?;
        let got = frame.value_type();
        let same_width = got.value_width().ok() == expected.value_width().ok();
        if !same_width || got.is_big_endian() {
            return Err(CodecError::Other(format!(
                "miniblock: a chunk holds {} values, the array is {data_type:?}",
                got.numpy_dtype().unwrap_or_default()
            )));
        }
        let count = element_count(shape)?;
        if frame.num_values() as u64 != count {
            return Err(CodecError::Other(format!(
                "miniblock: a chunk holds {} values, its shape {count}",
                frame.num_values()
            )));
        }
        // The chunk's size comes from the array's metadata, which zarrs allocates for
        // anyway: decode straight into it, no copy.
        let width = got
            .value_width()
            .map_err(|e| CodecError::Other(e.to_string()))?;
        let mut values = vec![0u8; frame.num_values() * width];
        frame
            .decode_into(0..frame.num_values(), &mut values)
            .map_err(|e| CodecError::Other(format!("miniblock: {e}")))?;
        Ok(ArrayBytes::from(values))
    }

    fn encoded_representation(
        &self,
        _shape: &[NonZeroU64],
        _data_type: &DataType,
        _fill_value: &FillValue,
    ) -> Result<BytesRepresentation, CodecError> {
        Ok(BytesRepresentation::UnboundedSize)
    }
}
