"""Optimizers whose step reads per-tensor norms, sums or means (lamb, lars)
in the PyTorch binding: each parameter is a tensor of its own, bit for bit
as `fibergen run --tensors` steps it, with parameter groups; resumed:
test_torch; sharded under a process group: test_distributed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import fibergen.torch as ft
from fibergen import FibergenError
from test_exact import SEED, SHAPES, SIGMA_W2, TENSORS, data, fibergen_run, make_params, step_on

ROOT = Path(__file__).resolve().parents[2]
FIRST_TWO = sum(int(np.prod(s)) for s in SHAPES[:2])  # the coordinates of the first group


@pytest.mark.parametrize("name", ["lamb", "lars"])
def test_groups_match_fibergen_run(name, generated, fibergen_bin, tmp_path):
    """Two groups, the first without weight decay: each parameter's trust
    ratio is its own and the group's hypers are its parameters', as
    fibergen run's --tensors and --group give them; and not as the
    group's coordinates normed together."""
    n, steps = sum(int(np.prod(s)) for s in SHAPES), 10
    theta, grads = data(n, steps, rng_seed=3)
    np.save(tmp_path / "theta.npy", theta)
    np.save(tmp_path / "grads.npy", grads)
    dsl = ROOT / "optimizers" / f"{name}.dsl"
    args = ["--grads", str(tmp_path / "grads.npy"), "--sigma-w2", repr(SIGMA_W2), "--group", f"0:{FIRST_TWO}:wd=0"]
    want = fibergen_run(fibergen_bin, dsl, tmp_path, "cpu", *args, "--tensors", TENSORS)
    by_group = fibergen_run(fibergen_bin, dsl, tmp_path, "cpu", *args)
    assert want.tobytes() != by_group.tobytes(), "the test cannot tell a norm per parameter from one per group"

    params = make_params(theta)
    opt = ft.Optimizer([{"params": params[:2], "weight_decay": 0.0}, {"params": params[2:]}], generated / name, seed=SEED)
    opt.set_noise(SIGMA_W2)
    got = step_on(opt, params, grads)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    assert opt.param_groups[0]["weight_decay"] == 0.0 and opt.param_groups[1]["weight_decay"] > 0


def test_zero_gradient_refuses_the_step():
    """A step that divides by each parameter's gradient norm, on a
    parameter whose privatized gradient is 0: refused, naming the parameter
    as torch finds it, nothing changed."""
    ps = [torch.nn.Parameter(torch.linspace(-1, 1, 12)), torch.nn.Parameter(torch.ones(5))]
    opt = ft.Optimizer(ps, ROOT / "tests" / "testdata" / "dsl" / "unguarded.dsl", seed=1)
    with pytest.warns(RuntimeWarning, match="no DP noise"):
        opt.set_noise(0.0)
    ps[0].grad.fill_(0.1)
    ps[1].grad.zero_()
    before = [p.detach().clone() for p in ps]
    with pytest.raises(FibergenError, match=r'param_groups\[0\]\["params"\]\[1\].*is \+Inf'):
        opt.step()
    assert all(torch.equal(p, b) for p, b in zip(ps, before))
    assert opt.steps == 0
