//! miniblock as an HDF5 filter plugin: `libh5miniblock.so`, found by HDF5 (and so by
//! h5py, netCDF-C, `h5repack`, `nccopy`) in `HDF5_PLUGIN_PATH`, filter id [`FILTER_ID`].
//!
//! Each HDF5 chunk becomes one miniblock [frame](miniblock::frame): the filter is given
//! the chunk's bytes and nothing else, and a frame carries its own type and count. The
//! dataset's type is read once, by `set_local` at dataset creation, and stored in the
//! filter's parameters ([`params`]).
//!
//! No libhdf5 is linked. h5py's and netCDF4's wheels each load a private libhdf5, so a
//! plugin with undefined `H5*` symbols would not load under them; the few HDF5 functions
//! `set_local` needs are looked up when it runs, in the libhdf5 that called it (found by
//! walking the call stack), as [`hdf5api`] does. NCZarr stores (netCDF-C over Zarr) get
//! the JSON codec conversion they ask for in [`nczarr`]. Every entry point runs under
//! `catch_unwind`: no panic crosses into C.

#![allow(unsafe_code)]

pub mod codec;
pub mod hdf5api;
pub mod nczarr;
pub mod params;

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

use hdf5api::{Api, Hid};

/// The filter's id: in the range HDF5 keeps for testing (256-511), not one of the ids
/// registered there (257, 258, 305, 307). A registered id (512-32767) is asked of The
/// HDF Group at help@hdfgroup.org; docs/hdf5.md says how.
pub const FILTER_ID: c_int = 409;

/// The name HDF5 stores with the filter and prints when the plugin is missing.
pub const FILTER_NAME: &[u8] =
    b"miniblock (HDF5 plugin libh5miniblock.so missing? pip install ./python, then HDF5_PLUGIN_PATH=$(python -c 'import miniblock.hdf5 as m; print(m.PLUGIN_PATH)'))\0";

const H5Z_FLAG_REVERSE: c_uint = 0x0100;
const H5Z_FLAG_OPTIONAL: c_uint = 0x0001;

type CanApply = unsafe extern "C" fn(Hid, Hid, Hid) -> c_int;
type SetLocal = unsafe extern "C" fn(Hid, Hid, Hid) -> c_int;
type Filter = unsafe extern "C" fn(
    c_uint,
    usize,
    *const c_uint,
    usize,
    *mut usize,
    *mut *mut c_void,
) -> usize;

/// HDF5's `H5Z_class2_t`.
#[repr(C)]
pub struct H5ZClass2 {
    version: c_int,
    id: c_int,
    encoder_present: c_uint,
    decoder_present: c_uint,
    name: *const c_char,
    can_apply: Option<CanApply>,
    set_local: Option<SetLocal>,
    filter: Option<Filter>,
}

// SAFETY: the class is immutable and its name points at a static string.
unsafe impl Sync for H5ZClass2 {}

static CLASS: H5ZClass2 = H5ZClass2 {
    version: 1,
    id: FILTER_ID,
    encoder_present: 1,
    decoder_present: 1,
    name: FILTER_NAME.as_ptr().cast(),
    can_apply: Some(can_apply),
    set_local: Some(set_local),
    filter: Some(filter),
};

/// The plugin's type: a filter (`H5PL_TYPE_FILTER`).
#[no_mangle]
pub extern "C" fn H5PLget_plugin_type() -> c_int {
    0
}

/// The filter's class.
#[no_mangle]
pub extern "C" fn H5PLget_plugin_info() -> *const c_void {
    std::ptr::addr_of!(CLASS).cast()
}

/// Says yes: h5py adds filters as optional, and HDF5 then ignores a no here; `set_local`
/// is where a bad type or option fails dataset creation.
unsafe extern "C" fn can_apply(_dcpl: Hid, _type: Hid, _space: Hid) -> c_int {
    1
}

/// Records the dataset's value type in the filter's parameters (idempotently), checks the
/// user's options, and makes the filter mandatory, so that a chunk it cannot encode is an
/// error instead of being stored raw without a word. A negative return fails dataset
/// creation, with an HDF5 error message saying why.
unsafe extern "C" fn set_local(dcpl: Hid, type_id: Hid, _space: Hid) -> c_int {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let Some(api) = Api::of_caller() else {
            // No HDF5 error stack to push to: stderr, as HDF5 itself prints.
            eprintln!("miniblock filter: the libhdf5 that called set_local could not be found");
            return -1;
        };
        // SAFETY: the ids are the ones HDF5 handed to this callback, used on the library
        // that called it.
        match unsafe { api.set_local(dcpl, type_id) } {
            Ok(()) => 0,
            Err(message) => {
                api.push_error("set_local", &message);
                -1
            }
        }
    }));
    outcome.unwrap_or_else(|_| {
        eprintln!("miniblock filter: internal error in set_local");
        -1
    })
}

/// The filter: encodes a chunk into a frame, or (with `H5Z_FLAG_REVERSE`) decodes one.
/// Returns the new size, or 0 on failure (with an HDF5 error pushed).
unsafe extern "C" fn filter(
    flags: c_uint,
    cd_nelmts: usize,
    cd_values: *const c_uint,
    nbytes: usize,
    buf_size: *mut usize,
    buf: *mut *mut c_void,
) -> usize {
    keep_freed_chunks();
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        if buf.is_null() || buf_size.is_null() {
            return Err("miniblock filter: no buffer".to_owned());
        }
        let cd: &[c_uint] = if cd_nelmts == 0 || cd_values.is_null() {
            &[]
        } else {
            // SAFETY: HDF5 passes cd_nelmts parameters at cd_values.
            unsafe { std::slice::from_raw_parts(cd_values, cd_nelmts) }
        };
        // SAFETY: HDF5 passes a buffer of at least nbytes valid bytes at *buf.
        let input: &[u8] = if nbytes == 0 {
            &[]
        } else {
            unsafe { std::slice::from_raw_parts((*buf).cast::<u8>(), nbytes) }
        };
        let output = if flags & H5Z_FLAG_REVERSE != 0 {
            codec::decode_chunk_into(cd, input, CBuffer::new)?
        } else {
            let blob = codec::encode_chunk(cd, input)?;
            let mut out = CBuffer::new(blob.len())?;
            out.as_mut().copy_from_slice(&blob);
            out
        };
        let len = output.len;
        if len == 0 {
            return Err("miniblock filter: a chunk of no bytes".to_owned());
        }
        // SAFETY: HDF5 frees the buffer with the C allocator, which made the new one; the
        // old buffer is HDF5's, also from the C allocator, and is replaced.
        unsafe {
            libc::free(*buf);
            *buf = output.release().cast();
            *buf_size = len;
        }
        Ok(len)
    }));
    let message = match outcome {
        Ok(Ok(len)) => return len,
        Ok(Err(message)) => message,
        Err(_) => "miniblock filter: internal error".to_owned(),
    };
    match Api::of_caller() {
        Some(api) => api.push_error("filter", &message),
        None => eprintln!("{message}"),
    }
    0
}

/// Asks glibc, once, to keep freed chunk-sized memory in the process.
///
/// Reading a chunk, HDF5 frees the stored bytes and, after copying them out, the decoded
/// chunk the filter returned. With chunks around 1 MiB, glibc hands both back to the
/// kernel (unmapped, or trimmed from the top of the heap), so every chunk's output lands
/// on fresh pages; faulting those in cost 0.9-1.2 ms per MiB here, more than decoding
/// (`docs/hdf5.md`). Raising the mmap and trim thresholds to 32 and 64 MiB keeps that
/// memory for the next chunk. It is process-wide, so it only raises glibc's defaults
/// (which grow to 32 MiB by themselves after large frees) and can be turned off with
/// `MINIBLOCK_HDF5_MALLOPT=0`.
fn keep_freed_chunks() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if std::env::var_os("MINIBLOCK_HDF5_MALLOPT").is_some_and(|v| v == "0") {
            return;
        }
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        // SAFETY: mallopt only sets allocator parameters.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
            libc::mallopt(libc::M_TRIM_THRESHOLD, 64 << 20);
        }
    });
}

/// A buffer from the C allocator (HDF5 frees what the filter returns with `free`), freed
/// on drop unless released to HDF5.
struct CBuffer {
    ptr: *mut u8,
    len: usize,
}

impl CBuffer {
    fn new(len: usize) -> Result<Self, String> {
        // malloc then zeroing, not calloc: glibc serves a large calloc from fresh pages
        // (mmap) each time, and faulting them in cost more than the decoding here (1 ms
        // for 1 MiB on a VM); malloc reuses the memory HDF5 freed after the last chunk.
        // SAFETY: at least one byte; a null result is an error; zeroed before use.
        let ptr = unsafe { libc::malloc(len.max(1)) }.cast::<u8>();
        if !ptr.is_null() {
            // SAFETY: `len` bytes were just allocated.
            unsafe { std::ptr::write_bytes(ptr, 0, len) };
        }
        if ptr.is_null() {
            return Err(format!("miniblock filter: cannot allocate {len} bytes"));
        }
        Ok(Self { ptr, len })
    }

    /// The buffer, now the caller's to free.
    fn release(self) -> *mut u8 {
        let ptr = self.ptr;
        std::mem::forget(self);
        ptr
    }
}

impl AsMut<[u8]> for CBuffer {
    fn as_mut(&mut self) -> &mut [u8] {
        // SAFETY: `len` initialized (zeroed) bytes from malloc, owned by this buffer.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for CBuffer {
    fn drop(&mut self) {
        // SAFETY: the pointer came from malloc and was not released.
        unsafe { libc::free(self.ptr.cast()) };
    }
}

/// Whether flags mark a filter optional (for the tests of `set_local`'s rewrite).
pub fn is_optional(flags: c_uint) -> bool {
    flags & H5Z_FLAG_OPTIONAL != 0
}
