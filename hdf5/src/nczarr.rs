//! NCZarr support: netCDF-C stores a filter of a Zarr-backed variable as a JSON codec
//! (`{"id": "miniblock", "encoding": "auto", "chunk_values": null}`, the configuration of
//! numcodecs' `miniblock` codec, so zarr-python reads such stores too) and asks the plugin
//! (`NCZ_get_codec_info`) to convert between that and the HDF5 parameters. In NCZarr no
//! HDF5 `set_local` runs: `NCZ_modify_parameters` turns the visible parameters into the
//! working ones, reading the variable's type through the calling libnetcdf's
//! `nc_inq_var`.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::hdf5api::caller_symbol;
use crate::params::{encoding_code, encoding_name, type_code, Params};
use crate::FILTER_ID;

const NC_NOERR: c_int = 0;
const NC_ENOMEM: c_int = -61;
const NC_EFILTER: c_int = -132;

type ToHdf5 = unsafe extern "C" fn(*const c_char, *mut usize, *mut *mut c_uint) -> c_int;
type ToCodec = unsafe extern "C" fn(usize, *const c_uint, *mut *mut c_char) -> c_int;
type Modify = unsafe extern "C" fn(
    c_int,
    c_int,
    *mut usize,
    *mut *mut c_uint,
    *mut usize,
    *mut *mut c_uint,
) -> c_int;
type InqVar = unsafe extern "C" fn(
    c_int,
    c_int,
    *mut c_char,
    *mut c_int,
    *mut c_int,
    *mut c_int,
    *mut c_int,
) -> c_int;

/// netCDF-C's `NCZ_codec_t`, version 1, sort `NCZ_CODEC_HDF5`.
#[repr(C)]
pub struct NczCodec {
    version: c_int,
    sort: c_int,
    codecid: *const c_char,
    hdf5id: c_uint,
    initialize: Option<unsafe extern "C" fn()>,
    finalize: Option<unsafe extern "C" fn()>,
    codec_to_hdf5: Option<ToHdf5>,
    hdf5_to_codec: Option<ToCodec>,
    modify_parameters: Option<Modify>,
}

// SAFETY: immutable, pointing at static data.
unsafe impl Sync for NczCodec {}

static CODEC: NczCodec = NczCodec {
    version: 1,
    sort: 1,
    codecid: c"miniblock".as_ptr(),
    hdf5id: FILTER_ID as c_uint,
    initialize: None,
    finalize: None,
    codec_to_hdf5: Some(codec_to_hdf5),
    hdf5_to_codec: Some(hdf5_to_codec),
    modify_parameters: Some(modify_parameters),
};

/// The codec's description, for netCDF-C's NCZarr.
#[no_mangle]
pub extern "C" fn NCZ_get_codec_info() -> *const c_void {
    std::ptr::addr_of!(CODEC).cast()
}

/// The user's parameters of a JSON codec: `[encoding, chunk_values]`.
pub fn json_to_params(json: &str) -> Result<[u32; 2], String> {
    let value: serde_json::Value =
        serde_json::from_str(json).map_err(|e| format!("miniblock codec JSON: {e}"))?;
    let object = value
        .as_object()
        .ok_or("miniblock codec JSON is not an object")?;
    for key in object.keys() {
        if !matches!(key.as_str(), "id" | "encoding" | "chunk_values") {
            return Err(format!("miniblock codec JSON: unknown key {key:?}"));
        }
    }
    if object.get("id").and_then(|v| v.as_str()) != Some("miniblock") {
        return Err("miniblock codec JSON: id is not \"miniblock\"".to_owned());
    }
    let encoding = match object.get("encoding") {
        None => 0,
        Some(v) => {
            let name = v
                .as_str()
                .ok_or("miniblock codec JSON: encoding is not a string")?;
            encoding_code(name)
                .ok_or_else(|| format!("miniblock codec JSON: unknown encoding {name:?}"))?
        }
    };
    let chunk_values = match object.get("chunk_values") {
        None | Some(serde_json::Value::Null) => 0,
        Some(v) => v
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or("miniblock codec JSON: chunk_values is not a count")?,
    };
    let params = [encoding, chunk_values];
    Params::parse(&params)?;
    Ok(params)
}

/// The JSON codec of user or stored parameters.
pub fn params_to_json(cd: &[u32]) -> Result<String, String> {
    let params = Params::parse(cd)?;
    let encoding = encoding_name(params.encoding).ok_or("unknown encoding")?;
    // The configuration numcodecs' Miniblock codec has, so that zarr-python reads NCZarr
    // stores: `chunk_values` null for the default.
    let chunk_values = (params.chunk_values != 0).then_some(params.chunk_values);
    Ok(serde_json::json!({
        "id": "miniblock",
        "encoding": encoding,
        "chunk_values": chunk_values,
    })
    .to_string())
}

/// Runs `f`, a netCDF-C error code on failure (never a panic across the boundary).
fn guarded(f: impl FnOnce() -> Result<(), c_int>) -> c_int {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => NC_NOERR,
        Ok(Err(code)) => code,
        Err(_) => NC_EFILTER,
    }
}

/// A C-allocated copy of `values` (netCDF-C frees it).
fn c_array(values: &[u32]) -> Result<*mut c_uint, c_int> {
    // SAFETY: malloc of at least one element; filled before it is handed over.
    unsafe {
        let p = libc::malloc(values.len().max(1) * std::mem::size_of::<c_uint>()).cast::<c_uint>();
        if p.is_null() {
            return Err(NC_ENOMEM);
        }
        std::ptr::copy_nonoverlapping(values.as_ptr(), p, values.len());
        Ok(p)
    }
}

unsafe extern "C" fn codec_to_hdf5(
    codec: *const c_char,
    nparamsp: *mut usize,
    paramsp: *mut *mut c_uint,
) -> c_int {
    guarded(|| {
        if codec.is_null() || nparamsp.is_null() || paramsp.is_null() {
            return Err(NC_EFILTER);
        }
        // SAFETY: netCDF-C passes a NUL-terminated JSON string.
        let json = unsafe { CStr::from_ptr(codec) }
            .to_str()
            .map_err(|_| NC_EFILTER)?;
        let params = json_to_params(json).map_err(|m| {
            eprintln!("{m}");
            NC_EFILTER
        })?;
        let array = c_array(&params)?;
        // SAFETY: the out-pointers were checked above.
        unsafe {
            *nparamsp = params.len();
            *paramsp = array;
        }
        Ok(())
    })
}

unsafe extern "C" fn hdf5_to_codec(
    nparams: usize,
    params: *const c_uint,
    codecp: *mut *mut c_char,
) -> c_int {
    guarded(|| {
        if codecp.is_null() || (nparams > 0 && params.is_null()) || nparams > 64 {
            return Err(NC_EFILTER);
        }
        let cd: &[c_uint] = if nparams == 0 {
            &[]
        } else {
            // SAFETY: netCDF-C passes nparams values at params.
            unsafe { std::slice::from_raw_parts(params, nparams) }
        };
        let json = params_to_json(cd).map_err(|_| NC_EFILTER)?;
        // SAFETY: a C string the caller frees with free().
        unsafe {
            let p = libc::malloc(json.len() + 1).cast::<u8>();
            if p.is_null() {
                return Err(NC_ENOMEM);
            }
            std::ptr::copy_nonoverlapping(json.as_ptr(), p, json.len());
            *p.add(json.len()) = 0;
            *codecp = p.cast();
        }
        Ok(())
    })
}

/// netCDF's `nc_type` -> the filter's value type code.
fn nc_type_code(xtype: c_int) -> Option<u32> {
    let (class, size, signed) = match xtype {
        1 => (0, 1, true),   // NC_BYTE
        3 => (0, 2, true),   // NC_SHORT
        4 => (0, 4, true),   // NC_INT
        5 => (1, 4, true),   // NC_FLOAT
        6 => (1, 8, true),   // NC_DOUBLE
        7 => (0, 1, false),  // NC_UBYTE
        8 => (0, 2, false),  // NC_USHORT
        9 => (0, 4, false),  // NC_UINT
        10 => (0, 8, true),  // NC_INT64
        11 => (0, 8, false), // NC_UINT64
        _ => return None,
    };
    type_code(class, size, signed)
}

unsafe extern "C" fn modify_parameters(
    ncid: c_int,
    varid: c_int,
    vnparamsp: *mut usize,
    vparamsp: *mut *mut c_uint,
    wnparamsp: *mut usize,
    wparamsp: *mut *mut c_uint,
) -> c_int {
    guarded(|| {
        if vnparamsp.is_null() || vparamsp.is_null() || wnparamsp.is_null() || wparamsp.is_null() {
            return Err(NC_EFILTER);
        }
        // SAFETY: netCDF-C passes its visible parameters through these pointers.
        let (n, p) = unsafe { (*vnparamsp, *vparamsp) };
        if n > 64 || (n > 0 && p.is_null()) {
            return Err(NC_EFILTER);
        }
        let visible: Vec<u32> = if n == 0 {
            Vec::new()
        } else {
            // SAFETY: n values at p, as checked.
            unsafe { std::slice::from_raw_parts(p, n) }.to_vec()
        };
        let mut params = Params::parse(&visible).map_err(|m| {
            eprintln!("{m}");
            NC_EFILTER
        })?;
        let inq = caller_symbol("nc_inq_var").ok_or(NC_EFILTER)?;
        // SAFETY: nc_inq_var of the calling libnetcdf, whose C signature InqVar spells.
        let inq: InqVar = unsafe { std::mem::transmute::<*mut c_void, InqVar>(inq) };
        let mut xtype: c_int = 0;
        let null: *mut c_int = std::ptr::null_mut();
        // SAFETY: only the type is asked for; the other outputs are null, as allowed.
        let status = unsafe { inq(ncid, varid, null.cast(), &raw mut xtype, null, null, null) };
        if status != NC_NOERR {
            return Err(status);
        }
        params.value_type = nc_type_code(xtype).ok_or_else(|| {
            eprintln!(
                "miniblock filter: netCDF type {xtype} is not supported (integers and floats only)"
            );
            NC_EFILTER
        })?;
        // NCZarr hands the filter chunks in the machine's order: little-endian here.
        params.big_endian = cfg!(target_endian = "big");
        let array = c_array(&params.stored())?;
        // SAFETY: the working parameters are ours to set; netCDF-C frees the old ones.
        unsafe {
            if !(*wparamsp).is_null() {
                libc::free((*wparamsp).cast());
            }
            *wnparamsp = crate::params::STORED_LEN;
            *wparamsp = array;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_and_parameters_convert_both_ways() {
        let json = params_to_json(&[6, 1024]).unwrap();
        assert_eq!(json_to_params(&json).unwrap(), [6, 1024]);
        let stored = [crate::params::TAG, 1, 0, 3, 0];
        assert_eq!(
            json_to_params(&params_to_json(&stored).unwrap()).unwrap(),
            [1, 0]
        );
        assert_eq!(json_to_params(r#"{"id": "miniblock"}"#).unwrap(), [0, 0]);
        for bad in [
            r#"{"id": "zstd"}"#,
            r#"{"id": "miniblock", "encoding": "nope"}"#,
            r#"{"id": "miniblock", "chunk_values": 1000}"#,
            r#"{"id": "miniblock", "level": 3}"#,
            "[1, 2]",
            "not json",
        ] {
            assert!(json_to_params(bad).is_err(), "{bad}");
        }
        assert_eq!(nc_type_code(5), Some(2));
        assert_eq!(nc_type_code(2), None, "NC_CHAR");
    }
}
