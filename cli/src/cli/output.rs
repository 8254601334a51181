//! Writing outputs without destroying anything the user has.
//!
//! - `-` (and `/dev/stdout`) is standard output; a closed standard output is an error.
//! - An output that is one of the inputs (the same file, by any name or link, or the file
//!   the shell opened as standard input or output) is refused.
//! - A reader closing the pipe ends the command quietly with 141, whichever format's
//!   writer met it.
//! - A special file (a FIFO, a terminal, `/dev/null`, `/dev/stdout`) is written through,
//!   never replaced.
//! - An existing regular file is refused unless `--force`, as `zstd` does; with it, the
//!   file a symlink points to is replaced (the link stays) and keeps its permissions.
//! - A new file is written to a temporary file in the destination's folder, created with
//!   mode 0666 less the umask like any file a tool creates, and renamed to its name only
//!   when complete and synced to disk (and only if nothing has appeared under that name
//!   meanwhile). Ctrl-C, SIGTERM or SIGHUP remove the temporary file before the process
//!   exits; one that SIGKILL or a power loss left is reported by the next write there.

use std::fs::OpenOptions;
use std::io::{BufWriter, ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, Once};

use super::CliError;

/// What a command writes its output to (`Send`, as Parquet's writer requires).
pub type Sink<'a> = dyn Write + Send + 'a;

/// Where an output goes, decided before anything is written.
enum Target {
    Stdout,
    /// An existing special file, written through.
    Special(PathBuf),
    /// A regular file: a temporary file renamed to `path`; `replace` when an existing
    /// file may be replaced (`--force`), whose permissions are then kept.
    Regular {
        path: PathBuf,
        replace: Option<std::fs::Permissions>,
    },
}

/// How temporary outputs are named: `.miniblock-XXXXXX.tmp` beside the output.
const TEMP_PREFIX: &str = ".miniblock-";
const TEMP_SUFFIX: &str = ".tmp";

/// Temporary files being written, removed by the interrupt handler.
static PENDING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Installs, once, the handler that on SIGINT, SIGTERM or SIGHUP clears the progress bar,
/// removes pending temporary files and exits with 130.
pub fn handle_interrupts() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let installed = ctrlc::set_handler(|| {
            super::progress::clear_active();
            let mut pending = Vec::new();
            self::pending(|p| pending.clone_from(p));
            for path in pending {
                let _ = std::fs::remove_file(path);
            }
            std::process::exit(130);
        });
        if let Err(e) = installed {
            eprintln!("miniblock: warning: cannot remove partial outputs on interrupt: {e}");
        }
    });
}

fn pending(edit: impl FnOnce(&mut Vec<PathBuf>)) {
    let mut guard = PENDING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    edit(&mut guard);
}

/// The file an input or output path stands for: `-` is standard input (for an input) or
/// standard output (for an output), whatever file the shell opened there.
fn file_of<'a>(path: &'a Path, stdio: &'static str) -> &'a Path {
    if path.as_os_str() == "-" {
        Path::new(stdio)
    } else {
        path
    }
}

/// Whether `a` and `b` name the same existing regular file (through any links); two
/// names of one terminal or FIFO are not an overwrite.
fn same_file(a: &Path, b: &Path) -> bool {
    let (Ok(ma), Ok(mb)) = (std::fs::metadata(a), std::fs::metadata(b)) else {
        return false;
    };
    if !ma.is_file() {
        return false;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        ma.dev() == mb.dev() && ma.ino() == mb.ino()
    }
    #[cfg(not(unix))]
    {
        let _ = (ma, mb);
        matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y)
    }
}

/// Decides where `path` goes: checks it against the inputs and `force`.
fn target(path: &Path, inputs: &[&Path], force: bool) -> Result<Target, CliError> {
    let shown = path.display();
    let input_named = |input: &Path| {
        if input.as_os_str() == "-" {
            "standard input".to_string()
        } else {
            format!("the input {}", input.display())
        }
    };
    let output = file_of(path, "/dev/stdout");
    if let Some(input) = inputs
        .iter()
        .find(|input| same_file(output, file_of(input, "/dev/stdin")))
    {
        let output = if path.as_os_str() == "-" {
            "standard output".to_string()
        } else {
            format!("output {shown}")
        };
        return Err(CliError::new(format!(
            "{output} is {}; refusing to overwrite it",
            input_named(input)
        )));
    }
    if path.as_os_str() == "-" {
        stdout_is_open()?;
        return Ok(Target::Stdout);
    }
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => Err(CliError::new(format!("output {shown} is a folder"))),
        Ok(meta) if !meta.is_file() => Ok(Target::Special(path.to_path_buf())),
        Ok(meta) if force => {
            let resolved = path
                .canonicalize()
                .map_err(|e| CliError::new(format!("cannot resolve {shown}: {e}")))?;
            Ok(Target::Regular {
                path: resolved,
                replace: Some(meta.permissions()),
            })
        }
        Ok(_) => Err(CliError::new(format!(
            "output {shown} already exists; use -f/--force to overwrite it"
        ))),
        Err(e) if e.kind() == ErrorKind::NotFound => {
            if std::fs::symlink_metadata(path).is_ok() {
                return Err(CliError::new(format!(
                    "output {shown} is a link to nothing; refusing to replace the link"
                )));
            }
            Ok(Target::Regular {
                path: path.to_path_buf(),
                replace: None,
            })
        }
        Err(e) => Err(CliError::new(format!("cannot check {shown}: {e}"))),
    }
}

/// Checks, before long work, that `path` could be written as [`write_output`] would: not
/// an input, not an existing file without `force`, in a folder that exists.
pub fn check_output(path: &Path, inputs: &[&Path], force: bool) -> Result<(), CliError> {
    if let Target::Regular {
        path,
        replace: None,
    } = target(path, inputs, force)?
    {
        let folder = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if !folder.is_dir() {
            return Err(CliError::new(format!(
                "cannot write {}: the folder {} does not exist",
                path.display(),
                folder.display()
            )));
        }
    }
    Ok(())
}

/// Fails when standard output was closed (`>&-`): the Rust runtime then opens `/dev/null`
/// there (read-write, which a shell's `>/dev/null` never does), and everything written
/// would be lost without a word.
fn stdout_is_open() -> Result<(), CliError> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::FileTypeExt;
        use std::os::unix::fs::MetadataExt;
        let null = std::fs::metadata("/dev/stdout").is_ok_and(|m| {
            m.file_type().is_char_device() && m.rdev() == 0x103 // major 1, minor 3
        });
        let read_write = std::fs::read_to_string("/proc/self/fdinfo/1").is_ok_and(|info| {
            info.lines()
                .find_map(|l| l.strip_prefix("flags:"))
                .and_then(|f| u32::from_str_radix(f.trim(), 8).ok())
                .is_some_and(|flags| flags & 0o3 == 0o2)
        });
        if null && read_write {
            return Err(CliError::new(
                "standard output is closed; give an output file, or -o /dev/null to discard",
            ));
        }
    }
    Ok(())
}

/// A writer that remembers whether its reader went away, so that an error a format's
/// writer wraps in its own words still ends the command quietly (exit 141).
pub struct PipeWatch<W> {
    inner: W,
    closed: bool,
}

impl<W: Write> PipeWatch<W> {
    pub fn new(inner: W) -> Self {
        Self {
            inner,
            closed: false,
        }
    }

    fn note<T>(&mut self, result: std::io::Result<T>) -> std::io::Result<T> {
        if let Err(e) = &result {
            self.closed |= e.kind() == ErrorKind::BrokenPipe;
        }
        result
    }

    /// `result` of writing through this writer, a closed pipe made quiet.
    pub fn finish(&self, result: Result<(), CliError>) -> Result<(), CliError> {
        match result {
            Err(_) if self.closed => Err(CliError::broken_pipe()),
            other => other,
        }
    }
}

impl<W: Write> Write for PipeWatch<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let result = self.inner.write(buf);
        self.note(result)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let result = self.inner.flush();
        self.note(result)
    }
}

/// An error writing `path`; a closed pipe on standard output ends the command quietly.
pub fn write_error(path: &Path, e: &std::io::Error) -> CliError {
    if e.kind() == ErrorKind::BrokenPipe {
        CliError::broken_pipe()
    } else {
        CliError::new(format!("writing {}: {e}", path.display()))
    }
}

/// Runs `write` on the output `path` (see the module docs for what that means for each
/// kind of path). `inputs` are the files the command reads, which `path` may not be.
pub fn write_output<F>(path: &Path, inputs: &[&Path], force: bool, write: F) -> Result<(), CliError>
where
    F: FnOnce(&mut Sink<'_>) -> Result<(), CliError>,
{
    let flush = |writer: &mut Sink<'_>| writer.flush().map_err(|e| write_error(path, &e));
    match target(path, inputs, force)? {
        Target::Stdout => {
            let mut writer = BufWriter::new(PipeWatch::new(std::io::stdout()));
            let result = write(&mut writer).and_then(|()| flush(&mut writer));
            writer.get_ref().finish(result)
        }
        Target::Special(path) => {
            let file = OpenOptions::new()
                .write(true)
                .open(&path)
                .map_err(|e| CliError::new(format!("cannot open {}: {e}", path.display())))?;
            let mut writer = BufWriter::new(PipeWatch::new(file));
            let result = write(&mut writer).and_then(|()| flush(&mut writer));
            writer.get_ref().finish(result)
        }
        Target::Regular { path, replace } => write_regular(&path, replace, write),
    }
}

fn write_regular<F>(
    path: &Path,
    replace: Option<std::fs::Permissions>,
    write: F,
) -> Result<(), CliError>
where
    F: FnOnce(&mut Sink<'_>) -> Result<(), CliError>,
{
    let shown = path.display();
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    handle_interrupts();
    report_leftovers(dir);
    let mut builder = tempfile::Builder::new();
    builder.prefix(TEMP_PREFIX).suffix(TEMP_SUFFIX);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // Passed to open(2), which applies the umask, as for any new file.
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let temp = builder
        .tempfile_in(dir)
        .map_err(|e| CliError::new(format!("cannot create a file in {}: {e}", dir.display())))?;
    let temp_path = temp.path().to_path_buf();
    pending(|p| p.push(temp_path.clone()));
    let result = (|| {
        let mut temp = temp;
        {
            let mut writer = BufWriter::new(temp.as_file_mut());
            write(&mut writer)?;
            writer.flush().map_err(|e| write_error(path, &e))?;
        }
        // On disk before it takes the name: a crash after the rename must not leave an
        // empty or partial file under it.
        temp.as_file()
            .sync_all()
            .map_err(|e| CliError::new(format!("writing {shown}: {e}")))?;
        if let Some(permissions) = replace {
            std::fs::set_permissions(temp.path(), permissions)
                .map_err(|e| CliError::new(format!("cannot set permissions of {shown}: {e}")))?;
            temp.persist(path)
                .map_err(|e| CliError::new(format!("cannot write {shown}: {}", e.error)))?;
        } else {
            temp.persist_noclobber(path).map_err(|e| {
                if e.error.kind() == ErrorKind::AlreadyExists {
                    CliError::new(format!(
                        "output {shown} appeared while it was being written; left as it is"
                    ))
                } else {
                    CliError::new(format!("cannot write {shown}: {}", e.error))
                }
            })?;
        }
        // The rename itself, on disk (best effort: not every file system syncs folders).
        if let Ok(folder) = std::fs::File::open(dir) {
            let _ = folder.sync_all();
        }
        Ok::<(), CliError>(())
    })();
    // On failure the NamedTempFile was dropped, which removed it.
    pending(|p| p.retain(|q| q != &temp_path));
    result
}

/// Warns of temporary files in `dir` that an earlier run killed without warning
/// (SIGKILL, a power loss) left behind: hidden, possibly large, and named only by us.
/// They are not removed: another run, on this or another machine, may be writing one.
fn report_leftovers(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with(TEMP_PREFIX) && name.ends_with(TEMP_SUFFIX) {
            let size = entry.metadata().map_or(0, |m| m.len());
            eprintln!(
                "miniblock: warning: {} ({size} bytes) is a partial output left by an interrupted run; delete it if no miniblock is writing there",
                entry.path().display()
            );
        }
    }
}

/// A `.npy` version 1.0 header for a 1-D little-endian float array of `len` values.
pub fn npy_header(descr: &str, len: usize) -> Vec<u8> {
    let mut dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({len},), }}");
    // magic (6) + version (2) + length (2) + dict + newline, padded to 64 bytes
    let unpadded = 10 + dict.len() + 1;
    dict.push_str(&" ".repeat(unpadded.next_multiple_of(64) - unpadded));
    dict.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out
}
