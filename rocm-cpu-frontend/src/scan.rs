//! Finding the kernels to launch in a preprocessed translation unit: the cpu header defines
//! `__global__` as `__rk_kernel__` when `RK_SCAN` is set, so after `-E` every kernel definition,
//! template and explicit instantiation carries that marker (or, for instantiations, names a
//! marked template). Only tokens at namespace scope are looked at: the bodies of functions and
//! classes (all of libstdc++'s) are stepped over by their matched braces.

use super::lex::{Kind, Tokens};
use super::scopes::Scopes;

/// The marker `__global__` becomes under `RK_SCAN`.
pub const KERNEL_MARK: &str = "__rk_kernel__";

/// A kernel found in a translation unit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScannedKernel {
    /// How users name it: `saxpy`, `scale<float>`, `ns::saxpy`.
    pub name: String,
    /// A C++ expression naming the function, for `rk::entry<&...>`: `saxpy`, `scale<float>`.
    pub cpp_ref: String,
    /// `(type, name)` of each parameter; names may be empty.
    pub params: Vec<(String, String)>,
}

/// Names, numbers and literals: tokens a space separates from each other.
fn wordlike(toks: &Tokens, i: usize) -> bool {
    matches!(toks.kind(i), Some(Kind::Ident | Kind::Number))
}

/// Tokens [a, b) joined as C++ a person would write them: `const float*`, `scale<float>`.
fn join(toks: &Tokens, a: usize, b: usize) -> String {
    let mut out = String::new();
    for i in a..b {
        let space = i > a
            && wordlike(toks, i)
            && (wordlike(toks, i - 1) || matches!(toks.tok(i - 1), "*" | "&" | "&&" | ","));
        if space {
            out.push(' ');
        }
        out.push_str(toks.tok(i));
    }
    out
}

/// Split a parameter list [a, b) on top-level commas; `()` and `(void)` have none.
fn split_params(toks: &Tokens, a: usize, b: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = a;
    for i in a..b {
        match toks.tok(i) {
            "(" | "[" | "{" | "<" => depth += 1,
            ")" | "]" | "}" | ">" => depth -= 1,
            ">>" => depth -= 2,
            "," if depth == 0 => {
                out.push((start, i));
                start = i + 1;
            }
            _ => {}
        }
    }
    if start < b {
        out.push((start, b));
    }
    out.retain(|&(p, q)| !(p == q || q == p + 1 && toks.is(p, "void")));
    out
}

const TYPE_WORDS: &[&str] = &[
    "int",
    "char",
    "short",
    "long",
    "float",
    "double",
    "unsigned",
    "signed",
    "bool",
    "void",
    "const",
    "volatile",
    "__restrict__",
    "__restrict",
    "restrict",
];

/// `(type, name)` of one parameter's tokens [a, b) (`const float* __restrict__ x` → (`const
/// float* __restrict__`, `x`); `float*` → (`float*`, ``)).
fn param(toks: &Tokens, a: usize, b: usize) -> (String, String) {
    let b = (a..b).find(|&i| toks.is(i, "=")).unwrap_or(b);
    // `T name[]` / `T name[N]` is a pointer.
    let (b, array) = match (a..b).find(|&i| toks.is(i, "[")) {
        Some(at) => (at, true),
        None => (b, false),
    };
    // Only qualifiers before the last word (`const uint2`, `unsigned T`): it is the type, unnamed.
    let only_qualifiers = (a..b - 1).all(|i| {
        matches!(
            toks.tok(i),
            "const" | "volatile" | "unsigned" | "signed" | "struct" | "class" | "enum" | "typename"
        )
    });
    let named = b > a + 1
        && toks.ident(b - 1)
        && !TYPE_WORDS.contains(&toks.tok(b - 1))
        && !only_qualifiers
        && (wordlike(toks, b - 2) || matches!(toks.tok(b - 2), "*" | "&" | "&&" | ">" | ">>"));
    let (ty, name) = if named {
        (join(toks, a, b - 1), toks.tok(b - 1).to_string())
    } else {
        (join(toks, a, b), String::new())
    };
    (if array { format!("{ty}*") } else { ty }, name)
}

fn params(toks: &Tokens, open: usize, close: usize) -> Vec<(String, String)> {
    split_params(toks, open + 1, close)
        .into_iter()
        .map(|(p, q)| param(toks, p, q))
        .collect()
}

/// The kernels of a preprocessed translation unit.
pub fn scan(toks: &Tokens) -> Vec<ScannedKernel> {
    scan_with_templates(toks).0
}

/// A kernel template: its qualified name and its parameters (type, name).
pub type KernelTemplate = (String, Vec<(String, String)>);

/// The kernels of a preprocessed translation unit, and its kernel templates.
pub fn scan_with_templates(toks: &Tokens) -> (Vec<ScannedKernel>, Vec<KernelTemplate>) {
    let mut kernels: Vec<ScannedKernel> = Vec::new();
    // Marked templates by qualified name: their parameters (for names in instantiations).
    let mut templates: Vec<(String, Vec<(String, String)>)> = Vec::new();
    let mut scopes = Scopes::default();
    let mut i = 0;
    while i < toks.len() {
        match toks.tok(i) {
            "{" => i = scopes.enter_or_skip(toks, i),
            "}" => scopes.leave(),
            w if (w == KERNEL_MARK || w == "template") && toks.ident(i) => {
                if let Some((kernel, next)) = kernel_at(toks, i, &scopes, &mut templates) {
                    if let Some(k) = kernel {
                        if !kernels.iter().any(|x| x.name == k.name) {
                            kernels.push(k);
                        }
                    }
                    i = next;
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    (kernels, templates)
}

/// At a marker or `template`: parse the declaration. Returns the kernel (if it is one that can
/// be launched: not a primary template) and where to continue, or None when it is not a kernel.
fn kernel_at(
    toks: &Tokens,
    at: usize,
    scopes: &Scopes,
    templates: &mut Vec<(String, Vec<(String, String)>)>,
) -> Option<(Option<ScannedKernel>, usize)> {
    if toks.is(at, "template") {
        // `template <...> __rk_kernel__ ...` (a primary template) or `template ... NAME<..>(..);`
        // (an explicit instantiation).
        if toks.is(at + 1, "<") {
            let close = toks.close_angle(at + 1)?;
            let mark = close + 1;
            // The marker may follow other specifiers: `template <..> static __global__ void`.
            let mark = (mark..toks.len().min(mark + 4)).find(|&k| toks.is(k, KERNEL_MARK))?;
            let (name, open) = declarator(toks, mark + 1)?;
            let close_paren = toks.close(open)?;
            let name = join(toks, name, open);
            templates.push((scopes.qualify(&name)?, params(toks, open, close_paren)));
            return Some((None, close_paren + 1));
        }
        // Explicit instantiation.
        let (name, open) = declarator(toks, at + 1)?;
        let close_paren = toks.close(open)?;
        let display = join(toks, name, open);
        let base = display.split('<').next()?.to_string();
        let base_q = scopes.qualify(&base)?;
        let (_, tparams) = templates.iter().find(|(n, _)| *n == base_q)?;
        let params: Vec<(String, String)> = params(toks, open, close_paren)
            .into_iter()
            .enumerate()
            .map(|(k, (ty, name))| {
                let name = if name.is_empty() {
                    tparams.get(k).map(|p| p.1.clone()).unwrap_or_default()
                } else {
                    name
                };
                (ty, name)
            })
            .collect();
        let name = scopes.qualify(&display)?;
        return Some((
            Some(ScannedKernel {
                cpp_ref: name.clone(),
                name,
                params,
            }),
            close_paren + 1,
        ));
    }
    // A plain kernel: `__rk_kernel__ void name(params) {` (or `;` for a declaration).
    if at > 0 && toks.is(at - 1, "template") {
        return None; // handled by the `template` branch
    }
    let (name, open) = declarator(toks, at + 1)?;
    let close_paren = toks.close(open)?;
    let name = scopes.qualify(&join(toks, name, open))?;
    Some((
        Some(ScannedKernel {
            cpp_ref: name.clone(),
            name,
            params: params(toks, open, close_paren),
        }),
        close_paren + 1,
    ))
}

/// From `start` (after the marker or `template`): skip specifiers up to `void`, then the name
/// (with template arguments) up to its `(`. Returns where the name starts and the `(` index.
fn declarator(toks: &Tokens, start: usize) -> Option<(usize, usize)> {
    let void_at = (start..toks.len().min(start + 8)).find(|&k| toks.is(k, "void"))?;
    let name_start = void_at + 1;
    let mut k = name_start;
    let mut angle = 0i32;
    while k < toks.len() {
        match toks.tok(k) {
            "<" => angle += 1,
            ">" => angle -= 1,
            ">>" => angle -= 2,
            "(" if angle == 0 => break,
            ";" | "{" | "}" => return None,
            _ => {}
        }
        k += 1;
    }
    if k == name_start || k >= toks.len() {
        return None;
    }
    // Attributes between the name and `(` are not expected after -E; `__launch_bounds__` expands
    // to nothing.
    Some((name_start, k))
}

#[cfg(test)]
mod tests {
    use super::super::lex::lex;
    use super::*;

    fn scan_text(src: &str) -> Vec<ScannedKernel> {
        scan(&lex(src))
    }

    fn names(src: &str) -> Vec<String> {
        scan_text(src).into_iter().map(|k| k.name).collect()
    }

    #[test]
    fn finds_plain_kernels_with_params() {
        let k = scan_text("# 1 \"x.hip\"\n__rk_kernel__ void saxpy(float a, const float* __restrict__ x, float *y, int n) { y[0] = a; }");
        assert_eq!(k.len(), 1);
        assert_eq!(k[0].name, "saxpy");
        assert_eq!(
            k[0].params,
            vec![
                ("float".into(), "a".into()),
                ("const float* __restrict__".into(), "x".into()),
                ("float*".into(), "y".into()),
                ("int".into(), "n".into()),
            ]
        );
    }

    #[test]
    fn templates_count_only_through_instantiations() {
        let src = "template <typename T> __rk_kernel__ void scale(T* x, T s) { }\n\
                   template __rk_kernel__ void scale<float>(float*, float);\n\
                   template void scale<double>(double*, double);\n";
        let k = scan_text(src);
        assert_eq!(names(src), vec!["scale<float>", "scale<double>"]);
        assert_eq!(
            k[1].params,
            vec![
                ("double*".into(), "x".into()),
                ("double".into(), "s".into())
            ]
        );
    }

    #[test]
    fn namespaces_qualify_and_function_bodies_do_not_confuse() {
        let src = "namespace a { namespace { __rk_kernel__ void k(int n) { if (n) { } } } }\n\
                   struct S { void f(); };\n\
                   extern \"C\" { __rk_kernel__ void c_kernel(unsigned int n) {} }\n\
                   __rk_kernel__ void none() {}";
        assert_eq!(names(src), vec!["a::k", "c_kernel", "none"]);
        assert!(scan_text(src)[2].params.is_empty());
        assert_eq!(
            scan_text(src)[1].params,
            vec![("unsigned int".into(), "n".into())]
        );
    }

    #[test]
    fn arrays_are_pointers_and_unnamed_params_have_no_name() {
        let k = scan_text("__rk_kernel__ void k(float x[], int) {}");
        assert_eq!(
            k[0].params,
            vec![("float*".into(), "x".into()), ("int".into(), String::new())]
        );
        // An unnamed parameter of a qualified type in an instantiation takes the template's name.
        let src = "template <int N> __rk_kernel__ void v(const uint2 a, float* o) {}\n\
                   template __rk_kernel__ void v<4>(const uint2, float*);";
        assert_eq!(
            scan_text(src)[0].params,
            [
                ("const uint2".to_string(), "a".to_string()),
                ("float*".to_string(), "o".to_string())
            ]
        );
    }

    #[test]
    fn literals_and_nested_templates_do_not_hide_kernels() {
        // A digit separator and a raw string with a brace in it, which the scanner's own
        // tokenizer once read as the start of a character literal and as a scope.
        let src = "constexpr int big = 1'000; const char* s = R\"(}\")\";\n\
                   template <typename T> struct W {};\n\
                   template <typename T> __rk_kernel__ void k(W<W<T>>* p, T n) { }\n\
                   template __rk_kernel__ void k<int>(W<W<int>>*, int);";
        assert_eq!(names(src), ["k<int>"]);
        assert_eq!(
            scan_text(src)[0].params,
            [
                ("W<W<int>>*".to_string(), "p".to_string()),
                ("int".to_string(), "n".to_string())
            ]
        );
    }
}
