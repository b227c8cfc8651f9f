"""A checkpoint of an optimizer without states (dp_sgd) has no states to
digest: loading it warns of nothing, where one of an optimizer with states
saved before ABI 4 warns that its states load unchecked."""

from __future__ import annotations

import warnings

import torch

import fibergen.torch as ft


def test_stateless_checkpoint_loads_without_warning(generated):
    p = torch.nn.Parameter(torch.linspace(-1, 1, 40))
    opt = ft.Optimizer([p], generated / "dp_sgd", seed=3)
    opt.set_dp(clip=1.0, noise_multiplier=1.0, expected_batch_size=8)
    p.grad = torch.full_like(p, 0.01)
    opt.trust_clipped_grad()
    opt.step()
    sd = opt.state_dict()
    fresh = ft.Optimizer([torch.nn.Parameter(p.detach().clone())], generated / "dp_sgd")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fresh.load_state_dict(sd)
