"""States per row and per column (docs/dsl.md, "Rows and columns") in the
PyTorch binding: each parameter a tensor of its own with its shape, stepped
on the reference (no kernel computes them yet), bit for bit as `fibergen
run --tensors RxC --backend go` steps it; the line states in ``state[p]``;
resumed from a state_dict bit for bit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import fibergen.torch as ft
from test_exact import SEED, SHAPES, SIGMA_W2, data, fibergen_run, make_params, step_on

ROOT = Path(__file__).resolve().parents[2]

# A factored second moment (Adafactor's, Shazeer & Stern 2018) on the
# privatized gradient.
FACTORED = """optimizer factored
hyper lr = 1e-2 in [0, inf)
hyper beta1 = 0.9 in [0, 1)
hyper beta2 = 0.999 in [0, 1)
hyper eps1 = 1e-30 in (0, inf)
state r: rows = 0
state c: cols = 0
state m = 0
step {
	r = beta2 * r + (1 - beta2) * rowmean(g * g + eps1)
	c = beta2 * c + (1 - beta2) * colmean(g * g + eps1)
	m = beta1 * m + (1 - beta1) * g
	theta = theta - lr * m / sqrt(r * c / mean(r))
}
"""
# docs/dsl.md's factored Adam, with decoupled weight decay (test_distributed
# steps it sharded, a group with a weight decay of its own).
FACTORED_ADAM = (ROOT / "tests" / "testdata" / "lines" / "factored_adam.dsl").read_text()
# fibergen run's --tensors: each parameter's shape, all but the last dimension its rows
SHAPED = ",".join("x".join(str(d) for d in s) for s in SHAPES)


@pytest.fixture
def factored(tmp_path: Path) -> Path:
    path = tmp_path / "factored.dsl"
    path.write_text(FACTORED)
    return path


def test_lines_match_fibergen_run(factored, fibergen_bin, tmp_path):
    """Parameters of 2, 1 and 3 dimensions step as fibergen run steps them
    with their shapes, bit for bit, and state[p] holds each one's row and
    column states as --state-out writes them; not as one row each."""
    n, steps = sum(int(np.prod(s)) for s in SHAPES), 5
    theta, grads = data(n, steps, rng_seed=5)
    np.save(tmp_path / "theta.npy", theta)
    np.save(tmp_path / "grads.npy", grads)
    args = ["--grads", str(tmp_path / "grads.npy"), "--sigma-w2", repr(SIGMA_W2)]
    want = fibergen_run(fibergen_bin, factored, tmp_path, "go", *args, "--tensors", SHAPED,
                        "--state-out", f"r={tmp_path / 'r.npy'}", "--state-out", f"c={tmp_path / 'c.npy'}")
    flat = fibergen_run(fibergen_bin, factored, tmp_path, "go", *args,
                        "--tensors", ",".join(str(int(np.prod(s))) for s in SHAPES))
    assert want.tobytes() != flat.tobytes(), "the test cannot tell rows and columns from one row a tensor"

    params = make_params(theta)
    opt = ft.Optimizer(params, factored, seed=SEED)
    opt.set_noise(SIGMA_W2)
    got = step_on(opt, params, grads)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    for name, path in (("r", "r.npy"), ("c", "c.npy")):
        lines = torch.cat([opt.state[p][name] for p in params]).numpy()
        np.testing.assert_array_equal(lines.view(np.uint32), np.load(tmp_path / path).view(np.uint32))
    assert opt.state[params[0]]["r"].shape == (7,) and opt.state[params[0]]["c"].shape == (13,)
    assert opt.state[params[2]]["r"].shape == (15,) and opt.state[params[2]]["c"].shape == (11,)


def test_lines_resume(factored):
    """A state_dict saved after 3 steps, loaded into a fresh optimizer,
    steps on as the run that saved it, line states included."""
    n, steps = sum(int(np.prod(s)) for s in SHAPES), 5
    theta, grads = data(n, steps, rng_seed=6)
    params = make_params(theta)
    opt = ft.Optimizer(params, factored, seed=SEED)
    opt.set_noise(SIGMA_W2)
    step_on(opt, params, grads[:3])
    saved = opt.state_dict()
    resumed_params = [torch.nn.Parameter(p.detach().clone()) for p in params]
    resumed = ft.Optimizer(resumed_params, factored, allow_resume_again=True)
    resumed.load_state_dict(saved)
    assert torch.equal(resumed.state[resumed_params[0]]["r"], opt.state[params[0]]["r"])
    want, got = step_on(opt, params, grads[3:]), step_on(resumed, resumed_params, grads[3:])
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    for p, q in zip(params, resumed_params):
        assert torch.equal(opt.state[p]["c"], resumed.state[q]["c"])


def test_lines_odd_parameters(factored):
    """Parameters of no dimension, one, four, and empty ones step; each
    one's row and column states have the runtime's lengths, in float32
    whatever torch's default dtype; at_state refuses a state per row."""
    torch.manual_seed(0)
    ps = [torch.nn.Parameter(torch.randn(3, 4)), torch.nn.Parameter(torch.randn(3)), torch.nn.Parameter(torch.tensor(0.5)),
          torch.nn.Parameter(torch.randn(2, 1, 3, 2)), torch.nn.Parameter(torch.zeros(0, 5)), torch.nn.Parameter(torch.zeros(0))]
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        opt = ft.Optimizer(ps, factored, seed=SEED)
    finally:
        torch.set_default_dtype(default)
    opt.set_noise(SIGMA_W2)
    for _ in range(3):
        for p in ps:
            p.grad.copy_(torch.full_like(p, 0.01))
        opt.step()
    want = {0: (3, 4), 1: (1, 3), 2: (1, 1), 3: (6, 2), 4: (0, 5), 5: (1, 0)}
    for i, (rows, cols) in want.items():
        r, c = opt.state[ps[i]]["r"], opt.state[ps[i]]["c"]
        assert (r.shape, c.shape, r.dtype) == ((rows,), (cols,), torch.float32), i
    assert torch.all(opt.state[ps[0]]["r"] > 0) and torch.all(opt.state[ps[3]]["c"] > 0)
    with pytest.raises(ValueError, match="r is a state per row or per column of factored"):
        with opt.at_state("r"):
            pass


def test_empty_parameter_steps(generated):
    """A parameter of no coordinates, whose storage has no address, steps
    with the others (any optimizer)."""
    ps = [torch.nn.Parameter(torch.ones(4)), torch.nn.Parameter(torch.zeros(0))]
    opt = ft.Optimizer(ps, generated / "dp_adamw", seed=SEED)
    opt.set_noise(SIGMA_W2)
    ps[0].grad.fill_(0.1)
    opt.step()
    assert opt.steps == 1 and not torch.equal(ps[0].detach(), torch.ones(4))


def test_lines_resume_into_another_shape(factored):
    """A state_dict of a 3 × 5 weight does not load into a 5 × 3 one: the
    refusal names the parameter and both shapes."""
    a = [torch.nn.Parameter(torch.ones(3, 5))]
    opt = ft.Optimizer(a, factored, seed=SEED)
    saved = opt.state_dict()
    other = ft.Optimizer([torch.nn.Parameter(torch.ones(5, 3))], factored, seed=SEED)
    with pytest.raises(ft.FibergenError, match=r'param_groups\[0\]\["params"\]\[0\] has shape \[5, 3\] here, \[3, 5\] in the state_dict'):
        other.load_state_dict(saved)
