//! The typed description of a compiled kernel library: what `rocm-kernels-build` writes into
//! `$OUT_DIR/<name>.rs` (a `static KernelLibrary`, embedded with `include_kernels!`) and what the
//! runtime and the test harness read. Everything the build knew is here, so nothing is
//! recomputed at run time: one code object per target, each kernel's exact symbol in each object,
//! its parameter layout, and one spelling of its name on every backend.
//!
//! Everything is `'static` so the generated file can be a plain `static` item.

use serde::{Deserialize, Serialize};

pub use crate::target::TargetId;

/// Where a kernel runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// The host CPU: kernels compiled by the host C++ compiler with the cpu kernel-language header.
    Cpu,
    /// AMD GPUs through libamdhip64 (code objects compiled by a ROCm toolchain).
    Amd,
    /// NVIDIA GPUs through the CUDA driver (cubin/PTX compiled by nvcc or NVRTC).
    Nvidia,
}

impl Backend {
    /// Every backend, in the order reports list them.
    pub const ALL: [Backend; 3] = [Backend::Cpu, Backend::Amd, Backend::Nvidia];

    /// The name used on the command line, in manifests and in messages (`cpu`, `amd`, `nvidia`).
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Cpu => "cpu",
            Backend::Amd => "amd",
            Backend::Nvidia => "nvidia",
        }
    }
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Backend {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "cpu" => Ok(Backend::Cpu),
            "amd" | "hip" | "rocm" => Ok(Backend::Amd),
            "nvidia" | "cuda" => Ok(Backend::Nvidia),
            other => Err(format!(
                "unknown backend `{other}` (expected one of: cpu, amd, nvidia)"
            )),
        }
    }
}

/// What a code object's bytes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ObjectFormat {
    /// One AMDGPU ELF code object for one target (the build unbundles clang's offload bundles,
    /// compressed ones included, so the runtime needs no bundle reader or decompressor).
    AmdgpuElf,
    /// An NVIDIA cubin for one `sm_XX`.
    Cubin,
    /// NVIDIA PTX for one `compute_XX`, compiled by the driver for newer GPUs.
    Ptx,
    /// CUDA source (HIP with local headers inlined), compiled by NVRTC at load time because the
    /// build had no nvcc.
    CudaSource,
}

impl ObjectFormat {
    /// The name used in manifests and messages.
    pub fn as_str(self) -> &'static str {
        match self {
            ObjectFormat::AmdgpuElf => "amdgpu-elf",
            ObjectFormat::Cubin => "cubin",
            ObjectFormat::Ptx => "ptx",
            ObjectFormat::CudaSource => "cuda-source",
        }
    }
}

impl std::fmt::Display for ObjectFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Everything one `Build::compile(name)` produced, as embedded in the user's crate:
/// `rocm_kernels::include_kernels!("name")` expands to a `&'static KernelLibrary`.
#[derive(Debug)]
pub struct KernelLibrary {
    /// The name given to `compile`.
    pub name: &'static str,
    /// Device code: one object per source file, backend and target.
    pub code_objects: &'static [CodeObject],
    /// Every kernel the sources define, each once, with where it is in every backend.
    pub kernels: &'static [KernelDecl],
    /// The `__constant__` and `__device__` variables the sources define at namespace scope.
    pub globals: &'static [GlobalDecl],
}

/// A `__constant__` or `__device__` variable of a library, which the runtime can read and write
/// (`Module::global`).
#[derive(Debug, Clone, Copy)]
pub struct GlobalDecl {
    /// Qualified by its namespaces: `ns::mask`.
    pub name: &'static str,
    /// A `__constant__` variable (read-only in kernels) rather than a `__device__` one.
    pub constant: bool,
    /// Where it is defined, relative to the crate root.
    pub source: &'static str,
    /// Its symbol in GPU code objects (`mask`, `_ZN2ns4maskE`).
    pub symbol: &'static str,
    /// The cpu build's accessor (`void (void **at, unsigned long long *bytes)`) and the race
    /// variant's, type-erased like kernel entries.
    pub cpu: Option<CpuGlobal>,
}

/// The symbol a GPU compiler gives the namespace-scope variable `qualified` (Itanium C++ ABI:
/// the name itself in the global namespace, `_ZN2ns4maskE` for `ns::mask`).
///
/// ```
/// use rocm_kernels_core::library::variable_symbol;
/// assert_eq!(variable_symbol("mask"), "mask");
/// assert_eq!(variable_symbol("ns::mask"), "_ZN2ns4maskE");
/// assert_eq!(variable_symbol("::a::bc::d"), "_ZN1a2bc1dE");
/// ```
pub fn variable_symbol(qualified: &str) -> String {
    let parts: Vec<&str> = qualified.split("::").filter(|p| !p.is_empty()).collect();
    if parts.len() <= 1 {
        return parts.first().copied().unwrap_or_default().to_string();
    }
    let mut s = String::from("_ZN");
    for p in parts {
        s.push_str(&format!("{}{p}", p.len()));
    }
    s.push('E');
    s
}

/// The cpu build's accessors of a [`GlobalDecl`].
#[derive(Debug, Clone, Copy)]
pub struct CpuGlobal {
    /// The type-erased accessor (`void (void **at, unsigned long long *bytes)`) giving the variable's
    /// address and size in bytes.
    pub accessor: *const (),
    /// The race variant's accessor, when the build made the race variant.
    pub race: Option<*const ()>,
}

// Safety: plain function pointers to code linked into the binary.
unsafe impl Sync for CpuGlobal {}
unsafe impl Send for CpuGlobal {}

impl KernelLibrary {
    /// The variable named `name` (`mask`, `ns::mask`, or its symbol).
    pub fn global(&self, name: &str) -> Option<&'static GlobalDecl> {
        let globals: &'static [GlobalDecl] = self.globals;
        let bare = name.trim_start_matches("::");
        globals.iter().find(|g| g.name == bare || g.symbol == bare)
    }
}

impl KernelLibrary {
    /// The kernel named `name`, spelled as in the table or any way [`canonical_kernel_name`]
    /// brings to it (`scale<float >`, `k<16u>`), or by one of its symbols (`_Z5plainPi`).
    pub fn kernel(&self, name: &str) -> Option<&'static KernelDecl> {
        let kernels: &'static [KernelDecl] = self.kernels;
        kernels
            .iter()
            .find(|k| k.name == name)
            .or_else(|| {
                let wanted = canonical_kernel_name(name);
                kernels.iter().find(|k| k.name == wanted)
            })
            .or_else(|| {
                kernels
                    .iter()
                    .find(|k| k.symbols.iter().any(|s| s.symbol == name))
            })
    }

    /// The code objects of one backend, with their index in [`KernelLibrary::code_objects`].
    pub fn objects_of(
        &self,
        backend: Backend,
    ) -> impl Iterator<Item = (usize, &'static CodeObject)> + '_ {
        let objects: &'static [CodeObject] = self.code_objects;
        objects
            .iter()
            .enumerate()
            .filter(move |(_, o)| o.backend == backend)
    }

    /// Whether the cpu backend was built (every kernel then has a cpu entry).
    pub fn has_cpu(&self) -> bool {
        self.kernels.iter().any(|k| k.cpu.is_some())
    }
}

/// One compiled artefact for one target.
#[derive(Debug)]
pub struct CodeObject {
    /// Which runtime loads it.
    pub backend: Backend,
    /// What its bytes are.
    pub format: ObjectFormat,
    /// What it was compiled for: an AMD target id (`gfx90a`, `gfx90a:xnack-`), `sm_90` for a
    /// cubin, `compute_90` for PTX; empty for CUDA source (compiled for the device at load time).
    pub target: &'static str,
    /// The source file it came from, relative to the crate root.
    pub source: &'static str,
    /// The object itself, embedded in the binary.
    pub bytes: &'static [u8],
}

impl CodeObject {
    /// The AMD target id, for AMD objects.
    pub fn amd_target(&self) -> Option<TargetId> {
        (self.backend == Backend::Amd)
            .then(|| TargetId::parse(self.target))
            .flatten()
    }

    /// The NVIDIA architecture number (`90` of `sm_90` or `compute_90`), for cubin and PTX.
    pub fn nvidia_arch(&self) -> Option<u32> {
        let digits = self
            .target
            .strip_prefix("sm_")
            .or_else(|| self.target.strip_prefix("compute_"))?;
        digits.trim_end_matches('a').parse().ok()
    }
}

/// A kernel as the user names it (`saxpy`, `scale<float>` for a template instantiation).
#[derive(Debug)]
pub struct KernelDecl {
    /// The one spelling of its name on every backend ([`canonical_kernel_name`]).
    pub name: &'static str,
    /// The source file defining it, relative to the crate root.
    pub source: &'static str,
    /// Parameters in order; empty when no backend could tell.
    pub params: &'static [ParamDecl],
    /// Its symbol in each code object that holds it (by index into
    /// [`KernelLibrary::code_objects`]). CUDA-source objects have none: NVRTC names them at load
    /// time from [`KernelDecl::name`].
    pub symbols: &'static [ObjectSymbol],
    /// Its entry point in the cpu build, when the cpu backend was built.
    pub cpu: Option<CpuEntry>,
}

impl KernelDecl {
    /// The kernel's symbol in code object `object`.
    pub fn symbol_in(&self, object: usize) -> Option<&'static str> {
        self.symbols
            .iter()
            .find(|s| s.object as usize == object)
            .map(|s| s.symbol)
    }
}

/// Where a kernel is in one code object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ObjectSymbol {
    /// Index into [`KernelLibrary::code_objects`].
    pub object: u32,
    /// The exact symbol (`_Z5scaleIfEvPT_S0_`, or `saxpy` for `extern "C"` kernels).
    pub symbol: &'static str,
}

/// One kernel parameter, as the build read it from the source or the compiled object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamDecl {
    /// Its name in the source.
    pub name: &'static str,
    /// The source type, e.g. `const float*` (empty when only a GPU object told).
    pub type_name: &'static str,
    /// Size in bytes of the argument as passed (8 for pointers); 0 when the build could not tell
    /// (the cpu runtime still checks exact sizes, which the compiled entry reports).
    pub size: u32,
    /// How the argument is passed.
    pub kind: ParamKind,
}

/// How a kernel parameter is passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ParamKind {
    /// A pointer to device memory.
    GlobalBuffer,
    /// A scalar or struct passed by value.
    ByValue,
}

/// A kernel's entry point in the cpu build: the launcher runs it per block (see the cpu
/// runtime).
#[derive(Debug, Clone, Copy)]
pub struct CpuEntry {
    /// Type-erased entry generated by the build; its signature belongs to the cpu runtime.
    pub entry: *const (),
    /// How the cpu runtime runs its blocks.
    pub execution: CpuExecution,
    /// The same kernel instrumented for the race detector (run per thread), when the build made
    /// it (`rocm_kernels_build::Build::cpu_race_variant`).
    pub race: Option<*const ()>,
}

// Safety: entry points are plain function pointers to code linked into the binary.
unsafe impl Sync for CpuEntry {}
unsafe impl Send for CpuEntry {}

/// How the cpu runtime runs a kernel's blocks (chosen by the build). `R` is the reason's type:
/// `&'static str` in a kernel library, borrowed while a manifest is read ([`CpuExecution::parse`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuExecution<R = &'static str> {
    /// In region form: the lanes of a wave in loops between barriers, no fibers.
    Regions,
    /// As a plain loop over the threads (the kernel has no barrier or collective).
    PerThreadLoop,
    /// One fiber per thread, because the region form does not apply (the reason).
    Fibers(R),
}

/// The one spelling, in manifests and reports: `regions`, `per-thread loop`, `fibers: <why>`.
impl<R: std::fmt::Display> std::fmt::Display for CpuExecution<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CpuExecution::Regions => f.write_str("regions"),
            CpuExecution::PerThreadLoop => f.write_str("per-thread loop"),
            CpuExecution::Fibers(why) => write!(f, "fibers: {why}"),
        }
    }
}

impl<'a> CpuExecution<&'a str> {
    /// Reads back what [`Display`](std::fmt::Display) wrote (a manifest's `execution`); other
    /// words are taken as the reason for fibers.
    pub fn parse(words: &'a str) -> Self {
        match words {
            "regions" => CpuExecution::Regions,
            "per-thread loop" => CpuExecution::PerThreadLoop,
            other => CpuExecution::Fibers(other.strip_prefix("fibers: ").unwrap_or(other)),
        }
    }
}

impl<R> CpuExecution<R> {
    /// The same execution with the reason converted (`leak` it for a kernel library).
    pub fn map_reason<S>(self, f: impl FnOnce(R) -> S) -> CpuExecution<S> {
        match self {
            CpuExecution::Regions => CpuExecution::Regions,
            CpuExecution::PerThreadLoop => CpuExecution::PerThreadLoop,
            CpuExecution::Fibers(why) => CpuExecution::Fibers(f(why)),
        }
    }
}

/// The one spelling of a kernel name, whoever produced it: a demangled symbol
/// (`scale<float >`, `k<(unsigned int)16>`) or the source (`k<16u>`, `ns :: k`). Whitespace is
/// dropped except between two words (`unsigned int`) and after a comma, anonymous namespaces are
/// dropped, and integer template arguments lose their casts and suffixes (`16`).
///
/// ```
/// use rocm_kernels_core::library::canonical_kernel_name as c;
/// assert_eq!(c("scale<float >"), "scale<float>");
/// assert_eq!(c("k<(unsigned int)16>"), "k<16>");
/// assert_eq!(c("k<16u>"), "k<16>");
/// assert_eq!(c("k<float,4ul>"), "k<float, 4>");
/// assert_eq!(c("(anonymous namespace)::k"), "k");
/// assert_eq!(c("tile<unsigned  int, -1>"), "tile<unsigned int, -1>");
/// ```
pub fn canonical_kernel_name(name: &str) -> String {
    let name = name.replace("(anonymous namespace)::", "");
    // Tokens: words (identifiers, numbers), and single punctuation characters.
    let mut tokens: Vec<String> = Vec::new();
    let mut chars = name.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_whitespace() {
            continue;
        }
        if c.is_alphanumeric() || c == '_' || c == '.' {
            let mut word = String::from(c);
            while let Some(&n) = chars.peek() {
                if n.is_alphanumeric() || n == '_' || n == '.' {
                    word.push(n);
                    chars.next();
                } else {
                    break;
                }
            }
            tokens.push(word);
        } else {
            tokens.push(c.to_string());
        }
    }
    // `(type)digits` inside template arguments: a cast the demangler writes; drop it.
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        if tokens[i] == "(" {
            if let Some(close) = tokens[i + 1..].iter().position(|t| t == ")") {
                let close = i + 1 + close;
                let is_type = close > i + 1
                    && tokens[i + 1..close]
                        .iter()
                        .all(|t| t.chars().all(|c| c.is_alphanumeric() || c == '_'));
                let before_number = tokens.get(close + 1).is_some_and(|t| is_int_literal(t))
                    || (tokens.get(close + 1).is_some_and(|t| t == "-")
                        && tokens.get(close + 2).is_some_and(|t| is_int_literal(t)));
                if is_type && before_number {
                    i = close + 1;
                    continue;
                }
            }
        }
        let t = &tokens[i];
        out.push(if is_int_literal(t) {
            t.trim_end_matches(['u', 'U', 'l', 'L']).to_owned()
        } else {
            t.clone()
        });
        i += 1;
    }
    let word = |t: &str| {
        t.chars()
            .next()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
    };
    let mut s = String::new();
    for (i, t) in out.iter().enumerate() {
        if i > 0 && word(t) && word(&out[i - 1]) {
            s.push(' ');
        }
        s.push_str(t);
        if t == "," {
            s.push(' ');
        }
    }
    s
}

/// A decimal or hex integer literal, possibly with `u`/`l` suffixes.
fn is_int_literal(t: &str) -> bool {
    let body = t.trim_end_matches(['u', 'U', 'l', 'L']);
    !body.is_empty()
        && (body.chars().all(|c| c.is_ascii_digit())
            || (body.starts_with("0x")
                && body.len() > 2
                && body[2..].chars().all(|c| c.is_ascii_hexdigit())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_from_the_demangler_and_the_source_agree() {
        for (a, b) in [
            ("k<(unsigned int)16>", "k<16u>"),
            ("k<16>", "k<16u>"),
            ("scale<float >", "scale<float>"),
            ("ns::reduce<256, float>", "ns :: reduce < 256 , float >"),
            ("k<(int)-3>", "k<-3>"),
            ("t<unsigned int>", "t<unsigned   int>"),
        ] {
            assert_eq!(
                canonical_kernel_name(a),
                canonical_kernel_name(b),
                "{a} / {b}"
            );
        }
        assert_eq!(canonical_kernel_name("saxpy"), "saxpy");
        assert_eq!(canonical_kernel_name("f<(char)97>"), "f<97>");
        // A parenthesised expression that is not a cast stays.
        assert_eq!(canonical_kernel_name("f<(1+2)>"), "f<(1+2)>");
    }

    #[test]
    fn lookups_accept_any_spelling() {
        static LIB: KernelLibrary = KernelLibrary {
            name: "t",
            code_objects: &[],
            kernels: &[KernelDecl {
                name: "k<16>",
                source: "k.hip",
                params: &[],
                symbols: &[],
                cpu: None,
            }],
            globals: &[GlobalDecl {
                name: "ns::mask",
                constant: true,
                source: "k.hip",
                symbol: "_ZN2ns4maskE",
                cpu: None,
            }],
        };
        assert!(LIB.global("ns::mask").is_some());
        assert!(LIB.global("::ns::mask").is_some());
        assert!(LIB.global("_ZN2ns4maskE").is_some());
        assert!(LIB.global("mask").is_none());
        assert!(LIB.kernel("k<16>").is_some());
        assert!(LIB.kernel("k<16u>").is_some());
        assert!(LIB.kernel("k<(unsigned int)16>").is_some());
        assert!(LIB.kernel("k<17>").is_none());
    }
}
