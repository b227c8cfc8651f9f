"""The torch optimizer is bit for bit the Go reference and the host kernel
as `fibergen run` runs them, for every shipped optimizer, noise on."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

import fibergen.torch as ft
from conftest import OPTIMIZERS

SHAPES = [(7, 13), (64,), (3, 5, 11), (1,)]  # 320 coordinates in four tensors
TENSORS = ",".join(str(int(np.prod(s))) for s in SHAPES)  # fibergen run's --tensors: each its own (lamb's norms)
STEPS = 50
SEED = 20261125
SIGMA_W2 = 1e-4


def make_params(theta: np.ndarray) -> list[torch.nn.Parameter]:
    out, off = [], 0
    for s in SHAPES:
        k = int(np.prod(s))
        out.append(torch.nn.Parameter(torch.from_numpy(theta[off:off + k].copy()).reshape(s)))
        off += k
    return out


def fibergen_run(bin: Path, dsl: Path, tmp: Path, backend: str, *args: str) -> np.ndarray:
    out = tmp / f"out-{backend}.npy"
    subprocess.run([str(bin), "run", str(dsl), "--theta", str(tmp / "theta.npy"), "--out", str(out),
                    "--seed", str(SEED), "--backend", backend, *args], check=True, capture_output=True)
    return np.load(out)


def step_on(opt: ft.Optimizer, params: list[torch.nn.Parameter], grads: np.ndarray) -> np.ndarray:
    """Steps opt once a row of grads (the flat clipped means), each cut
    into the parameters' gradients, and returns the flat parameters, as
    float32 values (those of bfloat16 and float16 ones too)."""
    for row in grads:
        off = 0
        for p in params:
            p.grad.copy_(torch.from_numpy(row[off:off + p.numel()]).reshape(p.shape))
            off += p.numel()
        opt.step()
    return torch.cat([p.detach().float().reshape(-1) for p in params]).numpy()


def data(n: int, steps: int, rng_seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(rng_seed)
    theta = rng.normal(0, 1, n).astype(np.float32)
    grads = (rng.normal(0, 0.1, (steps, n)) + rng.normal(0, 0.05, n)).astype(np.float32)
    return theta, grads


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_clipped_means_match_fibergen_run(name, generated, fibergen_bin, tmp_path):
    n = sum(int(np.prod(s)) for s in SHAPES)
    theta, grads = data(n, STEPS)
    np.save(tmp_path / "theta.npy", theta)
    np.save(tmp_path / "grads.npy", grads)
    dsl = Path(__file__).resolve().parents[2] / "optimizers" / f"{name}.dsl"
    args = ["--grads", str(tmp_path / "grads.npy"), "--sigma-w2", repr(SIGMA_W2), "--tensors", TENSORS]
    want = {b: fibergen_run(fibergen_bin, dsl, tmp_path, b, *args) for b in ("go", "cpu")}
    assert want["go"].tobytes() == want["cpu"].tobytes()

    params = make_params(theta)
    opt = ft.Optimizer(params, generated / name, seed=SEED)
    opt.set_noise(SIGMA_W2)
    got = step_on(opt, params, grads)
    assert opt.steps == STEPS
    np.testing.assert_array_equal(got.view(np.uint32), want["go"].view(np.uint32))


@pytest.mark.parametrize("name", ["fiber", "disk", "dp_adamw", "dp_sgd", "lamb"])
def test_privatize_matches_fibergen_run(name, generated, fibergen_bin, tmp_path):
    n, batch, steps, clip, sigma = sum(int(np.prod(s)) for s in SHAPES), 6, STEPS, 0.5, 0.8
    rng = np.random.default_rng(2)
    theta = rng.normal(0, 1, n).astype(np.float32)
    cur = rng.normal(0, 0.3, (steps, batch, n)).astype(np.float32)
    look = rng.normal(0, 0.3, (steps, batch, n)).astype(np.float32)
    np.save(tmp_path / "theta.npy", theta)
    np.save(tmp_path / "cur.npy", cur)
    np.save(tmp_path / "look.npy", look)
    params = make_params(theta)
    opt = ft.Optimizer(params, generated / name, seed=SEED, clamp_warning=False)  # bits are compared, not floors
    two_point = opt.observation()["kind"] == "two_point"
    dsl = Path(__file__).resolve().parents[2] / "optimizers" / f"{name}.dsl"
    args = ["--example-grads", str(tmp_path / "cur.npy"), "--clip", repr(clip), "--noise-multiplier", repr(sigma),
            "--tensors", TENSORS]
    if two_point:
        args += ["--lookahead-grads", str(tmp_path / "look.npy")]
    want = fibergen_run(fibergen_bin, dsl, tmp_path, "cpu", *args)

    opt.set_dp(clip, sigma, batch)
    split = lambda rows: [torch.from_numpy(x.copy()).reshape(batch, *p.shape)  # noqa: E731
                          for x, p in zip(np.split(rows, np.cumsum([p.numel() for p in params])[:-1], axis=1),
                                          params)]
    for t in range(steps):
        opt.privatize(split(cur[t]), split(look[t]) if two_point else None)
        opt.step()
    got = torch.cat([p.detach().reshape(-1) for p in params]).numpy()
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
