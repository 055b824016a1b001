//! The device code of a whole HIP program (kernels, device functions, host code and `main` in
//! one `.hip` file), found mechanically so that the device code itself is never edited.
//!
//! The rule, on the program's tokens (the cpu build's own lexer, so comments, strings and
//! preprocessor lines are read as the build reads them):
//!
//! 1. A *function definition at namespace scope* (inside namespaces and `extern "C"` blocks too)
//!    whose declaration carries none of `__global__`, `__device__` or `constexpr` (which HIP
//!    compiles for the device too) is host code: it is removed, from its first token (template
//!    header included) to its closing brace.
//! 2. So is a namespace-scope *variable or function declaration* without those words (nor
//!    `__constant__`, `__shared__`, `__managed__`) that no kept code names
//!    (`const std::array<float, 25> convolution_filter_5x5 = {...};`), and every `#include`
//!    but HIP's own (`<hip/...>`) and the program's own headers that are taken with it
//!    ([`device_code_keeping`]): host headers, which NVRTC, for one, does not have.
//! 3. Each removal is replaced by a comment naming it and as many newlines, so every remaining
//!    line keeps its number. Nothing else is removed or changed: kernels, device functions,
//!    `__constant__`, `__device__` and `__shared__` variables, types, templates, macros and
//!    conditionals stay as written ([`verify`] checks it, independently of this rule).
//! 4. A kernel template that removed host code launches (any `name<args>` in it: `<<<...>>>`,
//!    `hipLaunchCooperativeKernel(name<args>, ...)`) would no longer be instantiated: each such
//!    instance is listed with an explicit instantiation, for a file of its own that includes the
//!    device code ([`DeviceCode::instances_file`]). A template argument that names a `constexpr`
//!    local of the removed function initialised with a literal (`constexpr unsigned int
//!    block_size = 16;`) is replaced by that literal, one that names a local type alias
//!    (`typedef float NumericT;`, `using T = float;`) by its type; any other argument is written
//!    as the launch writes it.
//!
//! A removed function containing half of a preprocessor conditional (`#if` without its
//! `#endif`) is an error, as is a declaration whose end cannot be found.

use std::fmt::Write as _;

use rocm_cpu_frontend::lex::{self, Kind, Tokens};

/// A program's device code, and what was done to get it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceCode {
    /// The source, host code replaced by comments and blank lines.
    pub text: String,
    /// What was removed, in source order.
    pub removed: Vec<Removed>,
    /// The kernel template instances the removed host code launched, in order of first launch.
    pub instances: Vec<Instance>,
}

impl DeviceCode {
    /// A source that includes the device code (`file`, by name) and instantiates what the host
    /// code launched; `None` when it launched no template.
    pub fn instances_file(&self, file: &str) -> Option<String> {
        if self.instances.is_empty() {
            return None;
        }
        let mut text = format!(
            "// Written by scripts/public-suite: the kernel template instances the removed host\n\
             // code launched, instantiated explicitly (the device code is included unchanged).\n\
             #include \"{file}\"\n"
        );
        for i in &self.instances {
            let _ = write!(
                text,
                "\n// `{}`, launched at line {}:\n{}\n",
                i.launched_as, i.line, i.declaration
            );
        }
        Some(text)
    }
}

/// What kind of host code a removal was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum What {
    Function,
    Declaration,
    Variable,
    Include,
}

impl What {
    pub fn label(self) -> &'static str {
        match self {
            What::Function => "host function",
            What::Declaration => "host declaration",
            What::Variable => "host variable",
            What::Include => "host include",
        }
    }
}

/// A removed piece of host code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Removed {
    pub what: What,
    /// Its name as declared (`main`, `configure_parser`), or the header (`<iostream>`).
    pub name: String,
    /// Its first and last lines (1-based).
    pub lines: (u32, u32),
}

/// A kernel template instance the removed host code launched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instance {
    /// The kernel's name as the build and checks spell it: `matrix_multiplication_kernel<16>`.
    pub name: String,
    /// How the host code wrote it: `matrix_multiplication_kernel<block_size>`.
    pub launched_as: String,
    /// The line of that launch.
    pub line: u32,
    /// The explicit instantiation.
    pub declaration: String,
}

/// One declaration or definition at namespace scope: tokens `first..=last`, with the index of
/// the body's `{` when it is a function definition.
struct Item {
    first: usize,
    last: usize,
    body: Option<usize>,
    namespace: Vec<String>,
}

/// A kernel template the kept code defines.
struct KernelTemplate {
    /// Qualified: `ns::k`.
    qualified: String,
    /// Unqualified: `k`.
    name: String,
    /// Names of its template parameters, in order.
    tparams: Vec<String>,
    /// Token range of its function parameter list, inside the parentheses.
    params: (usize, usize),
}

/// Apply the rule (module docs) to the text of a HIP program.
pub fn device_code(source: &str) -> Result<DeviceCode, String> {
    device_code_keeping(source, |_| false)
}

/// [`device_code`], keeping the `#include "..."` lines whose file `keep` accepts (given the name
/// as written, without quotes): a program's own headers, whose device code is taken too.
pub fn device_code_keeping(
    source: &str,
    keep: impl Fn(&str) -> bool,
) -> Result<DeviceCode, String> {
    let toks = lex::lex(source);
    let items = items(&toks)?;

    let mut templates = Vec::new();
    let mut host_functions = Vec::new();
    let mut declarations = Vec::new();
    for item in &items {
        let device = is_device_item(&toks, item);
        match item.body {
            Some(_) if !device => host_functions.push(item),
            Some(body)
                if toks.is(item.first, "template")
                    && (item.first..body).any(|k| toks.is(k, "__global__")) =>
            {
                templates.push(kernel_template(&toks, item, body)?)
            }
            None if !device => declarations.push(item),
            _ => {}
        }
    }

    let mut cuts: Vec<Cut> = Vec::new();
    let mut instances: Vec<Instance> = Vec::new();
    for item in &host_functions {
        let name = function_name(&toks, item);
        let (start, end) = (toks.token(item.first).start, toks.token(item.last).end);
        let lines = (toks.token(item.first).line, toks.token(item.last).line);
        balanced_conditionals(&toks, source, start..end).map_err(|e| {
            format!(
                "host function `{name}` (lines {}-{}): {e}",
                lines.0, lines.1
            )
        })?;
        for instance in launched_instances(&toks, item, &templates)? {
            if !instances.iter().any(|i| i.name == instance.name) {
                instances.push(instance);
            }
        }
        cuts.push(Cut {
            start,
            end,
            what: What::Function,
            name,
            lines,
        });
    }
    // Host variables and function declarations the kept code does not name.
    let in_host_function = |k: usize| {
        host_functions
            .iter()
            .any(|f| (f.first..=f.last).contains(&k))
    };
    for item in &declarations {
        let Some((what, name)) = host_declaration(&toks, item) else {
            continue;
        };
        let used = (0..toks.len()).any(|k| {
            !(item.first..=item.last).contains(&k) && !in_host_function(k) && toks.is(k, &name)
        });
        if used {
            continue;
        }
        let (start, end) = (toks.token(item.first).start, toks.token(item.last).end);
        let lines = (toks.token(item.first).line, toks.token(item.last).line);
        cuts.push(Cut {
            start,
            end,
            what,
            name,
            lines,
        });
    }
    // Includes of host headers: everything but HIP's own.
    for d in toks.directives() {
        let line = &source[d.clone()];
        let Some(target) = included(line) else {
            continue;
        };
        if target.starts_with("<hip/")
            || (target.starts_with('"') && keep(target.trim_matches('"')))
        {
            continue;
        }
        let n = source[..d.start].matches('\n').count() as u32 + 1;
        cuts.push(Cut {
            start: d.start,
            end: d.end,
            what: What::Include,
            name: target.to_owned(),
            lines: (n, n + line.matches('\n').count() as u32),
        });
    }
    cuts.sort_by_key(|c| c.start);

    let mut text = String::with_capacity(source.len());
    let mut copied = 0;
    for c in &cuts {
        text.push_str(&source[copied..c.start]);
        let _ = write!(
            text,
            "/* {} `{}` removed by public-suite */",
            c.what.label(),
            c.name
        );
        text.extend(std::iter::repeat_n(
            '\n',
            source[c.start..c.end].matches('\n').count(),
        ));
        copied = c.end;
    }
    text.push_str(&source[copied..]);
    let removed = cuts
        .into_iter()
        .map(|c| Removed {
            what: c.what,
            name: c.name,
            lines: c.lines,
        })
        .collect();
    Ok(DeviceCode {
        text,
        removed,
        instances,
    })
}

/// A span of the source to remove.
struct Cut {
    start: usize,
    end: usize,
    what: What,
    name: String,
    lines: (u32, u32),
}

/// Whether an item is device code: a function definition marked `__global__`, `__device__` or
/// `constexpr` (which HIP compiles for the device too), or a declaration marked `__global__`,
/// `__device__`, `__constant__`, `__shared__` or `__managed__` (a constexpr variable is kept only
/// when device code names it, rule 2).
fn is_device_item(toks: &Tokens, item: &Item) -> bool {
    let head_end = item.body.unwrap_or(item.last + 1);
    (item.first..head_end).any(|k| match toks.tok(k) {
        "__global__" | "__device__" => true,
        "constexpr" => item.body.is_some(),
        "__constant__" | "__shared__" | "__managed__" => item.body.is_none(),
        _ => false,
    })
}

/// `<iostream>` or `"example_utils.hpp"` for an `#include` line.
fn included(line: &str) -> Option<&str> {
    let rest = line
        .strip_prefix('#')?
        .trim_start()
        .strip_prefix("include")?
        .trim();
    let close = match rest.chars().next()? {
        '<' => '>',
        '"' => '"',
        _ => return None,
    };
    let end = rest[1..].find(close)? + 2;
    Some(&rest[..end])
}

/// What a namespace-scope declaration without a body declares, when it is host code: a
/// variable (`const std::array<float, 25> filter = {...};`) or a function (`void f(int);`).
/// Types, aliases, `using` directives and templates of them are not.
fn host_declaration(toks: &Tokens, item: &Item) -> Option<(What, String)> {
    let mut k = item.first;
    while toks.is(k, "template") && toks.is(k + 1, "<") {
        k = toks.close_angle(k + 1)? + 1;
    }
    if matches!(
        toks.tok(k),
        "struct"
            | "class"
            | "union"
            | "enum"
            | "typedef"
            | "using"
            | "static_assert"
            | "extern"
            | "namespace"
            | "template"
    ) || toks.is(k, "#")
    {
        return None;
    }
    // The declarator's name: the last identifier before `=`, `{`, `[`, `(` or `;` at the top.
    let mut name = None;
    let mut j = k;
    while j <= item.last {
        match toks.tok(j) {
            "=" | "{" | "[" | ";" => break,
            "(" => {
                let f = function_name(toks, item);
                return (f != "?").then_some((What::Declaration, f));
            }
            "<" => {
                j = toks.close_angle(j).unwrap_or(j) + 1;
                continue;
            }
            _ if toks.ident(j) => name = Some(toks.tok(j).to_owned()),
            _ => {}
        }
        j += 1;
    }
    name.map(|n| (What::Variable, n))
}

/// Every namespace-scope item of a program (module docs).
fn items(toks: &Tokens) -> Result<Vec<Item>, String> {
    let mut items = Vec::new();
    walk(toks, 0, toks.len(), &mut Vec::new(), &mut items)?;
    Ok(items)
}

/// The device items of a program, in order: each `__global__`/`__device__`/`constexpr`
/// function definition and each `__constant__`/`__device__`/`__shared__` variable, as its exact
/// text in the source.
pub fn device_items(source: &str) -> Result<Vec<String>, String> {
    let toks = lex::lex(source);
    Ok(items(&toks)?
        .iter()
        .filter(|item| is_device_item(&toks, item))
        .map(|item| toks.text(item.first, item.last + 1).to_owned())
        .collect())
}

/// That `stripped` keeps `original`'s device code byte for byte: the same device items with
/// the same text, in the same order, and as many lines (so every line keeps its number).
/// Independent of how the stripping chose what to remove.
pub fn verify(original: &str, stripped: &str) -> Result<(), String> {
    let (a, b) = (device_items(original)?, device_items(stripped)?);
    if let Some(k) = (0..a.len().max(b.len())).find(|&k| a.get(k) != b.get(k)) {
        let show = |v: Option<&String>| {
            v.map_or("nothing".to_owned(), |s| {
                format!("`{}`", s.lines().next().unwrap_or(""))
            })
        };
        return Err(format!(
            "device item {} differs: the original has {}, the device code {}",
            k + 1,
            show(a.get(k)),
            show(b.get(k))
        ));
    }
    let (n, m) = (
        original.matches('\n').count(),
        stripped.matches('\n').count(),
    );
    if n != m {
        return Err(format!("the original has {n} lines, the device code {m}"));
    }
    Ok(())
}

/// Collect the namespace-scope items of tokens `[a, b)`, descending into namespaces and
/// `extern "C" { }` blocks.
fn walk(
    toks: &Tokens,
    a: usize,
    b: usize,
    namespace: &mut Vec<String>,
    out: &mut Vec<Item>,
) -> Result<(), String> {
    let mut i = a;
    while i < b {
        if toks.is(i, ";") || toks.kind(i) == Some(Kind::Pragma) {
            i += 1;
            continue;
        }
        if toks.is(i, "namespace") {
            let open = (i + 1..b).find(|&k| toks.is(k, "{") || toks.is(k, ";"));
            if let Some(open) = open.filter(|&k| toks.is(k, "{")) {
                let close = toks
                    .close(open)
                    .ok_or_else(|| unbalanced(toks, open, "namespace"))?;
                let name: String = (i + 1..open).map(|k| toks.tok(k)).collect();
                namespace.push(name);
                walk(toks, open + 1, close, namespace, out)?;
                namespace.pop();
                i = close + 1;
                continue;
            }
        }
        if toks.is(i, "extern") && toks.kind(i + 1) == Some(Kind::Literal) && toks.is(i + 2, "{") {
            let close = toks
                .close(i + 2)
                .ok_or_else(|| unbalanced(toks, i + 2, "extern block"))?;
            walk(toks, i + 3, close, namespace, out)?;
            i = close + 1;
            continue;
        }
        let (last, body) = item_end(toks, i, b)?;
        out.push(Item {
            first: i,
            last,
            body,
            namespace: namespace.clone(),
        });
        i = last + 1;
    }
    Ok(())
}

fn unbalanced(toks: &Tokens, at: usize, what: &str) -> String {
    format!(
        "line {}: cannot find the end of this {what}",
        toks.token(at).line
    )
}

/// The last token of the item starting at `first`, and its body's `{` when it is a function
/// definition: one whose last parenthesised group before the `{` is followed only by
/// specifiers (`noexcept`, a trailing return type, a constructor's initialisers), that is not
/// a class, enum or alias, and has no `=` before the `{` (a variable with an initialiser).
fn item_end(toks: &Tokens, first: usize, b: usize) -> Result<(usize, Option<usize>), String> {
    let mut j = first;
    while toks.is(j, "template") && toks.is(j + 1, "<") {
        j = toks
            .close_angle(j + 1)
            .ok_or_else(|| unbalanced(toks, j, "template header"))?
            + 1;
    }
    let not_function = matches!(
        toks.tok(j),
        "struct" | "class" | "union" | "enum" | "typedef" | "using" | "static_assert"
    );
    let mut last_paren: Option<usize> = None;
    let mut assigned = false;
    while j < b {
        match toks.tok(j) {
            ";" => return Ok((j, None)),
            "(" | "[" => {
                let close = toks
                    .close(j)
                    .ok_or_else(|| unbalanced(toks, j, "bracket"))?;
                if toks.is(j, "(") {
                    last_paren = Some(close);
                }
                j = close + 1;
                continue;
            }
            "=" => assigned = true,
            "{" => {
                let close = toks.close(j).ok_or_else(|| unbalanced(toks, j, "brace"))?;
                let function = !not_function
                    && !assigned
                    && last_paren.is_some_and(|p| only_specifiers(toks, p + 1, j));
                if function {
                    return Ok((close, Some(j)));
                }
                j = close + 1;
                continue;
            }
            _ => {}
        }
        j += 1;
    }
    Err(format!(
        "line {}: cannot find the end of this declaration",
        toks.token(first).line
    ))
}

/// Whether tokens `[a, b)` between a parameter list and a body are only function specifiers.
fn only_specifiers(toks: &Tokens, a: usize, b: usize) -> bool {
    for k in a..b {
        match toks.tok(k) {
            // A trailing return type or a constructor's initialisers: anything may follow.
            "->" | ":" => return true,
            "const" | "volatile" | "noexcept" | "override" | "final" | "mutable" | "&" | "&&"
            | "throw" | "__attribute__" => {}
            _ => return false,
        }
    }
    true
}

/// The name a function item declares: the identifier before its parameter list.
fn function_name(toks: &Tokens, item: &Item) -> String {
    let body = item.body.unwrap_or(item.last);
    let mut k = item.first;
    while k < body {
        if toks.is(k, "template") && toks.is(k + 1, "<") {
            k = toks.close_angle(k + 1).map_or(k + 1, |c| c + 1);
            continue;
        }
        if toks.is(k, "(") {
            let before = toks.tok(k.saturating_sub(1));
            let attribute = matches!(
                before,
                "__attribute__" | "__launch_bounds__" | "decltype" | "alignas" | "__declspec"
            );
            if k > item.first && toks.ident(k - 1) && !attribute {
                return before.to_owned();
            }
            k = toks.close(k).map_or(k + 1, |c| c + 1);
            continue;
        }
        k += 1;
    }
    "?".to_owned()
}

/// Every `#if`/`#ifdef`/`#ifndef` in `range` closed by an `#endif` in it.
fn balanced_conditionals(
    toks: &Tokens,
    source: &str,
    range: std::ops::Range<usize>,
) -> Result<(), String> {
    let mut depth = 0i32;
    for d in toks.directives() {
        if d.start < range.start || d.end > range.end {
            continue;
        }
        let word = source[d.start + 1..d.end]
            .trim_start()
            .split(|c: char| !c.is_ascii_alphanumeric())
            .next()
            .unwrap_or("");
        match word {
            "if" | "ifdef" | "ifndef" => depth += 1,
            "endif" => depth -= 1,
            _ => {}
        }
        if depth < 0 {
            return Err("it contains an `#endif` whose `#if` is outside it".into());
        }
    }
    if depth != 0 {
        return Err("it contains an `#if` whose `#endif` is outside it".into());
    }
    Ok(())
}

fn kernel_template(toks: &Tokens, item: &Item, body: usize) -> Result<KernelTemplate, String> {
    let close = toks
        .close_angle(item.first + 1)
        .ok_or_else(|| unbalanced(toks, item.first, "template header"))?;
    let tparams = toks
        .split_commas(item.first + 2, close)
        .into_iter()
        .filter_map(|(a, b)| {
            // The name is the last identifier before a default (`unsigned int N = 64`).
            let end = (a..b).find(|&k| toks.is(k, "=")).unwrap_or(b);
            (a..end).rev().find(|&k| toks.ident(k)).map(|k| toks.tok(k))
        })
        .map(str::to_owned)
        .collect();
    let name = function_name(toks, item);
    // The parameter list: the parenthesised group right after the name.
    let open = (close..body)
        .find(|&k| toks.is(k, "(") && toks.is(k - 1, &name))
        .ok_or_else(|| format!("kernel template `{name}`: cannot find its parameters"))?;
    let params_close = toks
        .close(open)
        .ok_or_else(|| unbalanced(toks, open, "parameter list"))?;
    let mut qualified: Vec<&str> = item.namespace.iter().map(String::as_str).collect();
    qualified.retain(|n| !n.is_empty());
    qualified.push(&name);
    Ok(KernelTemplate {
        qualified: qualified.join("::"),
        name,
        tparams,
        params: (open + 1, params_close),
    })
}

/// Every instance of a kernel template that host function `item` names, with its arguments
/// resolved (module docs, rule 3).
fn launched_instances(
    toks: &Tokens,
    item: &Item,
    templates: &[KernelTemplate],
) -> Result<Vec<Instance>, String> {
    let mut out = Vec::new();
    for k in item.first..=item.last {
        let Some(t) = templates.iter().find(|t| toks.is(k, &t.name)) else {
            continue;
        };
        if !toks.is(k + 1, "<") {
            continue;
        }
        let Some(close) = toks.close_angle(k + 1) else {
            continue; // a comparison, not template arguments
        };
        let args: Vec<String> = toks
            .split_commas(k + 2, close)
            .into_iter()
            .map(|(a, b)| {
                if b == a + 1 && toks.ident(a) {
                    if let Some(value) = constexpr_literal(toks, item, a, toks.tok(a)) {
                        return value.to_owned();
                    }
                    if let Some(ty) = local_type(toks, item, a, toks.tok(a)) {
                        return ty;
                    }
                }
                join(toks, a..b)
            })
            .collect();
        let params: Vec<String> = toks
            .split_commas(t.params.0, t.params.1)
            .into_iter()
            .map(|(a, b)| {
                // Without a default argument, and with the template's parameters substituted.
                let end = (a..b).find(|&j| toks.is(j, "=")).unwrap_or(b);
                let words: Vec<String> = (a..end)
                    .map(|j| match t.tparams.iter().position(|p| toks.is(j, p)) {
                        Some(p) if p < args.len() => args[p].clone(),
                        _ => toks.tok(j).to_owned(),
                    })
                    .collect();
                join_words(&words)
            })
            .collect();
        let args = args.join(", ");
        out.push(Instance {
            name: format!("{}<{args}>", t.qualified),
            launched_as: join(toks, k..close + 1),
            line: toks.token(k).line,
            declaration: format!(
                "template __global__ void {}<{args}>({});",
                t.qualified,
                params.join(", ")
            ),
        });
    }
    Ok(out)
}

/// The literal a `constexpr` local `name` of host function `item` is initialised with, when
/// it is declared before token `before` as `constexpr ... name = LITERAL;` (or `{LITERAL}`).
fn constexpr_literal<'a>(
    toks: &Tokens<'a>,
    item: &Item,
    before: usize,
    name: &str,
) -> Option<&'a str> {
    (item.first..before).rev().find_map(|k| {
        if !toks.is(k, name) {
            return None;
        }
        let literal = match (toks.tok(k + 1), toks.tok(k + 3)) {
            ("=", ";") | ("{", "}") | ("(", ")") => k + 2,
            _ => return None,
        };
        if toks.kind(literal) != Some(Kind::Number) {
            return None;
        }
        // `constexpr` in the same declaration: back to the previous statement's end.
        let constexpr = (item.first..k)
            .rev()
            .take_while(|&j| !matches!(toks.tok(j), ";" | "{" | "}"))
            .any(|j| toks.is(j, "constexpr"));
        constexpr.then(|| toks.tok(literal))
    })
}

/// The type a local type alias `name` of host function `item` stands for, when it is declared
/// before token `before` as `typedef TYPE name;` or `using name = TYPE;`.
fn local_type(toks: &Tokens, item: &Item, before: usize, name: &str) -> Option<String> {
    (item.first..before).rev().find_map(|k| {
        if !toks.is(k, name) {
            return None;
        }
        if toks.is(k + 1, ";") {
            let start = (item.first..k)
                .rev()
                .take_while(|&j| !matches!(toks.tok(j), ";" | "{" | "}"))
                .last()?;
            if toks.is(start, "typedef") && start + 1 < k {
                return Some(join(toks, start + 1..k));
            }
        }
        if k > item.first && toks.is(k - 1, "using") && toks.is(k + 1, "=") {
            let end = (k + 2..=item.last).find(|&j| toks.is(j, ";"))?;
            return Some(join(toks, k + 2..end));
        }
        None
    })
}

/// Tokens joined as a person writes them: `const float* A`, `k<16, 4>`.
fn join(toks: &Tokens, range: std::ops::Range<usize>) -> String {
    let words: Vec<String> = range.map(|k| toks.tok(k).to_owned()).collect();
    join_words(&words)
}

fn join_words(words: &[String]) -> String {
    let wordlike = |w: &str| {
        w.chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    let mut out = String::new();
    for (k, w) in words.iter().enumerate() {
        if k > 0 {
            let prev = words[k - 1].as_str();
            if wordlike(w) && (wordlike(prev) || matches!(prev, "*" | "&" | "&&" | ",")) {
                out.push(' ');
            }
        }
        out.push_str(w);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROGRAM: &str = include_str!("../testdata/program.hip");
    const DEVICE_CODE: &str = include_str!("../testdata/program.device.hip");

    #[test]
    fn the_fixture_program_gives_the_expected_device_code() {
        let d = device_code(PROGRAM).unwrap();
        assert_eq!(d.text, DEVICE_CODE, "got:\n{}", d.text);
        let removed: Vec<(What, &str)> = d
            .removed
            .iter()
            .map(|r| (r.what, r.name.as_str()))
            .collect();
        assert_eq!(
            removed,
            [
                (What::Include, "\"example_utils.hpp\""),
                (What::Include, "<iostream>"),
                (What::Include, "<vector>"),
                (What::Function, "print_hello_host"),
                (What::Function, "reference"),
                (What::Function, "print_grid"),
                (What::Variable, "host_table"),
                (What::Function, "helper"),
                (What::Function, "main"),
            ]
        );
        verify(PROGRAM, &d.text).unwrap();
        let names: Vec<&str> = d.instances.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, ["ns::tiled<16, float>", "cooperative<16>"]);
    }

    #[test]
    fn kept_lines_keep_their_numbers() {
        let d = device_code(PROGRAM).unwrap();
        let original: Vec<&str> = PROGRAM.lines().collect();
        for (n, line) in d.text.lines().enumerate().take(original.len()) {
            if !line.is_empty() && !line.contains("removed by public-suite") {
                assert_eq!(line, original[n], "line {}", n + 1);
            }
        }
    }

    #[test]
    fn device_code_is_never_removed() {
        let src = "__device__ int twice(int x) { return 2 * x; }\n\
                   __host__ __device__ int both(int x) { return x; }\n\
                   constexpr int square(int x) { return x * x; }\n\
                   __global__ void k(int* p) { p[0] = twice(both(square(3))); }\n\
                   int host(int x) { return x; }\n";
        let d = device_code(src).unwrap();
        let removed: Vec<&str> = d.removed.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(removed, ["host"]);
        assert!(d.text.starts_with(&src[..src.find("int host").unwrap()]));
    }

    #[test]
    fn variables_device_code_names_types_and_lambdas_are_kept() {
        let src = "struct S { int f() { return 1; } };\n\
                   auto add = [](int a, int b) { return a + b; };\n\
                   const int table[2] = {1, 2};\n\
                   decltype(table[0] + 0) x{3};\n\
                   __constant__ float mask[4];\n\
                   __global__ void k(float* p) { p[0] = add(table[0], x) * mask[0]; }\n";
        let d = device_code(src).unwrap();
        assert!(d.removed.is_empty(), "{:?}", d.removed);
        assert_eq!(d.text, src);
        let unused = "const int host_only = 4;\n__global__ void k(int* p) { p[0] = 1; }\n";
        let d = device_code(unused).unwrap();
        assert_eq!(d.removed[0].what, What::Variable);
        assert!(d.text.starts_with("/* host variable `host_only` removed"));
    }

    #[test]
    fn half_a_conditional_in_a_host_function_is_an_error() {
        let src = "#ifdef X\nint f() {\n#endif\n  return 1;\n}\n";
        let err = device_code(src).unwrap_err();
        assert!(err.contains("`#endif` whose `#if` is outside"), "{err}");
    }

    #[test]
    fn arguments_that_are_not_constant_locals_are_kept_as_written() {
        let src = "template <int N> __global__ void k(float* x) { x[0] = N; }\n\
                   constexpr int block = 8;\n\
                   int main() { float* p; k<block><<<1, 1>>>(p); }\n";
        let d = device_code(src).unwrap();
        assert_eq!(
            d.instances[0].declaration,
            "template __global__ void k<block>(float* x);"
        );
    }

    #[test]
    fn local_type_aliases_are_replaced_by_their_types() {
        let src = "template <typename T> __global__ void k(T* x) { x[0] = 1; }\n\
                   int main() { typedef float NumericT; using U = unsigned int;\n\
                   NumericT* p; U* q; k<NumericT><<<1, 1>>>(p); k<U><<<1, 1>>>(q); }\n";
        let d = device_code(src).unwrap();
        assert_eq!(
            d.instances[0].declaration,
            "template __global__ void k<float>(float* x);"
        );
        assert_eq!(d.instances[1].name, "k<unsigned int>");
    }

    #[test]
    fn the_program_s_own_headers_can_be_kept() {
        let src = "#include \"kernels.h\"\n#include \"util.h\"\n#include <hip/hip_runtime.h>\n";
        let d = device_code_keeping(src, |f| f == "kernels.h").unwrap();
        assert_eq!(d.removed.len(), 1);
        assert_eq!(d.removed[0].name, "\"util.h\"");
        assert!(d.text.starts_with("#include \"kernels.h\"\n/* host include"));
    }
}
