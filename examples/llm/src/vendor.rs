//! The vendor BLAS as a baseline for the benches: cuBLAS on `nvidia`, rocBLAS on `amd`, loaded at
//! run time (like the HIP and CUDA runtimes), so the crate builds and runs without them. A missing
//! library or symbol is an error value that says what was looked for: the bench skips the
//! baseline with it.
//!
//! Both libraries are column-major; [`VendorBlas::sgemm`] takes row-major matrices, as the
//! kernels do (a row-major `c = a b` is the column-major `c^T = b^T a^T`). Calls go to the
//! library's default (legacy) stream, which orders itself with the runtime's streams: timing
//! events recorded on a `Stream` before and after a call span it.

use std::ffi::{c_int, c_void};

use rocm_kernels::runtime::Backend;

/// A device address (`Buffer::device_ptr`).
pub type DevicePtr = u64;

/// Where to look, first to last: `ROCM_VENDOR_BLAS` (a path), then the usual names.
const CUBLAS: &[&str] = &[
    "libcublas.so.13",
    "libcublas.so.12",
    "libcublas.so",
    "/usr/local/cuda/lib64/libcublas.so.13",
    "/usr/local/cuda/lib64/libcublas.so",
];
const ROCBLAS: &[&str] = &[
    "librocblas.so.5",
    "librocblas.so.4",
    "librocblas.so",
    "/opt/rocm/lib/librocblas.so",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flavour {
    Cublas,
    Rocblas,
}

type Handle = *mut c_void;
type GemmStridedBatched = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    *const f32,
    *const f32,
    c_int,
    i64,
    *const f32,
    c_int,
    i64,
    *const f32,
    *mut f32,
    c_int,
    i64,
    c_int,
) -> c_int;

/// cuBLAS's `cublasGemmStridedBatchedEx`: the element types are `cudaDataType` values, the
/// computation a `cublasComputeType_t`, the algorithm a `cublasGemmAlgo_t`.
type CublasGemmEx = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    *const c_void,
    *const c_void,
    c_int,
    c_int,
    i64,
    *const c_void,
    c_int,
    c_int,
    i64,
    *const c_void,
    *mut c_void,
    c_int,
    c_int,
    i64,
    c_int,
    c_int,
    c_int,
) -> c_int;

/// rocBLAS's `rocblas_gemm_strided_batched_ex`: c and d (the output) are separate operands, the
/// types `rocblas_datatype` values; then the algorithm, a solution index and flags.
type RocblasGemmEx = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    *const c_void,
    *const c_void,
    c_int,
    c_int,
    i64,
    *const c_void,
    c_int,
    c_int,
    i64,
    *const c_void,
    *const c_void,
    c_int,
    c_int,
    i64,
    *mut c_void,
    c_int,
    c_int,
    i64,
    c_int,
    c_int,
    c_int,
    i32,
    u32,
) -> c_int;

#[derive(Clone, Copy)]
enum GemmEx {
    Cublas(CublasGemmEx),
    Rocblas(RocblasGemmEx),
}

/// The element type of a mixed-precision GEMM's matrices ([`VendorBlas::gemm_ex_batched`]); the
/// products are summed in f32 (tensor cores or matrix cores where the library chooses them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HalfType {
    /// IEEE binary16.
    F16,
    /// bfloat16.
    Bf16,
}

/// A row-major batched `c = alpha * a * op(b)` as the column-major call both libraries take:
/// `c^T (n × m) = op(b)^T (n × k) · a^T (k × m)`, the sizes as BLAS ints.
struct ColMajor {
    trans_b: c_int,
    trans_a: c_int,
    n: c_int,
    m: c_int,
    k: c_int,
    ldb: c_int,
    batch: c_int,
}

/// A loaded vendor BLAS with its handle.
pub struct VendorBlas {
    flavour: Flavour,
    handle: Handle,
    gemm: GemmStridedBatched,
    gemm_ex: Option<GemmEx>,
    destroy: unsafe extern "C" fn(Handle) -> c_int,
    path: String,
    // Last: the library outlives the function pointers above.
    _lib: libloading::Library,
}

/// A matrix operand in device memory: row-major `rows × cols`, `batch` of them `stride` apart.
#[derive(Debug, Clone, Copy)]
pub struct Operand {
    /// The first matrix's first element.
    pub ptr: DevicePtr,
    /// Elements from one matrix of the batch to the next (0: every batch reuses one matrix).
    pub stride: usize,
}

impl VendorBlas {
    /// The vendor BLAS of `backend`'s devices, or why there is none.
    pub fn load(backend: Backend) -> Result<Self, String> {
        let (flavour, names) = match backend {
            Backend::Nvidia => (Flavour::Cublas, CUBLAS),
            Backend::Amd => (Flavour::Rocblas, ROCBLAS),
            other => return Err(format!("no vendor BLAS on the {other} backend")),
        };
        let own = std::env::var("ROCM_VENDOR_BLAS").ok();
        let mut tried = Vec::new();
        let (lib, path) = own
            .iter()
            .map(String::as_str)
            .chain(names.iter().copied())
            .find_map(|name| {
                // Safety: loading a vendor library runs its initialisers, which is what it is for.
                match unsafe { libloading::Library::new(name) } {
                    Ok(lib) => Some((lib, name.to_owned())),
                    Err(e) => {
                        tried.push(format!("{name} ({e})"));
                        None
                    }
                }
            })
            .ok_or_else(|| {
                format!(
                    "no {} found (tried {}): install it, or set ROCM_VENDOR_BLAS to its path",
                    if flavour == Flavour::Cublas {
                        "cuBLAS"
                    } else {
                        "rocBLAS"
                    },
                    tried.join(", ")
                )
            })?;
        let (create, destroy, gemm) = match flavour {
            Flavour::Cublas => (
                "cublasCreate_v2",
                "cublasDestroy_v2",
                "cublasSgemmStridedBatched",
            ),
            Flavour::Rocblas => (
                "rocblas_create_handle",
                "rocblas_destroy_handle",
                "rocblas_sgemm_strided_batched",
            ),
        };
        let sym = |name: &str| format!("{path} has no `{name}`: is it the vendor BLAS?");
        // Safety: the types are the libraries' documented signatures (rocblas_int and
        // rocblas_stride are int32 and int64; the operation enums are ints).
        unsafe {
            let create: libloading::Symbol<unsafe extern "C" fn(*mut Handle) -> c_int> =
                lib.get(create.as_bytes()).map_err(|_| sym(create))?;
            let destroy = *lib
                .get::<unsafe extern "C" fn(Handle) -> c_int>(destroy.as_bytes())
                .map_err(|_| sym(destroy))?;
            let gemm = *lib
                .get::<GemmStridedBatched>(gemm.as_bytes())
                .map_err(|_| sym(gemm))?;
            // The half-precision GEMM is optional: without it only the f32 baseline runs.
            let gemm_ex = match flavour {
                Flavour::Cublas => lib
                    .get::<CublasGemmEx>(b"cublasGemmStridedBatchedEx")
                    .ok()
                    .map(|f| GemmEx::Cublas(*f)),
                Flavour::Rocblas => lib
                    .get::<RocblasGemmEx>(b"rocblas_gemm_strided_batched_ex")
                    .ok()
                    .map(|f| GemmEx::Rocblas(*f)),
            };
            let mut handle: Handle = std::ptr::null_mut();
            let status = create(&mut handle);
            if status != 0 {
                return Err(format!(
                    "{path}: creating a handle failed with status {status}"
                ));
            }
            Ok(VendorBlas {
                flavour,
                handle,
                gemm,
                gemm_ex,
                destroy,
                path,
                _lib: lib,
            })
        }
    }

    /// The library's file, for reports.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Whether [`gemm_ex_batched`](Self::gemm_ex_batched) is there.
    pub fn has_gemm_ex(&self) -> bool {
        self.gemm_ex.is_some()
    }

    fn op(&self, transpose: bool) -> c_int {
        match (self.flavour, transpose) {
            (Flavour::Cublas, false) => 0,
            (Flavour::Cublas, true) => 1,
            (Flavour::Rocblas, false) => 111,
            (Flavour::Rocblas, true) => 112,
        }
    }

    /// The column-major form of a row-major batched product (see [`ColMajor`]).
    fn col_major(
        &self,
        (m, n, k): (usize, usize, usize),
        b_transposed: bool,
        batch: usize,
    ) -> Result<ColMajor, String> {
        let int = |v: usize| c_int::try_from(v).map_err(|_| format!("{v} does not fit a BLAS int"));
        Ok(ColMajor {
            trans_b: self.op(b_transposed),
            trans_a: self.op(false),
            n: int(n)?,
            m: int(m)?,
            k: int(k)?,
            ldb: int(if b_transposed { k } else { n })?,
            batch: int(batch)?,
        })
    }

    /// `c = alpha * a * op(b)` for `batch` row-major matrices: `a` is `m × k`, `op(b)` is `k × n`
    /// (`b` stored `n × k` when `b_transposed`), `c` is `m × n`.
    ///
    /// # Safety
    /// The pointers must be device memory of this library's device holding the matrices.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn sgemm_batched(
        &self,
        dims: (usize, usize, usize),
        alpha: f32,
        a: Operand,
        b: Operand,
        b_transposed: bool,
        c: Operand,
        batch: usize,
    ) -> Result<(), String> {
        let g = self.col_major(dims, b_transposed, batch)?;
        let beta = 0.0f32;
        let status = (self.gemm)(
            self.handle,
            g.trans_b,
            g.trans_a,
            g.n,
            g.m,
            g.k,
            &alpha,
            b.ptr as *const f32,
            g.ldb,
            b.stride as i64,
            a.ptr as *const f32,
            g.k,
            a.stride as i64,
            &beta,
            c.ptr as *mut f32,
            g.n,
            c.stride as i64,
            g.batch,
        );
        if status != 0 {
            return Err(format!("{}: sgemm failed with status {status}", self.path));
        }
        Ok(())
    }

    /// As [`sgemm_batched`](Self::sgemm_batched) for matrices of `ty` (a, b and c alike), the
    /// products summed in f32: `cublasGemmStridedBatchedEx` (`CUBLAS_COMPUTE_32F`, the default
    /// algorithm, which takes tensor cores) or `rocblas_gemm_strided_batched_ex`.
    ///
    /// # Safety
    /// As [`sgemm_batched`](Self::sgemm_batched), the matrices holding elements of `ty`.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn gemm_ex_batched(
        &self,
        ty: HalfType,
        dims: (usize, usize, usize),
        alpha: f32,
        a: Operand,
        b: Operand,
        b_transposed: bool,
        c: Operand,
        batch: usize,
    ) -> Result<(), String> {
        let g = self.col_major(dims, b_transposed, batch)?;
        let beta = 0.0f32;
        let alpha_p = (&alpha as *const f32).cast::<c_void>();
        let beta_p = (&beta as *const f32).cast::<c_void>();
        let status = match self.gemm_ex {
            None => {
                return Err(format!(
                    "{} has no mixed-precision strided batched GEMM",
                    self.path
                ))
            }
            // cudaDataType: CUDA_R_16F = 2, CUDA_R_16BF = 14; CUBLAS_COMPUTE_32F = 68;
            // CUBLAS_GEMM_DEFAULT = -1.
            Some(GemmEx::Cublas(f)) => {
                let t = if ty == HalfType::F16 { 2 } else { 14 };
                f(
                    self.handle,
                    g.trans_b,
                    g.trans_a,
                    g.n,
                    g.m,
                    g.k,
                    alpha_p,
                    b.ptr as *const c_void,
                    t,
                    g.ldb,
                    b.stride as i64,
                    a.ptr as *const c_void,
                    t,
                    g.k,
                    a.stride as i64,
                    beta_p,
                    c.ptr as *mut c_void,
                    t,
                    g.n,
                    c.stride as i64,
                    g.batch,
                    68,
                    -1,
                )
            }
            // rocblas_datatype: f16_r = 150, bf16_r = 168, f32_r = 151;
            // rocblas_gemm_algo_standard = 160. Not run: no AMD GPU here.
            Some(GemmEx::Rocblas(f)) => {
                let t = if ty == HalfType::F16 { 150 } else { 168 };
                f(
                    self.handle,
                    g.trans_b,
                    g.trans_a,
                    g.n,
                    g.m,
                    g.k,
                    alpha_p,
                    b.ptr as *const c_void,
                    t,
                    g.ldb,
                    b.stride as i64,
                    a.ptr as *const c_void,
                    t,
                    g.k,
                    a.stride as i64,
                    beta_p,
                    c.ptr as *const c_void,
                    t,
                    g.n,
                    c.stride as i64,
                    c.ptr as *mut c_void,
                    t,
                    g.n,
                    c.stride as i64,
                    g.batch,
                    151,
                    160,
                    0,
                    0,
                )
            }
        };
        if status != 0 {
            return Err(format!(
                "{}: {ty:?} gemm failed with status {status}",
                self.path
            ));
        }
        Ok(())
    }

    /// Row-major `c[m][n] = a[m][k] b[k][n]`.
    ///
    /// # Safety
    /// As [`sgemm_batched`](Self::sgemm_batched).
    pub unsafe fn sgemm(
        &self,
        (m, n, k): (usize, usize, usize),
        a: DevicePtr,
        b: DevicePtr,
        c: DevicePtr,
    ) -> Result<(), String> {
        let op = |ptr| Operand { ptr, stride: 0 };
        self.sgemm_batched((m, n, k), 1.0, op(a), op(b), false, op(c), 1)
    }
}

impl Drop for VendorBlas {
    fn drop(&mut self) {
        // Safety: created by the library's create call, destroyed once.
        unsafe {
            (self.destroy)(self.handle);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_cpu_backend_has_no_vendor_blas() {
        let e = super::VendorBlas::load(rocm_kernels::runtime::Backend::Cpu)
            .err()
            .unwrap();
        assert!(e.contains("no vendor BLAS on the cpu backend"), "{e}");
    }
}
