//! Kernel names as users write them, from the symbols compilers emit.
//!
//! GPU code objects name C++ kernels by their mangled symbol (`_Z5saxpyfPKfPfi`); users, the
//! cpu backend and the harness name them as written in the source: `saxpy`, `scale<float>`,
//! `ns::k`. [`kernel_name`] maps the first to the second, in the one spelling
//! (`rocm_kernels_core::library::canonical_kernel_name`) every backend's table uses.

use cpp_demangle::{DemangleOptions, Symbol};

/// The user-facing kernel name of a symbol: demangled, without return type and parameters,
/// without `(anonymous namespace)::`, and with a trailing `.kd` (AMDGPU kernel descriptor)
/// removed. `extern "C"` kernels (not mangled) are returned as they are.
pub fn kernel_name(symbol: &str) -> String {
    let symbol = symbol.strip_suffix(".kd").unwrap_or(symbol);
    if !symbol.starts_with("_Z") {
        return symbol.to_string();
    }
    let options = DemangleOptions::new().no_params().no_return_type();
    match Symbol::new(symbol)
        .ok()
        .and_then(|s| s.demangle_with_options(&options).ok())
    {
        Some(name) => tidy(&name),
        None => symbol.to_string(),
    }
}

/// Spell template arguments as people write them (`scale<float>`, not `scale<float >`;
/// `k<16>`, not `k<(unsigned int)16>`) and drop anonymous namespaces, which cannot be named from
/// outside the file anyway.
fn tidy(name: &str) -> String {
    rocm_kernels_core::library::canonical_kernel_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mangled_kernels_get_their_source_names() {
        assert_eq!(kernel_name("_Z5saxpyfPKfPfi"), "saxpy");
        assert_eq!(kernel_name("_Z5saxpyfPKfPfi.kd"), "saxpy");
        assert_eq!(kernel_name("_Z5scaleIfEvPT_S0_"), "scale<float>");
        assert_eq!(kernel_name("_ZN1a12_GLOBAL__N_11kEi"), "a::k");
        assert_eq!(
            kernel_name("_ZN2ns6reduceILi256EEEvPKfPf"),
            "ns::reduce<256>"
        );
    }

    #[test]
    fn integer_template_arguments_lose_their_casts() {
        // template <unsigned N> __global__ void k(float*); k<16>
        assert_eq!(kernel_name("_Z1kILj16EEvPf"), "k<16>");
        assert_eq!(kernel_name("_Z1kILi16EEvPf"), "k<16>");
    }

    #[test]
    fn extern_c_and_unparsable_symbols_pass_through() {
        assert_eq!(kernel_name("saxpy"), "saxpy");
        assert_eq!(kernel_name("red.kd"), "red");
        assert_eq!(kernel_name("_Zgarbage"), "_Zgarbage");
    }
}
