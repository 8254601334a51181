//! The byte shuffle filter of HDF5, NetCDF, Blosc and numcodecs, over a whole buffer.
//!
//! `shuffle` regroups a buffer of fixed-size elements so that all first bytes come first,
//! then all second bytes, and so on; `unshuffle` undoes it. It is the same transform as a
//! BSS chunk (and runs on the same kernel), applied to the buffer as one block.
//!
//! ```
//! use miniblock::shuffle::{shuffle, unshuffle, ShuffleError};
//!
//! let data = [1u8, 2, 3, 4, 5, 6];
//! let shuffled = shuffle(&data, 2)?;
//! assert_eq!(shuffled, [1, 3, 5, 2, 4, 6]);
//! assert_eq!(unshuffle(&shuffled, 2)?, data);
//! assert_eq!(shuffle(&data, 4), Err(ShuffleError::Misaligned { len: 6, element_size: 4 }));
//! # Ok::<(), ShuffleError>(())
//! ```

use snafu::Snafu;

use crate::kernels;

/// Why a shuffle or unshuffle was refused.
#[derive(Debug, Clone, PartialEq, Eq, Snafu)]
#[non_exhaustive]
pub enum ShuffleError {
    /// The buffer length is not a whole number of elements.
    #[snafu(display(
        "buffer of {len} bytes is not a whole number of {element_size}-byte elements"
    ))]
    Misaligned {
        /// Buffer length in bytes.
        len: usize,
        /// Element size in bytes.
        element_size: usize,
    },
    /// An element size of zero was given.
    #[snafu(display("element size must be at least 1"))]
    ZeroElementSize,
    /// Input and output buffers of `_into` calls differ in length.
    #[snafu(display("output buffer holds {output} bytes, input {input}"))]
    LengthMismatch {
        /// Input length in bytes.
        input: usize,
        /// Output length in bytes.
        output: usize,
    },
}

fn check(input: usize, output: usize, element_size: usize) -> Result<(), ShuffleError> {
    if element_size == 0 {
        return Err(ShuffleError::ZeroElementSize);
    }
    if !input.is_multiple_of(element_size) {
        return Err(ShuffleError::Misaligned {
            len: input,
            element_size,
        });
    }
    if input != output {
        return Err(ShuffleError::LengthMismatch { input, output });
    }
    Ok(())
}

/// Shuffles `data` (elements of `element_size` bytes) into a new buffer.
pub fn shuffle(data: &[u8], element_size: usize) -> Result<Vec<u8>, ShuffleError> {
    check(data.len(), data.len(), element_size)?;
    let mut out = Vec::new();
    kernels::split_append(data, &mut out, element_size);
    Ok(out)
}

/// Shuffles `data` into `out`, which must have the same length.
pub fn shuffle_into(data: &[u8], out: &mut [u8], element_size: usize) -> Result<(), ShuffleError> {
    check(data.len(), out.len(), element_size)?;
    kernels::split(data, out, element_size);
    Ok(())
}

/// Undoes [`shuffle`].
pub fn unshuffle(data: &[u8], element_size: usize) -> Result<Vec<u8>, ShuffleError> {
    check(data.len(), data.len(), element_size)?;
    let mut out = Vec::new();
    kernels::unsplit_vec_append(data, &mut out, element_size);
    Ok(out)
}

/// Undoes [`shuffle_into`].
pub fn unshuffle_into(
    data: &[u8],
    out: &mut [u8],
    element_size: usize,
) -> Result<(), ShuffleError> {
    check(data.len(), out.len(), element_size)?;
    kernels::unsplit(data, out, element_size);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors() {
        assert_eq!(shuffle(&[1, 2, 3], 0), Err(ShuffleError::ZeroElementSize));
        assert_eq!(unshuffle(&[1, 2, 3], 0), Err(ShuffleError::ZeroElementSize));
        assert_eq!(
            unshuffle(&[1, 2, 3], 2),
            Err(ShuffleError::Misaligned {
                len: 3,
                element_size: 2
            })
        );
        let mut out = [0u8; 2];
        assert_eq!(
            shuffle_into(&[1, 2, 3, 4], &mut out, 2),
            Err(ShuffleError::LengthMismatch {
                input: 4,
                output: 2
            })
        );
    }

    #[test]
    fn empty_and_size_one() {
        assert_eq!(shuffle(&[], 7).unwrap(), Vec::<u8>::new());
        assert_eq!(shuffle(&[9, 8, 7], 1).unwrap(), vec![9, 8, 7]);
        assert_eq!(shuffle(&[9, 8, 7], 3).unwrap(), vec![9, 8, 7]);
    }
}
