//! What can go wrong reading a code object. Every malformed input ends here, never in a panic.

/// An error reading an offload bundle, an AMDGPU ELF or its metadata.
#[derive(Debug, thiserror::Error)]
pub enum CodeObjectError {
    /// The bytes are none of the formats this module reads.
    #[error(
        "not a code object: expected a clang offload bundle (`__CLANG_OFFLOAD_BUNDLE__` or \
         compressed `CCOB`), an AMDGPU ELF, or a host ELF with a `.hip_fatbin` section \
         (the input starts with {start:02x?})"
    )]
    UnknownFormat {
        /// Up to the first 8 bytes of the input.
        start: Vec<u8>,
    },
    /// A structure runs past the end of the data holding it.
    #[error("truncated {what}: needs bytes {start}..{end} but only {len} are present")]
    Truncated {
        /// The structure being read (`bundle entry id`, `kernel descriptor`...).
        what: &'static str,
        /// First byte offset the structure needs.
        start: u64,
        /// Byte offset just past the structure's end.
        end: u64,
        /// Bytes actually present.
        len: usize,
    },
    /// An uncompressed offload bundle is inconsistent.
    #[error("malformed offload bundle: {0}")]
    Bundle(String),
    /// A compressed (`CCOB`) offload bundle could not be decompressed.
    #[error("malformed compressed offload bundle: {0}")]
    Compressed(String),
    /// The ELF container itself is malformed.
    #[error("malformed ELF: {0}")]
    Elf(String),
    /// An ELF that is not AMDGPU device code, where device code was expected.
    #[error("not an AMDGPU code object: ELF machine is {machine}, expected EM_AMDGPU (224)")]
    NotAmdgpu {
        /// The ELF header's `e_machine`.
        machine: u16,
    },
    /// A host ELF without embedded device code.
    #[error(
        "host ELF has no `.hip_fatbin` section: it was not compiled from HIP sources, \
         or its device code was linked elsewhere"
    )]
    NoFatbin,
    /// The AMDGPU ELF has no `NT_AMDGPU_METADATA` note.
    #[error(
        "no AMDGPU metadata note (NT_AMDGPU_METADATA) in the code object: it is older than code \
         object v3 or was stripped; rebuild it with a ROCm/clang compiler newer than ROCm 4"
    )]
    NoMetadata,
    /// The metadata note is not the MessagePack document the AMDGPU ABI describes.
    #[error("malformed AMDGPU metadata: {0}")]
    Metadata(String),
}

impl CodeObjectError {
    /// A [`CodeObjectError::Truncated`] for `start..start+size` of `len` bytes.
    pub(crate) fn truncated(what: &'static str, start: u64, size: u64, len: usize) -> Self {
        CodeObjectError::Truncated {
            what,
            start,
            end: start.saturating_add(size),
            len,
        }
    }
}
