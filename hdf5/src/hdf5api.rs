//! The HDF5 functions the plugin calls, looked up at run time in the libhdf5 that called
//! it.
//!
//! A process may hold several libhdf5s: h5py's wheel and netCDF4's each load their own,
//! privately. Ids (`hid_t`) are only meaningful to the library that made them. So the
//! plugin must not take "the first libhdf5 loaded". It walks its own call stack
//! (`_Unwind_Backtrace`), and for each return address outside the plugin asks `dladdr`
//! which library holds it. The first library that provides `H5Tget_size` (itself, or a
//! library it depends on: h5py's extension modules find h5py's libhdf5) is the caller's.
//! When none is found on the stack, the global namespace is tried: `h5repack` and
//! `nccopy` link libhdf5 normally.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};

use crate::params::{type_code, Params, STORED_LEN};
use crate::FILTER_ID;

/// HDF5's `hid_t`.
pub type Hid = i64;

type TypeInt = unsafe extern "C" fn(Hid) -> c_int;
type TypeSize = unsafe extern "C" fn(Hid) -> usize;
type GetFilterById2 = unsafe extern "C" fn(
    Hid,
    c_int,
    *mut c_uint,
    *mut usize,
    *mut c_uint,
    usize,
    *mut c_char,
    *mut c_uint,
) -> c_int;
type ModifyFilter = unsafe extern "C" fn(Hid, c_int, c_uint, usize, *const c_uint) -> c_int;
type Push2 = unsafe extern "C" fn(
    Hid,
    *const c_char,
    *const c_char,
    c_uint,
    Hid,
    Hid,
    Hid,
    *const c_char,
    ...
) -> c_int;

/// HDF5's type classes (`H5T_class_t`), for messages.
const CLASSES: [&str; 11] = [
    "integer",
    "float",
    "time",
    "string",
    "bitfield",
    "opaque",
    "compound",
    "reference",
    "enum",
    "variable-length",
    "array",
];

/// The functions, from one libhdf5.
pub struct Api {
    get_class: TypeInt,
    get_size: TypeSize,
    get_order: TypeInt,
    get_sign: TypeInt,
    get_filter_by_id2: GetFilterById2,
    modify_filter: ModifyFilter,
    /// `H5Epush2` and the error class and major/minor ids it takes, when all are found.
    push: Option<(Push2, Hid, Hid, Hid)>,
}

extern "C" {
    fn _Unwind_Backtrace(
        trace: extern "C" fn(*mut c_void, *mut c_void) -> c_int,
        arg: *mut c_void,
    ) -> c_int;
    fn _Unwind_GetIP(context: *mut c_void) -> usize;
}

const MAX_FRAMES: usize = 64;

extern "C" fn collect(context: *mut c_void, arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the `Vec` `caller_ips` passes, with room reserved for MAX_FRAMES.
    let ips = unsafe { &mut *arg.cast::<Vec<usize>>() };
    // SAFETY: `context` is the unwinder's, valid during this callback.
    ips.push(unsafe { _Unwind_GetIP(context) });
    if ips.len() >= MAX_FRAMES {
        4 // _URC_NORMAL_STOP
    } else {
        0 // _URC_NO_REASON: go on
    }
}

fn caller_ips() -> Vec<usize> {
    let mut ips: Vec<usize> = Vec::with_capacity(MAX_FRAMES);
    // SAFETY: the callback only pushes into the Vec, within its reserved capacity.
    unsafe { _Unwind_Backtrace(collect, std::ptr::addr_of_mut!(ips).cast()) };
    ips
}

/// The base address of the library holding `address`, and its file name.
fn library_of(address: usize) -> Option<(usize, CString)> {
    // SAFETY: dladdr only reads the loader's tables; `info` is written on success.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    if unsafe { libc::dladdr(address as *const c_void, &raw mut info) } == 0 {
        return None;
    }
    let name = if info.dli_fname.is_null() {
        CString::default()
    } else {
        // SAFETY: dladdr gives a NUL-terminated name that lives as long as the library.
        unsafe { CStr::from_ptr(info.dli_fname) }.to_owned()
    };
    Some((info.dli_fbase as usize, name))
}

/// Looks `name` up in `handle`.
fn symbol(handle: *mut c_void, name: &str) -> Option<*mut c_void> {
    let name = CString::new(name).ok()?;
    // SAFETY: `handle` is a live dlopen handle (or RTLD_DEFAULT); `name` is NUL-terminated.
    let found = unsafe { libc::dlsym(handle, name.as_ptr()) };
    (!found.is_null()).then_some(found)
}

/// Runs `f` on the first library on the call stack, outside the plugin, that provides
/// `probe` (itself or through the libraries it depends on), else on the global namespace.
fn with_caller_library<T>(probe: &str, f: impl Fn(*mut c_void) -> Option<T>) -> Option<T> {
    let own = library_of(Api::of_caller as *const () as usize).map(|(base, _)| base);
    let mut seen = Vec::new();
    for ip in caller_ips() {
        let Some((base, name)) = library_of(ip.saturating_sub(1)) else {
            continue;
        };
        if Some(base) == own || seen.contains(&base) {
            continue;
        }
        seen.push(base);
        let path = if name.as_bytes().is_empty() {
            None
        } else {
            Some(name)
        };
        // SAFETY: RTLD_NOLOAD only returns a library that is already loaded; the reference
        // it adds is dropped below, and the library stays loaded by its owner, so what is
        // taken from it stays valid.
        let handle = unsafe {
            libc::dlopen(
                path.as_ref().map_or(std::ptr::null(), |p| p.as_ptr()),
                libc::RTLD_LAZY | libc::RTLD_NOLOAD,
            )
        };
        if handle.is_null() {
            continue;
        }
        let found = symbol(handle, probe).and_then(|_| f(handle));
        // SAFETY: the handle came from the dlopen above.
        unsafe { libc::dlclose(handle) };
        if found.is_some() {
            return found;
        }
    }
    f(libc::RTLD_DEFAULT)
}

/// `name` in the library that called the plugin (netCDF-C's `nc_inq_var`, for NCZarr).
pub fn caller_symbol(name: &str) -> Option<*mut c_void> {
    with_caller_library(name, |handle| symbol(handle, name))
}

impl Api {
    /// The functions of the libhdf5 on the call stack (or, failing that, in the global
    /// namespace).
    pub fn of_caller() -> Option<Api> {
        with_caller_library("H5Tget_size", Api::from_handle)
    }

    fn from_handle(handle: *mut c_void) -> Option<Api> {
        let f = |name| symbol(handle, name);
        // SAFETY: each symbol is the HDF5 function of that name, whose C signature the
        // type spells (HDF5 1.10 to 2.0 keep them).
        unsafe {
            let push = match (
                f("H5Epush2"),
                f("H5E_ERR_CLS_g"),
                f("H5E_PLINE_g"),
                f("H5E_CANTFILTER_g"),
            ) {
                (Some(push), Some(class), Some(major), Some(minor)) => Some((
                    std::mem::transmute::<*mut c_void, Push2>(push),
                    *class.cast::<Hid>(),
                    *major.cast::<Hid>(),
                    *minor.cast::<Hid>(),
                )),
                _ => None,
            };
            Some(Api {
                get_class: std::mem::transmute::<*mut c_void, TypeInt>(f("H5Tget_class")?),
                get_size: std::mem::transmute::<*mut c_void, TypeSize>(f("H5Tget_size")?),
                get_order: std::mem::transmute::<*mut c_void, TypeInt>(f("H5Tget_order")?),
                get_sign: std::mem::transmute::<*mut c_void, TypeInt>(f("H5Tget_sign")?),
                get_filter_by_id2: std::mem::transmute::<*mut c_void, GetFilterById2>(f(
                    "H5Pget_filter_by_id2",
                )?),
                modify_filter: std::mem::transmute::<*mut c_void, ModifyFilter>(f(
                    "H5Pmodify_filter",
                )?),
                push,
            })
        }
    }

    /// Pushes `message` on HDF5's default error stack, where h5py, netCDF-C and the
    /// tools print it from.
    pub fn push_error(&self, function: &str, message: &str) {
        let Some((push, class, major, minor)) = self.push else {
            eprintln!("{message}");
            return;
        };
        let (Ok(file), Ok(function), Ok(message)) = (
            CString::new(file!()),
            CString::new(function),
            CString::new(message.replace('\0', " ")),
        ) else {
            return;
        };
        // SAFETY: H5Epush2 of the library that called us, with its own ids; the message
        // goes through "%s", so no text of ours is read as a format.
        unsafe {
            push(
                0, // H5E_DEFAULT
                file.as_ptr(),
                function.as_ptr(),
                line!(),
                class,
                major,
                minor,
                c"%s".as_ptr(),
                message.as_ptr(),
            );
        }
    }

    /// `set_local`'s work: the dataset's type into the stored parameters.
    ///
    /// # Safety
    /// `dcpl` and `type_id` must be ids of this library, as HDF5 passes them to
    /// `set_local`.
    pub unsafe fn set_local(&self, dcpl: Hid, type_id: Hid) -> Result<(), String> {
        // SAFETY: (all calls) HDF5 functions of this library on ids it gave us.
        let class = unsafe { (self.get_class)(type_id) };
        let size = unsafe { (self.get_size)(type_id) };
        let order = unsafe { (self.get_order)(type_id) };
        let class_name = usize::try_from(class)
            .ok()
            .and_then(|c| CLASSES.get(c))
            .copied()
            .unwrap_or("unknown");
        let signed = match class {
            0 => match unsafe { (self.get_sign)(type_id) } {
                0 => false,
                1 => true,
                other => return Err(format!("miniblock filter: integer sign {other}")),
            },
            _ => true,
        };
        let code = type_code(class, size, signed).ok_or_else(|| {
            format!(
                "miniblock filter: datasets of {size}-byte {class_name} values are not supported (it takes 1-, 2-, 4- and 8-byte integers and 2-, 4- and 8-byte floats)"
            )
        })?;
        let big_endian = match (order, size) {
            (_, 1) | (0, _) => false,
            (1, _) => true,
            (other, _) => {
                return Err(format!(
                    "miniblock filter: {size}-byte {class_name} values of byte order {other} (only little- and big-endian)"
                ))
            }
        };
        let mut flags: c_uint = 0;
        let mut cd = [0 as c_uint; 16];
        let mut count = cd.len();
        let mut config: c_uint = 0;
        let status = unsafe {
            (self.get_filter_by_id2)(
                dcpl,
                FILTER_ID,
                &raw mut flags,
                &raw mut count,
                cd.as_mut_ptr(),
                0,
                std::ptr::null_mut(),
                &raw mut config,
            )
        };
        if status < 0 {
            return Err("miniblock filter: cannot read its parameters".to_owned());
        }
        if count > cd.len() {
            return Err(format!(
                "miniblock filter: {count} parameters (at most 2, or the stored 5)"
            ));
        }
        let mut params = Params::parse(&cd[..count])?;
        params.value_type = code;
        params.big_endian = big_endian;
        params.frame_type()?;
        params.options()?;
        let stored = params.stored();
        // Mandatory: a chunk the filter fails on is an error, never stored raw.
        let flags = flags & !crate::H5Z_FLAG_OPTIONAL;
        let status =
            unsafe { (self.modify_filter)(dcpl, FILTER_ID, flags, STORED_LEN, stored.as_ptr()) };
        if status < 0 {
            return Err("miniblock filter: cannot store its parameters".to_owned());
        }
        Ok(())
    }
}
