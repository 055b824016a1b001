//! The `__constant__` and `__device__` variables a unit defines at namespace scope, which the
//! runtime can read and write (`Module::global`): found in the preprocessed unit by the
//! attributes the cpu header gives the two qualifiers under `RK_SCAN`
//! (`__attribute__((__rk_constant__))`), in the user's files only (not system headers).

use super::lex::Tokens;
use super::scopes::Scopes;

/// One variable: its name qualified by its namespaces (`ns::mask`), whether it is `__constant__`,
/// and where it is (file, line) for messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScannedGlobal {
    pub name: String,
    pub constant: bool,
    pub file: String,
    pub line: u32,
}

const DEVICE: &str = "__rk_device__";
const CONSTANT: &str = "__rk_constant__";

/// At `__attribute__` (index `i`): the index after its `((...))` and the marker it holds, if one.
fn attribute(toks: &Tokens, i: usize) -> Option<(usize, Option<&'static str>)> {
    if !toks.is(i, "__attribute__") || !toks.is(i + 1, "(") {
        return None;
    }
    let close = toks.close(i + 1)?;
    let marker = if toks.is(i + 3, DEVICE) && close == i + 5 {
        Some(DEVICE)
    } else if toks.is(i + 3, CONSTANT) && close == i + 5 {
        Some(CONSTANT)
    } else {
        None
    };
    Some((close + 1, marker))
}

/// The variables a declaration starting at `from` (after its qualifiers) declares, and where
/// it ends; `None` names when it is a function, a declaration without storage (`extern`) or
/// anything else that holds no variable.
fn declaration(toks: &Tokens, from: usize) -> (Vec<usize>, usize) {
    let mut names = Vec::new();
    let mut last_ident: Option<usize> = None;
    let mut declarator_done = false;
    let mut is_extern = false;
    let mut j = from;
    while j < toks.len() {
        let t = toks.tok(j);
        match t {
            ";" => {
                if let (Some(n), false) = (last_ident, declarator_done) {
                    names.push(n);
                }
                return (if is_extern { Vec::new() } else { names }, j + 1);
            }
            "extern" => is_extern = true,
            "typedef" | "using" | "template" | "friend" | "class" | "enum" | "union" => {
                // Not a variable of ours: step to the end of the declaration.
                return (Vec::new(), skip_to_semicolon(toks, j));
            }
            "__attribute__" | "alignas" | "decltype" | "__declspec" => {
                if let Some(close) = toks.close(j + 1) {
                    j = close;
                }
            }
            "(" => {
                if !declarator_done && last_ident.is_some() {
                    // `name(`: a function (definition or declaration).
                    let close = toks.close(j).unwrap_or(toks.len() - 1);
                    let end = if toks.is(close + 1, "{")
                        || (toks.is(close + 1, "const") && toks.is(close + 2, "{"))
                    {
                        toks.close(if toks.is(close + 1, "{") {
                            close + 1
                        } else {
                            close + 2
                        })
                        .map_or(toks.len(), |c| c + 1)
                    } else {
                        skip_to_semicolon(toks, close)
                    };
                    return (Vec::new(), end);
                }
                j = toks.close(j).unwrap_or(j);
            }
            "[" => {
                if let (Some(n), false) = (last_ident, declarator_done) {
                    names.push(n);
                    declarator_done = true;
                }
                j = toks.close(j).unwrap_or(j);
            }
            "=" | "{" => {
                if let (Some(n), false) = (last_ident, declarator_done) {
                    names.push(n);
                    declarator_done = true;
                }
                // The initializer: to the next `,` or `;` at this level.
                let mut k = j;
                while k < toks.len() && !toks.is(k, ",") && !toks.is(k, ";") {
                    if matches!(toks.tok(k), "(" | "[" | "{") {
                        k = toks.close(k).unwrap_or(k);
                    }
                    k += 1;
                }
                j = k;
                continue;
            }
            "," => {
                if let (Some(n), false) = (last_ident, declarator_done) {
                    names.push(n);
                }
                declarator_done = false;
                last_ident = None;
            }
            // `struct S x;` declares x; `struct S { ... } x;` too: step over a body.
            "struct" if toks.is(j + 2, "{") => j = toks.close(j + 2).unwrap_or(j),
            _ if toks.ident(j) => last_ident = Some(j),
            _ => {}
        }
        j += 1;
    }
    (Vec::new(), toks.len())
}

fn skip_to_semicolon(toks: &Tokens, mut j: usize) -> usize {
    while j < toks.len() && !toks.is(j, ";") {
        if matches!(toks.tok(j), "(" | "[" | "{") {
            j = toks.close(j).unwrap_or(j);
        }
        j += 1;
    }
    j + 1
}

/// The unit's namespace-scope `__constant__` and `__device__` variables, in order, each once.
pub fn scan_globals(toks: &Tokens) -> Vec<ScannedGlobal> {
    let mut out: Vec<ScannedGlobal> = Vec::new();
    let mut scopes = Scopes::default();
    let mut i = 0;
    while i < toks.len() {
        match toks.tok(i) {
            "{" => i = scopes.enter_or_skip(toks, i),
            "}" => scopes.leave(),
            "__attribute__" => {
                if let Some((mut next, Some(first))) = attribute(toks, i) {
                    let mut constant = first == CONSTANT;
                    // `__device__ __constant__`, `static`, `const`...: more specifiers.
                    while let Some((after, marker)) = attribute(toks, next) {
                        constant |= marker == Some(CONSTANT);
                        next = after;
                    }
                    let (mut names, end) = declaration(toks, next);
                    // `extern __constant__ float m[];` declares storage defined elsewhere.
                    let mut k = i;
                    while k > 0
                        && matches!(
                            toks.tok(k - 1),
                            "static" | "inline" | "const" | "volatile" | "extern"
                        )
                    {
                        if toks.is(k - 1, "extern") {
                            names.clear();
                        }
                        k -= 1;
                    }
                    let system = toks.origin(i).is_some_and(|(m, _)| {
                        m.flags.contains(&"3") || m.file.contains("/include/cpu/hip/")
                    });
                    if !system {
                        for n in names {
                            let Some(name) = scopes.qualify(toks.tok(n)) else {
                                continue;
                            };
                            let (file, line) = toks
                                .origin(n)
                                .map(|(m, l)| (m.file.to_string(), l))
                                .unwrap_or_default();
                            if !out.iter().any(|g| g.name == name) {
                                out.push(ScannedGlobal {
                                    name,
                                    constant,
                                    file,
                                    line,
                                });
                            }
                        }
                    }
                    i = end;
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::lex::lex;
    use super::*;

    fn names(src: &str) -> Vec<(String, bool)> {
        scan_globals(&lex(src))
            .into_iter()
            .map(|g| (g.name, g.constant))
            .collect()
    }

    #[test]
    fn finds_variables_not_functions() {
        let c = "__attribute__((__rk_constant__))";
        let d = "__attribute__((__rk_device__))";
        let src = format!(
            "{c} float mask[9];\n\
             {d} int counter = 0;\n\
             {d} float helper(float x) {{ return x; }}\n\
             {d} inline int h2(int);\n\
             namespace ns {{ {c} float table[4] = {{1, 2, 3, 4}}; {d} {c} double a, b[2]; }}\n\
             extern {c} float declared_only[];\n\
             struct S {{ {d} float member(); }};\n\
             void host() {{ {d} static int not_ours; }}\n\
             {d} static const int k = 3;\n"
        );
        assert_eq!(
            names(&src),
            [
                ("mask".to_string(), true),
                ("counter".to_string(), false),
                ("ns::table".to_string(), true),
                ("ns::a".to_string(), true),
                ("ns::b".to_string(), true),
                ("k".to_string(), false),
            ]
        );
    }
}
