//! What the region form needs to know about a preprocessed translation unit, found without
//! parsing it: the kernel definitions (walking namespace scope only, stepping over every other
//! body by its matched braces), an index of function definitions by name (one look at each `{`),
//! and the functions the kernels can reach through the names they use. Only those are analysed;
//! the rest of the unit (libstdc++ and the like) is never looked into.

use std::collections::{BTreeSet, HashMap};

use super::super::lex::Tokens;
use super::super::scan::KERNEL_MARK;
use super::super::scopes::Scopes;

/// A kernel definition: `[template <...>] __rk_kernel__ void name(params) { body }`.
#[derive(Debug, Clone)]
pub struct KernelDef {
    /// `ns::name`.
    pub qualified: String,
    /// The enclosing namespaces, outermost first ("" for anonymous ones and `extern "C"`).
    pub namespaces: Vec<String>,
    /// `template <...>` as tokens [a, b).
    pub template_head: Option<(usize, usize)>,
    /// Where the definition starts (its template head or its marker).
    pub start: usize,
    pub name: String,
    /// The parameter list's tokens, between the parentheses.
    pub params: (usize, usize),
    /// The body's tokens, between the braces.
    pub body: (usize, usize),
}

/// The kernels a unit defines, and the qualified names of those with explicit specializations
/// (`template <> __global__ void k<float>(...) {...}`), which get no region form.
pub fn kernel_defs(toks: &Tokens) -> (Vec<KernelDef>, BTreeSet<String>) {
    let mut defs = Vec::new();
    let mut specialized = BTreeSet::new();
    let mut scopes = Scopes::default();
    let mut i = 0;
    while i < toks.len() {
        match toks.tok(i) {
            "{" => i = scopes.enter_or_skip(toks, i),
            "}" => scopes.leave(),
            KERNEL_MARK => {
                if let Some(def) = kernel_at(toks, i, &scopes) {
                    match def {
                        Ok(d) => {
                            i = d.body.1;
                            defs.push(d);
                        }
                        Err(name) => {
                            specialized.insert(name);
                        }
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    (defs, specialized)
}

/// The kernel definition at a marker; Err(qualified name) for an explicit specialization, None
/// for a declaration or an explicit instantiation.
pub fn kernel_at(toks: &Tokens, mark: usize, scopes: &Scopes) -> Option<Result<KernelDef, String>> {
    let namespaces = scopes.namespaces()?;
    // A template head ending just before the marker (maybe with `static`/`inline` between).
    let mut k = mark;
    while k > 0 && matches!(toks.tok(k - 1), "static" | "inline" | "extern") {
        k -= 1;
    }
    let mut template_head = None;
    if k > 0 && toks.is(k - 1, ">") {
        // Walk back to the `template <` that this `>` closes.
        let mut j = k - 1;
        let mut found = None;
        while j > 0 {
            j -= 1;
            if toks.is(j, "template")
                && toks.is(j + 1, "<")
                && toks.close_angle(j + 1) == Some(k - 1)
            {
                found = Some(j);
                break;
            }
            if matches!(toks.tok(j), ";" | "{" | "}") {
                break;
            }
        }
        template_head = Some((found?, k));
    } else if k > 0 && toks.is(k - 1, "template") {
        return None; // an explicit instantiation
    }
    let void_at = (mark + 1..(mark + 8).min(toks.len())).find(|&j| toks.is(j, "void"))?;
    let mut j = void_at + 1;
    while j < toks.len() && !toks.is(j, "(") {
        if matches!(toks.tok(j), ";" | "{" | "}") {
            return None;
        }
        j += 1;
    }
    let name_toks: Vec<&str> = (void_at + 1..j).map(|x| toks.tok(x)).collect();
    let open = j;
    let close = toks.close(open)?;
    let mut body_open = close + 1;
    while body_open < toks.len() && !toks.is(body_open, "{") && !toks.is(body_open, ";") {
        body_open += 1;
    }
    if !toks.is(body_open, "{") {
        return None; // a declaration
    }
    let body_close = toks.close(body_open)?;
    let qualify = |name: &str| {
        namespaces
            .iter()
            .filter(|n| !n.is_empty())
            .cloned()
            .chain([name.to_string()])
            .collect::<Vec<_>>()
            .join("::")
    };
    if name_toks.len() != 1 {
        let base = name_toks.first().copied().unwrap_or_default();
        return Some(Err(qualify(base)));
    }
    let name = name_toks[0].to_string();
    Some(Ok(KernelDef {
        qualified: qualify(&name),
        start: template_head.map_or(k, |(a, _)| a),
        namespaces,
        template_head,
        name,
        params: (open + 1, close),
        body: (body_open + 1, body_close),
    }))
}

/// The same kernel's definition in a text that starts with it (the kernel's text with helpers
/// inlined): token positions from `toks`, names from `original`.
pub fn kernel_in(toks: &Tokens, original: &KernelDef) -> Option<KernelDef> {
    let mark = (0..toks.len()).find(|&i| toks.is(i, KERNEL_MARK))?;
    let found = kernel_at(toks, mark, &Scopes::default())?.ok()?;
    Some(KernelDef {
        qualified: original.qualified.clone(),
        namespaces: original.namespaces.clone(),
        name: original.name.clone(),
        ..found
    })
}

/// A function definition: its name, the `(` opening its parameters, and its body's tokens
/// (between the braces).
#[derive(Debug, Clone)]
pub struct FnBody {
    pub name: String,
    pub params_open: usize,
    pub body: (usize, usize),
}

/// Words before `(...) {` that make it no function definition.
const NOT_FUNCTIONS: &[&str] = &[
    "if",
    "for",
    "while",
    "switch",
    "catch",
    "__attribute__",
    "decltype",
    "sizeof",
];

/// Words between a function's parameters and its body.
const AFTER_PARAMS: &[&str] = &["const", "noexcept", "override", "final"];

/// Function definitions of the unit by name (member functions and overloads included), found by
/// their shape `name ( params ) [const|noexcept|override|final] [-> type] {` at each `{`. A call
/// operator (`operator()`, what calling a functor runs) is indexed under its class's name, which
/// is what code using the functor names.
pub struct FunctionIndex {
    bodies: Vec<FnBody>,
    by_name: HashMap<String, Vec<usize>>,
}

/// The `)` closing the parameters of a function whose body opens at `brace`: before the body,
/// the words of [`AFTER_PARAMS`] and a trailing return type (`-> type`) may come.
pub fn params_close(toks: &Tokens, brace: usize) -> Option<usize> {
    let skip_words = |mut k: usize| {
        while k > 0 && AFTER_PARAMS.contains(&toks.tok(k - 1)) {
            k -= 1;
        }
        k
    };
    let mut k = skip_words(brace);
    if k > 0 && !toks.is(k - 1, ")") {
        // `-> type`: the arrow, at most a few dozen tokens back, with no statement boundary
        // between (`decltype(...)` brackets are stepped over).
        let mut j = k - 1;
        let mut found = None;
        for _ in 0..48 {
            match toks.tok(j) {
                "->" => {
                    found = Some(j);
                    break;
                }
                ";" | "{" | "}" | "=" => break,
                ")" => j = toks.open_of(j)?,
                _ => {}
            }
            if j == 0 {
                break;
            }
            j -= 1;
        }
        k = skip_words(found?);
    }
    (k > 0 && toks.is(k - 1, ")")).then(|| k - 1)
}

/// The name of the class whose body encloses token `at` (`struct name ... {`, `class`, `union`).
fn enclosing_class(toks: &Tokens, at: usize) -> Option<String> {
    let mut depth = 0i32;
    let mut k = at;
    while k > 0 {
        k -= 1;
        match toks.tok(k) {
            "}" => depth += 1,
            "{" if depth > 0 => depth -= 1,
            "{" => {
                // The class head: back to `struct|class|union NAME` before any `;` or `}`.
                let mut j = k;
                while j > 0 && !matches!(toks.tok(j - 1), ";" | "{" | "}") {
                    j -= 1;
                    if matches!(toks.tok(j), "struct" | "class" | "union") && toks.ident(j + 1) {
                        return Some(toks.tok(j + 1).to_string());
                    }
                }
                return None;
            }
            _ => {}
        }
    }
    None
}

impl FunctionIndex {
    pub fn new(toks: &Tokens) -> FunctionIndex {
        let mut bodies = Vec::new();
        let mut by_name: HashMap<String, Vec<usize>> = HashMap::new();
        for i in 0..toks.len() {
            if !toks.is(i, "{") {
                continue;
            }
            let Some(open) = params_close(toks, i).and_then(|c| toks.open_of(c)) else {
                continue;
            };
            if open == 0 {
                continue;
            }
            let name = if toks.ident(open - 1) && !NOT_FUNCTIONS.contains(&toks.tok(open - 1)) {
                toks.tok(open - 1).to_string()
            } else if open >= 3
                && toks.is(open - 1, ")")
                && toks.is(open - 2, "(")
                && toks.is(open - 3, "operator")
            {
                // `F::operator()(...)` outside the class, or `operator()(...)` inside it.
                let class = if open >= 5 && toks.is(open - 4, "::") && toks.ident(open - 5) {
                    Some(toks.tok(open - 5).to_string())
                } else {
                    enclosing_class(toks, open - 3)
                };
                match class {
                    Some(c) => c,
                    None => continue,
                }
            } else {
                continue;
            };
            if let Some(close) = toks.close(i) {
                by_name.entry(name.clone()).or_default().push(bodies.len());
                bodies.push(FnBody {
                    name,
                    params_open: open,
                    body: (i + 1, close),
                });
            }
        }
        FunctionIndex { bodies, by_name }
    }

    /// The functions whose names the token ranges `roots` use, or that are `named`, and the
    /// functions whose names those use, and so on: everything code in `roots` can call or take
    /// the address of (by name, so all overloads of a name).
    pub fn reachable(
        &self,
        toks: &Tokens,
        roots: &[(usize, usize)],
        named: &[&str],
    ) -> Vec<&FnBody> {
        let mut seen = vec![false; self.bodies.len()];
        let mut out = Vec::new();
        let mut pending: Vec<(usize, usize)> = roots.to_vec();
        for &k in named.iter().flat_map(|n| self.by_name.get(*n)).flatten() {
            if !seen[k] {
                seen[k] = true;
                out.push(&self.bodies[k]);
                pending.push(self.bodies[k].body);
            }
        }
        while let Some((a, b)) = pending.pop() {
            for i in a..b {
                if !toks.ident(i) {
                    continue;
                }
                for &k in self.by_name.get(toks.tok(i)).into_iter().flatten() {
                    if !seen[k] {
                        seen[k] = true;
                        out.push(&self.bodies[k]);
                        pending.push(self.bodies[k].body);
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::lex::lex;
    use super::*;

    #[test]
    fn kernels_are_found_at_namespace_scope_with_their_template_heads() {
        let t = lex("namespace n { template <int W> static __rk_kernel__ void w(float* p) { if (p) { } } }\n\
             struct S { void f() { __rk_kernel__ void hidden(); } };\n\
             template <> __rk_kernel__ void w<3>(float* p) { }\n\
             template __rk_kernel__ void n::w<32>(float*);\n\
             __rk_kernel__ void decl(int);\n\
             extern \"C\" { __rk_kernel__ void c(int n) { } }");
        let (defs, specialized) = kernel_defs(&t);
        let names: Vec<&str> = defs.iter().map(|d| d.qualified.as_str()).collect();
        assert_eq!(names, ["n::w", "c"]);
        assert!(defs[0].template_head.is_some());
        assert!(t.is(defs[0].start, "template"));
        assert_eq!(defs[1].namespaces, [""]);
        assert_eq!(specialized.into_iter().collect::<Vec<_>>(), ["w"]);
    }

    #[test]
    fn only_functions_the_kernels_name_are_reachable() {
        let t = lex("int leaf(int x) { return x; }\n\
             int mid(int x) { return leaf(x) + 1; }\n\
             int unused(int x) { return mid(x); }\n\
             struct A { int get() const { return 1; } };\n\
             __rk_kernel__ void k(int* p) { if (p) { p[0] = mid(p[0]); } }");
        let index = FunctionIndex::new(&t);
        let (defs, _) = kernel_defs(&t);
        let mut names: Vec<&str> = index
            .reachable(&t, &[defs[0].body], &[])
            .iter()
            .map(|f| f.name.as_str())
            .collect();
        names.sort();
        assert_eq!(names, ["leaf", "mid"]);
        // Member functions are indexed; `if (...) {` is no function.
        assert!(index.by_name.contains_key("get"));
        assert!(!index.by_name.contains_key("if"));
    }
}
