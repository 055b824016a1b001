//! `cargo rocm new --template llm`: a fresh crate passes every check (f32, f16 and bf16) on the
//! cpu backend at both wave sizes with every launch under the race detector, and the bugs people
//! write in these kernels (an off-by-one in the causal mask, a missing rescale in the online
//! softmax, RoPE's pair swapped) each fail their checks with the element that differs named, in
//! every element type (the kernels are templates over it).

use crate::harness_common;

use std::collections::HashMap;
use std::path::Path;

use harness_common::*;
use rocm_protocol::{TrialEvent, TrialOutcome};

/// Each trial's event from `cargo rocm test --message-format json`'s stdout.
fn events(stdout: &str) -> HashMap<String, TrialEvent> {
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["type"] != "summary")
        .map(|v| serde_json::from_value::<TrialEvent>(v).unwrap())
        .map(|e| (e.name.clone(), e))
        .collect()
}

fn test_json(krate: &Path, extra: &[&str]) -> (Option<i32>, HashMap<String, TrialEvent>, String) {
    let mut args = vec!["test", "--backend", "cpu", "--message-format", "json"];
    args.extend_from_slice(extra);
    let out = cargo_rocm(&args, krate);
    let (stdout, stderr) = text(&out);
    (out.status.code(), events(&stdout), stderr)
}

#[testkit::test(needs = [CXX])]
fn llm_template_passes_and_planted_bugs_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let krate = dir.path().join("llm-kernels");
    let out = cargo_rocm(
        &["new", "--template", "llm", krate.to_str().unwrap()],
        dir.path(),
    );
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("from template `llm`"), "{stderr}");
    copy_lock(&krate);

    // Every check, both wave sizes, every cpu launch under the race detector.
    let (code, events, stderr) = test_json(&krate, &["--wave-size", "32,64", "--race-check"]);
    // The bandwidth checks run on GPUs only: on cpu they are ignored, saying so.
    let failed: Vec<String> = events
        .values()
        .filter(|e| {
            let gpu_only = e.name.contains("_bandwidth::")
                && e.outcome == TrialOutcome::Ignored
                && e.message
                    .as_deref()
                    .is_some_and(|m| m.contains("only_backends"));
            e.outcome != TrialOutcome::Passed && !gpu_only
        })
        .map(|e| format!("{}: {}", e.name, e.message.clone().unwrap_or_default()))
        .collect();
    assert!(failed.is_empty(), "{}\n{stderr}", failed.join("\n"));
    assert_eq!(code, Some(0), "{stderr}");
    for check in [
        "scale",
        "causal_mask",
        "softmax_rows",
        "softmax_one_row",
        "rmsnorm",
        "swiglu",
        "rope_d64",
        "rope_d128",
        "rope_kv_append",
        "attention_d64_causal",
        "attention_d64_full",
        "attention_d128_causal",
        "attention_d128_full",
        "attention_d128_decode",
        "matmul",
        "scale_f16",
        "scale_bf16",
        "causal_mask_bf16",
        "softmax_long_rows_f16",
        "rmsnorm_bf16",
        "swiglu_f16",
        "rope_d64_bf16",
        "rope_d6_f16",
        "rope_kv_append_bf16",
        "attention_d64_causal_f16",
        "attention_d128_full_bf16",
        "attention_d128_decode_f16",
        "paged_decode_d64",
        "paged_decode_d128_one_token",
        "paged_decode_d128_long_f16",
        "paged_decode_d64_split_bf16",
        "paged_decode_d128_split_512",
        "paged_decode_reduce",
        "paged_decode_reduce_f16",
        "sample_topk_chunks_v32003_ties",
        "sample_topk_chunks_v1000",
        "sample_greedy_k1",
        "sample_top_p_one",
        "sample_temperature_zero",
    ] {
        for w in ["w32", "w64"] {
            let name = format!("{check}::cpu/{w}");
            assert!(
                events.contains_key(&name),
                "no trial {name}: {:?}",
                events.keys()
            );
        }
    }

    // Plant the three bugs.
    let hip = krate.join("kernels/llm.hip");
    let mut src = std::fs::read_to_string(&hip).unwrap();
    for (correct, planted) in [
        // The first masked key one too early: the diagonal masked.
        (
            "const int first = max(r + offset + 1, 0);",
            "const int first = max(r + offset, 0);",
        ),
        ("acc[i][c] *= alpha;", "acc[i][c] *= 1.0f;"),
        (
            "rotated(float x1, float x2, float c, float s)",
            "rotated(float x2, float x1, float c, float s)",
        ),
    ] {
        assert!(
            src.contains(correct),
            "the template no longer has `{correct}`"
        );
        src = src.replace(correct, planted);
    }
    std::fs::write(&hip, src).unwrap();
    // And three in the decode path (kernels/decode.hip).
    let hip = krate.join("kernels/decode.hip");
    let mut src = std::fs::read_to_string(&hip).unwrap();
    for (correct, planted) in [
        // The block ids of a pass rounded down: a context's last, partial block is read through
        // a stale (or never written) entry.
        (
            "const int nblk = (n + DEC_BLOCK - 1) / DEC_BLOCK;",
            "const int nblk = n / DEC_BLOCK;",
        ),
        // The merge forgets to rescale each partition by exp(max_p - max).
        (
            "exp_sums[at + p] * expf(max_logits[at + p] - big)",
            "exp_sums[at + p]",
        ),
        // The sampler ranks by logit only: ties fall in whatever order the sort leaves them.
        ("{ return a < b; }", "{ return (a >> 32) < (b >> 32); }"),
    ] {
        assert!(
            src.contains(correct),
            "the template no longer has `{correct}`"
        );
        src = src.replace(correct, planted);
    }
    std::fs::write(&hip, src).unwrap();
    let (code, events, stderr) = test_json(&krate, &["--wave-size", "64"]);
    assert_eq!(code, Some(1), "a trial failed\n{stderr}");
    let expect = |name: &str, outcome: TrialOutcome, needles: &[&str]| {
        let e = events
            .get(name)
            .unwrap_or_else(|| panic!("no trial {name}"));
        let msg = e.message.clone().unwrap_or_default();
        assert_eq!(e.outcome, outcome, "{name}: {msg}");
        for n in needles {
            assert!(msg.contains(n), "{name}: expected `{n}` in\n{msg}");
        }
    };
    // The mask hides the diagonal: a score the reference keeps is -inf.
    for (check, kernel) in [
        ("causal_mask", "causal_mask"),
        ("causal_mask_bf16", "causal_mask_bf16"),
    ] {
        expect(
            &format!("{check}::cpu/w64"),
            TrialOutcome::Failed,
            &[
                format!("kernel `{kernel}`").as_str(),
                "worst: scores[",
                "got -inf, want",
                "input (shrunk)",
            ],
        );
    }
    // Without the rescale, every tile after the first adds to an unscaled sum: wrong as soon as
    // there are more keys than one tile (64 at head_dim 64, 32 at 128); one key over one tile still
    // passes.
    for check in [
        "attention_d64_full",
        "attention_d64_causal",
        "attention_d128_decode",
        "attention_d64_full_f16",
        "attention_d128_decode_bf16",
    ] {
        expect(
            &format!("{check}::cpu/w64"),
            TrialOutcome::Failed,
            &[
                "kernel `flash_attention_d",
                "worst: o[",
                "reproduce with: cargo rocm test --seed=",
            ],
        );
    }
    expect("attention_d64_one::cpu/w64", TrialOutcome::Passed, &[]);
    expect("attention_d64_one_bf16::cpu/w64", TrialOutcome::Passed, &[]);
    // The pair swapped: x1 and x2 trade places, on the 16-byte path (head_dim 64) and the
    // element-wise one (head_dim 6: three pairs).
    for (check, kernel) in [
        ("rope_d64", "rope"),
        ("rope_d6", "rope"),
        ("rope_d128_f16", "rope_f16"),
        ("rope_d6_bf16", "rope_bf16"),
    ] {
        expect(
            &format!("{check}::cpu/w64"),
            TrialOutcome::Failed,
            &[format!("kernel `{kernel}`").as_str(), "worst: x["],
        );
    }
    for check in ["rope_kv_append", "rope_kv_append_f16"] {
        expect(
            &format!("{check}::cpu/w64"),
            TrialOutcome::Failed,
            &[format!("kernel `{check}`").as_str(), "worst: k_cache["],
        );
    }
    // The partial last block: every context that is not a multiple of 16 (and one token).
    for check in [
        "paged_decode_d64",
        "paged_decode_d128_long_f16",
        "paged_decode_d64_split_bf16",
    ] {
        expect(
            &format!("{check}::cpu/w64"),
            TrialOutcome::Failed,
            &["kernel `paged_decode_", "differs from the reference"],
        );
    }
    // The unscaled merge.
    for check in ["paged_decode_reduce", "paged_decode_reduce_bf16"] {
        expect(
            &format!("{check}::cpu/w64"),
            TrialOutcome::Failed,
            &[format!("kernel `{check}`").as_str(), "worst: out["],
        );
    }
    // Ties out of order: the chunks' top-k names other ids, and the draw picks other tokens.
    for (check, kernel, output) in [
        (
            "sample_topk_chunks_v1000_ties",
            "sample_topk_chunks",
            "cand_ids[",
        ),
        (
            "sample_topk_chunks_v32003_ties",
            "sample_topk_chunks",
            "cand_ids[",
        ),
        ("sample_greedy_k1", "sample_topk_topp", "tokens["),
        ("sample_topk_topp", "sample_topk_topp", "tokens["),
    ] {
        expect(
            &format!("{check}::cpu/w64"),
            TrialOutcome::Failed,
            &[format!("kernel `{kernel}`").as_str(), output],
        );
    }
    // The other kernels are untouched.
    for check in [
        "scale",
        "softmax_rows",
        "rmsnorm",
        "swiglu",
        "matmul",
        "scale_bf16",
        "softmax_rows_f16",
        "rmsnorm_bf16",
        "swiglu_f16",
    ] {
        expect(&format!("{check}::cpu/w64"), TrialOutcome::Passed, &[]);
    }
}
