//! One HDF5 chunk <-> one frame, in safe code: what the filter callback does between
//! HDF5's buffers. Also the fuzz target's entry point.

use miniblock::frame::{self, FrameDecoder};

use crate::params::Params;

/// Encodes a chunk (`input`: the chunk's values, in the dataset's type and byte order)
/// with the stored parameters `cd`.
pub fn encode_chunk(cd: &[u32], input: &[u8]) -> Result<Vec<u8>, String> {
    let params = Params::parse(cd)?;
    let value_type = params.frame_type()?;
    let options = params.options()?;
    let width = value_type.value_width().map_err(|e| e.to_string())?;
    if !input.len().is_multiple_of(width) {
        return Err(format!(
            "miniblock filter: a chunk of {} bytes is not a whole number of {width}-byte values",
            input.len()
        ));
    }
    frame::encode(
        input,
        &value_type,
        &[(input.len() / width) as u64],
        None,
        &options,
    )
    .map_err(|e| format!("miniblock filter: {e}"))
}

/// Decodes a frame (`input`, read from a file: hostile) into the chunk's bytes. The
/// frame's type must be the one the parameters record, when they record one.
pub fn decode_chunk(cd: &[u32], input: &[u8]) -> Result<Vec<u8>, String> {
    let params = Params::parse(cd)?;
    let frame = FrameDecoder::new(input).map_err(|e| format!("miniblock filter: {e}"))?;
    if params.value_type != 0 {
        let expected = params.frame_type()?;
        if frame.value_type().data_type() != expected.data_type()
            || frame.value_type().is_big_endian() != expected.is_big_endian()
        {
            return Err(format!(
                "miniblock filter: a chunk holds {} values, the dataset {}",
                frame.value_type().numpy_dtype().unwrap_or_default(),
                expected.numpy_dtype().unwrap_or_default()
            ));
        }
    }
    let values = frame
        .decode_values(0..frame.num_values())
        .map_err(|e| format!("miniblock filter: {e}"))?;
    Ok(values.as_slice().to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::TAG;

    fn f64_params() -> [u32; 5] {
        [TAG, 0, 0, 3, 0]
    }

    #[test]
    fn chunks_round_trip_by_bits() {
        let values: Vec<u8> = (0..5000u64)
            .flat_map(|i| f64::from_bits(i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).to_le_bytes())
            .collect();
        for encoding in 0..20 {
            let cd = [TAG, encoding, 0, 3, 0];
            let blob = encode_chunk(&cd, &values).unwrap();
            assert_eq!(
                decode_chunk(&cd, &blob).unwrap(),
                values,
                "encoding {encoding}"
            );
        }
        let big = [TAG, 0, 1024, 3, 1];
        let blob = encode_chunk(&big, &values).unwrap();
        assert_eq!(decode_chunk(&big, &blob).unwrap(), values);
        // The frame's type must be the dataset's.
        assert!(decode_chunk(&f64_params(), &blob).is_err());
    }

    #[test]
    fn damaged_chunks_are_errors() {
        let values: Vec<u8> = (0..3000u32)
            .flat_map(|i| (i as f32).sqrt().to_le_bytes())
            .collect();
        let cd = [TAG, 0, 0, 2, 0];
        let blob = encode_chunk(&cd, &values).unwrap();
        for n in 0..blob.len() {
            assert!(decode_chunk(&cd, &blob[..n]).is_err());
        }
        for i in 0..blob.len() {
            let mut damaged = blob.clone();
            damaged[i] ^= 0x10;
            assert!(decode_chunk(&cd, &damaged).is_err(), "byte {i}");
        }
        assert!(encode_chunk(&cd, &values[..7]).is_err());
        assert!(
            encode_chunk(&[0], &values).is_err(),
            "no type before set_local"
        );
    }
}
