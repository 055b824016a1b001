#!/usr/bin/env python3
"""Kernel Tuner 1.5 on the example crate's tunables, beside `cargo rocm tune` (issue 17).

Run on the GPU machine by scripts/h100/kt.sh (Kernel Tuner and the packages it needs that the
machine lacks are carried as wheels). The same kernels (examples/basic/kernels/{matmul,conv2d}.hip,
compiled by NVRTC through CuPy with this repository's HIP-on-CUDA header), the same parameter
values, restrictions and launch grid (n / (BLOCK * TILE) per dimension) as the tunables in
examples/basic/tests/kernels.rs, verified against a NumPy reference at the same tolerance.

Per kernel, strategy and seed, one run with a budget of the largest of BUDGETS unique
evaluations; the best configuration after the first k evaluations gives the result at budget k.
Writes one JSON document: every run's evaluations in order (configuration, Kernel Tuner's time,
its compile/verification/benchmark/framework times) and the wall time of the run. Scores are
computed on the dev machine against the brute-force table of `cargo rocm tune` on the same GPU
(kt_scores.py), so both tools are judged on the same truth.
"""

import argparse
import json
import os
import sys
import time

import numpy as np

import kernel_tuner

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
KERNELS = os.path.join(REPO, "examples", "basic", "kernels")
HEADERS = os.path.join(REPO, "rocm-kernels-core", "include", "nvidia")


def matmul_problem(n, rng):
    a = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    b = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    c = np.zeros((n, n), dtype=np.float32)
    want = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)
    tune_params = {
        "BLOCK_X": [8, 16, 32, 64],
        "BLOCK_Y": [4, 8, 16, 32],
        "TILE_X": [1, 2, 4, 8],
        "TILE_Y": [1, 2, 4, 8],
        "BK": [8, 16, 32],
        "PAD": [0, 1],
    }
    restrictions = [
        "32 <= BLOCK_X * BLOCK_Y <= 1024",
        "BLOCK_Y * TILE_Y <= 256 and BLOCK_X * TILE_X <= 256",
        "(BLOCK_Y * TILE_Y * (BK + PAD) + BK * (BLOCK_X * TILE_X + PAD)) * 4 <= 49152",
    ]
    args = [a, b, c, np.int32(n)]
    answer = [None, None, want, None]
    return tune_params, restrictions, args, answer


def conv2d_problem(n, rng):
    w = n + 6
    image = rng.uniform(-1, 1, (w, w)).astype(np.float32)
    filt = rng.uniform(-1, 1, (7, 7)).astype(np.float32)
    out = np.zeros((n, n), dtype=np.float32)
    img64 = image.astype(np.float64)
    want = np.zeros((n, n), dtype=np.float64)
    for i in range(7):
        for j in range(7):
            want += img64[i : i + n, j : j + n] * float(filt[i, j])
    tune_params = {
        "BLOCK_X": [16, 32, 48, 64, 96, 128],
        "BLOCK_Y": [1, 2, 4, 8, 16, 32],
        "TILE_X": [1, 2, 4, 8],
        "TILE_Y": [1, 2, 4, 8],
        "USE_SHARED": [0, 1],
    }
    restrictions = [
        "64 <= BLOCK_X * BLOCK_Y <= 1024",
        "BLOCK_X * TILE_X <= 512 and BLOCK_Y * TILE_Y <= 256",
        "USE_SHARED == 0 or (BLOCK_Y * TILE_Y + 6) * (BLOCK_X * TILE_X + 6) * 4 <= 49152",
    ]
    args = [image, filt, out, np.int32(n)]
    answer = [None, None, want.astype(np.float32), None]
    return tune_params, restrictions, args, answer


PROBLEMS = {"matmul": matmul_problem, "conv2d": conv2d_problem}
# The checks' tolerances (examples/basic/tests/kernels.rs): |got - want| <= atol + rtol * |want|.
TOLERANCE = {"matmul": (1e-3, 1e-3), "conv2d": (1e-4, 1e-4)}


def run(kernel, n, strategy, seed, budget, iterations, simulate=None):
    rng = np.random.default_rng(1234)
    tune_params, restrictions, args, answer = PROBLEMS[kernel](n, rng)
    atol, rtol = TOLERANCE[kernel]

    def verify(want, got, atol=None):
        return all(
            w is None or np.allclose(g, w, rtol=rtol, atol=TOLERANCE[kernel][0])
            for w, g in zip(want, got)
        )

    with open(os.path.join(KERNELS, kernel + ".hip")) as f:
        source = f.read()
    cuda = os.environ.get("CUDA_PATH", "/usr/local/cuda")
    # ROCM_RTC_NO_LIBCUXX: what the project's runtime passes for a source that never names
    # `std` (nvrtc.rs): without it the header pulls in libcu++, 1.6 s a compile on the H100 host
    # against 0.06 s, which would charge Kernel Tuner for a header it does not need.
    options = ["-std=c++17", "-DROCM_RTC_NO_LIBCUXX", "-I" + HEADERS, "-I" + os.path.join(cuda, "include")]
    cccl = os.path.join(cuda, "include", "cccl")
    if os.path.isdir(cccl):
        options.append("-I" + cccl)
    # Kernel Tuner's strategies draw from NumPy's global generator (and Python's random).
    np.random.seed(seed)
    import random

    random.seed(seed)
    started = time.perf_counter()
    results, env = kernel_tuner.tune_kernel(
        kernel,
        source,
        (n, n),
        args,
        tune_params,
        restrictions=restrictions,
        grid_div_x=["BLOCK_X", "TILE_X"],
        grid_div_y=["BLOCK_Y", "TILE_Y"],
        block_size_names=["BLOCK_X", "BLOCK_Y"],
        lang="cupy",
        compiler_options=options,
        answer=answer,
        verify=verify,
        strategy=strategy,
        strategy_options={"max_fevals": budget},
        iterations=iterations,
        quiet=True,
        verbose=False,
        seed=seed,
        # A dry run without a GPU: Kernel Tuner replays a cache (`cargo rocm tune --export-kt`).
        **({"cache": simulate, "simulation_mode": True} if simulate else {}),
    )
    wall = time.perf_counter() - started
    evals = []
    for r in results:
        config = {k: int(r[k]) for k in tune_params}
        t = r.get("time")
        ok = isinstance(t, (int, float)) and np.isfinite(t)
        evals.append(
            {
                "config": config,
                "time_ms": float(t) if ok else None,
                "error": None if ok else str(t),
                "times": [float(x) for x in r.get("times", [])] if ok else [],
                "compile_ms": float(r.get("compile_time", 0) or 0),
                "verification_ms": float(r.get("verification_time", 0) or 0),
                "benchmark_ms": float(r.get("benchmark_time", 0) or 0),
                "framework_ms": float(r.get("framework_time", 0) or 0),
                "strategy_ms": float(r.get("strategy_time", 0) or 0),
            }
        )
    return {
        "kernel": kernel,
        "n": n,
        "strategy": strategy,
        "seed": seed,
        "budget": budget,
        "iterations": iterations,
        "wall_s": wall,
        "evaluations": evals,
        "device": env.get("device_name"),
        "kernel_tuner": kernel_tuner.__version__,
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kernel", action="append", required=True, choices=sorted(PROBLEMS))
    p.add_argument("--n", type=int, default=2048)
    p.add_argument("--strategy", action="append", required=True)
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--budget", type=int, default=100)
    p.add_argument("--iterations", type=int, default=5)
    p.add_argument("--time-limit", type=float, default=1e9, help="stop starting runs after this many seconds")
    p.add_argument("--out", required=True)
    p.add_argument("--simulate", metavar="KT_CACHE", help="replay this Kernel Tuner cache instead of a GPU (a dry run)")
    a = p.parse_args()
    runs = []
    started = time.perf_counter()
    for kernel in a.kernel:
        for strategy in a.strategy:
            for seed in range(1, a.seeds + 1):
                if time.perf_counter() - started > a.time_limit:
                    print(f"time limit: skipping {kernel} {strategy} seed {seed}", file=sys.stderr)
                    continue
                r = run(kernel, a.n, strategy, seed, a.budget, a.iterations, a.simulate)
                ok = [e for e in r["evaluations"] if e["time_ms"] is not None]
                best = min((e["time_ms"] for e in ok), default=float("nan"))
                print(
                    f"{kernel} {strategy} seed {seed}: {len(r['evaluations'])} evaluations "
                    f"({len(ok)} valid) in {r['wall_s']:.1f} s, best {best:.4f} ms",
                    flush=True,
                )
                runs.append(r)
                with open(a.out, "w") as f:
                    json.dump({"runs": runs}, f)


if __name__ == "__main__":
    main()
