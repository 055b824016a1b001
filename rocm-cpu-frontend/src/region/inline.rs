//! Helpers that wait, inlined into kernels: a device function with a barrier or collective
//! inside (a `warpReduceSum`) is put in place of its call where the kernel calls it as a
//! statement or as the right-hand side of one, so the region form sees the collectives inside.
//! Helpers are read from the unit (only those the kernels reach); only the kernel's own text is
//! rewritten and lexed again.

use std::collections::{BTreeMap, BTreeSet};

use super::super::lex::{lex, Tokens};
use super::parse::{param_names, Parser, EXPR_WORDS, NOT_TYPES};
use super::unit::{kernel_in, FnBody, KernelDef};

/// A device function with a barrier or collective inside (a `warpReduceSum`), in the shape the
/// rewrite can put in place of a call: not a template, parameters by value, no `static` locals,
/// and one `return expr;` as its last statement (none, for `void`). (Templates are left alone:
/// their argument and result types could only be named with `auto`, and the region form types an
/// `auto` variable that lives across a collective from names it may not see.)
pub struct Helper {
    /// Per parameter: its type as written, and its name.
    params: Vec<(String, String)>,
    /// The return type; None for `void`.
    ret: Option<String>,
    /// Statements before the final `return`, and the returned expression.
    body: String,
    result: Option<String>,
    /// Identifiers the body uses but does not declare (globals, functions, types): a kernel
    /// declaring one of them would capture it, so such calls stay calls.
    free: BTreeSet<String>,
}

/// Names a token range declares (`type name =`, `type name;`, `type name,` `type name[`), by
/// the shape around them: enough to tell whether inlining could capture a name.
pub fn declared_names(src: &Tokens, a: usize, b: usize) -> BTreeSet<String> {
    // `T * name` is a declaration only where `T` starts a statement (else `v * name` is one).
    let pointer_decl = |i: usize| {
        i >= 2
            && src.ident(i - 1)
            && (i - 2 < a || matches!(src.tok(i - 2), ";" | "{" | "}" | "(" | "," | "const"))
    };
    (a + 1..b)
        .filter(|&i| {
            src.ident(i)
                && matches!(src.tok(i + 1), "=" | ";" | "," | "[" | ":" | ")" | "{")
                && ((src.ident(i - 1)
                    && !NOT_TYPES.contains(&src.tok(i - 1))
                    && !EXPR_WORDS.contains(&src.tok(i - 1)))
                    || src.is(i - 1, ">")
                    || (matches!(src.tok(i - 1), "*" | "&") && pointer_decl(i - 1)))
        })
        .map(|i| src.tok(i).to_string())
        .collect()
}

/// The helper defined by `f`, if it has the shape [`Helper`] needs.
fn helper_at(src: &Tokens, f: &FnBody) -> Option<Helper> {
    let popen = f.params_open;
    let pclose = src.close(popen)?;
    // `auto name(params) -> type`: the return type after the arrow.
    let arrow = (pclose + 1..f.body.0 - 1).find(|&j| src.is(j, "->"));
    let qualifiers_end = arrow.unwrap_or(f.body.0 - 1);
    if (pclose + 1..qualifiers_end).any(|j| !matches!(src.tok(j), "const" | "noexcept")) {
        return None; // `override`, `final`: a member function
    }
    let trailing: Option<Vec<&str>> =
        arrow.map(|a| (a + 1..f.body.0 - 1).map(|j| src.tok(j)).collect());
    let name = popen - 1;
    // The return type: names, `::` and `*` back to a boundary; storage words dropped.
    let mut r = name;
    while r > 0 && (src.ident(r - 1) || matches!(src.tok(r - 1), "::" | "*")) {
        r -= 1;
    }
    if r > 0 && !matches!(src.tok(r - 1), ";" | "{" | "}" | ")" | ">") {
        return None;
    }
    const STORAGE: &[&str] = &[
        "static",
        "inline",
        "__inline__",
        "constexpr",
        "extern",
        "__device__",
        "__host__",
        "__forceinline__",
        "__noinline__",
    ];
    let mut ret_words: Vec<&str> = (r..name)
        .map(|j| src.tok(j))
        .filter(|w| !STORAGE.contains(w))
        .collect();
    if let Some(trailing) = trailing {
        if ret_words != ["auto"] || trailing.is_empty() {
            return None;
        }
        ret_words = trailing;
    }
    if ret_words.is_empty()
        || ret_words
            .iter()
            .any(|w| matches!(*w, "auto" | "operator" | "decltype"))
    {
        return None;
    }
    // A template: `template <...>` before the return type, attributes between them (the scan
    // spells `__device__` as `__attribute__((__rk_device__))`).
    let mut before = r;
    while before > 0 && src.is(before - 1, ")") {
        match src.open_of(before - 1) {
            Some(open) if open >= 1 && src.is(open - 1, "__attribute__") => before = open - 1,
            _ => break,
        }
    }
    if before > 0 && src.is(before - 1, ">") {
        return None; // a template
    }
    let mut params = Vec::new();
    let whole = src.split_commas(popen + 1, pclose);
    let only_void = whole.len() == 1 && whole[0].1 == whole[0].0 + 1 && src.is(whole[0].0, "void");
    if !only_void {
        for (x, y) in whole {
            if (x..y).any(|j| matches!(src.tok(j), "&" | "&&" | "..." | "=" | "[" | "(")) {
                return None;
            }
            let pname = (y > x + 1 && src.ident(y - 1)).then(|| src.tok(y - 1).to_string())?;
            params.push((src.text(x, y - 1).to_string(), pname));
        }
    }
    let ret = (ret_words != ["void"]).then(|| ret_words.join(" "));
    // The body: no `static` locals or `goto`; one `return` at the end.
    let (a, b) = f.body;
    if (a..b).any(|j| matches!(src.tok(j), "static" | "goto" | "__rk_kernel__")) {
        return None;
    }
    let returns: Vec<usize> = (a..b).filter(|&j| src.is(j, "return")).collect();
    let (body_end, result) = match (&ret, returns.as_slice()) {
        (None, []) => (b, None),
        (None, [r]) if src.is(r + 1, ";") && r + 2 == b => (*r, None),
        (Some(_), [r]) if b > r + 2 && src.is(b - 1, ";") => {
            // The `return` must start the last statement at the body's own level.
            let mut depth = 0i32;
            for j in a..*r {
                match src.tok(j) {
                    "(" | "[" | "{" => depth += 1,
                    ")" | "]" | "}" => depth -= 1,
                    _ => {}
                }
            }
            if depth != 0 || !(a == *r || matches!(src.tok(r - 1), ";" | "}" | "{")) {
                return None;
            }
            if (r + 1..b - 1).any(|j| src.is(j, ";")) || src.split_commas(r + 1, b - 1).len() != 1 {
                return None;
            }
            (*r, Some(src.text(r + 1, b - 1).to_string()))
        }
        _ => return None,
    };
    let mut declared = declared_names(src, a, b);
    declared.extend(params.iter().map(|(_, n)| n.clone()));
    let free = (a..b)
        .filter(|&j| src.ident(j) && !matches!(src.tok(j.saturating_sub(1)), "." | "->" | "::"))
        .map(|j| src.tok(j).to_string())
        .filter(|w| !declared.contains(w))
        .collect();
    Some(Helper {
        params,
        ret,
        body: src.text(a, body_end).to_string(),
        result,
        free,
    })
}

/// The helpers kernels may have inlined, by name: the helper where the name's one waiting
/// definition has the shape [`Helper`] needs, None where it does not or where the name is
/// overloaded (two waiting definitions): such calls stay calls.
pub struct Helpers {
    by_name: BTreeMap<String, Option<Helper>>,
}

impl Helpers {
    /// The helpers among `functions` (of `unit`) whose names are in `waiting`.
    pub fn new(unit: &Tokens, functions: &[&FnBody], waiting: &BTreeSet<String>) -> Helpers {
        let mut by_name: BTreeMap<String, Option<Helper>> = BTreeMap::new();
        for f in functions {
            if !waiting.contains(&f.name) {
                continue;
            }
            let overloaded = by_name.contains_key(f.name.as_str());
            let parsed = if overloaded { None } else { helper_at(unit, f) };
            by_name.insert(f.name.clone(), parsed);
        }
        Helpers { by_name }
    }

    pub fn is_empty(&self) -> bool {
        self.by_name.values().all(Option::is_none)
    }
}

/// The text of kernel `def` (from `unit`) with calls of waiting helpers replaced by the helpers'
/// bodies (`float s = warp_sum(v);` becomes `float rk_h1_a0 = v; float rk_h1_r{}; { float v =
/// rk_h1_a0; ...loop...; rk_h1_r = v; } float s = rk_h1_r;`). A call is replaced when it is a
/// whole statement or the right-hand side of one (an assignment, a declaration) outside
/// conditions and `?:`, `&&`, `||`; arguments are evaluated first, as for a call. None when
/// nothing was replaced. (The kernel itself, for the fiber path, keeps calling them.)
pub fn inline_helpers(unit: &Tokens, def: &KernelDef, helpers: &Helpers) -> Option<String> {
    if helpers.is_empty() {
        return None;
    }
    let mut cur = unit.text(def.start, def.body.1 + 1).to_string();
    let mut changed = false;
    let mut serial = 0usize;
    // Helpers calling helpers: one level per round.
    for _ in 0..4 {
        let src = lex(&cur);
        let Some(def) = kernel_in(&src, def) else {
            break;
        };
        // (byte position, bytes replaced, new text)
        let mut edits: Vec<(usize, usize, String)> = Vec::new();
        let (ba, bb) = def.body;
        let mut kernel_declared = declared_names(&src, ba, bb);
        kernel_declared.extend(param_names(&src, def.params).into_iter().map(|(n, _)| n));
        let mut i = ba;
        while i < bb {
            let Some(Some(h)) = helpers.by_name.get(src.tok(i)) else {
                i += 1;
                continue;
            };
            let call = i;
            i += 1;
            if !src.ident(call)
                || !src.is(call + 1, "(")
                || matches!(src.tok(call - 1), "." | "->" | "::")
                || h.free.iter().any(|w| kernel_declared.contains(w))
            {
                continue;
            }
            let Some(close) = src.close(call + 1) else {
                continue;
            };
            // The statement's start: the call must not sit inside brackets (a condition, an
            // argument, a subscript) or after `?`, `:`, `&&`, `||` or `,` (which could skip it).
            let mut st = call;
            let mut ok = true;
            let mut depth = 0i32;
            while st > ba {
                match src.tok(st - 1) {
                    ";" | "{" | "}" if depth == 0 => break,
                    ")" | "]" => depth += 1,
                    "(" | "[" => {
                        depth -= 1;
                        if depth < 0 {
                            ok = false;
                            break;
                        }
                    }
                    "?" | ":" | "&&" | "||" | "," if depth == 0 => {
                        ok = false;
                        break;
                    }
                    _ => {}
                }
                st -= 1;
            }
            // And its end: the `;` closing it.
            let Ok(past) = (Parser { src: &src }).simple_end(close + 1) else {
                continue;
            };
            let end = past - 1;
            if end >= bb {
                continue;
            }
            if !ok
                || matches!(
                    src.tok(st),
                    "if" | "while"
                        | "for"
                        | "switch"
                        | "return"
                        | "else"
                        | "do"
                        | "case"
                        | "default"
                        | "goto"
                )
            {
                continue;
            }
            let args = src.split_commas(call + 2, close);
            if args.len() != h.params.len() {
                continue;
            }
            if h.ret.is_none() && (st != call || end != close + 1) {
                continue; // a void call inside an expression
            }
            serial += 1;
            let n = serial;
            let mut pre = String::from("\n");
            for (k, ((x, y), (ty, _))) in args.iter().zip(&h.params).enumerate() {
                pre.push_str(&format!("{ty} rk_h{n}_a{k} = {};\n", src.text(*x, *y)));
            }
            if let Some(ty) = &h.ret {
                pre.push_str(&format!("{ty} rk_h{n}_r{{}};\n"));
            }
            pre.push_str("{\n");
            for (k, (ty, name)) in h.params.iter().enumerate() {
                pre.push_str(&format!("{ty} {name} = rk_h{n}_a{k};\n"));
            }
            pre.push_str(&h.body);
            if let Some(result) = &h.result {
                pre.push_str(&format!("\nrk_h{n}_r = {result};"));
            }
            pre.push_str("\n}\n");
            let stmt_at = src.token(st).start;
            let (cs, ce) = (src.token(call).start, src.token(close).end);
            if h.ret.is_none() || (st == call && end == close + 1) {
                // The statement is the call: the block replaces it.
                let semi = src.token(close + 1).end;
                edits.push((stmt_at, semi - stmt_at, pre));
            } else {
                edits.push((cs, ce - cs, format!("rk_h{n}_r")));
                edits.push((stmt_at, 0, pre));
            }
            i = end + 1;
        }
        if edits.is_empty() {
            break;
        }
        edits.sort_by(|x, y| y.0.cmp(&x.0).then(y.1.cmp(&x.1)));
        for (at, len, with) in edits {
            cur.replace_range(at..at + len, &with);
        }
        changed = true;
    }
    changed.then_some(cur)
}
