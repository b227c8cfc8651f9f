#!/usr/bin/env python3
"""The fibergen torch optimizer's CPU step against what a PyTorch user runs
instead, in one run (docs/benchmarks.md).

Usage: FIBERGEN_GENERATED=_build/generated python3 scripts/bench_torch_cpu.py [--n 16M] [--steps 20] [--json]

Over n float32 coordinates, torch and fibergen on every core, each timed as
the mean wall time of a step after three untimed ones:

  fibergen dp_adamw / fiber   fibergen.torch.Optimizer.step(), the noise drawn in the kernel
  torch dp_adamw              g += sigma_w·torch.randn(n), then torch.optim.AdamW(foreach=True).step()
  torch fiber                 the same noise, then FiBeR's step written with torch tensor ops
                              (in place where torch allows), look-ahead point included
  copy                        torch copy_ of the bytes a dp_adamw step moves (28 per coordinate)

and the Python side's overhead on a model of 100 tensors: Optimizer.step()
less the runtime's step called directly through the C ABI, measured where
the kernel costs next to nothing (4 coordinates a tensor), over the
runtime's step on n coordinates in 100 tensors.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
import fibergen.torch as ft  # noqa: E402

SIGMA_W = 1.0 / 256  # σ_DP = 1, C = 1, B = 256, as fibergen bench


def count(s: str) -> int:
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(s[-1:].upper(), 1)
    return int(s[:-1] if scale > 1 else s) * scale


def time_ms(fn, steps: int) -> float:
    for _ in range(3):
        fn()
    t0 = time.perf_counter()
    for _ in range(steps):
        fn()
    return (time.perf_counter() - t0) * 1e3 / steps


def fibergen_step(gen: Path, name: str, n: int, tensors: int = 1):
    sizes = [n // tensors] * tensors
    sizes[-1] += n - sum(sizes)
    ps = [torch.nn.Parameter(torch.randn(k)) for k in sizes]
    opt = ft.Optimizer(ps, gen / name, seed=1)
    opt.set_dp(clip=1.0, noise_multiplier=1.0, expected_batch_size=256)
    for p in ps:
        p.grad.normal_(0, 0.01)
    return opt


def torch_dp_adamw(n: int):
    p = torch.nn.Parameter(torch.randn(n))
    p.grad = torch.randn(n) * 0.01
    opt = torch.optim.AdamW([p], lr=1e-3, foreach=True)
    noisy = torch.empty(n)
    g0 = p.grad.clone()

    def step():
        torch.randn(n, out=noisy)
        p.grad.copy_(g0).add_(noisy, alpha=SIGMA_W)  # the clipped mean is re-privatized every step
        opt.step()
    return step


def torch_fiber(n: int, atten: float):
    theta, g0 = torch.randn(n), torch.randn(n) * 0.01
    g, gt, r, m, v, look, noise = (torch.zeros(n) for _ in range(7))
    lr, b1, b2, eps, kappa, gamma, omega, eps_v = 1e-3, 0.9, 0.999, 1e-8, 0.6, 0.7, 0.9, 1e-8
    t = [0]

    def step():
        torch.randn(n, out=noise)
        torch.add(g0, noise, alpha=SIGMA_W, out=g)
        g.sub_(gt)                                   # nu
        r.mul_(1 - omega).add_(g, alpha=omega)
        gt.add_(r)
        m.mul_(b1).add_(gt, alpha=1 - b1)
        v.mul_(b2).addcmul_(gt, gt, value=1 - b2)
        t[0] += 1
        c1, c2 = 1 - b1 ** t[0], 1 - b2 ** t[0]
        vbar = torch.div(v, c2).sub_(atten * SIGMA_W ** 2).clamp_(min=eps_v).sqrt_().add_(eps)
        look.copy_(theta)
        theta.addcdiv_(m, vbar, value=-lr / c1)
        look.sub_(theta).mul_(-gamma).add_(theta)    # θ + γ(θ − θ_prev)
    return step


def copy_ms(n: int, steps: int) -> float:
    a, b = torch.empty(7 * n), torch.empty(7 * n)
    return time_ms(lambda: b.copy_(a), steps)


def measure(n: int, steps: int, gen: Path) -> dict:
    out = {"n": n, "threads": torch.get_num_threads(), "steps": steps}
    fg = {name: fibergen_step(gen, name, n) for name in ("dp_adamw", "fiber")}
    out["fibergen_dp_adamw_ms"] = time_ms(fg["dp_adamw"].step, steps)
    out["fibergen_fiber_ms"] = time_ms(fg["fiber"].step, steps)
    del fg
    out["torch_dp_adamw_ms"] = time_ms(torch_dp_adamw(n), steps)
    out["torch_fiber_ms"] = time_ms(torch_fiber(n, (2 - 0.9) / (4 - 3 * 0.9)), steps)
    out["copy_ms"] = copy_ms(n, steps)
    many = fibergen_step(gen, "fiber", n, tensors=100)
    out["fibergen_fiber_100_tensors_ms"] = time_ms(many.step, steps)
    out["runtime_fiber_100_tensors_ms"] = time_ms(many._groups[0].handle.step, steps)
    # The Python side alone: the same 100 tensors with 4 coordinates each,
    # where the kernel costs next to nothing, step() less the runtime's step.
    tiny = fibergen_step(gen, "fiber", 400, tensors=100)
    out["python_side_ms"] = time_ms(tiny.step, 50 * steps) - time_ms(tiny._groups[0].handle.step, 50 * steps)
    out["speedup_dp_adamw"] = out["torch_dp_adamw_ms"] / out["fibergen_dp_adamw_ms"]
    out["speedup_fiber"] = out["torch_fiber_ms"] / out["fibergen_fiber_ms"]
    out["python_overhead"] = out["python_side_ms"] / out["runtime_fiber_100_tensors_ms"]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=count, default=16 << 20)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    gen = Path(os.environ.get("FIBERGEN_GENERATED", "_build/generated"))
    if not (gen / "fiber" / "fiber.so").exists():
        print(f"bench_torch_cpu: {gen}/fiber/fiber.so is missing: run 'make generate-check' "
              "(or fibergen build -o _build/generated optimizers/*.dsl), or set FIBERGEN_GENERATED", file=sys.stderr)
        return 2
    torch.set_num_threads(os.cpu_count() or 1)
    r = measure(args.n, args.steps, gen)
    if args.json:
        print(json.dumps(r, indent=2))
    else:
        for k, v in r.items():
            print(f"{k:34s} {v:.4g}" if isinstance(v, float) else f"{k:34s} {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
