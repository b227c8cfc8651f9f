#!/usr/bin/env python3
"""The paper's comparison on Fashion-MNIST: tune, rerun with seeds, check the attenuation.

Usage (from the repository root; `make reproduce` runs it after building):

    python3 examples/fashion_mnist/study.py [--out docs/reproduction] [--jobs 2] [--regimes small,paper]

For each regime (REGIMES), optimizer and ε it trains one run per learning
rate of the grid with seed 0 and picks the learning rate with the best
validation accuracy, then trains seeds 1 and 2 at it; the test accuracy of
those three runs is what it reports (docs/reproduction.md). Last, the
attenuation check: two FiBeR replicas with the same initial weights and
data order and independent noise. Each run writes its JSON under
OUT/runs/; a run whose JSON exists is not run again and a killed run
resumes from its checkpoint, so a killed study picks up where it stopped.
OUT/summary.json gathers the results; plot.py draws them. Every run's noise
seed derives from its name, so the study reruns bit for bit.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import multiprocessing
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import train  # noqa: E402

MAIN = ["dp_adam", "disk", "disk_corr", "fiber"]
ABLATIONS = ["fiber_nocorr", "fiber_bccorr"]
# FiBeR with a floor that scales with the noise (issue 36): kappa_v·A·σ_w², and rho·v̂.
FLOORS = ["fiber_nfloor", "fiber_rfloor"]
FINAL_SEEDS = [1, 2, 3]  # run at the chosen rate and reported; seed 0 tunes
# One learning-rate grid for every optimizer, so that tuning favours none: wide, because the
# corrected optimizers, whose second moment can sit on its floor ε_v, want rates 10-100x smaller.
LRS = [1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2]

# The BLT noise filter `fibergen mechanism --steps 1266 --min-sep 211 --buffers 2` designs (float32;
# sensitivity 5.029, max error 0.0143 of DP-SGD's at unit sensitivity), for the "blt" regime's run.
BLT_1266_211 = {"blt_decay1": 0.935777783, "blt_decay2": 0.338997573,
                "blt_weight1": -0.0168227889, "blt_weight2": -0.460128903}
SGD_LRS, ADAM_LRS = [1e-2, 3e-2, 1e-1, 3e-1, 1.0], [1e-3, 3e-3, 1e-2, 3e-2, 1e-1]
# Optimizers of the study that are another's file at other hypers (the regime's opt_hypers).
BASE = {"dp_sgdm": "blt_sgd", "dp_adam_fixed": "blt_adam"}
# Optimizers of the study that are not shipped: .dsl files beside this script (compiled into the
# cache), whatever --generated says. The precision study's (issue 35): DP-AdamW and FiBeR with their
# states stored as bfloat16 and rounded stochastically, beside the shipped dp_adamw_bf16 and
# fiber_bf16, which round to nearest.
DSL = {o: Path(__file__).resolve().parent / "precision" / f"{o}.dsl" for o in ("dp_adamw_bf16_sr", "fiber_bf16_sr")}
# Optimizers of the study on a bfloat16 model (issue 35): the shipped bf16-state optimizer
# compiled, by name, for bfloat16 parameters, rounded to nearest or stochastically: (the
# optimizer, the model's dtype, the parameters' rounding).
MODEL = {f"{o}_model{sr}": (f"{o}_bf16", "bfloat16", rounding)
         for o in ("dp_adamw", "fiber") for sr, rounding in (("", "nearest"), ("_sr", "stochastic"))}

# Optimizers of the study that clip per layer (issue 34 item 3): the shipped optimizer and the
# clipping (train.Config.clipping), each layer to C·√(d_l/d), the noise alike in every layer or
# in proportion to each layer's norm.
CLIPPING = {f"{o}_{c}": (o, mode) for o in ("dp_adamw", "fiber")
            for c, mode in (("layer", "layer"), ("layer_prop", "layer_proportional"))}

# Each regime: its batches, epochs, the ε it runs, the optimizers and the learning-rate grid.
REGIMES: dict[str, dict[str, Any]] = {
    # Small batches, few epochs: the cheap regime, every optimizer and ε.
    "small": {"batch": 256, "epochs": 2, "evals_per_epoch": 4, "epsilons": [0.5, 1, 2, 4, 8],
              "optimizers": MAIN + ABLATIONS + FLOORS, "lrs": LRS},
    # The paper's MNIST regime (Appendix E: B in {2000, 5000}, E in {20, 40, 60}) at its
    # cheapest corner, for the four main optimizers at two ε: what two cores allow.
    # Its grid starts at 1e-4: no optimizer chose a rate below it in the small regime, whose noise
    # is larger, and these runs take minutes.
    "paper": {"batch": 2000, "epochs": 20, "evals_per_epoch": 1, "epsilons": [1, 4],
              "optimizers": MAIN + FLOORS, "lrs": LRS[2:]},
    # Closer to the paper's image runs: a larger batch and its learning-rate schedule (linear
    # warmup over 10% of the steps, then half a cosine to lr/100: fiber_cosine's, set per step for
    # every optimizer), at ε = 1, for the baseline, FiBeR and its noise floor: what two cores
    # allowed beside the rest (10 epochs, 6 rates: the schedule's peak may go above 3e-2).
    "cosine": {"batch": 4000, "epochs": 10, "evals_per_epoch": 1, "epsilons": [1], "warmup_cosine": 0.1,
               "optimizers": ["dp_adam", "fiber", "fiber_nfloor"], "lrs": LRS[3:] + [0.1]},
    # The floor ε_v (default 1e-8) raised, for the corrected optimizers at ε = 1 in the small
    # regime: does the floor explain what the correction does there?
    **{name: {"batch": 256, "epochs": 2, "evals_per_epoch": 4, "epsilons": [1], "hypers": {"eps_v": v},
                       "optimizers": ["disk_corr", "fiber"], "lrs": LRS} for name, v in (("floor_1e-6", 1e-6), ("floor_1e-4", 1e-4))},
    # Schedule-Free AdamW (evaluated at its average x) against DP-AdamW, in the small regime at
    # two ε: does averaging the noisy iterates pay under DP?
    "schedule_free": {"batch": 256, "epochs": 2, "evals_per_epoch": 4, "epsilons": [1, 4],
                      "optimizers": ["dp_adamw", "schedule_free"], "lrs": LRS, "eval_state": {"schedule_free": "x"}},
    # The same in the paper's regime: a longer run, where an average has more steps to pay.
    "schedule_free_paper": {"batch": 2000, "epochs": 20, "evals_per_epoch": 1, "epsilons": [1, 4],
                            "optimizers": ["dp_adamw", "schedule_free"], "lrs": LRS[2:],
                            "eval_state": {"schedule_free": "x"}},
    # Correlated noise (issue 33): fixed batches in the same order every epoch ("cyclic": an example
    # once every 211 steps, 6 times), where DP-SGD with momentum and DP-Adam run with independent
    # noise and with the BLT noise filter `fibergen mechanism --steps 1266 --min-sep 211 --buffers 2`
    # designs for this run, at equal ε. Each pair is one optimizer file (BASE), its independent twin
    # the BLT with its weights at 0 (w = z), so that the noise is all that differs. The accountant
    # is cyclic sampling's exact Gaussian mechanism (PLD), for both. A grid of five rates per family
    # (SGD's momentum 0.9 takes rates 10x Adam's).
    "blt": {"batch": 256, "epochs": 6, "evals_per_epoch": 1, "epsilons": [1, 4], "sampling": "cyclic",
            "accountant": "pld", "optimizers": ["dp_sgdm", "blt_sgd", "dp_adam_fixed", "blt_adam"],
            "lrs": {"dp_sgdm": SGD_LRS, "blt_sgd": SGD_LRS, "dp_adam_fixed": ADAM_LRS, "blt_adam": ADAM_LRS},
            "opt_hypers": {"dp_sgdm": {"blt_weight1": 0.0, "blt_weight2": 0.0},
                           "dp_adam_fixed": {"blt_weight1": 0.0, "blt_weight2": 0.0},
                           **{o: BLT_1266_211 for o in ("blt_sgd", "blt_adam")}}},
    # bf16 states (issue 35): DP-AdamW and FiBeR with float32 states, and with bfloat16 ones rounded
    # to nearest and stochastically, in the small regime at two ε: what precision costs in accuracy.
    "precision": {"batch": 256, "epochs": 2, "evals_per_epoch": 4, "epsilons": [1, 4],
                  "optimizers": ["dp_adamw", "dp_adamw_bf16", "dp_adamw_bf16_sr", "fiber", "fiber_bf16", "fiber_bf16_sr"],
                  "lrs": LRS},
    # A bfloat16 model (issue 35): the parameters, the per-example gradients and the states
    # bfloat16, the parameters rounded to nearest and stochastically, against float32 throughout.
    "precision_model": {"batch": 256, "epochs": 2, "evals_per_epoch": 4, "epsilons": [1, 4],
                        "optimizers": ["dp_adamw", "dp_adamw_model", "dp_adamw_model_sr",
                                       "fiber", "fiber_model", "fiber_model_sr"], "lrs": LRS},
    # Per-layer clipping (issue 34 item 3): DP-AdamW and FiBeR clipping each example over all the
    # parameters, and per layer with the same total sensitivity, the noise alike in every layer or
    # in proportion to each layer's norm, in the small regime at two ε.
    "per_layer": {"batch": 256, "epochs": 2, "evals_per_epoch": 4, "epsilons": [1, 4],
                  "optimizers": ["dp_adamw", "dp_adamw_layer", "dp_adamw_layer_prop",
                                 "fiber", "fiber_layer", "fiber_layer_prop"], "lrs": LRS},
    # The CI smoke run: a subset, one epoch, two optimizers.
    "smoke": {"batch": 128, "epochs": 1, "evals_per_epoch": 2, "epsilons": [2], "train_subset": 6000,
              "optimizers": ["dp_adam", "fiber"], "lrs": [1e-4, 3e-3], "seeds": [1, 2]},
}

_splits: dict[int, Any] = {}


def noise_seed(name: str) -> int:
    """A fixed noise seed per run, from its name: the study reruns bit for bit."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "little")


def run_name(regime: str, opt: str, eps: float, lr: float, seed: int) -> str:
    return f"{regime}/{opt}/eps{eps:g}_lr{lr:g}_seed{seed}"


# The study calibrates σ by RDP, the only accountant fibergen had when it
# ran; PLD would ask for less noise at each ε (docs/reproduction.md).
ACCOUNTANT = "rdp"


def config(regime: str, opt: str, eps: float, lr: float, seed: int, dirs: dict[str, Path]) -> train.Config:
    r = REGIMES[regime]
    hypers = {**r.get("hypers", {}), **r.get("opt_hypers", {}).get(opt, {})}
    _, dtype, rounding = MODEL.get(opt, (opt, "float32", "nearest"))
    _, clipping = CLIPPING.get(opt, (opt, "flat"))
    return train.Config(optimizer=str(dirs[opt]), dtype=dtype, param_rounding=rounding, clipping=clipping, epsilon=eps, epochs=r["epochs"], batch=r["batch"], lr=lr,
                        seed=seed, noise_seed=noise_seed(run_name(regime, opt, eps, lr, seed)), hypers=hypers,
                        train_subset=r.get("train_subset", 0), evals_per_epoch=r["evals_per_epoch"], threads=1,
                        accountant=r.get("accountant", ACCOUNTANT), warmup_cosine=r.get("warmup_cosine", 0.0),
                        eval_state=r.get("eval_state", {}).get(opt, ""), sampling=r.get("sampling", "fixed"))


def worker(job: tuple[str, train.Config, Path]) -> tuple[str, dict]:
    """Runs one job in a pool process (the splits loaded once per process)."""
    name, cfg, out = job
    if cfg.train_subset not in _splits:
        _splits[cfg.train_subset] = train.load_splits(cfg.train_subset)
    ident = multiprocessing.current_process()._identity
    out.parent.mkdir(parents=True, exist_ok=True)
    return name, train.run(cfg, out, _splits[cfg.train_subset], position=ident[0] if ident else 0)


Job = tuple[str, train.Config, Path]


def run_all(jobs: list[Job], n: int) -> dict[str, dict]:
    """Runs the jobs whose JSON is missing, n at a time; every job's result."""
    done = {name: finished(name, cfg, out) for name, cfg, out in jobs if out.exists()}
    todo = [j for j in jobs if j[0] not in done]
    print(f"study: {len(jobs)} runs, {len(done)} done, {len(todo)} to run", flush=True)
    if todo:
        with multiprocessing.get_context("spawn").Pool(n) as pool:
            for name, res in pool.imap_unordered(worker, todo):
                done[name] = res
                print(f"study: {len(done)}/{len(jobs)} {name}: val {res['val_acc']:.4f} "
                      f"test {res['test_acc']:.4f} ({res['wall_s']:.0f} s)", flush=True)
    return done


def finished(name: str, cfg: train.Config, out: Path) -> dict:
    """The result of a run done before, which must be of the same settings;
    a checkpoint left beside it (killed between the two writes) goes."""
    res = json.loads(out.read_text())
    # Results from before PLD are RDP's, from before schedules at a constant rate, and from
    # before eval_state evaluated at theta, and from before dtype of a float32 model rounded to nearest.
    if {"accountant": "rdp", "warmup_cosine": 0.0, "eval_state": "", "sampling": "fixed", "dtype": "float32",
            "param_rounding": "nearest", "clipping": "flat", **res["config"]} != dataclasses.asdict(cfg):
        raise SystemExit(f"study.py: {out} is of other settings than run {name} has now ({res['config']}); "
                         "remove it to run it again")
    out.with_name(out.name + ".ckpt").unlink(missing_ok=True)
    return res


def jobs(regimes: list[str], out: Path, dirs: dict[str, Path], settings: Any) -> list[Job]:
    """A job for each regime, ε, optimizer and (learning rate, seed) of settings(regime, opt, ε)."""
    js = []
    for reg in regimes:
        for eps in REGIMES[reg]["epsilons"]:
            for opt in REGIMES[reg]["optimizers"]:
                for lr, seed in settings(reg, opt, eps):
                    name = run_name(reg, opt, eps, lr, seed)
                    js.append((name, config(reg, opt, eps, lr, seed, dirs), out / "runs" / f"{name}.json"))
    return js


def grid(reg: str, opt: str, eps: float) -> list[tuple[float, int]]:
    """The tuning runs: every learning rate of the regime's grid, seed 0."""
    return [(lr, 0) for lr in lrs(reg, opt)]


def lrs(reg: str, opt: str) -> list[float]:
    """The learning-rate grid of an optimizer in a regime: the regime's, or its own there."""
    g = REGIMES[reg]["lrs"]
    return g[opt] if isinstance(g, dict) else g


def seeds(reg: str) -> list[int]:
    return REGIMES[reg].get("seeds", FINAL_SEEDS)


def choose(results: dict[str, dict], reg: str, opt: str, eps: float) -> float:
    """The learning rate of the grid with the best validation accuracy among
    the runs that did not diverge (ties: the smaller rate)."""
    def key(lr: float) -> tuple:
        r = results[run_name(reg, opt, eps, lr, 0)]
        return r["diverged"] is None, r["val_acc"], -lr
    return max(lrs(reg, opt), key=key)


def summarize(regimes: list[str], results: dict[str, dict]) -> dict:
    """Per regime, optimizer and ε: the grid's validation accuracies, the
    chosen learning rate and the test accuracies of the fresh seeds run at
    it (not the tuning run's), with a 95% interval."""
    out: dict[str, Any] = {}
    for reg in regimes:
        for eps in REGIMES[reg]["epsilons"]:
            for opt in REGIMES[reg]["optimizers"]:
                lr = choose(results, reg, opt, eps)
                names = [run_name(reg, opt, eps, lr, s) for s in seeds(reg)]
                runs = [results[n] for n in names]
                out.setdefault(reg, {}).setdefault(opt, {})[f"{eps:g}"] = {
                    "lr": lr, "grid_val_acc": {f"{g:g}": results[run_name(reg, opt, eps, g, 0)]["val_acc"]
                                               for g in lrs(reg, opt)},
                    "test_acc": [x["test_acc"] for x in runs], **interval([x["test_acc"] for x in runs]),
                    "diverged": [x["diverged"] for x in runs], "sigma": runs[0]["sigma"],
                    "delta": runs[0]["delta"], "steps": runs[0]["steps"], "clamp_mass": mean_clamp(runs),
                    "runs": names}
    return out


# Student's t, its 97.5% quantile by degrees of freedom.
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228}


def interval(xs: list[float]) -> dict[str, Any]:
    """The mean and the half-width of its 95% confidence interval (Student's t)."""
    if len(xs) < 2:
        return {"mean": statistics.fmean(xs), "ci95": None}
    return {"mean": statistics.fmean(xs), "ci95": T975[len(xs) - 1] * statistics.stdev(xs) / len(xs) ** 0.5}


def mean_clamp(runs: list[dict]) -> Any:
    """clamp_mass averaged over each run's steps and over the runs; None where not declared."""
    per = [[p["clamp_mass"] for p in r["history"] if p["clamp_mass"] is not None] for r in runs]
    if not all(per):
        return None
    return sum(sum(p) / len(p) for p in per) / len(per)


def attenuation_check(out: Path, dirs: dict[str, Path], lr: float, regime: str, eps: float,
                      projections: int = 256) -> dict:
    """The paper's Section 6 check on FiBeR in a regime at ε (the study: small, 1):
    two replicas with the same initial weights and data order and
    independent noise. Per step, with Δ the difference between the
    replicas and u fixed random unit vectors, ρ_t = Var_u(uᵀΔg̃_t) /
    Var_u(uᵀΔg_t) (g̃ is the state gt) and noise_ratio_t =
    Var_u(uᵀΔg_t)/(2σ_w²) (near 1 where Δg is the noise), next to the
    runtime's derived A(ω) and finite-time A_t."""
    cfg = config(regime, "fiber", eps, lr, 0, dirs)
    splits = train.load_splits(cfg.train_subset)
    torch.set_num_threads(1)
    reps = [train.Run(dataclasses.replace(cfg, noise_seed=noise_seed(f"attenuation/{i}")), splits) for i in range(2)]
    omega, sigma_w2 = reps[0].opt.param_groups[0]["omega"], reps[0].opt.sigma_w2
    u = torch.randn(projections, reps[0].opt.numel, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    u /= u.norm(dim=1, keepdim=True)
    rows, proj = [], []
    while reps[0].step < reps[0].steps:
        g, gt = zip(*(filtered_step(r, omega) for r in reps))
        dg, dgt = u @ (g[0] - g[1]), u @ (gt[0] - gt[1])
        att = reps[0].opt.attenuations()["gt"]
        rows.append({"step": reps[0].step, "rho": (dgt.var() / dg.var()).item(),
                     "noise_ratio": (dg.var() / (2 * sigma_w2)).item(), "finite": att["finite"],
                     "steady": att["steady"]})
        proj = (proj + [(dg, dgt)])[-200:]
    per_proj = sum(d[1] ** 2 for d in proj) / sum(d[0] ** 2 for d in proj)
    res = {"optimizer": "fiber", "regime": regime, "lr": lr, "epsilon": eps, "omega": omega, "sigma_w2": sigma_w2,
           "projections": projections, "steps": rows, "last200_per_projection": per_proj.tolist()}
    train.write_json(out / "attenuation.json", res)
    return res


def filtered_step(r: train.Run, omega: float) -> tuple[torch.Tensor, torch.Tensor]:
    """One step of run r: the privatized gradient g_t it took and the
    filtered one gt_t, in float64. The noise is drawn inside the kernel, so
    g_t is recovered from fiber's states (r_t = (1−ω)·r_{t−1} + ω·(g_t −
    gt_{t−1})): g_t = gt_{t−1} + (r_t − (1−ω)·r_{t−1})/ω."""
    before = fiber_states(r)
    r.advance()
    after = fiber_states(r)
    g = before["gt"] + (after["r"] - (1 - omega) * before["r"]) / omega
    return g, after["gt"]


def fiber_states(r: train.Run) -> dict[str, torch.Tensor]:
    st = r.opt.state_dict()["state"][0]
    return {k: st[k].to(torch.float64) for k in ("gt", "r")}


def parse_args() -> tuple[argparse.Namespace, list[str], dict[str, Path]]:
    """The flags, the regimes and each optimizer (its directory, or its name); exits 2 on a bad flag."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("docs/reproduction"))
    ap.add_argument("--generated", type=Path, default=None,
                    help="where fibergen build wrote the optimizers (default: the shipped ones by name, compiled once "
                         "into the per-user cache)")
    ap.add_argument("--also", action="append", default=[], metavar="DIR",
                    help="another optimizer directory (fibergen build -o DIR your.dsl) to join every regime")
    ap.add_argument("--jobs", type=int, default=2, help="runs at once (one thread each)")
    ap.add_argument("--regimes", default="small,paper,cosine,floor_1e-6,floor_1e-4,schedule_free,schedule_free_paper,blt,precision,precision_model,per_layer",
                    help=f"comma-separated, of {', '.join(REGIMES)}")
    args = ap.parse_args()
    regimes = args.regimes.split(",")
    if bad := [r for r in regimes if r not in REGIMES]:
        ap.exit(2, f"study.py: --regimes: no regime {', '.join(bad)} (the regimes: {', '.join(REGIMES)})\n")
    base = {**BASE, **{o: b for o, (b, _) in CLIPPING.items()}}
    dirs = {o: DSL[o] if o in DSL else Path(MODEL[o][0]) if o in MODEL else
            args.generated / base.get(o, o) if args.generated else Path(base.get(o, o))
            for r in regimes for o in REGIMES[r]["optimizers"]}
    for d in map(Path, args.also):
        if d.name in dirs:
            ap.exit(2, f"study.py: --also {d}: the study has an optimizer {d.name} already: rename the directory\n")
        dirs[d.name] = d
        for r in regimes:
            REGIMES[r]["optimizers"] = REGIMES[r]["optimizers"] + [d.name]
    for o, d in dirs.items():
        if (args.generated or str(d) in args.also) and not d.is_dir() and d.suffix != ".dsl" and o not in MODEL:
            flag = "--also" if str(d) in args.also else "--generated"
            ap.exit(2, f"study.py: {flag}: no directory {d}: run make generate (or fibergen build -o)\n")
    return args, regimes, dirs


def main() -> int:
    args, regimes, dirs = parse_args()
    start = time.time()
    tuned = run_all(jobs(regimes, args.out, dirs, grid), args.jobs)
    final = jobs(regimes, args.out, dirs, lambda reg, opt, eps: [(choose(tuned, reg, opt, eps), s) for s in seeds(reg)])
    summary = summarize(regimes, {**tuned, **run_all(final, args.jobs)})
    train.write_json(args.out / "summary.json", {"regimes": {r: {**REGIMES[r], "seeds": seeds(r)} for r in regimes},
                                                  "results": summary})
    reg = next((r for r in ("small", "smoke") if r in regimes), None)
    if reg and not (args.out / "attenuation.json").exists():
        eps = 1 if reg == "small" else REGIMES[reg]["epsilons"][0]
        att = attenuation_check(args.out, dirs, summary[reg]["fiber"][f"{eps:g}"]["lr"], reg, eps)
        tail = att["steps"][-200:]
        print(f"study: attenuation check: mean ρ over the last {len(tail)} steps "
              f"{statistics.fmean(x['rho'] for x in tail):.4f}, A(ω) = {tail[-1]['steady']:.4f}")
    print(f"study: done in {time.time() - start:.0f} s this time; {args.out / 'summary.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
