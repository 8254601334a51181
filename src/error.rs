//! The crate's error type.
//!
//! Every fallible call returns [`Error`]. A caller that needs to react differently to bad
//! arguments, damaged bytes, missing bytes or an encoding this build does not know matches
//! on the variant or on [`Error::kind`].

use snafu::Snafu;

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong, by kind.
#[derive(Debug, Snafu)]
#[non_exhaustive]
#[snafu(visibility(pub(crate)))]
pub enum Error {
    /// The caller passed something the API does not accept (a width other than 32/64, a
    /// row range past the end, an output buffer of the wrong size, ...).
    #[snafu(display("invalid argument: {message}"))]
    InvalidArgument {
        /// What was wrong.
        message: String,
    },
    /// The bytes or the encoding description are inconsistent: they cannot have been
    /// written by a correct encoder.
    #[snafu(display("corrupt data: {message}"))]
    Corrupt {
        /// What was wrong, and where.
        message: String,
    },
    /// The bytes end before the data they announce.
    #[snafu(display("truncated data: {message}"))]
    Truncated {
        /// What was missing, and where.
        message: String,
    },
    /// The encoding description is well formed but names something this build does not
    /// implement (an unknown compression scheme, a nested encoding we do not decode, ...).
    #[snafu(display("unsupported encoding: {message}"))]
    Unsupported {
        /// What is not supported.
        message: String,
    },
    /// Reading or writing a file or stream failed.
    #[snafu(display("I/O error while {context}: {source}"))]
    Io {
        /// What was being done.
        context: String,
        /// The underlying I/O error.
        source: std::io::Error,
    },
    /// The system refused memory a decode really needs (a small file of long runs or
    /// constant pages can stand for gigabytes of values): decode fewer rows at a time.
    #[snafu(display("out of memory: cannot allocate {bytes} bytes for {what}"))]
    OutOfMemory {
        /// Bytes asked for.
        bytes: usize,
        /// What they were for.
        what: String,
    },
}

/// The kind of an [`Error`], for callers that only need to branch on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// See [`Error::InvalidArgument`].
    InvalidArgument,
    /// See [`Error::Corrupt`].
    Corrupt,
    /// See [`Error::Truncated`].
    Truncated,
    /// See [`Error::Unsupported`].
    Unsupported,
    /// See [`Error::Io`].
    Io,
    /// See [`Error::OutOfMemory`].
    OutOfMemory,
}

impl Error {
    /// The kind of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::InvalidArgument { .. } => ErrorKind::InvalidArgument,
            Error::Corrupt { .. } => ErrorKind::Corrupt,
            Error::Truncated { .. } => ErrorKind::Truncated,
            Error::Unsupported { .. } => ErrorKind::Unsupported,
            Error::Io { .. } => ErrorKind::Io,
            Error::OutOfMemory { .. } => ErrorKind::OutOfMemory,
        }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Error::InvalidArgument {
            message: message.into(),
        }
    }

    pub(crate) fn corrupt(message: impl Into<String>) -> Self {
        Error::Corrupt {
            message: message.into(),
        }
    }

    pub(crate) fn truncated(message: impl Into<String>) -> Self {
        Error::Truncated {
            message: message.into(),
        }
    }

    pub(crate) fn unsupported(message: impl Into<String>) -> Self {
        Error::Unsupported {
            message: message.into(),
        }
    }
}

impl From<crate::shuffle::ShuffleError> for Error {
    fn from(e: crate::shuffle::ShuffleError) -> Self {
        Error::invalid(e.to_string())
    }
}
