//! Source rewriting for the cpu backend: `extern __shared__ T name[];` cannot be expressed with
//! macros (it must become a view of the running block's dynamic shared memory), so the build
//! compiles a copy of each source where those declarations are replaced, keeping every line where
//! it was (a `#line` directive maps diagnostics back to the original file).

use super::lex::{lex, Tokens};
use super::scopes::Scopes;

/// Replace the `extern __shared__` declarations of `source`; returns the new text and how many.
pub fn rewrite_dynamic_shared(source: &str) -> (String, usize) {
    let toks = lex(source);
    let mut out = String::with_capacity(source.len() + 64);
    let mut copied = 0;
    let mut count = 0;
    let mut scopes = Scopes::default();
    let mut i = 0;
    while i < toks.len() {
        match toks.tok(i) {
            "{" => {
                scopes.enter(&toks, i);
            }
            "}" => scopes.leave(),
            "extern" if toks.is(i + 1, "__shared__") => {
                if let Some((semi, replacement)) = dynamic_shared_decl(&toks, i, &scopes) {
                    let (start, end) = (toks.token(i).start, toks.token(semi).end);
                    out.push_str(&source[copied..start]);
                    out.push_str(&replacement);
                    // Keep the line count: re-emit the newlines the declaration spanned.
                    for _ in toks.token(i).line..toks.token(semi).line {
                        out.push('\n');
                    }
                    copied = end;
                    count += 1;
                    i = semi + 1;
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    out.push_str(&source[copied..]);
    (out, count)
}

/// At `extern __shared__`: if this is `extern __shared__ [attrs] TYPE NAME[];`, the index of its
/// `;` and the replacement text.
fn dynamic_shared_decl(toks: &Tokens, at: usize, scopes: &Scopes) -> Option<(usize, String)> {
    let semi = (at..toks.len()).find(|&k| toks.is(k, ";"))?;
    // Runs of tokens [a, b) between `__shared__` and `;` without alignment attributes: the
    // runtime aligns dynamic shared memory to 256 bytes.
    let mut runs = Vec::new();
    let mut run = at + 2;
    let mut k = at + 2;
    while k < semi {
        if matches!(toks.tok(k), "__align__" | "alignas" | "__attribute__") && toks.is(k + 1, "(") {
            runs.push((run, k));
            k = toks.close(k + 1)? + 1;
            run = k;
            continue;
        }
        k += 1;
    }
    runs.push((run, semi));
    runs.retain(|&(a, b)| a < b);
    // The last run ends with `NAME [ ]`.
    let (last_start, last_end) = *runs.last()?;
    if last_end < last_start + 3
        || !toks.is(last_end - 1, "]")
        || !toks.is(last_end - 2, "[")
        || !toks.ident(last_end - 3)
    {
        return None;
    }
    let name = toks.tok(last_end - 3);
    let len = runs.len();
    runs[len - 1].1 = last_end - 3;
    let ty = runs
        .iter()
        .map(|&(a, b)| toks.text(a, b))
        .collect::<Vec<_>>()
        .join(" ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    if ty.is_empty() {
        return None;
    }
    let at_namespace_scope = scopes.namespaces().is_some();
    let replacement = if at_namespace_scope {
        format!("static rk::dynamic_shared<{ty}> {name};")
    } else {
        format!("{ty} *const {name} = static_cast<{ty} *>(rk_dynamic_shared());")
    };
    Some((semi, replacement))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_scope_becomes_a_pointer_and_lines_are_kept() {
        let src = "__global__ void k(float* o) {\n  extern __shared__ __align__(16) float s[];\n  o[0] = s[0];\n}\n";
        let (out, n) = rewrite_dynamic_shared(src);
        assert_eq!(n, 1);
        assert!(
            out.contains("float *const s = static_cast<float *>(rk_dynamic_shared());"),
            "{out}"
        );
        assert_eq!(out.lines().count(), src.lines().count());
    }

    #[test]
    fn namespace_scope_becomes_a_view() {
        let src = "namespace a {\nextern __shared__ unsigned int smem[];\n}\n// extern __shared__ int not_this[];\n";
        let (out, n) = rewrite_dynamic_shared(src);
        assert_eq!(n, 1);
        assert!(
            out.contains("static rk::dynamic_shared<unsigned int> smem;"),
            "{out}"
        );
        assert!(out.contains("not_this"));
    }

    #[test]
    fn other_externs_are_untouched() {
        let src = "extern \"C\" {\nextern int x;\n}\n__shared__ float t[4];\n";
        assert_eq!(rewrite_dynamic_shared(src), (src.to_string(), 0));
    }

    #[test]
    fn attributes_anywhere_are_dropped_and_literals_do_not_confuse() {
        let src = "const char* s = \"extern __shared__ int no[];\";\n\
                   __global__ void k() {\n  extern __shared__ float d[] __attribute__((aligned(16)));\n}\n";
        let (out, n) = rewrite_dynamic_shared(src);
        assert_eq!(n, 1, "{out}");
        assert!(out.contains("\"extern __shared__ int no[];\""), "{out}");
        assert!(
            out.contains("float *const d = static_cast<float *>(rk_dynamic_shared());"),
            "{out}"
        );
    }
}
