#!/usr/bin/env python3
"""What a privacy budget costs per step (docs/benchmarks.md): dp_adamw on a
small CNN (about 18k parameters, two parameter groups), one run with
set_budget and one with set_dp at the budget's σ, each step a trainer's:
privatize the batch's per-example gradients, step, read observation(); and
spent() at the end, or after every step (a trainer logging ε each step,
which waits for the milestones' table where the run outruns its
computation in the background). Prints the milliseconds per step of each, and
those of the spent() after the last step.

Usage: FIBERGEN_GENERATED=_build/generated python3 scripts/bench_budget.py [--steps 234] [--batch 256]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import torch

sys.path.append(str(Path(__file__).resolve().parents[1] / "python"))  # after PYTHONPATH: another build can be timed
import fibergen.torch as ft  # noqa: E402


def cnn() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(1, 16, 5), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                               torch.nn.Conv2d(16, 16, 5), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                               torch.nn.Flatten(), torch.nn.Linear(16 * 4 * 4, 32), torch.nn.ReLU(),
                               torch.nn.Linear(32, 10))


def run(opt_dir: Path, budget: bool, every: bool, steps: int, batch: int,
        grads: list[torch.Tensor]) -> tuple[float, float, float]:
    """Seconds per step, seconds of the spent() after the last step, and σ_DP."""
    m = cnn()
    ps = list(m.parameters())
    opt = ft.Optimizer([{"params": ps[:4]}, {"params": ps[4:], "lr": 1e-3}], opt_dir, seed=1)
    kw = dict(clip=1.0, dataset_size=batch * steps, batch_size=batch, epochs=1)
    sigma = ft.Optimizer(cnn().parameters(), opt_dir, seed=1).set_budget(1.0, **kw)
    if budget:
        opt.set_budget(1.0, **kw)
    else:
        opt.set_dp(clip=1.0, noise_multiplier=sigma, expected_batch_size=batch)
    t0 = time.perf_counter()
    for _ in range(steps):
        opt.privatize(grads)
        opt.step()
        opt.observation()
        if every:
            opt.spent()
    t1 = time.perf_counter()
    opt.spent()
    return (t1 - t0) / steps, time.perf_counter() - t1, sigma


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=234)
    ap.add_argument("--batch", type=int, default=256)
    a = ap.parse_args()
    opt_dir = Path(os.environ.get("FIBERGEN_GENERATED", "_build/generated")) / "dp_adamw"
    g = torch.Generator().manual_seed(2)
    grads = [0.01 * torch.randn(a.batch, *p.shape, generator=g) for p in cnn().parameters()]
    print(f"{sum(p.numel() for p in cnn().parameters())} parameters, {a.steps} steps of {a.batch}")
    for name, budget, every in (("set_dp", False, False), ("set_budget", True, False),
                                ("set_budget, spent() every step", True, True)):
        per, last, sigma = run(opt_dir, budget, every, a.steps, a.batch, grads)
        print(f"{name}: {per * 1e3:.1f} ms/step, then spent() {last * 1e3:.0f} ms (σ_DP = {sigma:.4f})")


if __name__ == "__main__":
    main()
