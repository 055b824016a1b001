//! Finding kernels in preprocessed C++: the cpu header defines `__global__` as `__rk_kernel__`
//! when `RK_SCAN` is set, so after `-E` every kernel definition, template and explicit
//! instantiation carries that marker (or, for instantiations, names a marked template).

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

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Word(String),
    Punct(char),
    Literal(String),
}

fn tokenize(text: &str) -> Vec<Tok> {
    let mut toks = Vec::new();
    let b = text.as_bytes();
    let mut i = 0;
    let mut line_start = true;
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            line_start = true;
            i += 1;
            continue;
        }
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if line_start && c == b'#' {
            // Line markers and pragmas.
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        line_start = false;
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'*') {
            i += 2;
            while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                i += 1;
            }
            i += 2;
            continue;
        }
        if c == b'"' || c == b'\'' {
            let start = i;
            i += 1;
            while i < b.len() && b[i] != c {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            toks.push(Tok::Literal(text[start..i.min(b.len())].to_string()));
            continue;
        }
        if c.is_ascii_alphanumeric() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'.') {
                // `.` keeps numbers like 1.5f whole; identifiers never contain it after -E.
                if b[i] == b'.' && !text[start..i].starts_with(|ch: char| ch.is_ascii_digit()) {
                    break;
                }
                i += 1;
            }
            toks.push(Tok::Word(text[start..i].to_string()));
            continue;
        }
        toks.push(Tok::Punct(c as char));
        i += 1;
    }
    toks
}

fn is_word(t: &Tok, w: &str) -> bool {
    matches!(t, Tok::Word(x) if x == w)
}

/// Join tokens as C++ a person would write them: `const float*`, `scale<float>`.
fn join(toks: &[Tok]) -> String {
    let mut out = String::new();
    let mut prev: Option<&Tok> = None;
    for t in toks {
        let text = match t {
            Tok::Word(w) | Tok::Literal(w) => w.as_str(),
            Tok::Punct(_) => "",
        };
        let space = matches!(
            (prev, t),
            (
                Some(Tok::Word(_) | Tok::Punct('*' | '&' | ',')),
                Tok::Word(_)
            )
        );
        if space {
            out.push(' ');
        }
        match t {
            Tok::Punct(c) => out.push(*c),
            _ => out.push_str(text),
        }
        prev = Some(t);
    }
    out
}

/// Index of the token closing the bracket opened at `open`.
fn matching(toks: &[Tok], open: usize, l: char, r: char) -> Option<usize> {
    let mut depth = 0usize;
    for (i, t) in toks.iter().enumerate().skip(open) {
        if *t == Tok::Punct(l) {
            depth += 1;
        } else if *t == Tok::Punct(r) {
            depth -= 1;
            if depth == 0 {
                return Some(i);
            }
        }
    }
    None
}

/// Split a parameter list on top-level commas.
fn split_params(toks: &[Tok]) -> Vec<&[Tok]> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, t) in toks.iter().enumerate() {
        match t {
            Tok::Punct('(' | '[' | '{' | '<') => depth += 1,
            Tok::Punct(')' | ']' | '}' | '>') => depth -= 1,
            Tok::Punct(',') if depth == 0 => {
                out.push(&toks[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if start < toks.len() {
        out.push(&toks[start..]);
    }
    // `()` and `(void)` have no parameters.
    out.retain(|p| !(p.is_empty() || p.len() == 1 && is_word(&p[0], "void")));
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

/// `(type, name)` of one parameter's tokens (`const float* __restrict__ x` → (`const float*
/// __restrict__`, `x`); `float*` → (`float*`, ``)).
fn param(toks: &[Tok]) -> (String, String) {
    let toks = match toks.iter().position(|t| *t == Tok::Punct('=')) {
        Some(eq) => &toks[..eq],
        None => toks,
    };
    // `T name[]` / `T name[N]` is a pointer.
    let (toks, array) = match toks.iter().position(|t| *t == Tok::Punct('[')) {
        Some(at) => (&toks[..at], true),
        None => (toks, false),
    };
    let named = toks.len() > 1
        && matches!(toks.last(), Some(Tok::Word(w)) if !TYPE_WORDS.contains(&w.as_str()))
        && matches!(
            toks[toks.len() - 2],
            Tok::Word(_) | Tok::Punct('*' | '&' | '>')
        );
    let (ty, name) = if named {
        let Some(Tok::Word(name)) = toks.last() else {
            unreachable!()
        };
        (join(&toks[..toks.len() - 1]), name.clone())
    } else {
        (join(toks), String::new())
    };
    (if array { format!("{ty}*") } else { ty }, name)
}

/// The kernels of a preprocessed translation unit.
pub fn scan(preprocessed: &str) -> Vec<ScannedKernel> {
    const MARK: &str = "__rk_kernel__";
    let toks = tokenize(preprocessed);
    let mut kernels: Vec<ScannedKernel> = Vec::new();
    // Marked templates by qualified name: their parameters (for names in instantiations).
    let mut templates: Vec<(String, Vec<(String, String)>)> = Vec::new();
    // Scope stack: Some(name) for a namespace (empty for anonymous), None for anything else.
    let mut scopes: Vec<Option<String>> = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        match &toks[i] {
            Tok::Punct('{') => {
                // `namespace a {`, `namespace a::b {`, `namespace {`, `extern "C" {`.
                let mut j = i;
                let mut parts = Vec::new();
                while j > 0 {
                    match &toks[j - 1] {
                        Tok::Word(w) if w == "namespace" => break,
                        Tok::Word(w) => parts.push(w.clone()),
                        Tok::Punct(':') => {}
                        _ => {
                            parts.clear();
                            j = 0;
                            break;
                        }
                    }
                    j -= 1;
                }
                if j > 0 && is_word(&toks[j - 1], "namespace") {
                    parts.reverse();
                    scopes.push(Some(parts.join("::")));
                } else if i >= 2 && is_word(&toks[i - 2], "extern") {
                    scopes.push(Some(String::new()));
                } else {
                    scopes.push(None);
                }
            }
            Tok::Punct('}') => {
                scopes.pop();
            }
            Tok::Word(w) if w == MARK || w == "template" => {
                if let Some((kernel, next)) = kernel_at(&toks, i, &scopes, &mut templates) {
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
    kernels
}

fn qualified(scopes: &[Option<String>], name: &str) -> Option<String> {
    let mut parts = Vec::new();
    for s in scopes {
        match s {
            Some(ns) if !ns.is_empty() => parts.push(ns.as_str()),
            Some(_) => {}
            None => return None, // inside a function or class: not a kernel definition
        }
    }
    parts.push(name);
    Some(parts.join("::"))
}

/// At a marker or `template`: parse the declaration. Returns the kernel (if it is one that can
/// be launched: not a primary template) and where to continue, or None when it is not a kernel.
fn kernel_at(
    toks: &[Tok],
    at: usize,
    scopes: &[Option<String>],
    templates: &mut Vec<(String, Vec<(String, String)>)>,
) -> Option<(Option<ScannedKernel>, usize)> {
    const MARK: &str = "__rk_kernel__";
    let is_template_kw = is_word(&toks[at], "template");
    if is_template_kw {
        // `template <...> __rk_kernel__ ...` (a primary template) or `template ... NAME<..>(..);`
        // (an explicit instantiation).
        if toks.get(at + 1) == Some(&Tok::Punct('<')) {
            let close = matching(toks, at + 1, '<', '>')?;
            let mark = close + 1;
            // The marker may follow other specifiers: `template <..> static __global__ void`.
            let mark = (mark..toks.len().min(mark + 4)).find(|&k| is_word(&toks[k], MARK))?;
            let (name_toks, open) = declarator(toks, mark + 1)?;
            let close_paren = matching(toks, open, '(', ')')?;
            let name = join(name_toks);
            let params = split_params(&toks[open + 1..close_paren])
                .into_iter()
                .map(param)
                .collect();
            templates.push((qualified(scopes, &name)?, params));
            return Some((None, close_paren + 1));
        }
        // Explicit instantiation.
        let (name_toks, open) = declarator(toks, at + 1)?;
        let close_paren = matching(toks, open, '(', ')')?;
        let display = join(name_toks);
        let base = display.split('<').next()?.to_string();
        let base_q = qualified(scopes, &base)?;
        let (_, tparams) = templates.iter().find(|(n, _)| *n == base_q)?;
        let params: Vec<(String, String)> = split_params(&toks[open + 1..close_paren])
            .into_iter()
            .map(param)
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
        let name = qualified(scopes, &display)?;
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
    if at > 0 && is_word(&toks[at - 1], "template") {
        return None; // handled by the `template` branch
    }
    let (name_toks, open) = declarator(toks, at + 1)?;
    let close_paren = matching(toks, open, '(', ')')?;
    let name = qualified(scopes, &join(name_toks))?;
    let params = split_params(&toks[open + 1..close_paren])
        .into_iter()
        .map(param)
        .collect();
    Some((
        Some(ScannedKernel {
            cpp_ref: name.clone(),
            name,
            params,
        }),
        close_paren + 1,
    ))
}

/// From `start` (after the marker or `template`): skip specifiers up to `void`, then the name
/// (with template arguments) up to its `(`. Returns the name's tokens and the `(` index.
fn declarator(toks: &[Tok], start: usize) -> Option<(&[Tok], usize)> {
    let void_at = (start..toks.len().min(start + 8)).find(|&k| is_word(&toks[k], "void"))?;
    let name_start = void_at + 1;
    let mut k = name_start;
    let mut angle = 0i32;
    while k < toks.len() {
        match &toks[k] {
            Tok::Punct('<') => angle += 1,
            Tok::Punct('>') => angle -= 1,
            Tok::Punct('(') if angle == 0 => break,
            Tok::Punct(';' | '{' | '}') => return None,
            _ => {}
        }
        k += 1;
    }
    if k == name_start || k >= toks.len() {
        return None;
    }
    // Attributes between the name and `(` are not expected after -E; `__launch_bounds__` expands
    // to nothing.
    Some((&toks[name_start..k], k))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(src: &str) -> Vec<String> {
        scan(src).into_iter().map(|k| k.name).collect()
    }

    #[test]
    fn finds_plain_kernels_with_params() {
        let k = scan("# 1 \"x.hip\"\n__rk_kernel__ void saxpy(float a, const float* __restrict__ x, float *y, int n) { y[0] = a; }");
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
        let k = scan(src);
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
        assert!(scan(src)[2].params.is_empty());
        assert_eq!(
            scan(src)[1].params,
            vec![("unsigned int".into(), "n".into())]
        );
    }

    #[test]
    fn arrays_are_pointers_and_unnamed_params_have_no_name() {
        let k = scan("__rk_kernel__ void k(float x[], int) {}");
        assert_eq!(
            k[0].params,
            vec![("float*".into(), "x".into()), ("int".into(), String::new())]
        );
    }
}
