#!/usr/bin/env python3
"""A DP training step with fibergen against PyTorch's own, on the CPU, in one
process (docs/benchmarks.md, "privatize + step against PyTorch").

Usage: FIBERGEN_GENERATED=_build/generated python3 scripts/bench_step_small.py
           [--optimizers dp_adamw,fiber] [--sizes 10K,100K,1M,10M] [--batch 32]
           [--threads T] [--reps 20] [--json]

Each size is a model of four parameter tensors (two weight matrices and two
biases, n coordinates in all) with a batch of per-example gradients drawn
once, [batch, *p.shape] per parameter, as ``fibergen.torch.per_example_grads``
returns them; both sides take that dict and do one DP step from it, with
C = 1, σ_DP = 1, B = batch:

  fibergen   opt.privatize(grads) then opt.step(): the runtime clips each
             example over all parameters and sums (its privatize kernels), the
             step adds the noise inside the fused kernel. fiber passes the same
             gradients as its look-ahead ones, and privatize mixes the two.
  torch      what a PyTorch user writes: each example's norm over the
             parameters (torch.linalg.vector_norm), min(1, C/‖g‖), the scaled
             sum over the batch (torch.tensordot) divided by B, plus
             σ_DP·C/B·torch.randn_like, then torch.optim.AdamW(foreach=True).step().
             For fiber the peer first forms each example's two-point mix
             a·look + (1−a)·cur (torch.lerp, a from the optimizer), so that both
             sides read the same per-example gradients.

With --paths it times fibergen alone instead, at the first size, on each
path a trainer takes — privatize(grads) + step(), and trust_clipped_grad()
+ step() on a .grad it wrote — in one group and in two, under set_dp and
under set_budget: the medians of `reps` steps each.

Both run on T threads (torch.set_num_threads; fibergen's threads=). Each
pair is timed as the medians of `reps` steps each, in alternating blocks of
five, each block after one untimed step (the first run after the other
side's pays for the other's cache and thread state). The ratio is
fibergen / torch (below 1: fibergen is faster).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
from pathlib import Path
from typing import Callable, Optional

import torch

from bench_torch_cpu import generated_with, interleaved, median_ms  # the other CPU peer's, one way

OPTIMIZERS = ("dp_adamw", "fiber")
CLIP, SIGMA = 1.0, 1.0


def count(s: str) -> int:
    """10K, 1M as whole numbers (powers of ten: the sizes are the issue's)."""
    scale = {"K": 10 ** 3, "M": 10 ** 6}.get(s[-1:].upper(), 1)
    return int(float(s[:-1] if scale > 1 else s) * scale)


def shapes(n: int) -> list[tuple[int, ...]]:
    """Four tensors of n coordinates in all: two [d, d] weights, two biases."""
    d = max(1, int(((n - 2) / 2) ** 0.5))
    rest = n - 2 * d * d
    return [(d, d), (rest // 2,), (d, d), (rest - rest // 2,)]


def model(n: int) -> list[torch.nn.Parameter]:
    return [torch.nn.Parameter(torch.randn(s) * 0.1) for s in shapes(n)]


def per_example(n: int, batch: int, seed: int) -> list[torch.Tensor]:
    """A batch's per-example gradients, [batch, *shape] per parameter: one
    set, which both sides read (at 10M, 1.3 GB a set at batch 32)."""
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(batch, *s, generator=gen) * 0.05 for s in shapes(n)]


def fibergen_step(gen: Path, name: str, n: int, batch: int, threads: int, cur: list[torch.Tensor],
                  look: Optional[list[torch.Tensor]]) -> tuple[Callable[[], None], float]:
    """fibergen's step and the two-point weight a of its observation (0 for one point)."""
    import fibergen.torch as ft
    params = model(n)
    opt = ft.Optimizer(params, gen / name, seed=1, threads=threads, lr=1e-3)
    opt.set_dp(clip=CLIP, noise_multiplier=SIGMA, expected_batch_size=batch)
    cur_d = dict(zip(params, cur))
    look_d = dict(zip(params, look)) if look is not None else None
    a = opt.observation()["a"]

    def step() -> None:
        opt.privatize(cur_d, look_d)
        opt.step()
    return step, a


def torch_step(n: int, batch: int, a: float, cur: list[torch.Tensor],
               look: Optional[list[torch.Tensor]]) -> Callable[[], None]:
    params = model(n)
    opt = torch.optim.AdamW(params, lr=1e-3, foreach=True)
    noise = SIGMA * CLIP / batch

    def step() -> None:
        rows = cur if look is None else [torch.lerp(c, x, a) for c, x in zip(cur, look)]
        norms = torch.stack([torch.linalg.vector_norm(g.reshape(batch, -1), dim=1) for g in rows])
        scale = (CLIP / torch.linalg.vector_norm(norms, dim=0).clamp(min=1e-12)).clamp(max=1.0)
        for p, g in zip(params, rows):
            p.grad = torch.tensordot(scale, g, dims=1).div_(batch).add_(torch.randn_like(p), alpha=noise)
        opt.step()
    return step


def fibergen_paths(gen: Path, name: str, n: int, batch: int, threads: int, reps: int) -> dict[str, float]:
    """fibergen's step on each path a trainer takes, by itself."""
    import fibergen.torch as ft
    out = {}
    cur = per_example(n, batch, 2)
    look = per_example(n, batch, 3) if name == "fiber" else None
    for groups in (1, 2):
        for settings in ("set_dp", "set_budget"):
            params = model(n)
            pgs = params if groups == 1 else [{"params": params[:2]}, {"params": params[2:], "weight_decay": 0.0}]
            opt = ft.Optimizer(pgs, gen / name, seed=1, threads=threads)
            if settings == "set_dp":
                opt.set_dp(clip=CLIP, noise_multiplier=SIGMA, expected_batch_size=batch)
            else:
                # 1,875 batches an epoch (60,000 examples at batch 32), 50 epochs: ε = 8 over 93,750 steps
                opt.set_budget(8.0, clip=CLIP, dataset_size=1875 * batch, batch_size=batch, epochs=50)
            cur_d, look_d = dict(zip(params, cur)), dict(zip(params, look)) if look is not None else None

            def privatized() -> None:
                opt.privatize(cur_d, look_d)
                opt.step()

            def trusted() -> None:
                for p in params:
                    p.grad.mul_(0.5)
                opt.trust_clipped_grad()
                opt.step()
            for path, fn in (("privatize + step", privatized), ("trust + step", trusted)):
                out[f"{name}, {groups} group{'s' * (groups > 1)}, {settings}: {path}"] = median_ms(fn, reps)
    return out


def measure(names: list[str], sizes: list[int], batch: int, threads: int, reps: int, gen: Path) -> dict:
    out: dict = {"batch": batch, "threads": threads, "reps": reps, "torch": torch.__version__, "rows": []}
    for n in sizes:
        for name in names:
            cur = per_example(n, batch, 2)
            look = per_example(n, batch, 3) if name == "fiber" else None
            fg, a = fibergen_step(gen, name, n, batch, threads, cur, look)
            fg_ms, torch_ms = interleaved(fg, torch_step(n, batch, a, cur, look), reps)
            out["rows"].append({"optimizer": name, "n": sum(_numel(s) for s in shapes(n)), "fibergen_ms": fg_ms,
                                "torch_ms": torch_ms, "ratio": fg_ms / torch_ms})
            del fg, cur, look
            gc.collect()  # the optimizer, its buffers and the rows it keeps, before the next size
    return out


def _numel(shape: tuple[int, ...]) -> int:
    k = 1
    for d in shape:
        k *= d
    return k


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--optimizers", default=",".join(OPTIMIZERS), help=f"comma-separated, of {', '.join(OPTIMIZERS)}")
    ap.add_argument("--sizes", default="10K,100K,1M,10M", help="parameters per model, e.g. 10K,1M")
    ap.add_argument("--batch", type=int, default=32, help="examples per step")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--reps", type=int, default=20, help="timed steps of each side per size")
    ap.add_argument("--paths", action="store_true", help="fibergen alone, on each path, at the first size")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    names = [s for s in args.optimizers.split(",") if s]
    if bad := [s for s in names if s not in OPTIMIZERS]:
        ap.error(f"--optimizers: {', '.join(bad)}: want some of {', '.join(OPTIMIZERS)}")
    try:
        sizes = [count(s) for s in args.sizes.split(",") if s]
    except ValueError:
        ap.error(f"--sizes {args.sizes!r}: want whole numbers, e.g. 10K,100K,1M")
    if min([args.batch, args.threads, args.reps, *sizes]) < 1 or min(sizes) < 4:
        ap.error("--batch, --threads and --reps: want whole numbers >= 1; --sizes: >= 4")
    gen = generated_with(names, "bench_step_small")
    if gen is None:
        return 2
    torch.set_num_threads(args.threads)
    if args.paths:
        r = {"batch": args.batch, "threads": args.threads, "reps": args.reps, "n": sum(_numel(s) for s in shapes(sizes[0])),
             "paths": {k: v for name in names for k, v in
                       fibergen_paths(gen, name, sizes[0], args.batch, args.threads, args.reps).items()}}
        print(json.dumps(r, indent=2) if args.json else "\n".join(f"{k}: {v:.3f} ms" for k, v in r["paths"].items()))
        return 0
    r = measure(names, sizes, args.batch, args.threads, args.reps, gen)
    if args.json:
        print(json.dumps(r, indent=2))
        return 0
    print(f"batch {r['batch']}, {r['threads']} threads, torch {r['torch']}: medians of {r['reps']} steps each, "
          "alternating blocks of 5")
    print("| optimizer | n | fibergen ms | torch ms | fibergen / torch |\n|---|---|---|---|---|")
    for x in r["rows"]:
        print(f"| {x['optimizer']} | {x['n']:,} | {x['fibergen_ms']:.3f} | {x['torch_ms']:.3f} | {x['ratio']:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
