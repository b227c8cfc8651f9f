#!/usr/bin/env python3
"""The host kernel's step from cache to memory: `fibergen bench` over sizes
and threads, as a Markdown table and a plot (docs/benchmarks.md).

Usage: python3 scripts/bench_scaling.py [--fibergen _build/fibergen] [--generated generated]
           [--optimizers fiber,dp_adamw,dp_sgd] [--n 64K,256K,1M,4M,16M,64M] [--threads 1,2]
           [--steps 20] [--plot docs/bench_scaling.png] [--json]

Every cell runs `fibergen bench GENERATED/NAME --n N --threads T --steps S
--json` (the shared objects as fibergen build made them, the best variant
the CPU runs), the optimizers one after the other within a cell, so the
step and the copy it is compared with are timed in the same minute. The
table gives the step's GB/s, the copy's and their ratio; the plot the
step's and the copy's GB/s against n, one panel per thread count.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path


def count(s: str) -> int:
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(s[-1:].upper(), 1)
    return int(s[:-1] if scale > 1 else s) * scale


def label(n: int) -> str:
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)


def bench(fibergen: str, gen: Path, name: str, n: int, threads: int, steps: int) -> dict:
    cmd = [fibergen, "bench", str(gen / name), "--n", str(n), "--threads", str(threads), "--steps", str(steps), "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"bench_scaling: {' '.join(cmd)}: {out.stderr.strip()}")
    return json.loads(out.stdout)


def table(rows: list[dict]) -> str:
    lines = ["| optimizer | kernel | n | threads | ms per step | step GB/s | copy GB/s | ratio |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['optimizer']} | {r.get('kernel', '')} | {label(r['n'])} | {r['threads']} | "
                     f"{r['ms_per_step']:.3g} | {r['gbps']:.3g} | {r['copy_gbps']:.3g} | {r['ratio']:.3f} |")
    return "\n".join(lines)


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    threads = sorted({r["threads"] for r in rows})
    fig, axes = plt.subplots(1, len(threads), figsize=(5.5 * len(threads), 4), sharey=True, squeeze=False)
    for ax, t in zip(axes[0], threads):
        cell = [r for r in rows if r["threads"] == t]
        for name in dict.fromkeys(r["optimizer"] for r in cell):
            pts = sorted((r["n"], r["gbps"], r["copy_gbps"]) for r in cell if r["optimizer"] == name)
            line, = ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=f"{name} step")
            ax.plot([p[0] for p in pts], [p[2] for p in pts], ":", color=line.get_color(), label=f"{name}'s copy")
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted({r["n"] for r in cell}), [label(n) for n in sorted({r["n"] for r in cell})])
        ax.set_xlabel("n (float32 coordinates)")
        ax.set_title(f"{t} thread{'s' if t > 1 else ''}")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("GB/s (bytes the step must move)")
    axes[0][-1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fibergen", default=shutil.which("fibergen") or "_build/fibergen")
    ap.add_argument("--generated", type=Path, default=Path("generated"))
    ap.add_argument("--optimizers", default="fiber,dp_adamw,dp_sgd")
    ap.add_argument("--n", default="64K,256K,1M,4M,16M,64M")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--plot", type=Path)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    names = [s for s in args.optimizers.split(",") if s]
    if missing := [s for s in names if not (args.generated / s / f"{s}.so").exists()]:
        print(f"bench_scaling: {args.generated} has no shared object for {', '.join(missing)}: "
              "run fibergen build (make generate) first", file=sys.stderr)
        return 2
    rows = []
    for t in (int(x) for x in args.threads.split(",")):
        for n in (count(x) for x in args.n.split(",")):
            for name in names:
                rows.append(bench(args.fibergen, args.generated, name, n, t, args.steps))
                print(f"{name} n={label(n)} threads={t}: ratio {rows[-1]['ratio']:.3f}", file=sys.stderr)
    print(json.dumps(rows, indent=2) if args.json else table(rows))
    if args.plot:
        plot(rows, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
