//! Cooperative groups in a kernel's text, written as the collectives the region form knows: a
//! thread block's `sync()` is `__syncthreads()`, a tile's `shfl_down(v, d)` is `__shfl_down(v, d,
//! N)`, its `sync()` a wave barrier (`__syncwarp()`), its `ballot`/`any`/`all` a `__ballot` cut
//! down to the tile's lanes, `cooperative_groups::reduce(tile, v, op)` the tile reduction the
//! region form computes itself. Only groups whose kind the text says are lowered: variables
//! declared as `thread_block`, `thread_block_tile<N>`, or `auto` from `this_thread_block()` or
//! `tiled_partition<N>(...)`. Anything else (a `thread_group`, a group passed to a function) stays
//! a call of the cpu header's cooperative groups, which wait on fibers: such kernels keep them,
//! with that call as the reason. The header implements each method exactly as lowered here, so
//! both ways of running a kernel give the same results.

use std::collections::BTreeMap;

use super::super::lex::{lex, Tokens};

/// What a group variable is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Group {
    Block,
    /// A tile of the width given by this C++ expression (a template argument).
    Tile(String),
}

/// The lane's position in its wave, in region-form lane code.
const LANE: &str = "rkr.lane_in_wave(rk_t)";

/// The thread's linear index in its block, in the spelling lane code rewrites to its lane's
/// coordinates.
const LINEAR_TID: &str = "((rk_cur.thread_idx).x + (rk_cur.block_dim).x * ((rk_cur.thread_idx).y \
                          + (rk_cur.block_dim).y * (rk_cur.thread_idx).z))";

/// Token index just past `[ns ::]* name` starting at `at`, if it names `name`.
fn qualified(src: &Tokens, mut at: usize, name: &str) -> Option<usize> {
    while src.ident(at) && src.is(at + 1, "::") {
        at += 2;
    }
    src.is(at, name).then_some(at + 1)
}

/// The group variables declared in tokens [a, b), by name.
fn group_variables(src: &Tokens, a: usize, b: usize) -> BTreeMap<String, Group> {
    let mut vars = BTreeMap::new();
    for i in a..b {
        // `thread_block NAME` and `thread_block_tile<N> NAME`.
        if src.is(i, "thread_block") && src.ident(i + 1) {
            vars.insert(src.tok(i + 1).to_string(), Group::Block);
        }
        if src.is(i, "thread_block_tile") && src.is(i + 1, "<") {
            if let Some(close) = src.close_angle(i + 1) {
                if src.ident(close + 1) {
                    let width = src.text(i + 2, close).to_string();
                    vars.insert(src.tok(close + 1).to_string(), Group::Tile(width));
                }
            }
        }
        // `auto NAME = [ns::]this_thread_block()` and `auto NAME = [ns::]tiled_partition<N>(..)`.
        if src.is(i, "auto") && src.ident(i + 1) && src.is(i + 2, "=") {
            let name = src.tok(i + 1).to_string();
            let mut init = i + 3;
            while src.ident(init) && src.is(init + 1, "::") {
                init += 2;
            }
            if src.is(init, "this_thread_block") {
                vars.insert(name, Group::Block);
            } else if src.is(init, "tiled_partition") && src.is(init + 1, "<") {
                if let Some(close) = src.close_angle(init + 1) {
                    vars.insert(name, Group::Tile(src.text(init + 2, close).to_string()));
                }
            }
        }
    }
    vars
}

/// `rk::tile_bits(__ballot(p), W, lane)`: the tile's lanes of a wave's ballot.
fn tile_ballot(pred: &str, width: &str) -> String {
    format!("rk::tile_bits(__ballot({pred}), ({width}), {LANE})")
}

/// The lowered form of `group.method(args)`, if it has one.
fn lowered_method(group: &Group, method: &str, args: &[&str]) -> Option<String> {
    Some(match (group, method, args) {
        (Group::Block, "sync", []) => "__syncthreads()".into(),
        (Group::Block, "thread_rank", []) => LINEAR_TID.into(),
        (Group::Tile(_), "sync", []) => "__syncwarp()".into(),
        (Group::Tile(w), "thread_rank", []) => format!("({LANE} & (({w}) - 1))"),
        (Group::Tile(w), "shfl" | "shfl_down" | "shfl_up" | "shfl_xor", [v, s]) => {
            format!("__{method}({v}, {s}, ({w}))")
        }
        (Group::Tile(w), "ballot", [p]) => tile_ballot(p, w),
        (Group::Tile(w), "any", [p]) => format!("({} != 0)", tile_ballot(p, w)),
        (Group::Tile(w), "all", [p]) => format!(
            "({} == rk::tile_bits(__activemask(), ({w}), {LANE}))",
            tile_ballot(p, w)
        ),
        _ => return None,
    })
}

/// The kernel text `text` (a kernel definition) with its cooperative groups lowered; None when
/// nothing was.
pub fn lower(text: &str) -> Option<String> {
    let src = lex(text);
    let vars = group_variables(&src, 0, src.len());
    // (byte range replaced, new text); calls are not nested into each other's names.
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    let mut i = 0;
    while i < src.len() {
        let after_member = i > 0 && matches!(src.tok(i - 1), "." | "->" | "::");
        // `name.method(args)` on a group variable; `this_thread_block().sync()`.
        let group = if src.is(i, "this_thread_block")
            && !(i > 0 && matches!(src.tok(i - 1), "." | "->"))
            && src.is(i + 1, "(")
            && src.is(i + 2, ")")
            && src.is(i + 3, ".")
        {
            Some((Group::Block, i + 4))
        } else if src.ident(i) && !after_member && src.is(i + 1, ".") {
            vars.get(src.tok(i)).map(|g| (g.clone(), i + 2))
        } else {
            None
        };
        if let Some((group, method)) = group {
            if src.ident(method) && src.is(method + 1, "(") {
                if let Some(close) = src.close(method + 1) {
                    let args: Vec<&str> = src
                        .split_commas(method + 2, close)
                        .into_iter()
                        .map(|(x, y)| src.text(x, y))
                        .collect();
                    if let Some(new) = lowered_method(&group, src.tok(method), &args) {
                        // Starting at the qualifier of `cg::this_thread_block()`, if any.
                        let mut start = i;
                        while start >= 2 && src.is(start - 1, "::") && src.ident(start - 2) {
                            start -= 2;
                        }
                        edits.push((src.token(start).start, src.token(close).end, new));
                        i = close + 1;
                        continue;
                    }
                }
            }
        }
        // `[ns::]reduce(tile, v, op)` and `[ns::]sync(group)`.
        if src.ident(i) && !after_member {
            let end = qualified(&src, i, "reduce").or_else(|| qualified(&src, i, "sync"));
            if let Some(open) = end.filter(|&e| src.is(e, "(")) {
                if let Some(close) = src.close(open) {
                    let args = src.split_commas(open + 1, close);
                    let group = args
                        .first()
                        .filter(|&&(x, y)| y == x + 1)
                        .and_then(|&(x, _)| vars.get(src.tok(x)));
                    let new = match (src.tok(open - 1), group, args.len()) {
                        ("reduce", Some(Group::Tile(w)), 3) => Some(format!(
                            "__rk_tile_reduce({}, {}, ({w}))",
                            src.text(args[1].0, args[1].1),
                            src.text(args[2].0, args[2].1)
                        )),
                        ("sync", Some(Group::Block), 1) => Some("__syncthreads()".into()),
                        ("sync", Some(Group::Tile(_)), 1) => Some("__syncwarp()".into()),
                        _ => None,
                    };
                    if let Some(new) = new {
                        edits.push((src.token(i).start, src.token(close).end, new));
                        i = close + 1;
                        continue;
                    }
                }
            }
        }
        i += 1;
    }
    if edits.is_empty() {
        return None;
    }
    let mut out = text.to_string();
    for (a, b, new) in edits.into_iter().rev() {
        out.replace_range(a..b, &new);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_and_tile_methods_become_collectives() {
        let text = "__rk_kernel__ void k(int* p) {\n\
             auto block = cooperative_groups::this_thread_block();\n\
             cg::thread_block_tile<16> tile = cg::tiled_partition<16>(block);\n\
             auto t8 = tiled_partition<W / 2>(block);\n\
             block.sync();\n\
             int v = tile.shfl_down(p[0], 1) + t8.shfl(p[1], 0);\n\
             p[2] = tile.ballot(v > 0) + tile.any(v) + t8.all(v) + tile.thread_rank();\n\
             p[3] = cg::reduce(tile, v, cg::plus<int>());\n\
             tile.sync(); cg::this_thread_block().sync(); cg::sync(block);\n\
             p[4] = block.size() + tile.meta_group_rank();\n}";
        let out = lower(text).expect("lowered");
        assert!(out.contains("__syncthreads();\nint v"), "{out}");
        assert!(
            out.contains("__shfl_down(p[0], 1, (16)) + __shfl(p[1], 0, (W / 2))"),
            "{out}"
        );
        assert!(
            out.contains("rk::tile_bits(__ballot(v > 0), (16), rkr.lane_in_wave(rk_t))"),
            "{out}"
        );
        assert!(
            out.contains("== rk::tile_bits(__activemask(), (W / 2), rkr.lane_in_wave(rk_t)))"),
            "{out}"
        );
        assert!(
            out.contains("(rkr.lane_in_wave(rk_t) & ((16) - 1))"),
            "{out}"
        );
        assert!(
            out.contains("p[3] = __rk_tile_reduce(v, cg::plus<int>(), (16));"),
            "{out}"
        );
        assert!(
            out.contains("__syncwarp(); __syncthreads(); __syncthreads();"),
            "{out}"
        );
        // Methods that do not wait stay calls of the header.
        assert!(
            out.contains("block.size() + tile.meta_group_rank()"),
            "{out}"
        );
    }

    #[test]
    fn groups_of_unknown_kind_stay_calls() {
        let text =
            "__rk_kernel__ void k(thread_group g, int* p) { g.sync(); p[0] = g.thread_rank(); }";
        assert_eq!(lower(text), None);
    }
}
