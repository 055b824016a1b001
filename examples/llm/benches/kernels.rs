//! Kernel timings with criterion, by device time (events on the stream around back-to-back
//! launches), on every device found: `cargo rocm bench` records them in a history and compares
//! runs; `cargo bench` works too. Memory-bound kernels report bytes/s (each input read once, each
//! output written once); attention and matmul report FLOP/s (criterion's "elements" are FLOPs).
//! The memory-bound kernels and the attention are measured in f32 and in the half types (groups
//! `scale_f16`, `rmsnorm_bf16`, `flash_attention_bf16`...) at the same shapes: half the bytes an
//! element. The tiled matmul and the f32 attention are measured next to the vendor BLAS at the
//! same shapes (cuBLAS on nvidia, rocBLAS on amd; skipped with the reason when it is missing):
//! `sgemm`, and an unfused attention of two batched GEMMs around this crate's softmax.
//!
//! On the cpu backend (and with `ROCM_BENCH_SMALL=1`) the sizes are small: a smoke test.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use llm::vendor::{HalfType, Operand, VendorBlas};
use llm::{bf16, f16, Dtype};
use llm_kernels as llm;
use rocm_bench::{BenchTarget, DeviceGroup};
use rocm_kernels::runtime::{Backend, Buffer, Device, Kernel, LaunchConfig, Module, Stream};

/// One device's kernels and stream.
struct Bench {
    target: BenchTarget,
    module: Module,
    stream: Stream,
    small: bool,
}

impl Bench {
    fn all() -> Vec<Bench> {
        let small_env = std::env::var(rocm_bench::vars::SMALL).is_ok_and(|v| v == "1");
        rocm_bench::targets()
            .into_iter()
            .filter_map(|target| {
                let device = target.device().clone();
                let prepared = device
                    .load(llm::KERNELS)
                    .and_then(|m| Ok((m, device.stream()?)));
                match prepared {
                    Ok((module, stream)) => Some(Bench {
                        small: small_env || target.backend() == Backend::Cpu,
                        target,
                        module,
                        stream,
                    }),
                    Err(e) => {
                        eprintln!("skipping {}: {e}", target.place());
                        None
                    }
                }
            })
            .collect()
    }

    fn device(&self) -> &Device {
        self.target.device()
    }

    fn buf<T: Dtype>(&self, n: usize, v: f32) -> Buffer<T> {
        self.device()
            .upload(&vec![T::nearest(v.into()); n])
            .expect("device memory for the bench")
    }

    /// A buffer of values in [-1, 1) (a fixed pattern: what matters here is the time).
    fn data<T: Dtype>(&self, n: usize) -> Buffer<T> {
        let v: Vec<T> = (0..n)
            .map(|i| T::nearest(((i * 7919) % 2000) as f64 / 1000.0 - 1.0))
            .collect();
        self.device()
            .upload(&v)
            .expect("device memory for the bench")
    }

    fn group<'c>(&self, c: &'c mut Criterion, name: &str, t: Throughput) -> DeviceGroup<'c> {
        let mut g = DeviceGroup::new(c, name, &self.target);
        g.throughput(t);
        if self.small {
            g.note("smoke test: small sizes");
        }
        g
    }
}

/// `elems` elements of `T`, in bytes.
fn bytes<T: Dtype>(elems: usize) -> Throughput {
    Throughput::Bytes((elems * std::mem::size_of::<T>()) as u64)
}

fn memory_bound(c: &mut Criterion) {
    for b in Bench::all() {
        memory_bound_in::<f32>(c, &b);
        memory_bound_in::<f16>(c, &b);
        memory_bound_in::<bf16>(c, &b);
    }
}

/// The memory-bound kernels in `T` (groups named by the kernel: `scale`, `scale_bf16`).
fn memory_bound_in<T: Dtype>(c: &mut Criterion, b: &Bench) {
    let n = if b.small { 1 << 16 } else { 1 << 26 };
    let (x, gate, up) = (b.data::<T>(n), b.data::<T>(n), b.data::<T>(n));
    let mut y = b.buf::<T>(n, 0.0);
    let name = |base: &str| T::kernel(base);
    let k = |base: &str| {
        b.module
            .kernel(&name(base))
            .expect("the kernel is in the library")
    };
    let n32 = n as i32;

    let scale = k("scale");
    let mut g = b.group(c, &name("scale"), bytes::<T>(2 * n));
    g.bench_launches(&format!("n={n}"), &b.stream, |s| {
        scale
            .launch(llm::vec_launch::<T>("scale", n).unwrap())
            .arg(&n32)
            .arg(&0.5f32)
            .arg(&x)
            .arg(&mut y)
            .run(s)
    });
    g.finish();

    let swiglu = k("swiglu");
    let mut g = b.group(c, &name("swiglu"), bytes::<T>(3 * n));
    g.bench_launches(&format!("n={n}"), &b.stream, |s| {
        swiglu
            .launch(llm::vec_launch::<T>("swiglu", n).unwrap())
            .arg(&n32)
            .arg(&gate)
            .arg(&up)
            .arg(&mut y)
            .run(s)
    });
    g.finish();
    drop((x, gate, up, y));

    // Scores of `rows` queries over `cols` keys, the queries the last `rows` positions: the mask
    // reads nothing and writes the masked elements (c > r + cols - rows) only.
    let (rows, cols) = if b.small { (64, 1024) } else { (16384, 4096) };
    let mut scores = b.data::<T>(rows * cols);
    let mask = k("causal_mask");
    let masked = llm::masked_count(rows, cols, cols as i64 - rows as i64);
    let mut g = b.group(c, &name("causal_mask"), bytes::<T>(masked));
    g.bench_launches(&format!("{rows}x{cols}"), &b.stream, |s| {
        mask.launch(llm::mask_launch::<T>(1, rows, cols).unwrap())
            .arg(&1i32)
            .arg(&(rows as i32))
            .arg(&(cols as i32))
            .arg(&((cols - rows) as i32))
            .arg(&mut scores)
            .run(s)
    });
    g.finish();
    drop(scores);

    let x = b.data::<T>(rows * cols);
    let w = b.data::<T>(cols);
    let mut y = b.buf::<T>(rows * cols, 0.0);
    let softmax = k("softmax_rows");
    let mut g = b.group(c, &name("softmax_rows"), bytes::<T>(2 * rows * cols));
    g.bench_launches(&format!("{rows}x{cols}"), &b.stream, |s| {
        softmax
            .launch(llm::rows_launch::<T>("softmax_rows", rows, cols).unwrap())
            .arg(&(rows as i32))
            .arg(&(cols as i32))
            .arg(&x)
            .arg(&mut y)
            .run(s)
    });
    g.finish();
    let rmsnorm = k("rmsnorm");
    let mut g = b.group(c, &name("rmsnorm"), bytes::<T>(2 * rows * cols + cols));
    g.bench_launches(&format!("{rows}x{cols}"), &b.stream, |s| {
        rmsnorm
            .launch(llm::rows_launch::<T>("rmsnorm", rows, cols).unwrap())
            .arg(&(rows as i32))
            .arg(&(cols as i32))
            .arg(&1e-5f32)
            .arg(&x)
            .arg(&w)
            .arg(&mut y)
            .run(s)
    });
    g.finish();
    drop((x, w, y));

    // RoPE on q of a prefill: tokens × 32 heads × 128 (2^26 elements, as the kernels above),
    // and the fused K append (8 KV heads).
    let (tokens, heads, kv_heads, d) = if b.small {
        (64, 4, 2, 128)
    } else {
        (16384, 32, 8, 128)
    };
    let inv_freq = b
        .device()
        .upload(&llm::rope_inv_freq(500_000.0, d))
        .unwrap();
    let mut q = b.data::<T>(tokens * heads * d);
    let rope = k("rope");
    let mut g = b.group(c, &name("rope"), bytes::<T>(2 * tokens * heads * d));
    g.bench_launches(&format!("{tokens}x{heads}x{d}"), &b.stream, |s| {
        rope.launch(llm::rope_launch::<T>("rope", tokens, heads, d).unwrap())
            .arg(&(tokens as i32))
            .arg(&(heads as i32))
            .arg(&(d as i32))
            .arg(&0i32)
            .arg(&inv_freq)
            .arg(&mut q)
            .run(s)
    });
    g.finish();
    let (kk, vv) = (
        b.data::<T>(tokens * kv_heads * d),
        b.data::<T>(tokens * kv_heads * d),
    );
    let (mut kc, mut vc) = (
        b.buf::<T>(tokens * kv_heads * d, 0.0),
        b.buf::<T>(tokens * kv_heads * d, 0.0),
    );
    let append = k("rope_kv_append");
    let mut g = b.group(
        c,
        &name("rope_kv_append"),
        bytes::<T>(4 * tokens * kv_heads * d),
    );
    g.bench_launches(&format!("{tokens}x{kv_heads}x{d}"), &b.stream, |s| {
        append
            .launch(llm::rope_kv_append_launch::<T>(tokens, kv_heads, d, 0, tokens).unwrap())
            .arg(&(tokens as i32))
            .arg(&(kv_heads as i32))
            .arg(&(d as i32))
            .arg(&0i32)
            .arg(&(tokens as i32))
            .arg(&inv_freq)
            .arg(&kk)
            .arg(&vv)
            .arg(&mut kc)
            .arg(&mut vc)
            .run(s)
    });
    g.finish();
}

fn matmul(c: &mut Criterion) {
    for b in Bench::all() {
        let sizes: &[usize] = if b.small { &[128] } else { &[2048, 4096] };
        let blas = VendorBlas::load(b.target.backend());
        if let Err(why) = &blas {
            eprintln!("{}: no vendor baseline: {why}", b.target.place());
        }
        let default = b.module.kernel("matmul").unwrap();
        for &n in sizes {
            let (a, bm) = (b.data::<f32>(n * n), b.data::<f32>(n * n));
            let mut out = b.buf::<f32>(n * n, 0.0);
            let flops = Throughput::Elements((2 * n * n * n) as u64);
            let n32 = n as i32;
            // One launch of a matmul kernel (a configuration's) with c = a bm into `out`.
            let launch_mm =
                |kernel: &Kernel, launch: LaunchConfig, out: &mut Buffer<f32>, s: &Stream| {
                    kernel
                        .launch(launch)
                        .arg(&n32)
                        .arg(&n32)
                        .arg(&n32)
                        .arg(&a)
                        .arg(&bm)
                        .arg(out)
                        .run(s)
                };
            // What the template launches: the configuration `cargo rocm tune` found for this
            // device and size (tune/wisdom.json, built in), or the default; and the default
            // beside it when a tuned one runs.
            let plan = llm::MatmulPlan::select(b.device().info(), n, n, n).unwrap();
            eprintln!(
                "matmul {n}^3 on {}: {}",
                b.target.place(),
                plan.selected.why
            );
            let tuned_module = plan
                .selected
                .is_tuned()
                .then(|| b.device().load(plan.selected.library).unwrap());
            let tuned = tuned_module.as_ref().map(|m| m.kernel("matmul").unwrap());
            // The default first (then the tuned configuration, what the template launches).
            let mut rows = Vec::new();
            if let Some(t) = &tuned {
                rows.push((
                    "matmul_default",
                    &default,
                    llm::matmul_launch(n, n, n).unwrap(),
                ));
                rows.push(("matmul", t, plan.launch));
            } else {
                rows.push(("matmul", &default, plan.launch));
            }
            for (group, kernel, launch) in rows {
                let mut g = b.group(c, group, flops.clone());
                if group == "matmul" {
                    g.note(plan.selected.why.clone());
                }
                g.bench_launches(&format!("{n}^3"), &b.stream, |s| {
                    launch_mm(kernel, launch, &mut out, s)
                });
                g.finish();
            }
            let Ok(blas) = &blas else { continue };
            // What the template launches, once more here: with a filter that skips the rows above
            // (`--bench paged_decode`), `out` would still hold zeros, and the comparison below
            // reported the vendor's largest element as the difference.
            launch_mm(
                tuned.as_ref().unwrap_or(&default),
                plan.launch,
                &mut out,
                &b.stream,
            )
            .unwrap_or_else(|e| panic!("{e}"));
            b.stream.synchronize().unwrap();
            let mine = out.to_vec().unwrap();
            let mut theirs = b.buf::<f32>(n * n, 0.0);
            // Safety: three n × n device buffers of this device.
            let run = |out: &mut Buffer<f32>| unsafe {
                blas.sgemm((n, n, n), a.device_ptr(), bm.device_ptr(), out.device_ptr())
            };
            run(&mut theirs).unwrap_or_else(|e| panic!("{e}"));
            b.stream.synchronize().unwrap();
            let theirs_v = theirs.to_vec().unwrap();
            let worst = mine
                .iter()
                .zip(&theirs_v)
                .map(|(x, y)| (x - y).abs())
                .fold(0f32, f32::max);
            eprintln!(
                "matmul {n}^3: largest difference from {}: {worst:e}",
                blas.path()
            );
            let mut g = b.group(c, "sgemm_vendor", flops);
            g.note(format!("vendor baseline: {}", blas.path()));
            g.bench_launches(&format!("{n}^3"), &b.stream, |_| {
                run(&mut theirs).unwrap_or_else(|e| panic!("{e}"));
                Ok(())
            });
            g.finish();
        }
    }
}

fn attention(c: &mut Criterion) {
    for b in Bench::all() {
        // One vendor BLAS and one list of lengths for the three types.
        let blas = VendorBlas::load(b.target.backend());
        let seqs = attention_seqs(b.small);
        attention_in::<f32>(c, &b, &blas, &seqs);
        attention_in::<f16>(c, &b, &blas, &seqs);
        attention_in::<bf16>(c, &b, &blas, &seqs);
    }
}

/// The attention kernels in `T` (groups `flash_attention`, `flash_attention_bf16`...), and the
/// unfused vendor attention in the same type beside them (`attention_vendor`,
/// `attention_vendor_f16`...) where `blas` loaded.
fn attention_in<T: Dtype>(
    c: &mut Criterion,
    b: &Bench,
    blas: &Result<VendorBlas, String>,
    seqs: &[usize],
) {
    let heads = if b.small { 2 } else { 32 };
    for &seq in seqs {
        attention_at::<T>(c, b, blas, heads, seq);
    }
}

/// The sequence lengths of the attention benches: 1024 to 8192 (issue 28), or
/// `LLM_BENCH_ATTENTION_SEQS` (comma-separated); 128 in a smoke test.
fn attention_seqs(small: bool) -> Vec<usize> {
    if small {
        return vec![128];
    }
    match std::env::var("LLM_BENCH_ATTENTION_SEQS") {
        Ok(v) => v
            .split(',')
            .map(|s| {
                s.trim()
                    .parse()
                    .unwrap_or_else(|e| panic!("LLM_BENCH_ATTENTION_SEQS: `{s}`: {e}"))
            })
            .collect(),
        Err(_) => vec![1024, 2048, 4096, 8192],
    }
}

/// The attention kernels in `T` at `heads` x `seq`, with the vendor's unfused attention where
/// `blas` is loaded.
fn attention_at<T: Dtype>(
    c: &mut Criterion,
    b: &Bench,
    blas: &Result<VendorBlas, String>,
    heads: usize,
    seq: usize,
) {
    for d in [64, 128] {
        let (q, k, v) = (
            b.data::<T>(heads * seq * d),
            b.data::<T>(heads * seq * d),
            b.data::<T>(heads * seq * d),
        );
        let mut o = b.buf::<T>(heads * seq * d, 0.0);
        let kernel = b
            .module
            .kernel(&llm::attention_kernel::<T>(d).unwrap())
            .unwrap();
        let scale = 1.0 / (d as f32).sqrt();
        for causal in [false, true] {
            // Q K^T and P V: 4 seq^2 d per head, half of it under a causal mask.
            let full = 4 * heads * seq * seq * d;
            let flops = Throughput::Elements((if causal { full / 2 } else { full }) as u64);
            let id = format!(
                "d{d}_{}_{heads}x{seq}",
                if causal { "causal" } else { "full" }
            );
            let mut g = b.group(c, &T::kernel("flash_attention"), flops.clone());
            g.bench_launches(&id, &b.stream, |s| {
                kernel
                    .launch(llm::attention_launch::<T>(heads, seq, seq, d, causal).unwrap())
                    .arg(&(seq as i32))
                    .arg(&(seq as i32))
                    .arg(&i32::from(causal))
                    .arg(&scale)
                    .arg(&q)
                    .arg(&k)
                    .arg(&v)
                    .arg(&mut o)
                    .run(s)
            });
            g.finish();
            let Ok(blas) = blas else { continue };
            // The unfused baseline: S = scale Q K^T (vendor), mask, softmax, O = P V (vendor),
            // over `chunk` heads at a time, so that the mask's and softmax's element counts
            // (chunk * seq^2) fit their `int` (at 8192, 32 heads are 2^31 scores: two chunks).
            let most = (i32::MAX as usize / (seq * seq)).max(1);
            let chunk = heads.div_ceil(heads.div_ceil(most));
            let mut scores = b.buf::<T>(chunk * seq * seq, 0.0);
            let mut probs = b.buf::<T>(chunk * seq * seq, 0.0);
            let o2 = b.buf::<T>(heads * seq * d, 0.0);
            let (mask, softmax) = (
                b.module.kernel(&T::kernel("causal_mask")).unwrap(),
                b.module.kernel(&T::kernel("softmax_rows")).unwrap(),
            );
            // f32: SGEMM; the half types: the mixed-precision GEMM (products summed in f32, on
            // tensor cores), scores and probabilities stored in the type.
            let half = match T::NAME {
                "f16" => Some(HalfType::F16),
                "bf16" => Some(HalfType::Bf16),
                _ => None,
            };
            if half.is_some() && !blas.has_gemm_ex() {
                eprintln!(
                    "skipping attention_vendor{}: {} has no mixed-precision strided batched GEMM",
                    T::SUFFIX,
                    blas.path()
                );
                continue;
            }
            let gemm = |dims, alpha, a, bm, bt, cm, n| {
                // Safety: the callers' buffers, of this device, sized for the shapes.
                unsafe {
                    match half {
                        None => blas.sgemm_batched(dims, alpha, a, bm, bt, cm, n),
                        Some(ty) => blas.gemm_ex_batched(ty, dims, alpha, a, bm, bt, cm, n),
                    }
                }
                .unwrap_or_else(|e| panic!("{e}"))
            };
            let mut g = b.group(c, &T::kernel("attention_vendor"), flops);
            g.note(format!(
                "unfused: {} batched {} + this crate's softmax, {chunk} heads at a time",
                blas.path(),
                if half.is_some() {
                    "gemm_ex (f32 sums)"
                } else {
                    "sgemm"
                }
            ));
            g.bench_launches(&id, &b.stream, |s| {
                let op = |ptr, stride| Operand { ptr, stride };
                let elems = |n: usize| (n * std::mem::size_of::<T>()) as u64;
                for h0 in (0..heads).step_by(chunk) {
                    let n = chunk.min(heads - h0);
                    let at = elems(h0 * seq * d);
                    gemm(
                        (seq, seq, d),
                        scale,
                        op(q.device_ptr() + at, seq * d),
                        op(k.device_ptr() + at, seq * d),
                        true,
                        op(scores.device_ptr(), seq * seq),
                        n,
                    );
                    let rows = n * seq;
                    if causal {
                        mask.launch(llm::mask_launch::<T>(n, seq, seq).unwrap())
                            .arg(&(n as i32))
                            .arg(&(seq as i32))
                            .arg(&(seq as i32))
                            .arg(&0i32)
                            .arg(&mut scores)
                            .run(s)?;
                    }
                    softmax
                        .launch(llm::rows_launch::<T>("softmax_rows", rows, seq).unwrap())
                        .arg(&(rows as i32))
                        .arg(&(seq as i32))
                        .arg(&scores)
                        .arg(&mut probs)
                        .run(s)?;
                    gemm(
                        (seq, d, seq),
                        1.0,
                        op(probs.device_ptr(), seq * seq),
                        op(v.device_ptr() + at, seq * d),
                        false,
                        op(o2.device_ptr() + at, seq * d),
                        n,
                    );
                }
                Ok(())
            });
            g.finish();
        }
    }
}

/// The decode path: paged decode attention (bytes: the K and V it must read, so GB/s compares with
/// the stream triad) in f32, f16 and bf16, the whole-context kernel and the split one (the
/// partition `split_partition` picks for this GPU, and 512 tokens; + the merge, both launches timed); and the sampler (top-k 50, top-p 0.9,
/// temperature 0.8: both kernels timed; bytes: the logits read) at Llama 3's vocabulary.
fn decode(c: &mut Criterion) {
    for b in Bench::all() {
        decode_in::<f32>(c, &b);
        decode_in::<f16>(c, &b);
        decode_in::<bf16>(c, &b);
        sampler(c, &b);
    }
}

/// Groups `paged_decode`, `paged_decode_f16`...: ids `split_d128_<seqs>x<context>` and
/// `whole_d128_...`; Llama 3 8B's heads (32 query heads over 8 kv heads, head_dim 128), every
/// sequence the same context, its blocks scattered over the cache (a permutation).
fn decode_in<T: Dtype>(c: &mut Criterion, b: &Bench) {
    use llm::decode::{self as dec, PagedShape};
    let shapes: &[(usize, usize)] = if b.small {
        &[(2, 300)]
    } else {
        &[(32, 4096), (8, 16384)]
    };
    let (heads, kv_heads, d) = if b.small { (4, 2, 128) } else { (32, 8, 128) };
    for &(seqs, ctx) in shapes {
        let max_blocks = ctx.div_ceil(dec::DEC_BLOCK);
        let blocks = seqs * max_blocks;
        let cache = blocks * dec::DEC_BLOCK * kv_heads * d;
        let (kc, vc) = (b.data::<T>(cache), b.data::<T>(cache));
        let q = b.data::<T>(seqs * heads * d);
        let mut out = b.buf::<T>(seqs * heads * d, 0.0);
        // Block i of the table is physical block i * 7919 mod blocks: a permutation (7919 is
        // prime), the blocks of a sequence scattered over the cache.
        let stride = if blocks % 7919 == 0 { 1 } else { 7919 };
        let table: Vec<i32> = (0..blocks)
            .map(|i| ((i * stride) % blocks) as i32)
            .collect();
        let table = b.device().upload(&table).unwrap();
        let lens = b.device().upload(&vec![ctx as i32; seqs]).unwrap();
        let s = PagedShape {
            num_seqs: seqs,
            heads,
            kv_heads,
            head_dim: d,
            max_blocks,
        };
        let scale = 1.0 / (d as f32).sqrt();
        let kv_bytes = bytes::<T>(2 * seqs * ctx * kv_heads * d);
        let split = b
            .module
            .kernel(&dec::partition_kernel::<T>(d).unwrap())
            .unwrap();
        let reduce = b.module.kernel(&T::kernel("paged_decode_reduce")).unwrap();
        let whole = b
            .module
            .kernel(&dec::attention_kernel::<T>(d).unwrap())
            .unwrap();
        let mut g = b.group(c, &T::kernel("paged_decode"), kv_bytes);
        g.note("bytes: the K and V cache read (tables, q and out not counted)");
        // The partition that fills this GPU once (dec::split_partition), and fixed ones.
        let places = b.device().info().compute_units as usize * dec::DEC_BLOCKS_PER_CU;
        let auto = dec::split_partition(s, ctx, places);
        for partition in partition_sizes() {
            let (partition, id) = match partition {
                None => (auto, format!("split_d{d}_{seqs}x{ctx}")),
                Some(p) => (p, format!("split{p}_d{d}_{seqs}x{ctx}")),
            };
            let parts = dec::partitions(ctx, partition);
            let n = seqs * heads * parts;
            let (mut ml, mut es) = (b.buf::<f32>(n, 0.0), b.buf::<f32>(n, 0.0));
            let mut tmp = b.buf::<f32>(n * d, 0.0);
            g.bench_launches(&id, &b.stream, |st| {
                split
                    .launch(dec::partition_launch::<T>(s, partition, parts).unwrap())
                    .arg(&(seqs as i32))
                    .arg(&(heads as i32))
                    .arg(&(kv_heads as i32))
                    .arg(&(max_blocks as i32))
                    .arg(&(partition as i32))
                    .arg(&(parts as i32))
                    .arg(&scale)
                    .arg(&q)
                    .arg(&kc)
                    .arg(&vc)
                    .arg(&table)
                    .arg(&lens)
                    .arg(&mut ml)
                    .arg(&mut es)
                    .arg(&mut tmp)
                    .run(st)?;
                reduce
                    .launch(dec::reduce_launch::<T>(seqs, heads, d).unwrap())
                    .arg(&(seqs as i32))
                    .arg(&(heads as i32))
                    .arg(&(d as i32))
                    .arg(&(partition as i32))
                    .arg(&(parts as i32))
                    .arg(&lens)
                    .arg(&ml)
                    .arg(&es)
                    .arg(&tmp)
                    .arg(&mut out)
                    .run(st)
            });
        }
        g.bench_launches(&format!("whole_d{d}_{seqs}x{ctx}"), &b.stream, |st| {
            whole
                .launch(dec::attention_launch::<T>(s).unwrap())
                .arg(&(seqs as i32))
                .arg(&(heads as i32))
                .arg(&(kv_heads as i32))
                .arg(&(max_blocks as i32))
                .arg(&scale)
                .arg(&q)
                .arg(&kc)
                .arg(&vc)
                .arg(&table)
                .arg(&lens)
                .arg(&mut out)
                .run(st)
        });
        g.finish();
    }
}

/// The split kernel's partition sizes to bench: `LLM_DECODE_PARTITIONS` (comma-separated: `auto`,
/// or sizes in tokens, multiples of 16), else `auto` and [`PARTITION`](llm::decode::PARTITION).
/// `auto` (None) is [`split_partition`](llm::decode::split_partition) for this GPU, bench id
/// `split_...`; a fixed size's id is `split<size>_...`.
fn partition_sizes() -> Vec<Option<usize>> {
    match std::env::var("LLM_DECODE_PARTITIONS") {
        Ok(v) if !v.trim().is_empty() => {
            v.split(',')
                .map(|p| match p.trim() {
                    "auto" => None,
                    p => Some(p.parse().expect(
                        "LLM_DECODE_PARTITIONS: `auto` or sizes in tokens, comma-separated",
                    )),
                })
                .collect()
        }
        _ => vec![None, Some(llm::decode::PARTITION)],
    }
}

/// Group `sampler`: ids `b<batch>_v<vocab>_k50`; both kernels (the chunks' top-k, then the
/// draw) timed together. `scripts/h100/sampler_torch.py` times a torch.topk-based sampler at the
/// same shapes.
fn sampler(c: &mut Criterion, b: &Bench) {
    use llm::decode as dec;
    let shapes: &[(usize, usize)] = if b.small {
        &[(2, 5000)]
    } else {
        &[(1, 128_256), (64, 128_256), (64, 32_000)]
    };
    let (top_k, top_p, temperature, seed) = (50usize, 0.9f32, 0.8f32, 1234u64);
    let chunks_k = b.module.kernel("sample_topk_chunks").unwrap();
    let draw = b.module.kernel("sample_topk_topp").unwrap();
    for &(batch, vocab) in shapes {
        let logits: Vec<f32> = (0..batch * vocab)
            .map(|i| ((i * 7919 + 13) % 10007) as f32 / 1000.0 - 5.0)
            .collect();
        let logits = b.device().upload(&logits).unwrap();
        let n_cand = dec::sample_chunks(vocab) * top_k;
        let mut cl = b.buf::<f32>(batch * n_cand, 0.0);
        let mut ci = b.device().upload(&vec![0i32; batch * n_cand]).unwrap();
        let mut tokens = b.device().upload(&vec![0i32; batch]).unwrap();
        let mut g = b.group(c, "sampler", bytes::<f32>(batch * vocab));
        g.note(format!(
            "top_k {top_k}, top_p {top_p}, temperature {temperature}; bytes: the logits read"
        ));
        g.bench_launches(&format!("b{batch}_v{vocab}_k{top_k}"), &b.stream, |st| {
            chunks_k
                .launch(dec::sample_chunks_launch(batch, vocab, top_k).unwrap())
                .arg(&(batch as i32))
                .arg(&(vocab as i32))
                .arg(&(top_k as i32))
                .arg(&logits)
                .arg(&mut cl)
                .arg(&mut ci)
                .run(st)?;
            draw.launch(dec::sample_launch(batch, n_cand, top_k).unwrap())
                .arg(&(batch as i32))
                .arg(&(n_cand as i32))
                .arg(&(top_k as i32))
                .arg(&top_p)
                .arg(&temperature)
                .arg(&seed)
                .arg(&cl)
                .arg(&ci)
                .arg(&mut tokens)
                .run(st)
        });
        g.finish();
    }
}

criterion_group!(benches, memory_bound, matmul, attention, decode);
criterion_main!(benches);
