#!/usr/bin/env python3
"""Draws the study's figures and tables from what study.py wrote.

Usage: python3 examples/fashion_mnist/plot.py [--out docs/reproduction]

Reads OUT/summary.json, the runs under OUT/runs/ and OUT/attenuation.json;
writes per regime accuracy_<regime>.png (test accuracy vs ε, mean and 95%
interval over the seeds), curves_<regime>.png (test accuracy over training
at ε = 1), clamp_mass_<regime>.png (the corrected optimizers, where a regime has one), then
attenuation.png and OUT/tables.md (the numbers behind the figures).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

LABELS = {"dp_adam": "DP-Adam", "disk": "DiSK", "disk_corr": "DiSK-CORR", "fiber": "FiBeR",
          "fiber_nocorr": "FiBeR-NO-CORR (A = 0)", "fiber_bccorr": "FiBeR-BC-CORR (A = 1)",
          "fiber_nfloor": "FiBeR, noise floor (κ_v = 1)", "fiber_rfloor": "FiBeR, relative floor (ρ = 0.25)",
          "dp_adamw": "DP-AdamW", "dp_adamw_bf16": "DP-AdamW, bf16 states", "dp_adamw_bf16_sr": "DP-AdamW, bf16 states, stochastic",
          "fiber_bf16": "FiBeR, bf16 states", "fiber_bf16_sr": "FiBeR, bf16 states, stochastic", "schedule_free": "Schedule-Free AdamW (at x)",
          "dp_sgdm": "DP-SGD, momentum 0.9", "blt_sgd": "BLT DP-SGD, momentum 0.9",
          "dp_adam_fixed": "DP-Adam (independent noise)", "blt_adam": "BLT DP-Adam",
          "dp_adamw_model": "DP-AdamW, bf16 model and states", "dp_adamw_model_sr": "DP-AdamW, bf16 model (stochastic) and states",
          "fiber_model": "FiBeR, bf16 model and states", "fiber_model_sr": "FiBeR, bf16 model (stochastic) and states",
          "dp_adamw_layer": "DP-AdamW, per-layer clipping", "dp_adamw_layer_prop": "DP-AdamW, per-layer, proportional noise",
          "fiber_layer": "FiBeR, per-layer clipping", "fiber_layer_prop": "FiBeR, per-layer, proportional noise"}


def label(opt: str) -> str:
    return LABELS.get(opt, opt)


def style(opt: str) -> dict[str, Any]:
    """The line's label and colour: one colour per optimizer in every figure."""
    names = list(LABELS)
    i = names.index(opt) if opt in names else len(names) + sum(map(ord, opt)) % 4
    return {"label": label(opt), "color": plt.get_cmap("tab10")(i % 10)}


def epsilon_axis(ax: Any, eps: list[str]) -> None:
    """A log ε axis with a tick at each ε of the study."""
    ax.set(xscale="log", xlabel="ε")
    ax.set_xticks([float(e) for e in eps])
    ax.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
    ax.get_xaxis().set_minor_formatter(matplotlib.ticker.NullFormatter())


def load_run(out: Path, name: str) -> dict:
    return json.loads((out / "runs" / f"{name}.json").read_text())


def accuracy_plot(out: Path, regime: str, res: dict) -> Path:
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for opt, cells in res.items():
        eps = sorted(cells, key=float)
        mean = [cells[e]["mean"] * 100 for e in eps]
        ci = [(cells[e]["ci95"] or 0) * 100 for e in eps]
        ax.errorbar([float(e) for e in eps], mean, yerr=ci, marker="o", capsize=3, **style(opt))
    ax.set(ylabel="test accuracy (%)", title=f"Fashion-MNIST, {regime} regime: mean and 95% CI over seeds")
    epsilon_axis(ax, sorted(next(iter(res.values())), key=float))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return save(fig, out / f"accuracy_{regime}.png")


def curves(out: Path, res: dict, eps: str, key: str) -> dict[str, tuple[list[float], list[float]]]:
    """Per optimizer, the mean over seeds of history[key] against the epoch, at ε."""
    lines = {}
    for opt, cells in res.items():
        if eps not in cells:
            continue
        runs = [load_run(out, n)["history"] for n in cells[eps]["runs"]]
        n = min(len(h) for h in runs)
        if any(h[i][key] is None for h in runs for i in range(n)):
            continue
        lines[opt] = ([runs[0][i]["epoch"] for i in range(n)], [sum(h[i][key] for h in runs) / len(runs)
                                                                for i in range(n)])
    return lines


def curves_plot(out: Path, regime: str, res: dict, eps: str) -> Path:
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for opt, (x, y) in curves(out, res, eps, "test_acc").items():
        ax.plot(x, [v * 100 for v in y], marker=".", **style(opt))
    ax.set(xlabel="epoch", ylabel="test accuracy (%)",
           title=f"Learning curves at ε = {eps}, {regime} regime (mean over seeds)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return save(fig, out / f"curves_{regime}.png")


def clamp_plot(out: Path, regime: str, res: dict, eps: str) -> Path:
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    for opt, (x, y) in curves(out, res, eps, "clamp_mass").items():
        a.plot(x, y, marker=".", **style(opt))
    a.set(xlabel="epoch", ylabel="clamp_mass", ylim=(0, 1), title=f"clamp_mass over training, ε = {eps}")
    for opt, cells in res.items():
        eps_all = sorted((e for e in cells if cells[e]["clamp_mass"] is not None), key=float)
        if eps_all:
            b.plot([float(e) for e in eps_all], [cells[e]["clamp_mass"] for e in eps_all], marker="o", **style(opt))
    b.set(ylabel="mean clamp_mass", ylim=(0, 1), title="at each ε's chosen learning rate")
    epsilon_axis(b, sorted(next(iter(res.values())), key=float))
    for ax in (a, b):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"{regime} regime: the share of |m̂| on coordinates whose corrected v sits on the floor ε_v")
    return save(fig, out / f"clamp_mass_{regime}.png")


def attenuation_plot(out: Path, att: dict) -> Path:
    fig, (a, b) = plt.subplots(2, 1, figsize=(6.4, 6.4))
    steps = att["steps"]
    x = [s["step"] for s in steps]
    a.plot(x, [s["rho"] for s in steps], lw=0.8, label="ρ_t measured")
    a.plot(x, [s["finite"] for s in steps], "--", label="A_t (finite-time, fibergen)")
    a.axhline(steps[-1]["steady"], color="k", lw=1, label=f"A(ω) = {steps[-1]['steady']:.4f} (fibergen)")
    a.plot(x, [s["noise_ratio"] for s in steps], lw=0.5, alpha=0.6, label="Var(uᵀΔg)/(2σ_w²)")
    a.set(xlabel="step", ylabel="ratio", title=f"FiBeR, ω = {att['omega']}, two replicas, "
                                                f"{att['projections']} projections")
    a.grid(alpha=0.3)
    a.legend(fontsize=8)
    b.hist(att["last200_per_projection"], bins=30)
    b.axvline(steps[-1]["steady"], color="k")
    b.set(xlabel="per-projection ratio over the last 200 steps", ylabel="projections")
    return save(fig, out / "attenuation.png")


def save(fig: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def tables(summary: dict, att: dict | None) -> str:
    """The numbers behind the figures, as markdown."""
    lines = []
    for regime, res in summary["results"].items():
        r = summary["regimes"][regime]
        eps = sorted(next(iter(res.values())), key=float)
        sched = f", linear warmup over {r['warmup_cosine']:.0%} of the steps then cosine to lr/100" \
            if r.get("warmup_cosine") else ""
        lines += [f"### {regime} regime: B = {r['batch']}, {r['epochs']} epochs{sched}", "",
                  "Test accuracy (%) at the end of training, mean ± 95% CI half-width over the seeds "
                  f"{', '.join(map(str, r['seeds']))}, at the learning rate chosen on the validation "
                  "split (in parentheses); † a chosen rate at the edge of the grid; ‡ a run diverged.", "",
                  "| optimizer | " + " | ".join(f"ε = {e}" for e in eps) + " |",
                  "|---|" + "---|" * len(eps)]
        for opt, cells in res.items():
            lines.append(f"| {label(opt)} | " + " | ".join(cell(cells[e]) for e in eps) + " |")
        clamped = [(opt, cells) for opt, cells in res.items() if any(cells[e]["clamp_mass"] is not None for e in eps)]
        if clamped:  # none where no optimizer declares clamp_mass
            lines += ["", "Mean clamp_mass over training at the chosen rate:", "",
                      "| optimizer | " + " | ".join(f"ε = {e}" for e in eps) + " |", "|---|" + "---|" * len(eps)]
        for opt, cells in clamped:
            lines.append(f"| {label(opt)} | " + " | ".join(
                "–" if cells[e]["clamp_mass"] is None else f"{cells[e]['clamp_mass']:.3f}" for e in eps) + " |")
        lines.append("")
    if att:
        tail = att["steps"][-200:]
        lines.append(f"Attenuation check: mean ρ_t over the last {len(tail)} steps "
                     f"{sum(s['rho'] for s in tail) / len(tail):.4f}, mean Var(uᵀΔg)/(2σ_w²) "
                     f"{sum(s['noise_ratio'] for s in tail) / len(tail):.4f}, "
                     f"A(ω) = {tail[-1]['steady']:.4f}.")
    return "\n".join(lines) + "\n"


def cell(c: dict) -> str:
    """A table's cell: the mean, its interval, the chosen rate, and marks (the grid is the cell's own)."""
    grid = [float(g) for g in c["grid_val_acc"]]
    ci = f" ± {c['ci95'] * 100:.1f}" if c["ci95"] is not None else ""
    mark = ("†" if c["lr"] in (min(grid), max(grid)) else "") + ("‡" if any(c["diverged"]) else "")
    return f"{c['mean'] * 100:.1f}{ci} ({c['lr']:g}){mark}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("docs/reproduction"))
    args = ap.parse_args()
    if not (args.out / "summary.json").exists():
        print(f"plot.py: --out: no {args.out / 'summary.json'}: run study.py first", file=sys.stderr)
        return 2
    summary = json.loads((args.out / "summary.json").read_text())
    made = []
    for regime, res in summary["results"].items():
        eps = "1" if all("1" in c for c in res.values()) else sorted(next(iter(res.values())), key=float)[0]
        made += [accuracy_plot(args.out, regime, res), curves_plot(args.out, regime, res, eps)]
        if any(c["clamp_mass"] is not None for cells in res.values() for c in cells.values()):
            made.append(clamp_plot(args.out, regime, res, eps))  # none where no optimizer declares it
    att = None
    if (args.out / "attenuation.json").exists():
        att = json.loads((args.out / "attenuation.json").read_text())
        made.append(attenuation_plot(args.out, att))
    (args.out / "tables.md").write_text(tables(summary, att))
    print("plot.py: wrote " + ", ".join(str(p) for p in made) + f", {args.out / 'tables.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
