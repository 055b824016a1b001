//! The harness's error: what goes wrong in it, by kind. Its `Display` is the message the harness
//! has always printed (in a trial's failure, on stderr before exiting with the usage code, in a
//! tune report), so the kinds change nothing a user reads.

use std::path::PathBuf;
use std::sync::Arc;

use rocm_kernels::runtime::RuntimeError;

/// What goes wrong in the harness: a bad option, a declaration mistake, the runtime refusing, a
/// panic in user code, a failed comparison, tune mode, or a file it reads or writes.
///
/// Its `Display` is the whole message for a person (several lines for a trial's report). Two
/// errors are equal when they are of the same kind and say the same thing.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A harness flag or environment variable (`--cases`, `ROCM_TEST_SEED`…) with a value it
    /// cannot take, or a flag without its value: the harness exits with the usage code.
    #[error("{0}")]
    Option(String),
    /// A check or tunable declared inconsistently with itself or with the library: a kernel the
    /// library lacks, an argument the kernel does not take, no launch configuration, a tunable's
    /// default outside its lists.
    #[error("{0}")]
    Declaration(String),
    /// The runtime refused (loading the module, finding a kernel, a launch, a stream).
    #[error("{0}")]
    Runtime(#[source] Arc<RuntimeError>),
    /// The runtime refused while the harness was `doing` something (`upload`, `setting
    /// variable `scale``).
    #[error("{doing}: {source}")]
    RuntimeWhile {
        /// What the harness was doing, as the message starts.
        doing: String,
        /// The runtime's error.
        #[source]
        source: Arc<RuntimeError>,
    },
    /// A target that cannot run this (a library built without the cpu backend, a target that
    /// cannot time kernels, a device the selection leaves out).
    #[error("{0}")]
    Target(String),
    /// User code panicked (the reference, a printf expectation, a trial body): the message as
    /// reported, which says which.
    #[error("{0}")]
    Panicked(String),
    /// A trial failed: the report a person reads (what differed, the input, the seed and how to
    /// reproduce it).
    #[error("{0}")]
    Failed(String),
    /// Tune mode could not tune: a bad request, a compile or measurement failure, no device.
    #[error("{0}")]
    Tune(String),
    /// A file the harness reads or writes (the events file, a trial's report).
    #[error("{doing} {}: {source}", path.display())]
    Io {
        /// What the harness was doing (`cannot open the events file`).
        doing: String,
        /// The file.
        path: PathBuf,
        /// The system's error.
        #[source]
        source: Arc<std::io::Error>,
    },
}

impl Error {
    /// A runtime error, as the runtime words it.
    pub(crate) fn runtime(e: RuntimeError) -> Self {
        Error::Runtime(Arc::new(e))
    }

    /// A runtime error while the harness was `doing` something.
    pub(crate) fn runtime_while(doing: impl Into<String>) -> impl FnOnce(RuntimeError) -> Self {
        let doing = doing.into();
        move |e| Error::RuntimeWhile {
            doing,
            source: Arc::new(e),
        }
    }

    /// An I/O error on `path` while the harness was `doing` something.
    pub(crate) fn io(
        doing: impl Into<String>,
        path: impl Into<PathBuf>,
        e: std::io::Error,
    ) -> Self {
        Error::Io {
            doing: doing.into(),
            path: path.into(),
            source: Arc::new(e),
        }
    }
}

impl From<RuntimeError> for Error {
    fn from(e: RuntimeError) -> Self {
        Error::runtime(e)
    }
}

impl PartialEq for Error {
    fn eq(&self, other: &Self) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
            && self.to_string() == other.to_string()
    }
}
