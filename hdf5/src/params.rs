//! The filter's parameters (`cd_values`): what a user gives, and what `set_local` stores.
//!
//! A user gives none, `[encoding]` or `[encoding, chunk_values]` (h5py's
//! `compression_opts`, nccopy's `-F "VAR,ID,P1,P2"`, ncgen's `_Filter`). `set_local`
//! replaces them with the stored form, which starts with a tag, so that reading the stored
//! form back as a user's (as `nccopy` does) gives the same form again instead of one that
//! grows on every copy:
//!
//! ```text
//! cd[0]  0x4D420001  tag: "MB", parameter version 1
//! cd[1]  encoding code (the table below)
//! cd[2]  values per miniblock chunk: 0 for the filter's default (CONTAINER_CHUNK_VALUES), else a
//!        power of two 256..=65536
//! cd[3]  value type code: 1 f16, 2 f32, 3 f64, 4 i8, 5 i16, 6 i32, 7 i64, 8 u8, 9 u16, 10 u32, 11 u64
//! cd[4]  1 when the dataset's values are big-endian, else 0
//! ```
//!
//! Encoding codes (frozen: new encodings get new codes at the end):
//! 0 `auto`, 1 `auto:0`, then 2 + the encoding's index in [`miniblock::Encoding::ALL`]:
//! 2 `plain`, 3 `lz4`, 4 `zstd`, 5 `bss`, 6 `bss+lz4`, 7 `bss+zstd`, 8 `alp`,
//! 9 `alp+lz4`, 10 `alp+zstd`, 11 `alp+ans`, 12 `alp-rd`, 13 `delta`, 14 `delta+lz4`,
//! 15 `delta+zstd`, 16 `delta+ans`, 17 `bitpack`, 18 `dict`, 19 `dict+zstd`,
//! 20 `bss+zstd+dict`.

use miniblock::encodings::Strategy;
use miniblock::frame::{FrameOptions, FrameType};
use miniblock::Encoding;

/// Values per miniblock chunk when the parameters say 0. HDF5 always decodes a whole
/// chunk, so the small miniblocks that make row ranges cheap elsewhere buy nothing here;
/// 8192-value miniblocks compress better and decode faster (`docs/hdf5.md`'s benchmark).
pub const CONTAINER_CHUNK_VALUES: usize = 8192;

/// The first stored parameter.
pub const TAG: u32 = 0x4D42_0001;

/// Parameters in the stored form.
pub const STORED_LEN: usize = 5;

/// Encoding names by code.
pub fn encoding_name(code: u32) -> Option<String> {
    match code {
        0 => Some("auto".to_owned()),
        1 => Some("auto:0".to_owned()),
        c => Encoding::ALL
            .get(c as usize - 2)
            .map(|e| e.name().to_owned()),
    }
}

/// The code of an encoding name (`auto`, `auto:0` or a fixed encoding).
pub fn encoding_code(name: &str) -> Option<u32> {
    let lower = name.to_ascii_lowercase();
    match lower.as_str() {
        "auto" => Some(0),
        "auto:0" => Some(1),
        _ => Encoding::ALL
            .iter()
            .position(|e| e.name() == lower)
            .map(|i| i as u32 + 2),
    }
}

/// numpy-style names of the value type codes (index = code - 1).
const TYPES: [&str; 11] = [
    "f2", "f4", "f8", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8",
];

/// The value type code of a dataset type: its HDF5 class (0 integer, 1 float), size in
/// bytes and signedness.
pub fn type_code(class: i32, size: usize, signed: bool) -> Option<u32> {
    let name = match (class, size, signed) {
        (1, 2, _) => "f2",
        (1, 4, _) => "f4",
        (1, 8, _) => "f8",
        (0, 1, true) => "i1",
        (0, 2, true) => "i2",
        (0, 4, true) => "i4",
        (0, 8, true) => "i8",
        (0, 1, false) => "u1",
        (0, 2, false) => "u2",
        (0, 4, false) => "u4",
        (0, 8, false) => "u8",
        _ => return None,
    };
    TYPES.iter().position(|t| *t == name).map(|i| i as u32 + 1)
}

/// The parameters a filter call works with, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Params {
    /// Encoding code.
    pub encoding: u32,
    /// Values per chunk (0: default).
    pub chunk_values: u32,
    /// Value type code (0: not known yet, before `set_local`).
    pub value_type: u32,
    /// Big-endian values.
    pub big_endian: bool,
}

impl Params {
    /// Reads a user's or the stored form; every value is checked (they come from files).
    pub fn parse(cd: &[u32]) -> Result<Self, String> {
        let params = if cd.first() == Some(&TAG) {
            if cd.len() != STORED_LEN {
                return Err(format!(
                    "miniblock filter parameters: {} values after the tag, expected {}",
                    cd.len() - 1,
                    STORED_LEN - 1
                ));
            }
            Params {
                encoding: cd[1],
                chunk_values: cd[2],
                value_type: cd[3],
                big_endian: match cd[4] {
                    0 => false,
                    1 => true,
                    other => return Err(format!("miniblock filter: byte order flag {other}")),
                },
            }
        } else {
            if cd.len() > 2 {
                return Err(format!(
                    "miniblock filter takes at most 2 parameters (encoding, chunk_values), got {}",
                    cd.len()
                ));
            }
            Params {
                encoding: cd.first().copied().unwrap_or(0),
                chunk_values: cd.get(1).copied().unwrap_or(0),
                value_type: 0,
                big_endian: false,
            }
        };
        if encoding_name(params.encoding).is_none() {
            return Err(format!(
                "miniblock filter: unknown encoding code {} (0 auto, 1 auto:0, 2-{} fixed encodings)",
                params.encoding,
                Encoding::ALL.len() + 1
            ));
        }
        if params.chunk_values != 0
            && !(params.chunk_values.is_power_of_two()
                && (256..=65536).contains(&params.chunk_values))
        {
            return Err(format!(
                "miniblock filter: chunk_values {} is not 0 or a power of two from 256 to 65536",
                params.chunk_values
            ));
        }
        if params.value_type as usize > TYPES.len() {
            return Err(format!(
                "miniblock filter: unknown value type code {}",
                params.value_type
            ));
        }
        Ok(params)
    }

    /// The stored form.
    pub fn stored(&self) -> [u32; STORED_LEN] {
        [
            TAG,
            self.encoding,
            self.chunk_values,
            self.value_type,
            u32::from(self.big_endian),
        ]
    }

    /// The frame type of the values, once `set_local` has recorded it.
    pub fn frame_type(&self) -> Result<FrameType, String> {
        let name = self
            .value_type
            .checked_sub(1)
            .and_then(|i| TYPES.get(i as usize))
            .ok_or("miniblock filter: parameters hold no value type (set_local did not run)")?;
        let order = if name.ends_with('1') {
            '|'
        } else if self.big_endian {
            '>'
        } else {
            '<'
        };
        FrameType::from_numpy(&format!("{order}{name}")).map_err(|e| e.to_string())
    }

    /// The frame options.
    pub fn options(&self) -> Result<FrameOptions, String> {
        let name = encoding_name(self.encoding).ok_or("unknown encoding")?;
        let strategy: Strategy = name.parse().map_err(|e: miniblock::Error| e.to_string())?;
        let chunk_values = if self.chunk_values == 0 {
            CONTAINER_CHUNK_VALUES
        } else {
            self.chunk_values as usize
        };
        FrameOptions::default()
            .with_strategy(strategy)
            .with_chunk_values(Some(chunk_values))
            .map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_form_reads_back_as_itself() {
        for cd in [&[][..], &[0], &[6, 4096], &[1, 0]] {
            let mut p = Params::parse(cd).unwrap();
            p.value_type = 3;
            let stored = p.stored();
            assert_eq!(Params::parse(&stored).unwrap(), p);
            assert_eq!(Params::parse(&stored).unwrap().stored(), stored);
        }
    }

    #[test]
    fn bad_parameters_are_refused() {
        for cd in [
            &[99][..],
            &[0, 1000],
            &[0, 128],
            &[0, 0, 0],
            &[TAG, 0, 0, 3],
            &[TAG, 0, 0, 99, 0],
            &[TAG, 0, 0, 3, 2],
            &[TAG, 0, 131_072, 3, 0],
        ] {
            assert!(Params::parse(cd).is_err(), "{cd:?}");
        }
    }

    #[test]
    fn codes_and_names_agree() {
        for code in 0..(Encoding::ALL.len() as u32 + 2) {
            let name = encoding_name(code).unwrap();
            assert_eq!(encoding_code(&name), Some(code));
        }
        assert_eq!(encoding_code("bss+lz4"), Some(6));
        assert_eq!(encoding_code("alp+ans"), Some(11));
        assert_eq!(encoding_name(20 + Encoding::ALL.len() as u32), None);
    }
}
