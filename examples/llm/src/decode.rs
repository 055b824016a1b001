//! The decode path (`kernels/decode.hip`): attention of one query token per sequence over a
//! paged KV cache, whole or split over the context and merged, and a top-k / top-p sampler;
//! their launch configurations (which refuse unsupported shapes) and Rust references.
//!
//! The paged cache is `[num_blocks][DEC_BLOCK][kv_heads][head_dim]` (a token's head vector
//! contiguous: FlashAttention's and FlashInfer's "NHD" paged layout, not vLLM's, which splits the
//! key's head dimension in 16-byte packs around the tokens of a block). Token `t` of sequence `s`
//! is in block `block_tables[s][t / DEC_BLOCK]`, slot `t % DEC_BLOCK`.
//!
//! ```
//! use llm_kernels::decode::{self, PagedShape};
//! // 32 query heads over 8 kv heads (GQA), contexts of up to 4096 tokens, partitions of 512.
//! let s = PagedShape { num_seqs: 16, heads: 32, kv_heads: 8, head_dim: 128, max_blocks: 256 };
//! let parts = decode::partitions(4096, 512);
//! let launch = decode::partition_launch::<llm_kernels::f16>(s, 512, parts).unwrap();
//! assert_eq!((launch.grid.x, launch.grid.y, launch.grid.z), (8, 16, 8));
//! ```

use rocm_kernels::runtime::LaunchConfig;

use crate::{fits_int, non_empty, refuse, Dtype, ShapeError};

/// Tokens a block of the paged cache (`DEC_BLOCK`).
pub const DEC_BLOCK: usize = 16;
/// Threads a block of the attention kernels (`DEC_THREADS`).
pub const DEC_THREADS: u32 = 128;
/// Query heads a kv head at most (`DEC_MAX_GROUP`): a block serves all of them.
pub const DEC_MAX_GROUP: usize = 8;
/// Tokens of a context a partition of the split kernel, fixed (vLLM's v2 uses 512 too); see
/// [`split_partition`] for the size that fills a given GPU.
pub const PARTITION: usize = 512;
/// The smallest partition [`split_partition`] picks (tokens): below it the fixed cost of a block
/// (its queries, block ids and final merge) outweighs what another block in flight gains.
pub const MIN_PARTITION: usize = 256;
/// Blocks of the decode attention kernels a multiprocessor holds at once on the H100 (128
/// threads, 95 to 124 registers a thread: 4 in the half types, 5 in f32): what
/// [`split_partition`]'s `resident_blocks` is made of, `compute_units * DEC_BLOCKS_PER_CU`.
pub const DEC_BLOCKS_PER_CU: usize = 4;
/// Threads a block of the sampler's kernels (`SAMPLE_THREADS`).
pub const SAMPLE_THREADS: u32 = 256;
/// Logits a block of `sample_topk_chunks` sorts (`SAMPLE_CHUNK`).
pub const SAMPLE_CHUNK: usize = 4096;
/// The largest top-k (`SAMPLE_K_MAX`).
pub const SAMPLE_K_MAX: usize = 128;
/// Candidates a row at most: chunks × top_k (`SAMPLE_SORT_MAX`).
pub const SAMPLE_SORT_MAX: usize = 4096;

/// The shape of a decode attention call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PagedShape {
    /// Sequences, one query token each.
    pub num_seqs: usize,
    /// Query heads.
    pub heads: usize,
    /// Key/value heads (`heads` a multiple of it, at most [`DEC_MAX_GROUP`] times as many).
    pub kv_heads: usize,
    /// 64 or 128.
    pub head_dim: usize,
    /// Entries a row of the block table.
    pub max_blocks: usize,
}

impl PagedShape {
    /// Query heads a kv head.
    pub fn group(&self) -> usize {
        self.heads / self.kv_heads
    }
}

/// Partitions of `partition_size` tokens a context of `max_context` tokens needs (at least 1).
pub fn partitions(max_context: usize, partition_size: usize) -> usize {
    max_context.div_ceil(partition_size).max(1)
}

/// The partition size for the split kernel that fills the GPU once: the most partitions per
/// (sequence, kv head) whose blocks all fit in one wave of `resident_blocks` blocks (the GPU's
/// multiprocessors times the blocks each holds: `device.info().compute_units *`
/// [`DEC_BLOCKS_PER_CU`]), their size rounded up to whole cache blocks and at least
/// [`MIN_PARTITION`] (or the whole context when it is shorter). When the (sequence, kv head)
/// pairs alone fill a wave, one partition each: the whole context.
///
/// Why one wave: a block's fixed cost (its queries into shared memory, the pass's block ids, the
/// merge of its token slots, its partial results) is paid once a partition, so larger partitions
/// are cheaper, until there are fewer blocks than the GPU runs at once. Measured on the H100 (32 ×
/// 4096 and 8 × 16384 tokens, 32 query heads over 8 kv heads, head_dim 128, f16): partitions of
/// 512 reach 76% of the stream triad, 1024 81%, 2048 (this function's choice: 512 blocks for
/// 528 places) 83%, 4096 (256 blocks) 61%. FlashAttention's split-KV heuristic reasons the same
/// way (`num_splits_heuristic`: splits that fill the multiprocessors' waves).
///
/// ```
/// use llm_kernels::decode::{split_partition, PagedShape};
/// let s = PagedShape { num_seqs: 32, heads: 32, kv_heads: 8, head_dim: 128, max_blocks: 256 };
/// assert_eq!(split_partition(s, 4096, 132 * 4), 2048); // an H100: 2 partitions a pair
/// ```
pub fn split_partition(s: PagedShape, max_context: usize, resident_blocks: usize) -> usize {
    let pairs = (s.num_seqs * s.kv_heads).max(1);
    let splits = (resident_blocks / pairs).max(1);
    let size = max_context.div_ceil(splits).div_ceil(DEC_BLOCK) * DEC_BLOCK;
    let floor = MIN_PARTITION.min(max_context.div_ceil(DEC_BLOCK) * DEC_BLOCK);
    size.max(floor).max(DEC_BLOCK)
}

fn check_paged(kernel: &str, s: PagedShape) -> Result<(), ShapeError> {
    non_empty(
        kernel,
        &[
            ("num_seqs", s.num_seqs),
            ("heads", s.heads),
            ("kv_heads", s.kv_heads),
            ("max_blocks", s.max_blocks),
        ],
    )?;
    if !s.heads.is_multiple_of(s.kv_heads) {
        return Err(refuse(
            kernel,
            format!(
                "heads = {} is not a multiple of kv_heads = {}",
                s.heads, s.kv_heads
            ),
        ));
    }
    if s.group() > DEC_MAX_GROUP {
        return Err(refuse(
            kernel,
            format!(
                "{} query heads a kv head: a block serves at most {DEC_MAX_GROUP} (DEC_MAX_GROUP)",
                s.group()
            ),
        ));
    }
    if s.num_seqs > 65_535 {
        return Err(refuse(kernel, "num_seqs: the grid's y holds 65535"));
    }
    fits_int(kernel, "num_seqs * max_blocks", s.num_seqs * s.max_blocks)?;
    fits_int(
        kernel,
        "num_seqs * heads * head_dim",
        s.num_seqs * s.heads * s.head_dim,
    )
}

/// The whole-context kernel for `head_dim` and `T`: `paged_decode_attention_d128_f16`...
pub fn attention_kernel<T: Dtype>(head_dim: usize) -> Result<String, ShapeError> {
    dim_kernel::<T>("paged_decode_attention", head_dim)
}

/// The split kernel for `head_dim` and `T`: `paged_decode_partition_d64`...
pub fn partition_kernel<T: Dtype>(head_dim: usize) -> Result<String, ShapeError> {
    dim_kernel::<T>("paged_decode_partition", head_dim)
}

fn dim_kernel<T: Dtype>(base: &str, head_dim: usize) -> Result<String, ShapeError> {
    match head_dim {
        64 | 128 => Ok(T::kernel(&format!("{base}_d{head_dim}"))),
        d => Err(refuse(
            &T::kernel(base),
            format!("head_dim = {d} is not supported: the kernels are compiled for 64 and 128"),
        )),
    }
}

/// Launch of `paged_decode_attention_d*`: a block of [`DEC_THREADS`] a (kv head, sequence).
pub fn attention_launch<T: Dtype>(s: PagedShape) -> Result<LaunchConfig, ShapeError> {
    let kernel = attention_kernel::<T>(s.head_dim)?;
    check_paged(&kernel, s)?;
    Ok(LaunchConfig::new(
        (s.kv_heads as u32, s.num_seqs as u32, 1),
        (DEC_THREADS, 1, 1),
    ))
}

/// Launch of `paged_decode_partition_d*`: a block a (kv head, sequence, partition), `max_parts`
/// partitions of `partition_size` tokens (a multiple of [`DEC_BLOCK`]); see [`partitions`].
pub fn partition_launch<T: Dtype>(
    s: PagedShape,
    partition_size: usize,
    max_parts: usize,
) -> Result<LaunchConfig, ShapeError> {
    let kernel = partition_kernel::<T>(s.head_dim)?;
    check_paged(&kernel, s)?;
    if partition_size == 0 || !partition_size.is_multiple_of(DEC_BLOCK) {
        return Err(refuse(
            &kernel,
            format!("partition_size = {partition_size} is not a positive multiple of {DEC_BLOCK} (DEC_BLOCK)"),
        ));
    }
    non_empty(&kernel, &[("max_parts", max_parts)])?;
    if max_parts > 65_535 {
        return Err(refuse(&kernel, "max_parts: the grid's z holds 65535"));
    }
    fits_int(
        &kernel,
        "num_seqs * heads * max_parts * head_dim",
        s.num_seqs * s.heads * max_parts * s.head_dim,
    )?;
    Ok(LaunchConfig::new(
        (s.kv_heads as u32, s.num_seqs as u32, max_parts as u32),
        (DEC_THREADS, 1, 1),
    ))
}

/// Launch of `paged_decode_reduce`: a block a (query head, sequence), threads over head_dim.
pub fn reduce_launch<T: Dtype>(
    num_seqs: usize,
    heads: usize,
    head_dim: usize,
) -> Result<LaunchConfig, ShapeError> {
    let kernel = T::kernel("paged_decode_reduce");
    non_empty(
        &kernel,
        &[
            ("num_seqs", num_seqs),
            ("heads", heads),
            ("head_dim", head_dim),
        ],
    )?;
    if num_seqs > 65_535 {
        return Err(refuse(&kernel, "num_seqs: the grid's y holds 65535"));
    }
    Ok(LaunchConfig::new(
        (heads as u32, num_seqs as u32, 1),
        (DEC_THREADS, 1, 1),
    ))
}

/// Chunks of [`SAMPLE_CHUNK`] logits a row of `vocab`.
pub fn sample_chunks(vocab: usize) -> usize {
    vocab.div_ceil(SAMPLE_CHUNK)
}

fn check_top_k(kernel: &str, top_k: usize) -> Result<(), ShapeError> {
    if top_k == 0 || top_k > SAMPLE_K_MAX {
        return Err(refuse(
            kernel,
            format!("top_k = {top_k}: the sampler takes 1 to {SAMPLE_K_MAX} (SAMPLE_K_MAX)"),
        ));
    }
    Ok(())
}

/// Launch of `sample_topk_chunks` (f32 logits): a block a chunk of a row; the candidates
/// (`sample_chunks(vocab) * top_k` a row) must fit [`SAMPLE_SORT_MAX`].
pub fn sample_chunks_launch(
    batch: usize,
    vocab: usize,
    top_k: usize,
) -> Result<LaunchConfig, ShapeError> {
    let kernel = "sample_topk_chunks";
    non_empty(kernel, &[("batch", batch), ("vocab", vocab)])?;
    check_top_k(kernel, top_k)?;
    let n = sample_chunks(vocab) * top_k;
    if n > SAMPLE_SORT_MAX {
        return Err(refuse(
            kernel,
            format!(
                "vocab = {vocab} and top_k = {top_k} give {n} candidates a row: at most \
                 {SAMPLE_SORT_MAX} (SAMPLE_SORT_MAX), so top_k <= {}",
                SAMPLE_SORT_MAX / sample_chunks(vocab)
            ),
        ));
    }
    if batch > 65_535 {
        return Err(refuse(kernel, "batch: the grid's y holds 65535"));
    }
    fits_int(kernel, "batch * vocab", batch * vocab)?;
    Ok(LaunchConfig::new(
        (sample_chunks(vocab) as u32, batch as u32, 1),
        (SAMPLE_THREADS, 1, 1),
    ))
}

/// Launch of `sample_topk_topp`: a block a row of `n_cand` candidates.
pub fn sample_launch(
    batch: usize,
    n_cand: usize,
    top_k: usize,
) -> Result<LaunchConfig, ShapeError> {
    let kernel = "sample_topk_topp";
    non_empty(kernel, &[("batch", batch), ("n_cand", n_cand)])?;
    check_top_k(kernel, top_k)?;
    if n_cand > SAMPLE_SORT_MAX {
        return Err(refuse(
            kernel,
            format!("n_cand = {n_cand}: at most {SAMPLE_SORT_MAX} (SAMPLE_SORT_MAX)"),
        ));
    }
    Ok(LaunchConfig::new(
        (batch as u32, 1, 1),
        (SAMPLE_THREADS, 1, 1),
    ))
}

// ---------------------------------------------------------------------------------------------
// References.

/// The cache row (of `[rows][kv_heads][head_dim]`) of token `t` of sequence `seq`.
fn cache_row(s: PagedShape, block_tables: &[i32], seq: usize, t: usize) -> usize {
    let block = block_tables[seq * s.max_blocks + t / DEC_BLOCK] as usize;
    block * DEC_BLOCK + t % DEC_BLOCK
}

/// Scores of query head `h` of sequence `seq` over tokens `range`: `scale * q·k`, in f64.
#[allow(clippy::too_many_arguments)]
fn scores<T: Dtype>(
    s: PagedShape,
    scale: f32,
    q: &[T],
    k_cache: &[T],
    block_tables: &[i32],
    seq: usize,
    h: usize,
    range: std::ops::Range<usize>,
) -> Vec<f64> {
    let d = s.head_dim;
    let kvh = h / s.group();
    let qh = &q[(seq * s.heads + h) * d..][..d];
    range
        .map(|t| {
            let row = cache_row(s, block_tables, seq, t);
            let k = &k_cache[(row * s.kv_heads + kvh) * d..][..d];
            f64::from(scale)
                * qh.iter()
                    .zip(k)
                    .map(|(&a, &b)| a.to_f64() * b.to_f64())
                    .sum::<f64>()
        })
        .collect()
}

/// (max, sum of exp(score - max), the normalised output) of head `h` of `seq` over `range`.
#[allow(clippy::too_many_arguments)]
fn attend<T: Dtype>(
    s: PagedShape,
    scale: f32,
    q: &[T],
    k_cache: &[T],
    v_cache: &[T],
    block_tables: &[i32],
    seq: usize,
    h: usize,
    range: std::ops::Range<usize>,
) -> (f64, f64, Vec<f64>) {
    let d = s.head_dim;
    let kvh = h / s.group();
    let sc = scores(s, scale, q, k_cache, block_tables, seq, h, range.clone());
    let m = sc.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let p: Vec<f64> = sc.iter().map(|&x| (x - m).exp()).collect();
    let l: f64 = p.iter().sum();
    let mut o = vec![0f64; d];
    for (t, &pt) in range.zip(&p) {
        let row = cache_row(s, block_tables, seq, t);
        let v = &v_cache[(row * s.kv_heads + kvh) * d..][..d];
        for (o, &v) in o.iter_mut().zip(v) {
            *o += pt * v.to_f64();
        }
    }
    for o in &mut o {
        *o /= l;
    }
    (m, l, o)
}

/// Reference of `paged_decode_attention_d*`: for each sequence and query head,
/// `softmax(scale * q K^T) V` over the sequence's `context_lens[s]` tokens, read through its
/// block table; kv head `h / (heads / kv_heads)`. A context of 0 tokens gives 0.
#[allow(clippy::too_many_arguments)]
pub fn paged_decode_attention<T: Dtype>(
    s: PagedShape,
    scale: f32,
    q: &[T],
    k_cache: &[T],
    v_cache: &[T],
    block_tables: &[i32],
    context_lens: &[i32],
    out: &mut [T],
) {
    let d = s.head_dim;
    for (seq, &ctx) in context_lens.iter().enumerate().take(s.num_seqs) {
        let ctx = ctx.max(0) as usize;
        for h in 0..s.heads {
            let o = &mut out[(seq * s.heads + h) * d..][..d];
            if ctx == 0 {
                o.fill(T::nearest(0.0));
                continue;
            }
            let (_, _, acc) = attend(s, scale, q, k_cache, v_cache, block_tables, seq, h, 0..ctx);
            for (o, a) in o.iter_mut().zip(acc) {
                *o = T::nearest(a);
            }
        }
    }
}

/// Reference of `paged_decode_partition_d*`: for partition `p` (tokens `p * partition_size` up
/// to the context's end) of each sequence and query head, its max score, its sum of
/// `exp(score - max)` and its normalised output, in f32, at
/// `[seq][head][p]` (`[seq][head][p][head_dim]`). Partitions past the context are left as they are.
#[allow(clippy::too_many_arguments)]
pub fn paged_decode_partition<T: Dtype>(
    s: PagedShape,
    partition_size: usize,
    max_parts: usize,
    scale: f32,
    q: &[T],
    k_cache: &[T],
    v_cache: &[T],
    block_tables: &[i32],
    context_lens: &[i32],
    max_logits: &mut [f32],
    exp_sums: &mut [f32],
    tmp_out: &mut [f32],
) {
    let d = s.head_dim;
    for (seq, &ctx) in context_lens.iter().enumerate().take(s.num_seqs) {
        let ctx = ctx.max(0) as usize;
        for h in 0..s.heads {
            for p in 0..ctx.div_ceil(partition_size).min(max_parts) {
                let range = p * partition_size..((p + 1) * partition_size).min(ctx);
                let (m, l, o) = attend(s, scale, q, k_cache, v_cache, block_tables, seq, h, range);
                let at = (seq * s.heads + h) * max_parts + p;
                max_logits[at] = m as f32;
                exp_sums[at] = l as f32;
                for (t, o) in tmp_out[at * d..][..d].iter_mut().zip(o) {
                    *t = o as f32;
                }
            }
        }
    }
}

/// Reference of `paged_decode_reduce`: with `M` the largest max of a head's partitions (the
/// first `ceil(context / partition_size)`), `out = sum_p w_p tmp_out_p / sum_p w_p` where
/// `w_p = exp_sums_p * exp(max_logits_p - M)`.
#[allow(clippy::too_many_arguments)]
pub fn paged_decode_reduce<T: Dtype>(
    heads: usize,
    head_dim: usize,
    partition_size: usize,
    max_parts: usize,
    context_lens: &[i32],
    max_logits: &[f32],
    exp_sums: &[f32],
    tmp_out: &[f32],
    out: &mut [T],
) {
    for (seq, &ctx) in context_lens.iter().enumerate() {
        let parts = (ctx.max(0) as usize)
            .div_ceil(partition_size)
            .min(max_parts);
        for h in 0..heads {
            let at = (seq * heads + h) * max_parts;
            let m = &max_logits[at..at + parts];
            let big = m.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b.into()));
            let w: Vec<f64> = (0..parts)
                .map(|p| f64::from(exp_sums[at + p]) * (f64::from(m[p]) - big).exp())
                .collect();
            let total: f64 = w.iter().sum();
            for dd in 0..head_dim {
                let o: f64 = (0..parts)
                    .map(|p| w[p] * f64::from(tmp_out[(at + p) * head_dim + dd]))
                    .sum();
                out[(seq * heads + h) * head_dim + dd] =
                    T::nearest(if total > 0.0 { o / total } else { 0.0 });
            }
        }
    }
}

/// The rank key of a token (larger ranks first): the logit's bits made an order-preserving
/// unsigned integer, above `0xffffffff - id`, so equal logits rank by id, lowest first. `id < 0`
/// (no token) gives 0, below every token.
pub fn sample_key(logit: f32, id: i32) -> u64 {
    if id < 0 {
        return 0;
    }
    let b = logit.to_bits();
    let b = if b & 0x8000_0000 != 0 {
        !b
    } else {
        b | 0x8000_0000
    };
    (u64::from(b) << 32) | u64::from(0xffff_ffff - id as u32)
}

/// The logit and the token id of a key ([`sample_key`]'s inverse; 0 gives `(-inf, -1)`).
pub fn sample_key_parts(key: u64) -> (f32, i32) {
    if key == 0 {
        return (f32::NEG_INFINITY, -1);
    }
    let b = (key >> 32) as u32;
    let b = if b & 0x8000_0000 != 0 {
        b & 0x7fff_ffff
    } else {
        !b
    };
    (f32::from_bits(b), (0xffff_ffff - key as u32) as i32)
}

/// The sampler's uniform number of `row` for `seed`: splitmix64 of
/// `seed + (row + 1) * 0x9E3779B97F4A7C15`, its top 24 bits over 2^24 (in [0, 1), exact in f32).
pub fn sample_uniform(seed: u64, row: usize) -> f32 {
    let mut z = seed.wrapping_add((row as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 40) as f32 * (1.0 / 16_777_216.0)
}

/// Reference of `sample_topk_chunks`: for each row of `logits[batch][vocab]` and each chunk of
/// [`SAMPLE_CHUNK`] logits, its first `top_k` tokens by rank as (logit, id) pairs, in rank order
/// (`(-inf, -1)` where the chunk has fewer), at `[row][chunk][top_k]`.
pub fn sample_topk_chunks(
    vocab: usize,
    top_k: usize,
    logits: &[f32],
    cand_logits: &mut [f32],
    cand_ids: &mut [i32],
) {
    let chunks = sample_chunks(vocab);
    for (row, x) in logits.chunks(vocab).enumerate() {
        for c in 0..chunks {
            let c0 = c * SAMPLE_CHUNK;
            let mut keys: Vec<u64> = x[c0..(c0 + SAMPLE_CHUNK).min(vocab)]
                .iter()
                .enumerate()
                .map(|(i, &l)| sample_key(l, (c0 + i) as i32))
                .collect();
            keys.sort_unstable_by(|a, b| b.cmp(a));
            let at = (row * chunks + c) * top_k;
            for j in 0..top_k {
                let (l, id) = sample_key_parts(keys.get(j).copied().unwrap_or(0));
                cand_logits[at + j] = l;
                cand_ids[at + j] = id;
            }
        }
    }
}

/// The sampler's parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sampling {
    /// Tokens kept by rank (1 to [`SAMPLE_K_MAX`]; 1 is greedy).
    pub top_k: usize,
    /// The nucleus: the smallest prefix (by rank) of the top-k whose probability reaches it;
    /// 1 or more keeps the top-k.
    pub top_p: f32,
    /// Logits are divided by it; 0 or less is greedy.
    pub temperature: f32,
    /// The random stream: row `r` draws [`sample_uniform`]`(seed, r)`.
    pub seed: u64,
}

/// Reference of `sample_topk_topp`: for each row of `n_cand` (logit, id) candidates (id -1: none),
/// the token drawn as `kernels/decode.hip` says, in the same f32 operations in the same order.
pub fn sample_topk_topp(
    n_cand: usize,
    p: Sampling,
    cand_logits: &[f32],
    cand_ids: &[i32],
    tokens: &mut [i32],
) {
    for (row, token) in tokens.iter_mut().enumerate() {
        let mut keys: Vec<u64> = (0..n_cand)
            .map(|i| sample_key(cand_logits[row * n_cand + i], cand_ids[row * n_cand + i]))
            .collect();
        keys.sort_unstable_by(|a, b| b.cmp(a));
        keys.resize(n_cand.next_power_of_two().max(2), 0);
        let mut k = p.top_k.min(keys.len());
        while k > 1 && keys[k - 1] == 0 {
            k -= 1;
        }
        let mut pick = 0;
        if p.temperature > 0.0 && k > 1 {
            let top = sample_key_parts(keys[0]).0;
            let mut sum = 0f32;
            let cum: Vec<f32> = keys[..k]
                .iter()
                .map(|&key| {
                    sum += ((sample_key_parts(key).0 - top) / p.temperature).exp();
                    sum
                })
                .collect();
            let mut kept = k;
            if p.top_p < 1.0 {
                let need = p.top_p * sum;
                kept = 1;
                while kept < k && cum[kept - 1] < need {
                    kept += 1;
                }
            }
            let target = sample_uniform(p.seed, row) * cum[kept - 1];
            pick = cum[..kept]
                .iter()
                .position(|&c| c > target)
                .unwrap_or(kept - 1);
        }
        *token = sample_key_parts(keys[pick]).1;
    }
}

/// The whole sampler on `logits[batch][vocab]`: [`sample_topk_chunks`], then
/// [`sample_topk_topp`] on its candidates.
pub fn sample(vocab: usize, p: Sampling, logits: &[f32], tokens: &mut [i32]) {
    let n_cand = sample_chunks(vocab) * p.top_k;
    let batch = logits.len() / vocab;
    let mut cl = vec![0f32; batch * n_cand];
    let mut ci = vec![0i32; batch * n_cand];
    sample_topk_chunks(vocab, p.top_k, logits, &mut cl, &mut ci);
    sample_topk_topp(n_cand, p, &cl, &ci, tokens);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_partition_fills_one_wave_in_whole_cache_blocks() {
        let s = |num_seqs, kv_heads| PagedShape {
            num_seqs,
            heads: kv_heads * 4,
            kv_heads,
            head_dim: 128,
            max_blocks: 1024,
        };
        let h100 = 132 * DEC_BLOCKS_PER_CU;
        // Llama 3 8B's kv heads: 256 pairs, 2 partitions each; 64 pairs, 8 each.
        assert_eq!(split_partition(s(32, 8), 4096, h100), 2048);
        assert_eq!(split_partition(s(8, 8), 16384, h100), 2048);
        // More pairs than places: the whole context in one partition.
        assert_eq!(split_partition(s(128, 8), 4096, h100), 4096);
        // Whole cache blocks, and never below MIN_PARTITION...
        assert_eq!(split_partition(s(1, 8), 1000, h100), MIN_PARTITION);
        assert_eq!(split_partition(s(32, 8), 1000, h100), 512);
        // ...unless the context is shorter: then it is one partition, rounded up to a block.
        assert_eq!(split_partition(s(1, 1), 40, h100), 48);
        // Nothing known about the GPU (0 places) or an empty batch: still a valid size.
        assert_eq!(split_partition(s(4, 8), 4096, 0), 4096);
        assert_eq!(split_partition(s(0, 8), 0, h100), DEC_BLOCK);
        for (seqs, ctx) in [(3, 777), (64, 33), (7, 100_000)] {
            let p = split_partition(s(seqs, 8), ctx, h100);
            assert!(p.is_multiple_of(DEC_BLOCK) && p > 0, "{p}");
            assert!(partition_launch::<f32>(s(seqs, 8), p, partitions(ctx, p)).is_ok());
        }
    }

    #[test]
    fn keys_rank_by_logit_then_lowest_id() {
        let mut v = [
            (1.0f32, 7),
            (2.0, 3),
            (1.0, 2),
            (-0.5, 0),
            (f32::NEG_INFINITY, 1),
            (-3.0, 9),
        ];
        v.sort_by_key(|&(l, id)| std::cmp::Reverse(sample_key(l, id)));
        let ids: Vec<i32> = v.iter().map(|x| x.1).collect();
        assert_eq!(ids, [3, 2, 7, 0, 9, 1]);
        for (l, id) in v {
            assert_eq!(sample_key_parts(sample_key(l, id)), (l, id));
        }
        assert!(sample_key(f32::NEG_INFINITY, 100_000) > sample_key(0.0, -1));
    }

    #[test]
    fn greedy_and_argmax_agree_and_ties_go_to_the_lowest_id() {
        let logits = [0.5f32, 3.0, 3.0, -1.0, 2.0, 3.0];
        let mut t = [0i32];
        for p in [
            Sampling {
                top_k: 1,
                top_p: 1.0,
                temperature: 1.0,
                seed: 1,
            },
            Sampling {
                top_k: 4,
                top_p: 0.9,
                temperature: 0.0,
                seed: 1,
            },
        ] {
            sample(6, p, &logits, &mut t);
            assert_eq!(t, [1]);
        }
        // Three equal top logits, top-k 3: only ids 1, 2 and 5, each about a third of the time.
        let mut seen = [0usize; 6];
        for seed in 0..3000 {
            let p = Sampling {
                top_k: 3,
                top_p: 1.0,
                temperature: 1.0,
                seed,
            };
            sample(6, p, &logits, &mut t);
            seen[t[0] as usize] += 1;
        }
        assert_eq!(seen[0] + seen[3] + seen[4], 0, "{seen:?}");
        for id in [1, 2, 5] {
            assert!((800..1200).contains(&seen[id]), "{seen:?}");
        }
    }

    #[test]
    fn top_p_keeps_the_smallest_prefix_reaching_it() {
        // Probabilities about 0.665, 0.245, 0.090: p = 0.6 keeps the first only, p = 0.7 two.
        let logits = [2.0f32, 1.0, 0.0];
        let mut t = [0i32];
        for seed in 0..200 {
            let p = Sampling {
                top_k: 3,
                top_p: 0.6,
                temperature: 1.0,
                seed,
            };
            sample(3, p, &logits, &mut t);
            assert_eq!(t, [0]);
            let p = Sampling { top_p: 0.7, ..p };
            sample(3, p, &logits, &mut t);
            assert!(t[0] < 2);
        }
    }

    #[test]
    fn split_and_merged_equals_whole() {
        let s = PagedShape {
            num_seqs: 2,
            heads: 4,
            kv_heads: 2,
            head_dim: 64,
            max_blocks: 6,
        };
        let pool = 12;
        let val = |i: usize| ((i * 7919) % 2001) as f32 / 1000.0 - 1.0;
        let q: Vec<f32> = (0..s.num_seqs * s.heads * 64).map(val).collect();
        let k: Vec<f32> = (0..pool * DEC_BLOCK * 2 * 64).map(|i| val(i + 3)).collect();
        let v: Vec<f32> = (0..pool * DEC_BLOCK * 2 * 64)
            .map(|i| val(i + 11))
            .collect();
        let table: Vec<i32> = [5, 0, 11, 3, 7, 2, 1, 9, 4, 10, 6, 8].to_vec();
        let ctx = [83, 17];
        let (ps, mp) = (32, 3);
        let n = s.num_seqs * s.heads;
        let (mut m, mut l, mut t) = (
            vec![0f32; n * mp],
            vec![0f32; n * mp],
            vec![0f32; n * mp * 64],
        );
        paged_decode_partition(
            s, ps, mp, 0.125, &q, &k, &v, &table, &ctx, &mut m, &mut l, &mut t,
        );
        let mut merged = vec![0f32; n * 64];
        paged_decode_reduce(4, 64, ps, mp, &ctx, &m, &l, &t, &mut merged);
        let mut whole = vec![0f32; n * 64];
        paged_decode_attention(s, 0.125, &q, &k, &v, &table, &ctx, &mut whole);
        for (a, b) in merged.iter().zip(&whole) {
            assert!((a - b).abs() < 1e-5, "{a} {b}");
        }
    }

    #[test]
    fn unsupported_shapes_are_refused() {
        let s = PagedShape {
            num_seqs: 1,
            heads: 12,
            kv_heads: 1,
            head_dim: 128,
            max_blocks: 4,
        };
        let e = attention_launch::<f32>(s).unwrap_err();
        assert!(e.to_string().contains("at most 8"), "{e}");
        let e = partition_launch::<f32>(PagedShape { kv_heads: 4, ..s }, 100, 2).unwrap_err();
        assert!(e.to_string().contains("multiple of 16"), "{e}");
        let e = attention_launch::<f32>(PagedShape { head_dim: 96, ..s }).unwrap_err();
        assert!(e.to_string().contains("head_dim = 96"), "{e}");
        let e = sample_chunks_launch(4, 128_256, 129).unwrap_err();
        assert!(e.to_string().contains("1 to 128"), "{e}");
        assert!(sample_chunks_launch(4, 128_256, 128).is_ok());
        let e = sample_chunks_launch(4, 151_936, 128).unwrap_err();
        assert!(e.to_string().contains("top_k <= 107"), "{e}");
        for name in [
            "paged_decode_attention_d64",
            "paged_decode_attention_d128_f16",
            "paged_decode_partition_d128_bf16",
            "paged_decode_reduce_f16",
            "sample_topk_chunks",
            "sample_topk_topp",
        ] {
            assert!(crate::KERNELS.kernel(name).is_some(), "no kernel {name}");
        }
    }
}
