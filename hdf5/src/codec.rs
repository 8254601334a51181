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
    decode_chunk_into(cd, input, |len| Ok(vec![0; len]))
}

/// [`decode_chunk`] into a buffer that `make(len)` returns (the filter's comes from the C
/// allocator, which HDF5 frees). A chunk that expands at most four times its stored size
/// (most do) is decoded straight into it; one that claims more is decoded first into a
/// buffer that grows only as its chunks really decode, so that a lying frame fails before
/// `make` is asked for what it claims.
pub fn decode_chunk_into<B: AsMut<[u8]>>(
    cd: &[u32],
    input: &[u8],
    make: impl FnOnce(usize) -> Result<B, String>,
) -> Result<B, String> {
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
    let n = frame.num_values();
    let width = frame
        .value_type()
        .value_width()
        .map_err(|e| e.to_string())?;
    let len = n
        .checked_mul(width)
        .ok_or("miniblock filter: chunk size overflows")?;
    let fail = |e: miniblock::Error| format!("miniblock filter: {e}");
    if len <= input.len().saturating_mul(4).saturating_add(1 << 16) {
        let mut out = make(len)?;
        frame.decode_into(0..n, out.as_mut()).map_err(fail)?;
        Ok(out)
    } else {
        let values = frame.decode_values(0..n).map_err(fail)?;
        let mut out = make(values.len())?;
        out.as_mut().copy_from_slice(values.as_slice());
        Ok(out)
    }
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
