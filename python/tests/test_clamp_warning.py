"""The clamp warning: a corrected second moment on its fixed floor for much
of the update warns once (docs/runtime.md), in Python's words, and changes
no step; clamp_warning=False and a floor that scales with the noise do not
warn."""

from __future__ import annotations

import warnings

import numpy as np
import torch

import fibergen.torch as ft


def small_model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Linear(64, 16)


def clamp_run(generated, name: str, steps: int = 60, **kw) -> tuple[list[str], np.ndarray]:
    """Steps on clipped means of 1e-4 N(0, 1) that the noise (σ_w = 0.034)
    dominates; the warnings and the parameters' bits."""
    m = small_model()
    opt = ft.Optimizer(m.parameters(), generated / name, seed=7, **kw)
    opt.set_dp(clip=1.0, noise_multiplier=1.1, expected_batch_size=32)
    g = torch.Generator().manual_seed(3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(steps):
            for p in m.parameters():
                p.grad = 1e-4 * torch.randn(p.shape, generator=g)
            opt.trust_clipped_grad()
            opt.step()
    msgs = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    return msgs, torch.cat([p.detach().reshape(-1) for p in m.parameters()]).numpy().view(np.uint32).copy()


def test_warns_once_and_changes_nothing(generated):
    msgs, theta = clamp_run(generated, "fiber")
    assert len(msgs) == 1, msgs
    assert "fiber: clamp_mass stayed above 0.2 for 50 steps" in msgs[0]
    assert "clamp_warning=False turns this warning off" in msgs[0]
    assert "Options." not in msgs[0]
    quiet, quiet_theta = clamp_run(generated, "fiber", clamp_warning=False)
    assert quiet == []
    assert np.array_equal(theta, quiet_theta)


def test_noise_floor_does_not_warn(generated):
    assert clamp_run(generated, "fiber_nfloor")[0] == []
