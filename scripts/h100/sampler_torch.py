#!/usr/bin/env python3
"""A torch.topk-based top-k / top-p sampler, timed on the GPU at the shapes of the llm template's
`sampler` bench (benches/kernels.rs): batch 1 and 64 at vocabulary 128256 (Llama 3), batch 64 at
32000; top_k 50, top_p 0.9, temperature 0.8. The baseline the template's sampler is compared with
in scripts/h100/llm.sh's table (goal: within 2x of it).

    python3 scripts/h100/sampler_torch.py > sampler-torch.json

Prints one JSON object: {"torch": version, "device": name, "results": [{"batch", "vocab",
"top_k", "us"}]} (median microseconds a call, CUDA events around 50 calls, 7 repeats), or
{"error": "torch unavailable: ..."} where torch or a CUDA device is missing (exit status 0:
the table says so).
"""
import json
import sys

SHAPES = [(1, 128256), (64, 128256), (64, 32000)]
TOP_K, TOP_P, TEMPERATURE = 50, 0.9, 0.8


def main():
    try:
        import torch
    except Exception as e:  # noqa: BLE001 - any import failure means no baseline
        print(json.dumps({"error": f"torch unavailable: {e}"}))
        return 0
    if not torch.cuda.is_available():
        print(json.dumps({"error": f"torch unavailable: torch {torch.__version__} sees no CUDA device"}))
        return 0
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev)
    gen.manual_seed(1234)

    def sample(logits):
        # What vLLM-style samplers did before fused kernels: top-k by torch.topk (sorted), softmax
        # over the k, the nucleus by a cumulative sum, one draw by torch.multinomial.
        vals, idx = torch.topk(logits, TOP_K, dim=-1)
        probs = torch.softmax(vals / TEMPERATURE, dim=-1)
        cum = probs.cumsum(dim=-1)
        probs = probs.masked_fill(cum - probs >= TOP_P, 0.0)
        choice = torch.multinomial(probs, 1, generator=gen)
        return idx.gather(-1, choice)

    results = []
    for batch, vocab in SHAPES:
        # The bench's pattern: ((i * 7919 + 13) % 10007) / 1000 - 5.
        i = torch.arange(batch * vocab, device=dev, dtype=torch.int64)
        logits = (((i * 7919 + 13) % 10007).float() / 1000.0 - 5.0).view(batch, vocab)
        for _ in range(20):
            sample(logits)
        torch.cuda.synchronize()
        times = []
        for _ in range(7):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(50):
                sample(logits)
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end) * 1000.0 / 50)
        times.sort()
        results.append({"batch": batch, "vocab": vocab, "top_k": TOP_K, "us": times[len(times) // 2]})
    print(json.dumps({"torch": torch.__version__, "device": torch.cuda.get_device_name(0), "results": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
