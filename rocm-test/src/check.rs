//! A check: one kernel, its arguments (in parameter order), its launch, its Rust reference and
//! its tolerance. Registered with [`Suite::check`](crate::Suite::check).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use crate::element::{ElemType, Element, HostBuf, ScalarValue};
use crate::gen::{BufSrc, BufferSource, IntoLen, Len, LenRef, ScalarSource, ScalarSrc, SizeSpec};
use crate::raw::RawValue;
use crate::{Launch, Tolerance};

/// What a buffer argument is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// Read by the kernel; never compared.
    Input,
    /// Read and written; starts with its input values, compared after.
    InOut,
}

#[derive(Clone)]
pub(crate) enum ArgKind {
    Scalar(ScalarSrc),
    /// A by-value argument of a `#[repr(C)]` type: fixed, or computed from the sizes.
    Struct(StructSrc),
    Buffer {
        role: Role,
        src: BufSrc,
    },
    /// `zeroed`: starts as zeros (an accumulator) instead of poison.
    Output {
        ty: ElemType,
        len: Len,
        zeroed: bool,
    },
}

#[derive(Clone)]
pub(crate) struct ArgSpec {
    pub name: String,
    pub kind: ArgKind,
}

type LaunchFn = Arc<dyn Fn(&Inputs<'_>) -> Launch + Send + Sync>;
type ReferenceFn = Arc<dyn Fn(&Inputs<'_>, &mut Outputs<'_>) + Send + Sync>;
type BytesFn = Arc<dyn Fn(&Inputs<'_>) -> u64 + Send + Sync>;

/// Where a by-value struct argument comes from.
#[derive(Clone)]
pub(crate) enum StructSrc {
    Fixed(RawValue),
    FromSizes(Arc<dyn Fn(&Inputs<'_>) -> RawValue + Send + Sync>),
}
type PrintfFn = Arc<dyn Fn(&Inputs<'_>) -> Vec<String> + Send + Sync>;

/// One kernel check. Methods chain on `&mut Check`:
///
/// ```no_run
/// # use rocm_test::{gen, Launch, Suite, Tolerance};
/// # fn register(s: &mut Suite) {
/// s.check("saxpy")
///     .size("n", 1..=5000)
///     .scalar("n", gen::size::<i32>("n"))
///     .scalar("a", gen::value(-4.0f32..4.0))
///     .input("x", gen::vec("n", -1.0f32..1.0))
///     .inout("y", gen::vec("n", -1.0f32..1.0))
///     .launch_with(|i| Launch::cover(i.size("n"), 256))
///     .reference(|i, o| {
///         let (a, x) = (i.scalar::<f32>("a"), i.buf::<f32>("x"));
///         for (y, x) in o.buf::<f32>("y").iter_mut().zip(x) {
///             *y += a * x;
///         }
///     });
/// # }
/// ```
#[derive(Clone)]
pub struct Check {
    pub(crate) name: String,
    pub(crate) kernel: String,
    pub(crate) sizes: Vec<(String, SizeSpec)>,
    pub(crate) args: Vec<ArgSpec>,
    /// `__constant__`/`__device__` variables set before each launch (`Buffer` kinds: inputs, or
    /// in-out ones read back and compared).
    pub(crate) globals: Vec<ArgSpec>,
    pub(crate) launch: Option<LaunchFn>,
    pub(crate) reference: Option<ReferenceFn>,
    /// No Rust reference: another backend's outputs are expected ([`Check::differential`]).
    pub(crate) differential: bool,
    pub(crate) tolerance: Tolerance,
    pub(crate) tolerance_for: BTreeMap<String, Tolerance>,
    pub(crate) cases: Option<u32>,
    /// Bytes the kernel must move, when its bandwidth is to be measured.
    pub(crate) bandwidth: Option<BytesFn>,
    /// The lines the kernel prints, in any order.
    pub(crate) printf: Option<PrintfFn>,
    /// Only on targets with waves of this many lanes.
    pub(crate) wave_size: Option<u32>,
    /// Only on these backends.
    pub(crate) backends: Option<Vec<rocm_kernels::Backend>>,
    /// Mistakes in the registration, reported by every trial of this check.
    pub(crate) errors: Vec<String>,
}

impl Check {
    pub(crate) fn new(kernel: &str) -> Self {
        Check {
            name: kernel.to_owned(),
            kernel: kernel.to_owned(),
            sizes: Vec::new(),
            args: Vec::new(),
            globals: Vec::new(),
            launch: None,
            reference: None,
            differential: false,
            tolerance: Tolerance::default(),
            tolerance_for: BTreeMap::new(),
            cases: None,
            bandwidth: None,
            printf: None,
            wave_size: None,
            backends: None,
            errors: Vec::new(),
        }
    }

    /// Also measure the kernel's bandwidth after it passes: `bytes` is what it must move through
    /// device memory (each input read once, each output written once). The trial times the
    /// kernel and a device-to-device copy moving as many bytes, and reports both and their
    /// ratio (printed, and in the JSON events); it never fails on a slow result.
    ///
    /// ```no_run
    /// # fn f(s: &mut rocm_test::Suite) {
    /// s.check("saxpy")
    ///     // … inputs, launch and reference as usual …
    ///     .bandwidth(|i| 12 * i.size("n") as u64); // read x and y, write y
    /// # }
    /// ```
    pub fn bandwidth(
        &mut self,
        bytes: impl Fn(&Inputs<'_>) -> u64 + Send + Sync + 'static,
    ) -> &mut Self {
        self.bandwidth = Some(Arc::new(bytes));
        self
    }

    /// The check's name in trial names (default: the kernel's name). Use it to check one kernel
    /// several ways: `s.check("scale").named("scale_small")`.
    pub fn named(&mut self, name: &str) -> &mut Self {
        self.name = name.to_owned();
        self
    }

    /// Declare a size: fixed (`1024`) or drawn from a range (`1..=4096`, shrinks towards the low end).
    /// Buffers ([`gen::vec`](crate::gen::vec), [`output`](Self::output)) and scalars
    /// ([`gen::size`](crate::gen::size)) refer to it by name.
    pub fn size(&mut self, name: &str, spec: impl Into<SizeSpec>) -> &mut Self {
        if self.sizes.iter().any(|(n, _)| n == name) {
            self.errors.push(format!("size `{name}` is declared twice"));
        }
        self.sizes.push((name.to_owned(), spec.into()));
        self
    }

    /// The next kernel argument, passed by value: `2.0f32`, `gen::value(0..10u32)`, `gen::size::<i32>("n")`.
    pub fn scalar<T: Element>(&mut self, name: &str, src: impl ScalarSource<T>) -> &mut Self {
        self.push_arg(name, ArgKind::Scalar(src.into_src()))
    }

    /// The next kernel argument, passed by value: any `#[repr(C)]` type that is
    /// [`DeviceCopy`](rocm_kernels::runtime::DeviceCopy) (a struct of parameters, a HIP vector).
    /// Its size and alignment are checked against the kernel's parameter; the reference reads it
    /// back with [`Inputs::value`].
    pub fn by_value<T: rocm_kernels::runtime::DeviceCopy + std::fmt::Debug>(
        &mut self,
        name: &str,
        value: T,
    ) -> &mut Self {
        self.push_arg(
            name,
            ArgKind::Struct(StructSrc::Fixed(RawValue::of(&value))),
        )
    }

    /// [`by_value`](Self::by_value), computed from each case's sizes.
    pub fn by_value_with<T: rocm_kernels::runtime::DeviceCopy + std::fmt::Debug>(
        &mut self,
        name: &str,
        f: impl Fn(&Inputs<'_>) -> T + Send + Sync + 'static,
    ) -> &mut Self {
        self.push_arg(
            name,
            ArgKind::Struct(StructSrc::FromSizes(Arc::new(move |i| RawValue::of(&f(i))))),
        )
    }

    /// A `__constant__` or `__device__` variable of the library, set before every launch to
    /// `src` (explicit values or `gen::vec`; its size must be the variable's). The reference reads
    /// it like an input buffer (`i.buf("mask")`).
    pub fn global<T: Element>(&mut self, name: &str, src: impl BufferSource<T>) -> &mut Self {
        self.push_global(name, Role::Input, src.into_src())
    }

    /// A `__device__` variable set before every launch and read back after it, compared with what
    /// the reference leaves in `o.buf(name)` (which starts with the values set), like an in-out
    /// buffer: a counter, a histogram in device memory.
    pub fn global_inout<T: Element>(&mut self, name: &str, src: impl BufferSource<T>) -> &mut Self {
        self.push_global(name, Role::InOut, src.into_src())
    }

    fn push_global(&mut self, name: &str, role: Role, src: BufSrc) -> &mut Self {
        if self.globals.iter().any(|g| g.name == name) {
            self.errors
                .push(format!("variable `{name}` is declared twice"));
        }
        self.globals.push(ArgSpec {
            name: name.to_owned(),
            kind: ArgKind::Buffer { role, src },
        });
        self
    }

    /// The next kernel argument, a buffer the kernel reads: `vec![…]` or `gen::vec("n", …)`.
    pub fn input<T: Element>(&mut self, name: &str, src: impl BufferSource<T>) -> &mut Self {
        self.push_arg(
            name,
            ArgKind::Buffer {
                role: Role::Input,
                src: src.into_src(),
            },
        )
    }

    /// The next kernel argument, a buffer the kernel writes, `len` elements long (a size name, a
    /// number, or `|i: &Inputs| …`). It is filled with poison before every launch, so an element
    /// the kernel does not write fails the check.
    pub fn output<T: Element>(&mut self, name: &str, len: impl IntoLen) -> &mut Self {
        self.push_arg(
            name,
            ArgKind::Output {
                ty: T::TYPE,
                len: len.into_len(),
                zeroed: false,
            },
        )
    }

    /// The next kernel argument, a buffer the kernel adds to (a histogram, a sum by atomics):
    /// `len` elements that start as zeros on the device and in the reference, instead of poison.
    pub fn output_zeroed<T: Element>(&mut self, name: &str, len: impl IntoLen) -> &mut Self {
        self.push_arg(
            name,
            ArgKind::Output {
                ty: T::TYPE,
                len: len.into_len(),
                zeroed: true,
            },
        )
    }

    /// What the kernel prints with `printf`, as lines (in any order: threads print in no fixed
    /// order on a GPU). The trial captures the process's standard output around the launch and
    /// compares its lines, sorted, with these, sorted. A kernel whose only output is what it
    /// prints can be checked this way (no output buffer needed).
    pub fn printf(
        &mut self,
        expected: impl Fn(&Inputs<'_>) -> Vec<String> + Send + Sync + 'static,
    ) -> &mut Self {
        self.printf = Some(Arc::new(expected));
        self
    }

    /// Run this check only on targets whose waves have `size` lanes (a warp-level kernel written
    /// for one wave size); its trials elsewhere are ignored, with the reason. References and
    /// launch functions can also read [`Inputs::wave_size`] and handle every size.
    pub fn only_wave_size(&mut self, size: u32) -> &mut Self {
        self.wave_size = Some(size);
        self
    }

    /// Run this check only on these backends (`[Backend::Cpu]`); its trials on others are
    /// ignored, with the reason.
    pub fn only_backends(
        &mut self,
        backends: impl IntoIterator<Item = rocm_kernels::Backend>,
    ) -> &mut Self {
        self.backends = Some(backends.into_iter().collect());
        self
    }

    /// Why this check does not run on `place` (whose waves have `wave_size` lanes, when known).
    pub(crate) fn excluded_from(
        &self,
        place: &crate::TrialPlace,
        wave_size: Option<u32>,
    ) -> Option<String> {
        if let Some(backends) = &self.backends {
            if !backends.contains(&place.backend) {
                let names: Vec<String> = backends.iter().map(|b| b.to_string()).collect();
                return Some(format!(
                    "check `{}` runs only on {} (only_backends)",
                    self.name,
                    names.join(", ")
                ));
            }
        }
        match (self.wave_size, wave_size) {
            (Some(want), Some(have)) if want != have => Some(format!(
                "check `{}` is for waves of {want} lanes; {place} runs waves of {have} \
                 (only_wave_size)",
                self.name
            )),
            _ => None,
        }
    }

    /// The next kernel argument, a buffer the kernel reads and writes. The reference's copy starts
    /// with the same values.
    pub fn inout<T: Element>(&mut self, name: &str, src: impl BufferSource<T>) -> &mut Self {
        self.push_arg(
            name,
            ArgKind::Buffer {
                role: Role::InOut,
                src: src.into_src(),
            },
        )
    }

    /// A fixed launch configuration.
    pub fn launch(&mut self, launch: Launch) -> &mut Self {
        self.launch = Some(Arc::new(move |_| launch));
        self
    }

    /// A launch configuration computed from each case's inputs.
    pub fn launch_with(
        &mut self,
        f: impl Fn(&Inputs<'_>) -> Launch + Send + Sync + 'static,
    ) -> &mut Self {
        self.launch = Some(Arc::new(f));
        self
    }

    /// The Rust reference: reads the inputs, writes the expected outputs. Output buffers start
    /// zeroed, in-out buffers with their input values.
    pub fn reference(
        &mut self,
        f: impl Fn(&Inputs<'_>, &mut Outputs<'_>) + Send + Sync + 'static,
    ) -> &mut Self {
        self.reference = Some(Arc::new(f));
        self
    }

    /// No Rust reference: the expected outputs come from another backend, for kernels whose
    /// reference is impractical to write (a port of an existing program, say). On a GPU trial
    /// they are the cpu backend's for the same inputs and launch (its wave size the GPU's), run
    /// in the same process; on a cpu trial, outputs a GPU recorded for the same inputs in the
    /// suite's [`snapshots`](crate::Suite::snapshots) folder (run a GPU trial with
    /// `ROCM_TEST_RECORD=1` to record them, then commit the folder). Inputs are generated alike
    /// on every machine (the seed is stable per check), so a GPU-less CI checks the cpu backend
    /// against the GPU. Keep such checks small: `.cases(8)` and outputs of a few thousand
    /// elements make snapshots of tens of kilobytes. The tolerance applies as usual; a NaN
    /// where the other side has NaN agrees.
    ///
    /// ```
    /// # use rocm_test::{gen, Launch, Suite};
    /// # fn checks(s: &mut Suite) {
    /// s.check("scale")
    ///     .size("n", 1..=4096)
    ///     .input("x", gen::vec("n", -1.0f32..1.0))
    ///     .output::<f32>("y", "n")
    ///     .scalar("n", gen::size::<u32>("n"))
    ///     .launch_with(|i| Launch::cover(i.size("n"), 256))
    ///     .cases(8)
    ///     .differential();
    /// # }
    /// ```
    pub fn differential(&mut self) -> &mut Self {
        self.differential = true;
        self
    }

    /// The tolerance for every output (default: [`Tolerance::default`]).
    pub fn tolerance(&mut self, tol: Tolerance) -> &mut Self {
        self.tolerance = tol;
        self
    }

    /// The tolerance for one output, overriding [`tolerance`](Self::tolerance).
    pub fn tolerance_for(&mut self, output: &str, tol: Tolerance) -> &mut Self {
        self.tolerance_for.insert(output.to_owned(), tol);
        self
    }

    /// How many generated cases to run (default 32, or `ROCM_TEST_CASES`). Ignored when every
    /// input is explicit: that check runs once.
    pub fn cases(&mut self, n: u32) -> &mut Self {
        self.cases = Some(n);
        self
    }

    fn push_arg(&mut self, name: &str, kind: ArgKind) -> &mut Self {
        if self.args.iter().any(|a| a.name == name) {
            self.errors
                .push(format!("argument `{name}` is declared twice"));
        }
        self.args.push(ArgSpec {
            name: name.to_owned(),
            kind,
        });
        self
    }

    /// Whether every input is explicit (one case, no generation, no seed).
    pub(crate) fn is_fixed(&self) -> bool {
        self.sizes.iter().all(|(_, s)| s.is_fixed())
            && !self.args.iter().chain(&self.globals).any(|a| {
                matches!(
                    &a.kind,
                    ArgKind::Scalar(ScalarSrc::Gen(_))
                        | ArgKind::Buffer {
                            src: BufSrc::Gen { .. },
                            ..
                        }
                )
            })
    }

    pub(crate) fn tolerance_of(&self, output: &str) -> Tolerance {
        self.tolerance_for
            .get(output)
            .copied()
            .unwrap_or(self.tolerance)
    }

    /// Registration mistakes that can be found without running anything.
    pub(crate) fn validate(&self) -> Vec<String> {
        let mut errs = self.errors.clone();
        let size_known = |n: &str| self.sizes.iter().any(|(s, _)| s == n);
        for a in &self.args {
            let size_refs: Vec<&String> = match &a.kind {
                ArgKind::Scalar(ScalarSrc::Size { name, .. }) => vec![name],
                ArgKind::Buffer {
                    src:
                        BufSrc::Gen {
                            len: LenRef::Size(name),
                            ..
                        },
                    ..
                } => vec![name],
                ArgKind::Buffer {
                    src:
                        BufSrc::Gen {
                            len: LenRef::Product(x, y),
                            ..
                        },
                    ..
                } => vec![x, y],
                ArgKind::Output {
                    len: Len::Size(name),
                    ..
                } => vec![name],
                _ => Vec::new(),
            };
            for s in size_refs.into_iter().filter(|s| !size_known(s)) {
                errs.push(format!(
                    "argument `{}` refers to size `{s}`, which is not declared: add `.size(\"{s}\", …)`",
                    a.name
                ));
            }
        }
        for o in self.tolerance_for.keys() {
            if !self.args.iter().any(|a| {
                &a.name == o
                    && matches!(
                        a.kind,
                        ArgKind::Output { .. }
                            | ArgKind::Buffer {
                                role: Role::InOut,
                                ..
                            }
                    )
            }) {
                errs.push(format!(
                    "`tolerance_for(\"{o}\", …)` names no output or in-out buffer"
                ));
            }
        }
        if self.launch.is_none() {
            errs.push(
                "no launch configuration: add `.launch(Launch::new(grid, block))` or `.launch_with(|i| …)`"
                    .into(),
            );
        }
        if self.reference.is_none() && self.printf.is_none() && !self.differential {
            errs.push(
                "no reference: add `.reference(|inputs, outputs| …)` (or `.differential()` to \
                 compare with another backend)"
                    .into(),
            );
        }
        if self.reference.is_some() && self.differential {
            errs.push(
                "both a reference and `.differential()`: keep one (the Rust reference when it \
                 exists)"
                    .into(),
            );
        }
        if self.printf.is_none()
            && !self.args.iter().chain(&self.globals).any(|a| {
                matches!(
                    a.kind,
                    ArgKind::Output { .. }
                        | ArgKind::Buffer {
                            role: Role::InOut,
                            ..
                        }
                )
            })
        {
            errs.push(
                "no output: declare at least one `.output(…)` or `.inout(…)` buffer, or what the \
                 kernel prints (`.printf(…)`)"
                    .into(),
            );
        }
        errs
    }

    /// Compare the declared arguments with the kernel's parameters, where the build knows them.
    pub(crate) fn validate_params(
        &self,
        params: &[rocm_kernels::library::ParamDecl],
    ) -> Vec<String> {
        use rocm_kernels::library::ParamKind;
        if params.is_empty() {
            return Vec::new();
        }
        let mut errs = Vec::new();
        if params.len() != self.args.len() {
            let names: Vec<&str> = params.iter().map(|p| p.name).collect();
            errs.push(format!(
                "kernel `{}` takes {} parameters ({}) but the check declares {} arguments",
                self.kernel,
                params.len(),
                names.join(", "),
                self.args.len()
            ));
            return errs;
        }
        // Arguments are passed by position. Declared under the kernel's own parameter names but
        // in another order, they would reach the wrong parameters (an output buffer the kernel
        // reads, an input it overwrites) and fail as "never written" far from the cause.
        let declared: Vec<&str> = self.args.iter().map(|a| a.name.as_str()).collect();
        let named: Vec<&str> = params.iter().map(|p| p.name).collect();
        let mut sorted_declared = declared.clone();
        let mut sorted_named = named.clone();
        sorted_declared.sort_unstable();
        sorted_named.sort_unstable();
        if declared != named && sorted_declared == sorted_named {
            errs.push(format!(
                "kernel `{}` takes ({}) but the check declares its arguments as ({}): arguments \
                 are passed in the order they are declared, so declare them in the kernel's \
                 parameter order",
                self.kernel,
                named.join(", "),
                declared.join(", ")
            ));
            return errs;
        }
        for (p, a) in params.iter().zip(&self.args) {
            let is_buffer = !matches!(a.kind, ArgKind::Scalar(_) | ArgKind::Struct(_));
            let param = format!("`{} {}`", p.type_name, p.name);
            match (p.kind, is_buffer) {
                (ParamKind::GlobalBuffer, false) => errs.push(format!(
                    "argument `{}` is declared as a by-value argument but parameter {param} is a \
                     pointer",
                    a.name
                )),
                (ParamKind::ByValue, true) => errs.push(format!(
                    "argument `{}` is declared as a buffer but parameter {param} is passed by value",
                    a.name
                )),
                (ParamKind::ByValue, false) => {
                    // (size, alignment, what it is) of the argument, where known before running.
                    let arg = match &a.kind {
                        ArgKind::Scalar(ScalarSrc::Fixed(v)) => {
                            let t = v.elem_type();
                            Some((t.size(), None, t.name().to_string()))
                        }
                        ArgKind::Struct(StructSrc::Fixed(v)) => {
                            Some((v.size(), Some(v.align()), v.type_name().to_string()))
                        }
                        _ => None,
                    };
                    let Some((size, align, what)) = arg else { continue };
                    if p.size != 0 && size as u32 != p.size {
                        errs.push(format!(
                            "argument `{}` ({what}) is {size} bytes but parameter {param} is {} \
                             bytes",
                            a.name, p.size
                        ));
                    }
                    let want_align = crate::ctypes::vector_align(p.type_name);
                    if let (Some(have), Some(want)) = (align, want_align) {
                        if have != want {
                            errs.push(format!(
                                "argument `{}` ({what}) is aligned to {have} bytes but parameter \
                                 {param} to {want}: use rocm_kernels::vector's types or \
                                 `#[repr(C, align({want}))]`",
                                a.name
                            ));
                        }
                    }
                }
                (ParamKind::GlobalBuffer, true) => {
                    let elem = match &a.kind {
                        ArgKind::Buffer {
                            src: BufSrc::Values(b),
                            ..
                        } => Some(b.elem_type()),
                        ArgKind::Buffer {
                            src: BufSrc::Gen { elem, .. },
                            ..
                        } => Some(*elem),
                        ArgKind::Output { ty, .. } => Some(*ty),
                        _ => None,
                    };
                    let pointee = crate::ctypes::pointee(p.type_name);
                    if let (Some(elem), Some(pointee)) = (elem, pointee) {
                        if !crate::ctypes::matches(elem, &pointee) {
                            let fix = match crate::ctypes::elem_for(&pointee) {
                                Some(want) => format!(
                                    ": declare it with elements of {want}{}",
                                    rust_path(want)
                                ),
                                None => String::new(),
                            };
                            errs.push(format!(
                                "argument `{}` is a buffer of {elem} (`{}` in HIP) but parameter \
                                 {param} points to {pointee}{fix}",
                                a.name,
                                elem.c_name()
                            ));
                        }
                    }
                }
            }
        }
        errs
    }
}

/// Where a Rust element type lives, for the half types that are not in the prelude.
fn rust_path(elem: ElemType) -> &'static str {
    match elem {
        ElemType::F16 => " (`half::f16`)",
        ElemType::BF16 => " (`half::bf16`)",
        _ => "",
    }
}

/// One generated (or explicit) set of argument values.
#[derive(Clone)]
pub(crate) struct Case {
    pub sizes: Vec<(String, usize)>,
    /// Per argument, in order; `None` for output-only buffers (sized at run time).
    pub values: Vec<(String, Option<CaseValue>)>,
}

#[derive(Clone, Debug)]
pub(crate) enum CaseValue {
    Scalar(ScalarValue),
    Struct(RawValue),
    Buffer(HostBuf),
}

impl fmt::Debug for Case {
    /// What a failure report prints as the (shrunk) input.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for (n, v) in &self.sizes {
            if !first {
                f.write_str(", ")?;
            }
            first = false;
            write!(f, "size {n} = {v}")?;
        }
        for (n, v) in &self.values {
            let Some(v) = v else { continue };
            if !first {
                f.write_str(", ")?;
            }
            first = false;
            match v {
                CaseValue::Scalar(s) => write!(f, "{n} = {s:?}")?,
                CaseValue::Struct(s) => write!(f, "{n} = {s:?}")?,
                CaseValue::Buffer(b) => write!(f, "{n} = {b:?}")?,
            }
        }
        Ok(())
    }
}

/// Read access to one case's inputs, for the reference and for computed launches and lengths,
/// and to the target the trial runs on.
pub struct Inputs<'a> {
    pub(crate) case: &'a Case,
    /// Where the case runs, and its wave size; `None` while inputs are generated (the same on
    /// every target).
    pub(crate) target: Option<(&'a crate::TrialPlace, u32)>,
}

impl Inputs<'_> {
    /// The number of lanes in a wave on the target this trial runs on (`warpSize`: 32 or 64), for
    /// references and launches of warp-level kernels.
    ///
    /// # Panics
    /// When called to compute a generated input's length or value (inputs are drawn once for
    /// every target); output lengths, launches and references can call it.
    pub fn wave_size(&self) -> u32 {
        match self.target {
            Some((_, w)) => w,
            None => panic!(
                "the wave size is not known while inputs are generated (they are the same on \
                 every target): use it in output lengths, launches and references"
            ),
        }
    }

    /// The target this trial runs on (`cpu/w64`, `nvidia/sm_90`); `None` while inputs are
    /// generated.
    pub fn target(&self) -> Option<&crate::TrialPlace> {
        self.target.map(|(p, _)| p)
    }

    /// The value of size `name`.
    ///
    /// # Panics
    /// When no size has that name (a mistake in the check, reported as the trial's failure).
    pub fn size(&self, name: &str) -> usize {
        match self.case.sizes.iter().find(|(n, _)| n == name) {
            Some((_, v)) => *v,
            None => panic!("no size named `{name}` in this check"),
        }
    }

    /// The contents of input or in-out buffer `name` (in-out: the values before the launch).
    ///
    /// # Panics
    /// When there is no such buffer or its element type is not `T`.
    pub fn buf<T: Element>(&self, name: &str) -> &[T] {
        match self.arg_value(name) {
            Some(CaseValue::Buffer(b)) => T::slice(b).unwrap_or_else(|| {
                panic!("buffer `{name}` holds {}, not {}", b.elem_type(), T::TYPE)
            }),
            _ => panic!("no input buffer named `{name}` (outputs are read from `Outputs`)"),
        }
    }

    /// The value of by-value argument `name`.
    ///
    /// # Panics
    /// When there is no such argument or its type is not `T`.
    pub fn scalar<T: Element>(&self, name: &str) -> T {
        match self.arg_value(name) {
            Some(CaseValue::Scalar(s)) => T::unwrap_scalar(s)
                .unwrap_or_else(|| panic!("scalar `{name}` is {}, not {}", s.elem_type(), T::TYPE)),
            _ => panic!("no scalar argument named `{name}`"),
        }
    }

    /// The value of by-value argument `name` of a `#[repr(C)]` type (declared with
    /// [`Check::by_value`]).
    ///
    /// # Panics
    /// When there is no such argument or its type is not `T`.
    pub fn value<T: rocm_kernels::runtime::DeviceCopy>(&self, name: &str) -> T {
        match self.arg_value(name) {
            Some(CaseValue::Struct(v)) => v.get::<T>().unwrap_or_else(|| {
                panic!(
                    "argument `{name}` is a {}, not a {}",
                    v.type_name(),
                    std::any::type_name::<T>()
                )
            }),
            _ => panic!("no by-value struct argument named `{name}` (numbers: `scalar`)"),
        }
    }

    fn arg_value(&self, name: &str) -> Option<&CaseValue> {
        self.case
            .values
            .iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, v)| v.as_ref())
    }
}

/// Write access to the reference's output buffers.
pub struct Outputs<'a> {
    pub(crate) names: &'a [String],
    pub(crate) bufs: &'a mut [HostBuf],
}

impl Outputs<'_> {
    /// Output or in-out buffer `name`, to fill with the expected values.
    ///
    /// # Panics
    /// When there is no such output or its element type is not `T`.
    pub fn buf<T: Element>(&mut self, name: &str) -> &mut [T] {
        let Some(i) = self.names.iter().position(|n| n == name) else {
            panic!(
                "no output named `{name}` (outputs: {})",
                self.names.join(", ")
            )
        };
        let ty = self.bufs[i].elem_type();
        T::slice_mut(&mut self.bufs[i])
            .unwrap_or_else(|| panic!("output `{name}` holds {ty}, not {}", T::TYPE))
    }

    /// Two different outputs at once (for references that fill both in one pass).
    ///
    /// # Panics
    /// As [`buf`](Self::buf), and when `a == b`.
    pub fn pair<A: Element, B: Element>(&mut self, a: &str, b: &str) -> (&mut [A], &mut [B]) {
        let find = |name: &str| {
            self.names
                .iter()
                .position(|n| n == name)
                .unwrap_or_else(|| panic!("no output named `{name}`"))
        };
        let (ia, ib) = (find(a), find(b));
        assert_ne!(ia, ib, "`pair` needs two different outputs");
        let (lo, hi) = self.bufs.split_at_mut(ia.max(ib));
        let (first, second) = (&mut lo[ia.min(ib)], &mut hi[0]);
        let (ba, bb) = if ia < ib {
            (first, second)
        } else {
            (second, first)
        };
        (
            A::slice_mut(ba).unwrap_or_else(|| panic!("output `{a}` is not {}", A::TYPE)),
            B::slice_mut(bb).unwrap_or_else(|| panic!("output `{b}` is not {}", B::TYPE)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen;

    #[test]
    fn validation_finds_registration_mistakes() {
        let mut c = Check::new("k");
        c.input("x", gen::vec("m", 0.0f32..1.0))
            .scalar("x", 1i32)
            .tolerance_for("z", Tolerance::exact());
        let errs = c.validate().join("\n");
        assert!(errs.contains("argument `x` is declared twice"), "{errs}");
        assert!(
            errs.contains("refers to size `m`, which is not declared"),
            "{errs}"
        );
        assert!(
            errs.contains("`tolerance_for(\"z\", …)` names no output"),
            "{errs}"
        );
        assert!(errs.contains("no launch configuration"), "{errs}");
        assert!(errs.contains("no reference"), "{errs}");
        assert!(errs.contains("no output"), "{errs}");
    }

    #[test]
    fn params_are_checked_against_the_kernel() {
        use rocm_kernels::library::{ParamDecl, ParamKind};
        let params = [
            ParamDecl {
                name: "x",
                type_name: "const float*",
                size: 8,
                kind: ParamKind::GlobalBuffer,
            },
            ParamDecl {
                name: "n",
                type_name: "int",
                size: 4,
                kind: ParamKind::ByValue,
            },
        ];
        let mut c = Check::new("k");
        c.input("x", vec![1.0f32]).scalar("n", 1i64);
        let errs = c.validate_params(&params).join("\n");
        assert!(
            errs.contains("argument `n` (i64) is 8 bytes but parameter `int n` is 4 bytes"),
            "{errs}"
        );
        let mut c = Check::new("k");
        c.scalar("x", 1.0f32).input("n", vec![1i32]);
        let errs = c.validate_params(&params).join("\n");
        assert!(errs.contains(
            "declared as a by-value argument but parameter `const float* x` is a pointer"
        ));
        assert!(errs.contains("declared as a buffer but parameter `int n` is passed by value"));
        let mut c = Check::new("k");
        c.scalar("x", 1.0f32);
        assert!(c.validate_params(&params)[0].contains("takes 2 parameters (x, n)"));
        // A buffer's element type against the pointee; a struct's size and a vector's alignment.
        let mut c = Check::new("k");
        c.input("x", vec![1.0f64]).scalar("n", 1i32);
        let errs = c.validate_params(&params).join("\n");
        assert!(
            errs.contains(
                "argument `x` is a buffer of f64 (`double` in HIP) but parameter `const float* x` \
                 points to float: declare it with elements of f32"
            ),
            "{errs}"
        );
        // Half precision: what the kernel's pointer reads decides, u16 bits included.
        let half_params = [
            ParamDecl {
                name: "x",
                type_name: "const __hip_bfloat16* __restrict__",
                size: 8,
                kind: ParamKind::GlobalBuffer,
            },
            ParamDecl {
                name: "y",
                type_name: "__half*",
                size: 8,
                kind: ParamKind::GlobalBuffer,
            },
        ];
        let mut c = Check::new("k");
        c.input("x", gen::vec(4, gen::rounded::<half::bf16>(-1.0..1.0)))
            .output::<half::f16>("y", 4);
        assert!(c.validate_params(&half_params).is_empty());
        let mut c = Check::new("k");
        c.input("x", gen::vec(4, gen::rounded::<half::f16>(-1.0..1.0)))
            .output::<u16>("y", 4);
        let errs = c.validate_params(&half_params).join("\n");
        assert!(
            errs.contains(
                "argument `x` is a buffer of f16 (`__half` in HIP) but parameter `const \
                 __hip_bfloat16* __restrict__ x` points to __hip_bfloat16: declare it with \
                 elements of bf16 (`half::bf16`)"
            ),
            "{errs}"
        );
        assert!(
            errs.contains(
                "argument `y` is a buffer of u16 (`unsigned short` in HIP) but parameter `__half* \
                 y` points to __half: declare it with elements of f16 (`half::f16`)"
            ),
            "{errs}"
        );
        // The kernel's parameter names in another order: refused, naming both orders.
        let swapped = [
            ParamDecl {
                name: "out",
                type_name: "float*",
                size: 8,
                kind: ParamKind::GlobalBuffer,
            },
            ParamDecl {
                name: "in",
                type_name: "const float*",
                size: 8,
                kind: ParamKind::GlobalBuffer,
            },
        ];
        let mut c = Check::new("k");
        c.input("in", vec![1.0f32]).output::<f32>("out", 1);
        let errs = c.validate_params(&swapped).join("\n");
        assert!(
            errs.contains("takes (out, in) but the check declares its arguments as (in, out)"),
            "{errs}"
        );
        let mut c = Check::new("k");
        c.output::<f32>("out", 1).input("in", vec![1.0f32]);
        assert!(c.validate_params(&swapped).is_empty());
        let vec_params = [ParamDecl {
            name: "v",
            type_name: "float4",
            size: 16,
            kind: ParamKind::ByValue,
        }];
        let mut c = Check::new("k");
        c.by_value("v", [1.0f32; 4]);
        let errs = c.validate_params(&vec_params).join("\n");
        assert!(
            errs.contains("is aligned to 4 bytes but parameter `float4 v` to 16"),
            "{errs}"
        );
        let mut c = Check::new("k");
        c.by_value("v", rocm_kernels::vector::Float4::new(1.0, 2.0, 3.0, 4.0));
        assert!(c.validate_params(&vec_params).is_empty());
        let mut c = Check::new("k");
        c.by_value("v", [1.0f32; 3]);
        let errs = c.validate_params(&vec_params).join("\n");
        assert!(
            errs.contains("is 12 bytes but parameter `float4 v` is 16 bytes"),
            "{errs}"
        );
    }

    #[test]
    fn outputs_pair_gives_two_disjoint_buffers() {
        let names = ["a".to_owned(), "b".to_owned()];
        let mut bufs = [HostBuf::from(vec![0f32; 2]), HostBuf::from(vec![0u32; 3])];
        let mut o = Outputs {
            names: &names,
            bufs: &mut bufs,
        };
        let (b, a) = o.pair::<u32, f32>("b", "a");
        b[2] = 7;
        a[1] = 1.5;
        assert_eq!(bufs[1], HostBuf::from(vec![0u32, 0, 7]));
        assert_eq!(bufs[0], HostBuf::from(vec![0f32, 1.5]));
    }
}
