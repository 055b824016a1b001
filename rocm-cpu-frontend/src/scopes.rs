//! The namespaces around a point of a translation unit: kernels are named by them (`ns::saxpy`),
//! and only a function at namespace scope can be a kernel.

use super::lex::{Kind, Tokens};

/// What the `{` at `brace` opens: a namespace (`Some("a::b")`; `Some("")` for an anonymous one
/// or an `extern "C"` block), or anything else (`None`: a function, class or initializer).
pub fn opened_by(toks: &Tokens, brace: usize) -> Option<String> {
    // `namespace a {`, `namespace a::b {`, `namespace {`, `extern "C" {`.
    let mut j = brace;
    let mut parts = Vec::new();
    while j > 0 && (toks.ident(j - 1) || toks.is(j - 1, "::")) {
        if toks.is(j - 1, "namespace") {
            break;
        }
        if toks.ident(j - 1) {
            parts.push(toks.tok(j - 1));
        }
        j -= 1;
    }
    if j > 0 && toks.is(j - 1, "namespace") {
        parts.reverse();
        Some(parts.join("::"))
    } else if brace >= 2
        && toks.is(brace - 2, "extern")
        && toks.kind(brace - 1) == Some(Kind::Literal)
    {
        Some(String::new())
    } else {
        None
    }
}

/// The braces around the token a walk over a unit has reached, outermost first: `Some(name)` for
/// a namespace, `None` for anything else.
#[derive(Debug, Default, Clone)]
pub struct Scopes {
    stack: Vec<Option<String>>,
}

impl Scopes {
    /// At a `{`: enter what it opens.
    pub fn enter(&mut self, toks: &Tokens, brace: usize) {
        self.stack.push(opened_by(toks, brace));
    }

    /// At a `{` of a walk over namespace scope only: enter it and return `brace` if it opens a
    /// namespace, else return the index of its `}` (or the end), so the walk steps over the
    /// function or class, where no kernel is defined.
    pub fn enter_or_skip(&mut self, toks: &Tokens, brace: usize) -> usize {
        match opened_by(toks, brace) {
            Some(namespace) => {
                self.stack.push(Some(namespace));
                brace
            }
            None => toks.close(brace).unwrap_or(toks.len()),
        }
    }

    /// At a `}`.
    pub fn leave(&mut self) {
        self.stack.pop();
    }

    /// The enclosing namespaces (anonymous ones as ""), or None inside anything else.
    pub fn namespaces(&self) -> Option<Vec<String>> {
        self.stack.iter().cloned().collect()
    }

    /// `name` qualified by the enclosing named namespaces (`a::b::name`), or None inside
    /// anything else (a function or class: no kernel is defined there).
    pub fn qualify(&self, name: &str) -> Option<String> {
        let mut parts = Vec::new();
        for s in &self.stack {
            match s {
                Some(ns) if !ns.is_empty() => parts.push(ns.as_str()),
                Some(_) => {}
                None => return None,
            }
        }
        parts.push(name);
        Some(parts.join("::"))
    }
}

#[cfg(test)]
mod tests {
    use super::super::lex::lex;
    use super::*;

    #[test]
    fn namespaces_qualify_and_other_braces_do_not() {
        let t = lex("namespace a::b { namespace { extern \"C\" { struct S { int f() { } }; } } }");
        let mut scopes = Scopes::default();
        let mut seen = Vec::new();
        for i in 0..t.len() {
            match t.tok(i) {
                "{" => {
                    scopes.enter(&t, i);
                    seen.push(scopes.qualify("k"));
                }
                "}" => scopes.leave(),
                _ => {}
            }
        }
        assert_eq!(
            seen,
            [
                Some("a::b::k".to_string()),
                Some("a::b::k".to_string()),
                Some("a::b::k".to_string()),
                None,
                None
            ]
        );
        assert!(scopes.namespaces().is_some_and(|n| n.is_empty()));
    }
}
