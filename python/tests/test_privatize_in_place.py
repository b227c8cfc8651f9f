"""privatize reads contiguous float32 CPU per-example gradients where torch
left them (fg_privatize_segments, docs/python.md "The cost of a step"):
the same bits as the copy into one [k, numel] matrix that other tensors
take, for tensors whose edges fall inside a 128-row and on the 4096-chunk
edges, one-element ones, k = 0, 1 and many, with and without look-ahead;
tensors inside the flat gradient are copied; bad segments are refused."""

from __future__ import annotations

from typing import Optional

import numpy as np
import pytest
import torch

import fibergen.torch as ft
from fibergen import FibergenError, _lib

SHAPES = [(63, 65), (1,), (4096,), (5, 819), (130,), (3, 3)]  # 4095, 1, 4096, 4095, 130, 9 coordinates


def params() -> list[torch.nn.Parameter]:
    g = torch.Generator().manual_seed(0)
    return [torch.nn.Parameter(0.1 * torch.randn(s, generator=g)) for s in SHAPES]


def bits(ts: list[torch.Tensor]) -> np.ndarray:
    return torch.cat([t.detach().reshape(-1) for t in ts]).numpy().view(np.uint32).copy()


def per_example(k: int, seed: int, ps: list[torch.Tensor]) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(k, *p.shape, generator=g) * 10.0 ** (i % 3 - 2) for i, p in enumerate(ps)]


def strided(ts: list[torch.Tensor]) -> list[torch.Tensor]:
    """The same values, not contiguous: every tensor a slice of one twice as
    wide, so that privatize copies them."""
    out = []
    for t in ts:
        wide = torch.empty(*t.shape, 2)
        wide[..., 0] = t
        out.append(wide[..., 0])
    assert not any(o.is_contiguous() for o in out if o.numel() > 1)
    return out


def run(generated, name: str, contiguous: bool) -> tuple[list[np.ndarray], ft.Optimizer]:
    """Privatize and step on Poisson batches of 5, 1, 0, 33: the bits of the
    gradient and the scales after each privatize, and of θ after each step."""
    ps = params()
    opt = ft.Optimizer(ps, generated / name, seed=3)
    opt.set_dp(clip=1.0, noise_multiplier=1.0, expected_batch_size=8)
    out = []
    for i, k in enumerate((5, 1, 0, 33)):
        cur = per_example(k, 10 + i, ps)
        look: Optional[list[torch.Tensor]] = per_example(k, 20 + i, ps) if name == "fiber" else None
        if not contiguous:
            cur, look = strided(cur), strided(look) if look is not None else None
        scales, clipped = opt.privatize(cur, look)
        out += [bits([p.grad for p in ps]), scales.numpy().view(np.uint32).copy(), np.array([clipped])]
        opt.step()
        out.append(bits(ps))
    return out, opt


@pytest.mark.parametrize("name", ["dp_adamw", "fiber"])
def test_in_place_matches_the_copy(generated, name):
    in_place, opt = run(generated, name, True)
    copied, copier = run(generated, name, False)
    assert opt._rows_bufs == [None, None], "contiguous tensors were copied"
    assert copier._rows_bufs[0] is not None, "strided tensors were not copied"
    for i, (a, b) in enumerate(zip(in_place, copied)):
        assert (a == b).all(), f"entry {i} differs"


def test_scales_given_in_place(generated):
    """Ghost clipping's scales, given, sum the tensors read in place as the copy."""
    def grad(contiguous: bool) -> np.ndarray:
        ps = params()
        opt = ft.Optimizer(ps, generated / "dp_adamw", seed=3)
        opt.set_dp(clip=1.0, noise_multiplier=1.0, expected_batch_size=8)
        cur = per_example(4, 1, ps)
        scales = opt.clip_scales(torch.tensor([0.5, 2.0, 4.0, 8.0]))  # 1, 1/2, 1/4, 1/8
        opt.privatize(cur if contiguous else strided(cur), scales=scales)
        return bits([p.grad for p in ps])
    assert (grad(True) == grad(False)).all()


def test_views_of_the_gradient_are_copied(generated):
    """Per-example gradients that are views of .grad (k = 1) go through the
    copy, as privatize writes .grad: the result of their clones."""
    def grad(alias: bool) -> np.ndarray:
        ps = params()
        opt = ft.Optimizer(ps, generated / "dp_adamw", seed=3)
        opt.set_dp(clip=1.0, noise_multiplier=1.0, expected_batch_size=1)
        for i, p in enumerate(ps):
            p.grad.copy_(per_example(1, i, [p])[0][0])
        cur = [p.grad[None] if alias else p.grad[None].clone() for p in ps]
        opt.privatize(cur)
        return bits([p.grad for p in ps])
    assert (grad(True) == grad(False)).all()


@pytest.mark.parametrize("offsets, sizes, msg", [
    ([0, 4], [5, 3], "segment 1 starts at coordinate 4, want 5"),
    ([0, 5], [5, 2], "cover 7 coordinates of the gradient's 8"),
    ([0, 5], [5, 4], "passes the gradient's 8"),
])
def test_bad_segments_are_refused(generated, offsets, sizes, msg):
    """fg_privatize_segments refuses segments that overlap, leave a gap or
    pass the gradient, and changes nothing."""
    p = torch.nn.Parameter(torch.zeros(8))
    opt = ft.Optimizer([p], generated / "dp_adamw", seed=3)
    opt.set_dp(clip=1.0, noise_multiplier=1.0, expected_batch_size=2)
    rows = [torch.ones(2, s) for s in sizes]
    segs = _lib.Segments(offsets, sizes)
    segs.set([r.data_ptr() for r in rows], None)
    out = torch.zeros(8)
    with pytest.raises(FibergenError, match=msg):
        opt._handle.privatize_segments(out.data_ptr(), 8, segs, 2, 0, torch.empty(2).data_ptr(), 2)
    assert (out == 0).all()
