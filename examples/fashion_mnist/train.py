#!/usr/bin/env python3
"""DP training of a small CNN on Fashion-MNIST with any fibergen optimizer.

Usage (after `make python-lib`, from any directory):

    python3 examples/fashion_mnist/train.py --optimizer fiber --epsilon 1 --epochs 3 --out run.json

--optimizer names a shipped optimizer (fiber, dp_adamw, ...), a .dsl file of
your own or a directory fibergen build wrote; a source is compiled once into
the per-user cache on its first use.

It reads Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist;
apt-get install dataset-fashion-mnist) and carves a validation split from the
training set (always the same 6,000 images, whatever the seed). Each step
draws a batch of exactly B examples without replacement, afresh (the
`fixed` sampling of fibergen's accountant, replace-one adjacency, δ = 1/N^1.1);
with --sampling cyclic the training set is shuffled once (by --seed) into
fixed batches that every epoch takes in the same order (fibergen's
CyclicBatchSampler: no amplification by sampling, each example once an
epoch, the only sampling a correlated-noise optimizer such as blt_sgd
takes). It then computes per-example gradients with torch.func/functorch — for a two_point
optimizer such as FiBeR also at the look-ahead point — and lets the optimizer
clip, average, noise (σ calibrated to ε by fibergen's accountant) and step.

Progress: a bar per run (tqdm, on a terminal) with step, loss, ε spent and
the last validation accuracy; one line per evaluation (--evals-per-epoch,
one per epoch by default). The run's result — its settings, σ, the learning
curve on the validation and test splits, clamp_mass for the optimizers that
declare it — goes to --out as JSON. With --out, the run also keeps a
checkpoint beside it (<out>.ckpt, readable by its owner only: it holds the
noise seed) at every evaluation and, started again, resumes from it: a
killed run picks up where it stopped, bit for bit (the steps after the last
checkpoint are recomputed with the same noise on the same batches, which
releases nothing new). The training loss and accuracies it prints are not
privatized: they are for the researcher, as in every DP study.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gzip
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any, BinaryIO, Callable, Optional

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
import fibergen.privacy  # noqa: E402
import fibergen.torch as ft  # noqa: E402

DATA = Path("/usr/share/datasets/fashion-mnist")
VAL_SIZE = 6000  # the validation split carved from the 60,000 training images
SPLIT_SEED = 20261125  # fixes which images are the validation split, apart from every run's seed


@dataclasses.dataclass
class Config:
    """One training run."""
    optimizer: str = "fiber"  # a shipped optimizer's name, a .dsl file, or a directory fibergen build wrote
    epsilon: float = 1.0
    epochs: float = 3.0
    batch: int = 256
    lr: float = 1e-3
    clip: float = 1.0
    seed: int = 0  # initial weights and data order
    noise_seed: Optional[int] = None  # None: a secret one from the OS (a study fixes it to be rerunnable)
    hypers: dict[str, float] = dataclasses.field(default_factory=dict)  # the optimizer's other hypers
    train_subset: int = 0  # train on the first k training images only (0: all); for smoke tests
    evals_per_epoch: int = 1
    threads: int = 1
    accountant: str = "pld"  # fibergen's accountant that calibrates σ: "pld" or "rdp"
    sampling: str = "fixed"  # "fixed": B without replacement, afresh each step; "cyclic": fixed batches, every epoch alike
    # 0: a constant learning rate; w > 0: linear warmup over the share w of the steps, then half a
    # cosine down to lr / 100 at the last step (fiber_cosine's schedule, set before each step).
    warmup_cosine: float = 0.0
    # The optimizer's state the model is evaluated at ("x": Schedule-Free's average); "": theta.
    eval_state: str = ""
    # The model's dtype ("float32" or "bfloat16": the images are cast to it, the optimizer compiled
    # for it), and how the optimizer rounds the parameters' stores ("nearest" or "stochastic").
    dtype: str = "float32"
    param_rounding: str = "nearest"
    # "flat": every example clipped to C over all the parameters; "layer": each layer's parameters
    # to C·√(d_l/d) (d_l its parameters, d the model's: √Σ C_l² = C), the noise σ·C/B on every
    # coordinate; "layer_proportional": the same clipping, layer l's noise σ·√L·C_l/B.
    clipping: str = "flat"


Split = tuple[torch.Tensor, torch.Tensor]


def load_idx(kind: str) -> Split:
    """The images (float32 in [0, 1], [N, 1, 28, 28]) and labels of train or t10k."""
    with gzip.open(DATA / f"{kind}-images-idx3-ubyte.gz") as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 1, 28, 28)
    with gzip.open(DATA / f"{kind}-labels-idx1-ubyte.gz") as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8)
    return torch.from_numpy(x.astype(np.float32) / 255.0), torch.from_numpy(y.astype(np.int64))


def load_splits(train_subset: int = 0) -> tuple[Split, Split, Split]:
    """Train, validation and test splits: the validation split is VAL_SIZE
    training images chosen by SPLIT_SEED, the test split is t10k."""
    x, y = load_idx("train")
    perm = torch.randperm(len(x), generator=torch.Generator().manual_seed(SPLIT_SEED))
    val, train = perm[:VAL_SIZE], perm[VAL_SIZE:]
    if train_subset:
        train = train[:train_subset]
    return (x[train], y[train]), (x[val], y[val]), load_idx("t10k")


def cnn() -> torch.nn.Module:
    """A small tanh CNN in the spirit of the paper's CNN5, sized for two CPU
    cores: two strided convolutions and a linear layer, 6k parameters."""
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 8, 5, stride=2), torch.nn.Tanh(),
        torch.nn.Conv2d(8, 16, 5, stride=2), torch.nn.Tanh(), torch.nn.Flatten(),
        torch.nn.Linear(16 * 4 * 4, 10))


def layer_clipping(model: torch.nn.Module, clip: float, clipping: str) -> tuple[list[dict], Any]:
    """The parameter groups and the clipping norm of a clipping mode: one
    group and C ("flat"), or a group a layer and the norms C·√(d_l/d)."""
    if clipping == "flat":
        return [{"params": list(model.parameters())}], clip
    if clipping not in ("layer", "layer_proportional"):
        raise ValueError(f"clipping {clipping!r}: want flat, layer or layer_proportional")
    layers = [list(m.parameters(recurse=False)) for m in model.modules()]
    groups = [{"params": ps} for ps in layers if ps]
    sizes = [sum(p.numel() for p in g["params"]) for g in groups]
    return groups, [clip * math.sqrt(d / sum(sizes)) for d in sizes]


def accuracy(model: torch.nn.Module, split: Split) -> float:
    x, y = split
    dtype = next(model.parameters()).dtype
    with torch.no_grad():
        right = sum((model(x[i:i + 5000].to(dtype)).argmax(1) == y[i:i + 5000]).sum().item()
                    for i in range(0, len(x), 5000))
    return right / len(x)


def cosine_factor(t: int, steps: int, warmup: float) -> float:
    """fiber_cosine's schedule as a factor of the peak rate at step t:
    lr_min/lr + (1 − lr_min/lr)·min((t+1)/W, 1)·(1 + cos(π p))/2 with
    lr_min = lr/100, W = max(1, round(warmup·steps)) and
    p = min(max(t+1 − W, 0)/max(steps − W, 1), 1)."""
    w = max(1, round(warmup * steps))
    p = min(max(t + 1 - w, 0) / max(steps - w, 1), 1)
    return 0.01 + 0.99 * min((t + 1) / w, 1) * (1 + math.cos(math.pi * p)) / 2


class Run:
    """A training run: the model, the optimizer under its privacy budget, the
    data order, and what it has measured so far."""

    def __init__(self, cfg: Config, splits: tuple[Split, Split, Split]):
        self.cfg, (self.train, self.val, self.test) = cfg, splits
        torch.manual_seed(cfg.seed)
        self.model = cnn().to(getattr(torch, cfg.dtype))
        groups, clip = layer_clipping(self.model, cfg.clip, cfg.clipping)
        self.opt = ft.Optimizer(groups, cfg.optimizer, lr=cfg.lr, seed=cfg.noise_seed,
                                threads=cfg.threads, param_rounding=cfg.param_rounding, **cfg.hypers)
        n = len(self.train[0])
        self.sigma = self.opt.set_budget(cfg.epsilon, clip=clip, dataset_size=n, batch_size=cfg.batch,
                                         epochs=cfg.epochs, sampling=cfg.sampling, accountant=cfg.accountant,
                                         proportional_noise=cfg.clipping == "layer_proportional")
        self.steps = fibergen.privacy.epsilon(self.sigma, dataset_size=n, batch_size=cfg.batch, epochs=cfg.epochs,
                                              sampling=cfg.sampling, accountant=cfg.accountant).steps
        self.batches = list(ft.CyclicBatchSampler(n, cfg.batch, torch.Generator().manual_seed(cfg.seed))) \
            if cfg.sampling == "cyclic" else []
        self.two_point = self.opt.observation()["kind"] == "two_point"
        self.diagnostics = self._enable_diagnostics()
        self.gen = torch.Generator().manual_seed(cfg.seed)
        self.step, self.history, self.wall = 0, [], 0.0
        self.since = {"loss": 0.0, "clamp": 0.0, "steps": 0}  # sums since the last evaluation
        self.diverged: Optional[str] = None

    def _enable_diagnostics(self) -> bool:
        try:
            self.opt.enable_diagnostics()
            return True
        except ft.FibergenError:  # the optimizer declares no clamp_mass
            return False

    def evals(self) -> set[int]:
        """The steps after which the run evaluates: evals_per_epoch per epoch and the last."""
        per_epoch = len(self.train[0]) / self.cfg.batch
        k = self.cfg.evals_per_epoch * max(1, round(self.steps / per_epoch))
        return {min(self.steps, math.ceil(self.steps * (i + 1) / k)) for i in range(k)}

    def one_step(self) -> float:
        """Draws a batch, privatizes its per-example gradients, steps; the batch's mean loss."""
        x, y = self.train
        if self.cfg.sampling == "cyclic":
            idx = torch.tensor(self.batches[self.step % len(self.batches)])
        else:
            idx = torch.randperm(len(x), generator=self.gen)[:self.cfg.batch]
        xb, yb = x[idx].to(getattr(torch, self.cfg.dtype)), y[idx]
        look = None
        if self.two_point:
            with self.opt.lookahead():
                look = ft.per_example_grads(self.model, F.cross_entropy, xb, yb)
        cur, losses = ft.per_example_grads(self.model, F.cross_entropy, xb, yb, with_loss=True)
        self.opt.privatize(cur, look)
        if self.cfg.warmup_cosine > 0:
            for group in self.opt.param_groups:
                group["lr"] = self.cfg.lr * cosine_factor(self.step, self.steps, self.cfg.warmup_cosine)
        self.opt.step()
        if self.opt.found_inf:
            raise ft.NonFiniteGradient("the privatized gradient is not finite", -1, float("nan"))
        if self.diagnostics:
            self.since["clamp"] += self.opt.clamp_mass()[0]
        return losses.mean().item()

    def advance(self) -> float:
        """One step, its loss added to the sums since the last evaluation; a
        step or loss that is not finite ends the run as diverged."""
        try:
            loss = self.one_step()
        except (ft.NonFiniteExample, ft.NonFiniteGradient) as e:
            self.diverged, loss = f"step {self.step}: {e}", float("nan")
        if math.isfinite(loss):
            self.since["loss"] += loss
            self.since["steps"] += 1
        else:
            self.diverged = self.diverged or f"step {self.step}: the loss is not finite"
        self.step += 1
        return loss

    def evaluate(self) -> dict:
        s = self.since
        eps = self.opt.spent()[0]
        with self.opt.at_state(self.cfg.eval_state) if self.cfg.eval_state else contextlib.nullcontext():
            val, test = accuracy(self.model, self.val), accuracy(self.model, self.test)
        point = {"step": self.step, "epoch": self.step * self.cfg.batch / len(self.train[0]),
                 "loss": s["loss"] / s["steps"] if s["steps"] else None,
                 "clamp_mass": s["clamp"] / s["steps"] if s["steps"] and self.diagnostics else None,
                 "val_acc": val, "test_acc": test, "epsilon": eps}
        self.history.append(point)
        self.since = {"loss": 0.0, "clamp": 0.0, "steps": 0}
        return point

    def state(self) -> dict:
        """What resuming needs; taken right after an evaluation, when the sums since it are zero."""
        assert self.since["steps"] == 0, "a checkpoint between evaluations would lose the sums since the last"
        return {"config": dataclasses.asdict(self.cfg), "model": self.model.state_dict(),
                "opt": self.opt.state_dict(), "gen": self.gen.get_state(), "step": self.step,
                "history": self.history, "wall": self.wall}

    def restore(self, st: dict) -> None:
        if st["config"] != dataclasses.asdict(self.cfg):
            raise SystemExit(f"train.py: the checkpoint is of another run ({st['config']}); remove it to start over")
        self.model.load_state_dict(st["model"])  # copies into the optimizer's flat buffer
        self.opt.load_state_dict(st["opt"])
        self.gen.set_state(st["gen"])
        self.step, self.history, self.wall = st["step"], st["history"], st["wall"]

    def result(self) -> dict:
        last = self.history[-1] if self.history else {}
        eps, delta = self.opt.spent()
        return {"config": dataclasses.asdict(self.cfg), "optimizer": Path(self.cfg.optimizer).stem,
                "sigma": self.sigma, "delta": delta, "epsilon_spent": eps, "steps": self.step,
                "planned_steps": self.steps, "train_size": len(self.train[0]), "diverged": self.diverged,
                "val_acc": last.get("val_acc"), "test_acc": last.get("test_acc"), "wall_s": self.wall,
                "history": self.history}


def run(cfg: Config, out: Optional[Path] = None, splits: Optional[tuple[Split, Split, Split]] = None,
        position: int = 0) -> dict:
    """Trains one run (resuming from out's checkpoint, if any) and returns its
    result, also written to out; position is the line of its progress bar."""
    from tqdm import tqdm
    log = tqdm.write
    torch.set_num_threads(cfg.threads)
    r = Run(cfg, splits or load_splits(cfg.train_subset))
    ckpt = out.with_name(out.name + ".ckpt") if out else None
    if ckpt and ckpt.exists():
        r.restore(torch.load(ckpt))
        log(f"{Path(cfg.optimizer).stem}: resuming at step {r.step} of {r.steps} from {ckpt}")
    else:
        log(f"{Path(cfg.optimizer).stem}: σ_DP = {r.sigma:.4f} for ε = {cfg.epsilon} over {cfg.epochs} epochs "
            f"({r.steps} steps of {cfg.batch}), lr = {cfg.lr}")
    train_loop(r, ckpt, position, log)
    result = r.result()
    if out:
        write_json(out, result)
        if ckpt.exists():
            ckpt.unlink()
    return result


def train_loop(r: Run, ckpt: Optional[Path], position: int, log: Any) -> None:
    """Steps r to the end of its schedule (or until it diverges), evaluating
    and checkpointing on the way."""
    from tqdm import tqdm
    evals = r.evals()
    name = Path(r.cfg.optimizer).stem
    bar = tqdm(total=r.steps, initial=r.step, position=position, leave=False, disable=None,
               desc=f"{name} ε={r.cfg.epsilon} lr={r.cfg.lr:g} seed={r.cfg.seed}", dynamic_ncols=True)
    while r.step < r.steps and not r.diverged:
        start = time.perf_counter()
        loss = r.advance()
        if r.step in evals or r.diverged:
            log(describe(r, r.evaluate()))
        r.wall += time.perf_counter() - start
        if ckpt and r.step in evals and not r.diverged:
            save_checkpoint(r, ckpt)
        bar.update(1)
        if r.step % 10 == 0 or r.step in evals:
            bar.set_postfix(loss=f"{loss:.3f}", eps=f"{r.opt.spent()[0]:.2f}",
                            val=f"{r.history[-1]['val_acc']:.3f}" if r.history else "-")
    bar.close()


def describe(r: Run, p: dict) -> str:
    """One line on an evaluation."""
    return (f"{Path(r.cfg.optimizer).stem} epoch {p['epoch']:.2f} step {r.step}/{r.steps}: "
            f"loss {p['loss'] or float('nan'):.4f}, val {p['val_acc']:.4f}, test {p['test_acc']:.4f}, "
            f"ε {p['epsilon']:.3f}" + (f", clamp_mass {p['clamp_mass']:.3f}" if p["clamp_mass"] is not None else "")
            + (f" — diverged ({r.diverged})" if r.diverged else ""))


def save_checkpoint(r: Run, path: Path) -> None:
    write_private(path, lambda f: torch.save(r.state(), f))


def write_private(path: Path, write: Callable[[BinaryIO], None]) -> None:
    """Writes path atomically (a reader sees the old file or the new one),
    readable by its owner only: checkpoints and results name the noise seed."""
    tmp = path.with_name(path.name + ".tmp")
    with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as f:
        write(f)
    os.replace(tmp, path)


def write_json(path: Path, obj: Any) -> None:
    write_private(path, lambda f: f.write((json.dumps(obj, indent=1) + "\n").encode()))


def parse_hypers(items: list[str]) -> dict[str, float]:
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        try:
            out[name] = float(value)
        except ValueError:
            sep = ""
        if not sep or not name:
            raise SystemExit(f"train.py: --hyper {item!r}: want name=value, e.g. --hyper eps_v=1e-6")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    d = Config()
    ap.add_argument("--optimizer", default=d.optimizer,
                    help="a shipped optimizer's name (fiber, dp_adamw, ...), a .dsl file or a directory fibergen build wrote")
    ap.add_argument("--epsilon", type=float, default=d.epsilon)
    ap.add_argument("--epochs", type=float, default=d.epochs)
    ap.add_argument("--batch", type=int, default=d.batch, help="batch size B (without replacement)")
    ap.add_argument("--sampling", choices=["fixed", "cyclic"], default=d.sampling,
                    help="fixed: B drawn afresh each step; cyclic: fixed batches, the same order every epoch (default: %(default)s)")
    ap.add_argument("--lr", type=float, default=d.lr)
    ap.add_argument("--clip", type=float, default=d.clip, help="per-example clipping norm C")
    ap.add_argument("--seed", type=int, default=d.seed, help="initial weights and data order")
    ap.add_argument("--noise-seed", type=int, default=None, help="the noise seed (default: a secret one)")
    ap.add_argument("--hyper", action="append", default=[], metavar="NAME=VALUE", help="another hyper")
    ap.add_argument("--train-subset", type=int, default=0, help="train on this many images only (0: all)")
    ap.add_argument("--evals-per-epoch", type=int, default=d.evals_per_epoch)
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    ap.add_argument("--accountant", choices=["pld", "rdp"], default=d.accountant,
                    help="the privacy accountant that calibrates σ (default: %(default)s)")
    ap.add_argument("--eval-state", default="", help="evaluate at this state of the optimizer (schedule_free: x; default: theta)")
    ap.add_argument("--dtype", choices=["float32", "bfloat16"], default=d.dtype,
                    help="the model's (bfloat16: the optimizer is compiled for it)")
    ap.add_argument("--param-rounding", choices=["nearest", "stochastic"], default=d.param_rounding,
                    help="how a bfloat16 model's parameters round when stored")
    ap.add_argument("--clipping", choices=["flat", "layer", "layer_proportional"], default=d.clipping,
                    help="flat: C over all parameters; layer: each layer to C·√(d_l/d); layer_proportional: "
                         "and each layer's noise in proportion to its norm (default: %(default)s)")
    ap.add_argument("--out", type=Path, help="the result as JSON (and a checkpoint beside it to resume from)")
    args = ap.parse_args()
    if not DATA.exists():
        print(f"train.py: {DATA} is missing: apt-get install dataset-fashion-mnist", file=sys.stderr)
        return 2
    cfg = Config(optimizer=args.optimizer, epsilon=args.epsilon, epochs=args.epochs, batch=args.batch,
                 lr=args.lr, clip=args.clip, seed=args.seed, noise_seed=args.noise_seed,
                 hypers=parse_hypers(args.hyper), train_subset=args.train_subset,
                 evals_per_epoch=args.evals_per_epoch, threads=args.threads, accountant=args.accountant,
                 eval_state=args.eval_state, sampling=args.sampling, dtype=args.dtype,
                 param_rounding=args.param_rounding, clipping=args.clipping)
    try:
        res = run(cfg, args.out)
    except (ft.FibergenError, ValueError) as e:
        print(f"train.py: {e}", file=sys.stderr)
        return 1
    print(f"{res['optimizer']}: test accuracy {res['test_acc']:.4f}, validation {res['val_acc']:.4f}, "
          f"ε = {res['epsilon_spent']:.3f} (δ = {res['delta']:.2e}), {res['wall_s']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
