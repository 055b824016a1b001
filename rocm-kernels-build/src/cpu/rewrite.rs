//! Source rewriting for the cpu backend: `extern __shared__ T name[];` cannot be expressed with
//! macros (it must become a view of the running block's dynamic shared memory), so the build
//! compiles a copy of each source where those declarations are replaced, keeping every line where
//! it was (a `#line` directive maps diagnostics back to the original file).

/// Replace the `extern __shared__` declarations of `source`; returns the new text and how many.
pub fn rewrite_dynamic_shared(source: &str) -> (String, usize) {
    let b = source.as_bytes();
    let mut out = String::with_capacity(source.len() + 64);
    let mut copied = 0;
    let mut count = 0;
    // Scope stack: true for namespace-like scopes (namespace, extern "C"), false otherwise.
    let mut scopes: Vec<bool> = Vec::new();
    let mut last_words: Vec<String> = Vec::new();
    let mut i = 0;
    let mut line_start = true;
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            line_start = true;
            i += 1;
            continue;
        }
        if c == b' ' || c == b'\t' || c == b'\r' {
            i += 1;
            continue;
        }
        if line_start && c == b'#' {
            // Preprocessor line (with continuations).
            while i < b.len() && b[i] != b'\n' {
                if b[i] == b'\\' && b.get(i + 1) == Some(&b'\n') {
                    i += 1;
                }
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
            let q = c;
            i += 1;
            while i < b.len() && b[i] != q {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            last_words.push("\"".into());
            continue;
        }
        if c == b'{' {
            let n = last_words.len();
            let namespace_like = (n >= 1 && last_words[n - 1] == "namespace")
                || (n >= 2 && last_words[n - 2] == "namespace")
                || (n >= 2 && last_words[n - 1] == "\"" && last_words[n - 2] == "extern")
                || last_words
                    .iter()
                    .rev()
                    .take_while(|w| *w != ";")
                    .any(|w| w == "namespace");
            scopes.push(namespace_like);
            last_words.clear();
            i += 1;
            continue;
        }
        if c == b'}' {
            scopes.pop();
            last_words.clear();
            i += 1;
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            let word = &source[start..i];
            if word == "extern" {
                if let Some((end, replacement)) = dynamic_shared_decl(source, start, &scopes) {
                    out.push_str(&source[copied..start]);
                    out.push_str(&replacement);
                    // Keep the line count: re-emit the newlines the declaration spanned.
                    for _ in source[start..end].matches('\n') {
                        out.push('\n');
                    }
                    copied = end;
                    i = end;
                    count += 1;
                    last_words.clear();
                    continue;
                }
            }
            last_words.push(word.to_string());
            continue;
        }
        if c == b';' {
            last_words.clear();
            last_words.push(";".into());
        }
        i += 1;
    }
    out.push_str(&source[copied..]);
    (out, count)
}

/// At `extern`: if this is `extern __shared__ [attrs] TYPE NAME[];`, the end offset (after `;`)
/// and the replacement text.
fn dynamic_shared_decl(source: &str, start: usize, scopes: &[bool]) -> Option<(usize, String)> {
    let end = start + source[start..].find(';')? + 1;
    let decl = &source[start..end - 1];
    let mut rest = decl.strip_prefix("extern")?.trim_start();
    rest = rest.strip_prefix("__shared__")?;
    if !rest.starts_with(|c: char| c.is_whitespace()) {
        return None;
    }
    // Drop alignment attributes: the runtime aligns dynamic shared memory to 256 bytes.
    let mut text = rest.to_string();
    for attr in ["__align__", "alignas", "__attribute__"] {
        while let Some(at) = text.find(attr) {
            let open = at + text[at..].find('(')?;
            let mut depth = 0;
            let mut close = open;
            for (k, ch) in text[open..].char_indices() {
                match ch {
                    '(' => depth += 1,
                    ')' => {
                        depth -= 1;
                        if depth == 0 {
                            close = open + k;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            text.replace_range(at..=close, " ");
        }
    }
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let text = text.strip_suffix(']')?.trim_end();
    let text = text.strip_suffix('[')?.trim_end();
    let name_start = text.rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))? + 1;
    let name = &text[name_start..];
    let ty = text[..name_start].trim();
    if name.is_empty() || ty.is_empty() {
        return None;
    }
    let at_namespace_scope = scopes.iter().all(|&namespace_like| namespace_like);
    let replacement = if at_namespace_scope {
        format!("static rk::dynamic_shared<{ty}> {name};")
    } else {
        format!("{ty} *const {name} = static_cast<{ty} *>(rk_dynamic_shared());")
    };
    Some((end, replacement))
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
}
