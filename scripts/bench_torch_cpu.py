#!/usr/bin/env python3
"""The fibergen torch optimizer's CPU step against what a PyTorch user runs
instead, in one process (docs/benchmarks.md).

Usage: FIBERGEN_GENERATED=_build/generated python3 scripts/bench_torch_cpu.py
           [--optimizers dp_sgd,dp_adamw,fiber] [--n 16M] [--threads T] [--steps 20] [--secure]
           [--dtype float32|bfloat16] [--json]

Over n float32 coordinates in one tensor, both sides on T threads (default:
every core), each optimizer's pair timed as the medians of `steps` steps
of each, run in alternating blocks of five, each block after one untimed step:

  fibergen NAME    fibergen.torch.Optimizer.step(): the host kernel through the C ABI
                   on the tensor's memory, the noise drawn in the kernel, the guard included
  peer dp_sgd      g += sigma_w·torch.randn(n), then torch.optim.SGD(foreach=True).step()
  peer dp_adam     the same noise, then torch.optim.Adam(foreach=True).step()
  peer dp_adamw    the same noise, then torch.optim.AdamW(foreach=True).step()
  peer fiber       the same noise, then FiBeR's step written with torch tensor ops
                   (in place where torch allows), look-ahead point included

With --dtype bfloat16 the model is bfloat16 on both sides: fibergen opens
NAME_bf16 where it ships one (dp_adamw_bf16, fiber_bf16: the states bfloat16
too) else NAME, compiled for bfloat16 parameters (rounded to nearest), its
gradient float32 (decision 130); the peer keeps its parameters, gradient,
noise and states in bfloat16, as torch.optim does for a bfloat16 model.

With --secure, fibergen draws in its secure mode (docs/noise.md) and every peer
draws its noise by Opacus's secure-mode recipe: four draws summed and halved
(Holohan and Braghin 2021). Opacus takes the four from torchcsprng's AES-CTR
generator, which Debian does not package; torch's own generator stands in for
it, so the peer's cost of a cryptographic generator is not counted.

The ratio is peer / fibergen (how many times faster fibergen's step is).
Also measured once: the Python side's overhead on a model of 100 tensors,
Optimizer.step() less the runtime's step called directly, where the kernel
costs next to nothing (4 coordinates a tensor), over the runtime's step on n
coordinates in 100 tensors.

Without PyTorch it says so and exits 0: there is no peer to time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Callable, Optional

try:
    import torch
except ImportError:
    torch = None

SIGMA_W = 1.0 / 256  # σ_DP = 1, C = 1, B = 256, as fibergen bench
PEERS = ("dp_sgd", "dp_adam", "dp_adamw", "fiber")
DTYPE = "float32"  # the model's, both sides (--dtype)
BF16_SHIPPED = ("dp_adamw", "fiber")  # those with a NAME_bf16, whose states are bfloat16


def zeros(n: int) -> "torch.Tensor":
    return torch.zeros(n, dtype=getattr(torch, DTYPE))


def randn(n: int) -> "torch.Tensor":
    return torch.randn(n).to(getattr(torch, DTYPE))


def count(s: str) -> int:
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(s[-1:].upper(), 1)
    return int(s[:-1] if scale > 1 else s) * scale


def generated_with(names: list[str], who: str) -> Optional[Path]:
    """$FIBERGEN_GENERATED (else _build/generated) if it holds the host
    kernels of names, with the binding put on sys.path; else None, having
    said what to build."""
    gen = Path(os.environ.get("FIBERGEN_GENERATED", "_build/generated"))
    if missing := [s for s in names if not (gen / s / f"{s}.so").exists()]:
        print(f"{who}: {gen} has no host kernel for {', '.join(missing)}: run 'make generate-check' "
              "(or fibergen build -o _build/generated optimizers/*.dsl), or set FIBERGEN_GENERATED", file=sys.stderr)
        return None
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
    return gen


def time_ms(fn: Callable[[], None]) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1e3


def median_ms(fn: Callable[[], None], steps: int) -> float:
    """The median of steps runs of fn, after three."""
    for _ in range(3):
        fn()
    return statistics.median(time_ms(fn) for _ in range(steps))


def interleaved(a: Callable[[], None], b: Callable[[], None], steps: int, block: int = 5) -> tuple[float, float]:
    """Medians of steps runs each of a and b, in alternating blocks of block
    runs, each block after one untimed run: the first run after the other
    side's is slower (PyTorch's OpenMP workers still spin, the caches hold
    the other's data), which a strict a-b-a-b alternation would charge to
    every run of the side that follows (dp_sgd: 20 ms against 14 ms alone)."""
    ta: list[float] = []
    tb: list[float] = []
    while len(ta) < steps:
        for fn, times in ((a, ta), (b, tb)):
            fn()
            times.extend(time_ms(fn) for _ in range(min(block, steps - len(times))))
    return statistics.median(ta), statistics.median(tb)


def fibergen_opt(gen: Path, name: str, n: int, threads: int, tensors: int = 1, secure: bool = False):
    import fibergen.torch as ft
    sizes = [n // tensors] * tensors
    sizes[-1] += n - sum(sizes)
    ps = [torch.nn.Parameter(randn(k)) for k in sizes]
    noise = {"secure": True} if secure else {"seed": 1}
    spec = gen / name if DTYPE == "float32" else name + "_bf16" * (name in BF16_SHIPPED)  # compiled for bf16
    opt = ft.Optimizer(ps, spec, threads=threads, allow_gradient_reuse=True, **noise)  # every step on one gradient
    opt.set_dp(clip=1.0, noise_multiplier=1.0, expected_batch_size=256)
    for p in ps:
        p.grad.normal_(0, 0.01)
    opt.trust_clipped_grad()  # made-up clipped means: a benchmark releases nothing
    return opt


def draw_noise(out: torch.Tensor, secure: bool) -> None:
    """The peer's N(0, 1) draw into out: torch.randn, or Opacus's secure recipe (four, summed, halved)."""
    torch.randn(out.shape, out=out)
    if secure:
        for _ in range(3):
            out.add_(torch.randn(out.shape))
        out.mul_(0.5)


def torch_optim(name: str, n: int, secure: bool) -> Callable[[], None]:
    """The peer of dp_sgd, dp_adam or dp_adamw: torch.optim on a gradient re-noised every step."""
    p = torch.nn.Parameter(randn(n))
    p.grad = randn(n) * 0.01
    cls = {"dp_sgd": lambda: torch.optim.SGD([p], lr=0.1, foreach=True),
           "dp_adam": lambda: torch.optim.Adam([p], lr=1e-3, foreach=True),
           "dp_adamw": lambda: torch.optim.AdamW([p], lr=1e-3, weight_decay=0, foreach=True)}[name]
    opt = cls()
    noisy, g0 = zeros(n), p.grad.clone()

    def step():
        draw_noise(noisy, secure)
        p.grad.copy_(g0).add_(noisy, alpha=SIGMA_W)  # the clipped mean is re-privatized every step
        opt.step()
    return step


def torch_fiber(n: int, atten: float, secure: bool) -> Callable[[], None]:
    theta, g0 = randn(n), randn(n) * 0.01
    g, gt, r, m, v, look, noise = (zeros(n) for _ in range(7))
    lr, b1, b2, eps, gamma, omega, eps_v = 1e-3, 0.9, 0.999, 1e-8, 0.7, 0.9, 1e-8
    t = [0]

    def step():
        draw_noise(noise, secure)
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


def peer(name: str, n: int, secure: bool) -> Callable[[], None]:
    if name == "fiber":
        return torch_fiber(n, (2 - 0.9) / (4 - 3 * 0.9), secure)
    return torch_optim(name, n, secure)


def python_side(gen: Path, n: int, threads: int, steps: int) -> dict:
    many = fibergen_opt(gen, "fiber", n, threads, tensors=100)
    runtime_ms = median_ms(many._groups[0].handle.step, steps)
    tiny = fibergen_opt(gen, "fiber", 400, threads, tensors=100)
    step_ms, handle_ms = interleaved(tiny.step, tiny._groups[0].handle.step, 50 * steps)
    return {"runtime_fiber_100_tensors_ms": runtime_ms, "python_side_ms": step_ms - handle_ms,
            "python_overhead": (step_ms - handle_ms) / runtime_ms}


def measure(names: list[str], n: int, threads: int, steps: int, gen: Path, secure: bool) -> dict:
    out: dict = {"n": n, "threads": threads, "steps": steps, "torch": torch.__version__, "secure": secure,
                 "dtype": DTYPE, "optimizers": {}}
    for name in names:
        fg = fibergen_opt(gen, name, n, threads, secure=secure)
        fg_ms, peer_ms = interleaved(fg.step, peer(name, n, secure), steps)
        out["optimizers"][name] = {"fibergen_ms": fg_ms, "torch_ms": peer_ms, "ratio": peer_ms / fg_ms,
                                   "host_kernel": fg._groups[0].handle.info()["host_kernel"]}
        del fg
    if DTYPE == "float32":
        out.update(python_side(gen, n, threads, steps))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--optimizers", default="dp_sgd,dp_adamw,fiber",
                    help=f"comma-separated, of {', '.join(PEERS)}")
    ap.add_argument("--n", type=count, default=16 << 20)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--secure", action="store_true", help="fibergen's secure mode against Opacus's secure recipe")
    ap.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32", help="the model's, both sides")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    global DTYPE
    DTYPE = args.dtype
    names = [s for s in args.optimizers.split(",") if s]
    if bad := [s for s in names if s not in PEERS]:
        ap.error(f"--optimizers: no PyTorch peer for {', '.join(bad)}; peers exist for {', '.join(PEERS)}")
    if args.threads < 1 or args.n < 1 or args.steps < 1:
        ap.error("--n, --threads and --steps: want whole numbers >= 1")
    if torch is None:
        print("bench_torch_cpu: skipped: PyTorch is not installed, so there is no peer to time "
              "(Debian: apt-get install python3-torch)", file=sys.stderr)
        return 0
    gen = generated_with(names, "bench_torch_cpu")
    if gen is None:
        return 2
    torch.set_num_threads(args.threads)
    r = measure(names, args.n, args.threads, args.steps, gen, args.secure)
    if args.json:
        print(json.dumps(r, indent=2))
        return 0
    mode = "  secure: fibergen's mode, Opacus's recipe" if r["secure"] else ""
    print(f"n={r['n']}  threads={r['threads']}  torch {r['torch']}  {r['dtype']}  "
          f"medians of {r['steps']} steps each, alternating blocks of 5{mode}")
    for name, x in r["optimizers"].items():
        print(f"  {name:9s} fibergen {x['fibergen_ms']:7.2f} ms ({x['host_kernel']})   "
              f"torch {x['torch_ms']:7.2f} ms   ratio {x['ratio']:.2f}x")
    if "python_side_ms" in r:
        print(f"  Python side, 100 tensors: {r['python_side_ms']:.3f} ms, "
              f"{100 * r['python_overhead']:.2f}% of the runtime's step on n coordinates")
    return 0


if __name__ == "__main__":
    sys.exit(main())
