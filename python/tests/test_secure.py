"""The secure noise mode in the binding: ``Optimizer(..., secure=True)``
takes its key from the OS and no seed, reports its mode, keeps the key out
of its state_dict, and resumes only a state_dict of its own mode."""

from __future__ import annotations

import struct

import pytest
import torch

import fibergen.torch as ft
from fibergen import FibergenError


def opened(generated, secure: bool, name: str = "dp_adamw", **kw) -> tuple[torch.nn.Parameter, ft.Optimizer]:
    p = torch.nn.Parameter(torch.linspace(-1, 1, 300))
    opt = ft.Optimizer([p], generated / name, secure=secure, **kw)
    opt.set_dp(clip=1.0, noise_multiplier=1.0, expected_batch_size=8)
    return p, opt


def step(p: torch.nn.Parameter, opt: ft.Optimizer) -> None:
    p.grad.fill_(0.01)
    opt.trust_clipped_grad()
    opt.step()


def test_secure_mode_opens_and_steps(generated):
    p, opt = opened(generated, True)
    assert opt.noise_mode == "secure" and opt.noise_scheme.startswith("chacha20/")
    before = p.detach().clone()
    step(p, opt)
    assert opt.steps == 1 and not torch.equal(p.detach(), before)
    q, default = opened(generated, False)
    assert default.noise_mode == "philox" and default.noise_scheme.startswith("philox4x32-10/")


def test_seed_with_secure_raises(generated):
    p = torch.nn.Parameter(torch.zeros(10))
    with pytest.raises(ValueError, match=r"seed= with secure=True.*subtractable"):
        ft.Optimizer([p], generated / "dp_sgd", secure=True, seed=1)
    with pytest.raises(ValueError, match="secure = 'yes'"):
        ft.Optimizer([p], generated / "dp_sgd", secure="yes")


def test_every_open_draws_a_key(generated):
    keys = [opened(generated, True)[1]._handle.share_key() for _ in range(2)]
    assert keys[0] != keys[1] and all(any(k) for k in keys)


def test_state_dict_holds_the_mode_and_no_key(generated):
    p, opt = opened(generated, True)
    key = opt._handle.share_key()
    step(p, opt)
    sd = opt.state_dict()
    assert sd["fibergen"]["noise_mode"] == "secure"
    blob = sd["state"][0]["checkpoint"].numpy().tobytes()
    assert struct.pack("<4Q", *key) not in blob
    assert not any(str(w).encode() in blob or f"{w:x}".encode() in blob for w in key)
    q, fresh = opened(generated, True)
    fresh.load_state_dict(sd)
    assert fresh.steps == 1
    step(q, fresh)
    assert fresh.steps == 2


@pytest.mark.parametrize("saved, loading", [(True, False), (False, True)])
def test_a_state_dict_of_the_other_mode_is_refused(generated, saved, loading):
    p, opt = opened(generated, saved)
    step(p, opt)
    sd = opt.state_dict()
    names = {True: "secure", False: "philox"}
    q, other = opened(generated, loading)
    before = q.detach().clone()
    said = rf"'{names[saved]}' noise mode, this optimizer draws in '{names[loading]}' mode"
    with pytest.raises(FibergenError, match=said):
        other.load_state_dict(sd)
    # A state_dict whose metadata lies: the runtime's checkpoint says its mode.
    sd["fibergen"]["noise_mode"] = names[loading]
    said = (rf"run in {names[saved]} noise mode, this optimizer draws in {names[loading]} mode"
            rf".*pass secure={saved} to the Optimizer")
    with pytest.raises(FibergenError, match=said):
        other.load_state_dict(sd)
    assert other.steps == 0 and torch.equal(q.detach(), before)
    step(q, other)  # the refused loads changed nothing: it steps as opened


def test_a_state_dict_without_a_mode_is_philox(generated):
    p, opt = opened(generated, False)
    step(p, opt)
    sd = opt.state_dict()
    del sd["fibergen"]["noise_mode"]  # saved before secure mode
    opened(generated, False)[1].load_state_dict(sd)
    with pytest.raises(FibergenError, match="'philox' noise mode"):
        opened(generated, True)[1].load_state_dict(sd)
