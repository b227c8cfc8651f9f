#!/usr/bin/env python3
"""DP training of a small CNN on Fashion-MNIST with a fibergen optimizer.

Usage (from the repository root, after `make build python-lib`):

    python3 examples/torch_cnn/train.py [--optimizer generated/fiber] [--epochs 1] [--epsilon 3]

It reads Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist;
apt-get install dataset-fashion-mnist), samples Poisson batches of expected
size B, computes per-example gradients with torch.func/functorch (for a
two_point optimizer such as FiBeR also at the look-ahead point), lets the
optimizer clip, average and noise them (σ calibrated to the target ε by
fibergen's accountant) and step, and prints the test accuracy and the ε
spent after every epoch.
"""

from __future__ import annotations

import argparse
import gzip
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
import fibergen.privacy  # noqa: E402
import fibergen.torch as ft  # noqa: E402

DATA = Path("/usr/share/datasets/fashion-mnist")


def load(kind: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The images (float32 in [0, 1], [N, 1, 28, 28]) and labels of train or t10k."""
    with gzip.open(DATA / f"{kind}-images-idx3-ubyte.gz") as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 1, 28, 28)
    with gzip.open(DATA / f"{kind}-labels-idx1-ubyte.gz") as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8)
    return torch.from_numpy(x.astype(np.float32) / 255.0), torch.from_numpy(y.astype(np.int64))


def cnn() -> torch.nn.Module:
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 8, 5, stride=2), torch.nn.Tanh(),
        torch.nn.Conv2d(8, 16, 5, stride=2), torch.nn.Tanh(), torch.nn.Flatten(),
        torch.nn.Linear(16 * 4 * 4, 10))


def accuracy(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    with torch.no_grad():
        return (model(x).argmax(1) == y).float().mean().item()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--optimizer", default="generated/fiber", help="a directory fibergen build wrote")
    ap.add_argument("--epochs", type=float, default=1)
    ap.add_argument("--batch", type=int, default=256, help="expected batch size B")
    ap.add_argument("--epsilon", type=float, default=3.0)
    ap.add_argument("--clip", type=float, default=1.0)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--seed", type=int, default=0, help="data order and initial weights (the noise seed stays secret)")
    args = ap.parse_args()
    if not DATA.exists():
        print(f"train.py: {DATA} is missing: apt-get install dataset-fashion-mnist", file=sys.stderr)
        return 2
    torch.manual_seed(args.seed)
    x, y = load("train")
    xt, yt = load("t10k")
    model = cnn()
    opt = ft.Optimizer(model.parameters(), args.optimizer, lr=args.lr)
    sigma = opt.set_budget(args.epsilon, clip=args.clip, dataset_size=len(x), batch_size=args.batch,
                           epochs=args.epochs)
    two_point = opt.observation()["kind"] == "two_point"
    # The accountant's schedule: the steps the budget covers.
    steps = fibergen.privacy.epsilon(sigma, dataset_size=len(x), batch_size=args.batch, epochs=args.epochs).steps
    steps_per_epoch = len(x) / args.batch
    print(f"{Path(args.optimizer).name}: σ_DP = {sigma:.4f} for ε = {args.epsilon} over {args.epochs} epochs "
          f"({steps} steps)")
    rate = args.batch / len(x)
    for step in range(steps):
        idx = torch.nonzero(torch.rand(len(x)) < rate).squeeze(1)  # Poisson sampling
        look = None
        if two_point:
            with opt.lookahead():
                look = ft.per_example_grads(model, F.cross_entropy, x[idx], y[idx])
        cur = ft.per_example_grads(model, F.cross_entropy, x[idx], y[idx])
        opt.privatize(cur, look)
        opt.step()
        if int((step + 1) / steps_per_epoch) > int(step / steps_per_epoch) or step + 1 == steps:
            eps, delta = opt.spent()
            print(f"epoch {(step + 1) / steps_per_epoch:.2f}: test accuracy {accuracy(model, xt, yt):.4f}, "
                  f"ε = {eps:.3f} (δ = {delta:.2e})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
