//! What NVRTC and hipRTC have in common: hipRTC copies NVRTC's C API name for name (`nvrtcX` →
//! `hiprtcX`) and signature for signature, so one driver runs a compile for both — create the
//! program, register the kernels' name expressions (`&scale<float>`), compile, read the log, ask
//! for the lowered names, destroy the program — and each backend only says which outputs it reads
//! (PTX and a cubin, or an AMDGPU code object) and what its errors are called.

use std::ffi::{c_char, c_int, c_void, CStr, CString};

/// `nvrtcProgram` / `hiprtcProgram`.
pub(crate) type Program = *mut c_void;

/// `XGetPTXSize`/`XGetPTX`, `XGetCUBINSize`/`XGetCUBIN`, `XGetCodeSize`/`XGetCode`: an output of
/// a compiled program, read as its size then its bytes.
#[derive(Clone, Copy)]
pub(crate) struct Output {
    pub size: unsafe extern "C" fn(Program, *mut usize) -> c_int,
    pub get: unsafe extern "C" fn(Program, *mut c_char) -> c_int,
}

impl Output {
    /// Resolves `<prefix><size>` and `<prefix><get>` in `library`.
    ///
    /// # Safety
    /// The two symbols must have the C signatures of [`Output`]'s fields.
    pub unsafe fn load(
        library: &libloading::Library,
        prefix: &str,
        size: &str,
        get: &str,
    ) -> Result<Output, libloading::Error> {
        Ok(Output {
            size: *library.get(symbol(prefix, size).as_bytes())?,
            get: *library.get(symbol(prefix, get).as_bytes())?,
        })
    }
}

/// The functions both compilers export under their own prefix.
pub(crate) struct Api {
    /// `nvrtc` or `hiprtc`, for messages.
    pub prefix: &'static str,
    create: unsafe extern "C" fn(
        *mut Program,
        *const c_char,
        *const c_char,
        c_int,
        *const *const c_char,
        *const *const c_char,
    ) -> c_int,
    compile: unsafe extern "C" fn(Program, c_int, *const *const c_char) -> c_int,
    log_size: unsafe extern "C" fn(Program, *mut usize) -> c_int,
    log: unsafe extern "C" fn(Program, *mut c_char) -> c_int,
    destroy: unsafe extern "C" fn(*mut Program) -> c_int,
    add_name: unsafe extern "C" fn(Program, *const c_char) -> c_int,
    lowered_name: unsafe extern "C" fn(Program, *const c_char, *mut *const c_char) -> c_int,
    version: unsafe extern "C" fn(*mut c_int, *mut c_int) -> c_int,
}

fn symbol(prefix: &str, name: &str) -> String {
    format!("{prefix}{name}\0")
}

impl Api {
    /// Resolves the common functions, `<prefix>CreateProgram` and so on, in `library`.
    ///
    /// # Safety
    /// `library` must be NVRTC (`prefix` `nvrtc`) or hipRTC (`hiprtc`): the types are those
    /// functions' C signatures from nvrtc.h and hiprtc.h.
    pub unsafe fn load(
        library: &libloading::Library,
        prefix: &'static str,
    ) -> Result<Api, libloading::Error> {
        let get = |name: &str| symbol(prefix, name);
        Ok(Api {
            prefix,
            create: *library.get(get("CreateProgram").as_bytes())?,
            compile: *library.get(get("CompileProgram").as_bytes())?,
            log_size: *library.get(get("GetProgramLogSize").as_bytes())?,
            log: *library.get(get("GetProgramLog").as_bytes())?,
            destroy: *library.get(get("DestroyProgram").as_bytes())?,
            add_name: *library.get(get("AddNameExpression").as_bytes())?,
            lowered_name: *library.get(get("GetLoweredName").as_bytes())?,
            version: *library.get(get("Version").as_bytes())?,
        })
    }

    /// The compiler's (major, minor) version, or the status it returned.
    pub fn version(&self) -> Result<(i32, i32), String> {
        let (mut major, mut minor) = (0, 0);
        // Safety: two out-parameters.
        let status = unsafe { (self.version)(&mut major, &mut minor) };
        if status != 0 {
            return Err(format!("{}Version returned {status}", self.prefix));
        }
        Ok((major, minor))
    }

    /// Compiles `source` (the text of file `name`) with `options`, registering `&kernel` for each
    /// of `kernels`. A failure is a message with the compiler's log.
    pub fn compile<'k>(
        &self,
        name: &str,
        source: &[u8],
        kernels: &[&'k str],
        options: &[String],
    ) -> Result<Compiled<'_, 'k>, String> {
        let c_source =
            CString::new(source).map_err(|_| "the source contains a NUL byte".to_string())?;
        let c_name = CString::new(name).map_err(|_| "the name contains a NUL byte".to_string())?;
        let c_options: Vec<CString> = options
            .iter()
            .map(|o| CString::new(o.as_str()).map_err(|_| format!("option `{o}` has a NUL byte")))
            .collect::<Result<_, _>>()?;
        let option_ptrs: Vec<*const c_char> = c_options.iter().map(|o| o.as_ptr()).collect();
        let expressions: Vec<(&'k str, CString)> = kernels
            .iter()
            .filter_map(|k| Some((*k, CString::new(format!("&{k}")).ok()?)))
            .collect();
        let mut program: Program = std::ptr::null_mut();
        // Safety: every pointer is a valid NUL-terminated string for the duration of the calls;
        // the program is owned by `Compiled` (or destroyed here), which destroys it once.
        unsafe {
            let status = (self.create)(
                &mut program,
                c_source.as_ptr(),
                c_name.as_ptr(),
                0,
                std::ptr::null(),
                std::ptr::null(),
            );
            if status != 0 {
                return Err(format!("{}CreateProgram returned {status}", self.prefix));
            }
            let mut compiled = Compiled {
                api: self,
                program,
                symbols: Vec::new(),
                log: String::new(),
            };
            for (_, e) in &expressions {
                (self.add_name)(program, e.as_ptr());
            }
            let status = (self.compile)(program, option_ptrs.len() as c_int, option_ptrs.as_ptr());
            let mut size = 0usize;
            if (self.log_size)(program, &mut size) == 0 && size > 1 {
                let mut buf = vec![0u8; size];
                if (self.log)(program, buf.as_mut_ptr().cast()) == 0 {
                    compiled.log = String::from_utf8_lossy(&buf[..size - 1]).into_owned();
                }
            }
            if status != 0 {
                return Err(format!("compilation failed ({status}):\n{}", compiled.log));
            }
            for (kernel, e) in &expressions {
                let mut lowered: *const c_char = std::ptr::null();
                if (self.lowered_name)(program, e.as_ptr(), &mut lowered) == 0 && !lowered.is_null()
                {
                    // Owned by the program: copied before it is destroyed.
                    let text = CStr::from_ptr(lowered).to_string_lossy().into_owned();
                    compiled.symbols.push((*kernel, text));
                }
            }
            Ok(compiled)
        }
    }
}

/// A program that compiled: its log, the symbol of each kernel found (NVRTC leaves out kernels
/// it does not find; hipRTC fails to compile a name expression naming none), and its outputs on
/// demand. Destroyed when dropped.
pub(crate) struct Compiled<'a, 'k> {
    api: &'a Api,
    program: Program,
    pub symbols: Vec<(&'k str, String)>,
    pub log: String,
}

impl Compiled<'_, '_> {
    /// The bytes of `output` (all of them, a final NUL included), `None` when the compiler has
    /// none or fails to give it.
    pub fn output(&self, output: Output) -> Option<Vec<u8>> {
        let mut size = 0usize;
        // Safety: `program` is alive until drop; the buffer has the size the compiler asked for.
        unsafe {
            if (output.size)(self.program, &mut size) != 0 || size == 0 {
                return None;
            }
            let mut bytes = vec![0u8; size];
            ((output.get)(self.program, bytes.as_mut_ptr().cast()) == 0).then_some(bytes)
        }
    }
}

impl Drop for Compiled<'_, '_> {
    fn drop(&mut self) {
        // Safety: the program was created by this API and is destroyed once.
        unsafe {
            (self.api.destroy)(&mut self.program);
        }
    }
}
