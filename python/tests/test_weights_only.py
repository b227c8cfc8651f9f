"""torch.load(..., weights_only=True) and the optimizer's state_dict
(docs/python.md, "Checkpoints"): the state_dict holds tensors, ints, floats,
strings, bools, None, lists, tuples and dicts only, which weights_only reads
from torch 2.0 on; torch 1.13's weights_only unpickler has no opcode for a
float (BINFLOAT, 71), so it refuses the hypers' floats — as it refuses the
state_dict of torch's own optimizers."""

from __future__ import annotations

import io
import pickle
import re

import numpy as np
import pytest
import torch

import fibergen.torch as ft

TORCH_MAJOR = int(torch.__version__.split(".")[0])
TORCH_VERSION = tuple(int(re.match(r"\d+", x).group()) for x in torch.__version__.split(".")[:2])  # "1.13.0a0": (1, 13)
# torch.load takes weights_only from torch 1.13 on; before, it raises TypeError.
needs_weights_only = pytest.mark.skipif(
    TORCH_VERSION < (1, 13), reason=f"torch.load has no weights_only before torch 1.13 (this is {torch.__version__})")
WEIGHTS_ONLY_TYPES = (torch.Tensor, int, float, str, bool, type(None))


@pytest.fixture(scope="module")
def dp_adamw(generated):
    return generated / "dp_adamw"  # the session's build (conftest.py)


def leaves(obj, path="state_dict"):
    """Every value below the containers (dict, list, tuple), with its path."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            assert isinstance(k, (int, str)), f"{path}: key {k!r}"
            yield from leaves(v, f"{path}[{k!r}]")
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            yield from leaves(v, f"{path}[{i}]")
    else:
        yield path, obj


def opened(built, p: torch.nn.Parameter) -> ft.Optimizer:
    opt = ft.Optimizer([p], built, seed=3)
    opt.set_dp(clip=1.0, noise_multiplier=1.0, expected_batch_size=8)
    return opt


def param() -> torch.nn.Parameter:
    return torch.nn.Parameter(torch.linspace(-1, 1, 40))


def step(opt: ft.Optimizer, p: torch.nn.Parameter, steps: range) -> None:
    for t in steps:
        p.grad = torch.full_like(p, 0.01 * (t + 1))
        opt.trust_clipped_grad()
        opt.step()


def saved(obj) -> io.BytesIO:
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    return buf


def test_state_dict_holds_weights_only_types(dp_adamw):
    p = param()
    opt = opened(dp_adamw, p)
    step(opt, p, range(3))
    for path, leaf in leaves(opt.state_dict()):
        assert isinstance(leaf, WEIGHTS_ONLY_TYPES), f"{path} is a {type(leaf).__name__}"


@needs_weights_only
@pytest.mark.skipif(TORCH_MAJOR < 2, reason="torch 1.13's weights_only cannot read a float")
def test_weights_only_load_resumes(dp_adamw):
    want = param()
    step(opened(dp_adamw, want), want, range(6))
    p = param()
    opt = opened(dp_adamw, p)
    step(opt, p, range(3))
    sd = torch.load(saved(opt.state_dict()), weights_only=True)
    resumed = torch.nn.Parameter(p.detach().clone())
    fresh = ft.Optimizer([resumed], dp_adamw)
    fresh.load_state_dict(sd)
    step(fresh, resumed, range(3, 6))
    assert (resumed.detach().numpy().view(np.uint32) == want.detach().numpy().view(np.uint32)).all()


@needs_weights_only
@pytest.mark.skipif(TORCH_MAJOR >= 2, reason="torch 2 reads floats with weights_only")
def test_weights_only_on_torch1_refuses_floats_as_for_torch_optim(dp_adamw):
    p = param()
    opt = opened(dp_adamw, p)
    step(opt, p, range(3))
    adamw = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(4))], lr=1e-3)
    for sd in (opt.state_dict(), adamw.state_dict()):
        with pytest.raises(pickle.UnpicklingError, match="Unsupported operand 71"):
            torch.load(saved(sd), weights_only=True)
