//! `#[testkit::test]`: registers a test function with the workspace's test harness.
//!
//! Written on `proc_macro` alone (no `syn`): the attribute only needs the function's name and
//! passes its arguments through as Rust expressions, so a parser crate would cost more build time
//! than it saves.

use proc_macro::{Delimiter, Group, Ident, Literal, Punct, Spacing, Span, TokenStream, TokenTree};

/// Registers `fn name() { ... }` as a test of the crate's suite binary.
///
/// * `#[testkit::test]`: a plain test.
/// * `#[testkit::test(needs = [testkit::needs::HIPCC, MY_NEED])]`: ignored, with the reason
///   printed, when a need is not met; under `CI` a missing tool fails the test instead.
/// * `#[testkit::test(isolated)]`: runs in a child process of its own (it changes process-wide
///   state such as environment variables).
#[proc_macro_attribute]
pub fn test(attr: TokenStream, item: TokenStream) -> TokenStream {
    match expand(attr, item) {
        Ok(ts) => ts,
        Err(message) => format!("compile_error!({message:?});").parse().unwrap(),
    }
}

fn expand(attr: TokenStream, item: TokenStream) -> Result<TokenStream, String> {
    let mut needs = TokenStream::new();
    let mut isolated = false;
    let mut tokens = attr.into_iter().peekable();
    while let Some(tt) = tokens.next() {
        match tt {
            TokenTree::Ident(i) if i.to_string() == "isolated" => isolated = true,
            TokenTree::Ident(i) if i.to_string() == "needs" => {
                match tokens.next() {
                    Some(TokenTree::Punct(p)) if p.as_char() == '=' => {}
                    _ => return Err("expected `needs = [...]`".into()),
                }
                match tokens.next() {
                    Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Bracket => {
                        needs = g.stream();
                    }
                    _ => return Err("expected `needs = [...]`".into()),
                }
            }
            TokenTree::Punct(p) if p.as_char() == ',' => {}
            other => {
                return Err(format!(
                    "unknown testkit::test argument `{other}`: use `needs = [...]` or `isolated`"
                ))
            }
        }
    }
    let items: Vec<TokenTree> = item.clone().into_iter().collect();
    let name = items
        .windows(2)
        .find_map(|w| match (&w[0], &w[1]) {
            (TokenTree::Ident(f), TokenTree::Ident(n)) if f.to_string() == "fn" => Some(n.clone()),
            _ => None,
        })
        .ok_or("#[testkit::test] goes on a function")?;

    // ::testkit::inventory::submit! { ::testkit::Test { ... } }
    let fields: TokenStream = format!(
        "module: ::core::module_path!(), name: {}, run: {name}, needs: &[{needs}], isolated: {isolated},",
        Literal::string(&name.to_string()),
    )
    .parse()
    .map_err(|e| format!("{e:?}"))?;
    let mut submit = TokenStream::new();
    submit.extend(path(&["testkit", "inventory", "submit"]));
    submit.extend([TokenTree::Punct(Punct::new('!', Spacing::Alone))]);
    let mut test_struct = TokenStream::new();
    test_struct.extend(path(&["testkit", "Test"]));
    test_struct.extend([TokenTree::Group(Group::new(Delimiter::Brace, fields))]);
    submit.extend([TokenTree::Group(Group::new(Delimiter::Brace, test_struct))]);

    let mut out = item;
    out.extend(submit);
    Ok(out)
}

/// `::a::b::c`
fn path(segments: &[&str]) -> Vec<TokenTree> {
    let mut out = Vec::new();
    for s in segments {
        out.push(TokenTree::Punct(Punct::new(':', Spacing::Joint)));
        out.push(TokenTree::Punct(Punct::new(':', Spacing::Alone)));
        out.push(TokenTree::Ident(Ident::new(s, Span::call_site())));
    }
    out
}
