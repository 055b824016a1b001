//! Offload-bundle entry ids (`hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-`) as clang writes them; the
//! target ids inside them are `rocm_kernels_core::TargetId`.

use serde::Serialize;

pub use rocm_kernels_core::target::{TargetFeature, TargetId};

/// An offload-bundle entry id: `<offload kind>-<triple>-<target id>`, e.g.
/// `hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-` or `host-x86_64-unknown-linux-gnu-`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct BundleEntryId {
    /// The id exactly as stored in the bundle.
    pub raw: String,
    /// `hip`, `hipv4`, `host`, `openmp`, ...
    pub offload_kind: String,
    /// `amdgcn-amd-amdhsa-` (four components; clang leaves the environment empty).
    pub triple: String,
    /// `None` when the entry has no target id (the host entry).
    pub target: Option<TargetId>,
}

impl BundleEntryId {
    /// Split an entry id. Clang writes a four-component triple (`amdgcn-amd-amdhsa-`, empty
    /// environment), so the target id follows the fourth `-`; older tools wrote a
    /// three-component triple (`hip-amdgcn-amd-amdhsa-gfx906`), which is recognised by a
    /// fourth component that looks like a target id (`gfx…` or containing `:`).
    pub fn parse(raw: &str) -> BundleEntryId {
        let (offload_kind, rest) = raw.split_once('-').unwrap_or((raw, ""));
        let parts: Vec<&str> = rest.splitn(5, '-').collect();
        let (triple, target) = match parts.as_slice() {
            [a, b, c, d, target] => (format!("{a}-{b}-{c}-{d}"), *target),
            [a, b, c, d] if d.starts_with("gfx") || d.contains(':') => (format!("{a}-{b}-{c}"), *d),
            _ => (rest.to_owned(), ""),
        };
        BundleEntryId {
            raw: raw.to_owned(),
            offload_kind: offload_kind.to_owned(),
            triple,
            target: TargetId::parse(target),
        }
    }

    /// Whether this entry holds AMDGPU device code (an `amdgcn` triple).
    pub fn is_amdgpu(&self) -> bool {
        self.triple.starts_with("amdgcn")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundle_ids_split_into_kind_triple_target() {
        let id = BundleEntryId::parse("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-");
        assert_eq!(id.offload_kind, "hipv4");
        assert_eq!(id.triple, "amdgcn-amd-amdhsa-");
        assert!(id.is_amdgpu());
        let t = id.target.unwrap();
        assert_eq!(
            (t.processor.as_str(), t.feature("xnack")),
            ("gfx90a", Some(false))
        );

        let generic = BundleEntryId::parse("hipv4-amdgcn-amd-amdhsa--gfx10-3-generic");
        assert_eq!(generic.target.unwrap().processor, "gfx10-3-generic");

        let old = BundleEntryId::parse("hip-amdgcn-amd-amdhsa-gfx906");
        assert_eq!(old.triple, "amdgcn-amd-amdhsa");
        assert_eq!(old.target.unwrap().processor, "gfx906");

        let host = BundleEntryId::parse("host-x86_64-unknown-linux--");
        assert_eq!(host.offload_kind, "host");
        assert_eq!(host.target, None);
        assert!(!host.is_amdgpu());

        let junk = BundleEntryId::parse("");
        assert_eq!((junk.offload_kind.as_str(), junk.target), ("", None));
    }
}
