"""The ranks of test_ranks_agree: each opens an optimizer as its scenario
says for its rank — the ranks differing in one thing — and writes what
happened (the error raised, if any, and how long it took) for the test."""

from __future__ import annotations

import datetime
import json
import sys
import time
from pathlib import Path
from typing import Any, Callable

import torch
import torch.distributed as dist

import fibergen.torch as ft


def params(out_features: int = 4) -> list[torch.nn.Parameter]:
    torch.manual_seed(0)
    return list(torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.Linear(5, out_features)).parameters())


def opener(gen: Path, rank: int, *, groups: Callable[[list], Any] = lambda ps: ps, out: int = 4,
           **kwargs: Any) -> Callable[[], ft.Optimizer]:
    return lambda: ft.Optimizer(groups(params(out)), gen / "fiber", process_group=dist.group.WORLD, **kwargs)


def scenario(name: str, rank: int, gen: Path) -> Callable[[], Any]:
    """What rank does in scenario name: rank 1 differs from rank 0 in one thing."""
    one = rank == 1
    two_groups = lambda lr: (lambda ps: [{"params": ps[:2]}, {"params": ps[2:], "lr": lr}])  # noqa: E731
    if name == "seed_none_vs_int":
        return opener(gen, rank, seed=42 if one else None)
    if name == "seeds_differ":
        return opener(gen, rank, seed=43 if one else 42)
    if name == "lr_differs":
        return opener(gen, rank, seed=1, groups=two_groups(2e-3 if one else 1e-3))
    if name == "sizes_differ":
        return opener(gen, rank, seed=1, out=5 if one else 4)
    if name == "options_differ":
        return opener(gen, rank, seed=1, allow_unstable=one)
    if name == "secure_differs":
        return opener(gen, rank, secure=one)
    if name == "fails_on_one_rank":
        return opener(gen, rank, seed=1, **({"no_such_hyper": 1.0} if one else {}))
    if name == "dp_differs":
        def open_and_set_dp() -> None:
            opt = opener(gen, rank, seed=1)()
            opt.set_dp(clip=1.0, noise_multiplier=0.5 if one else 1.0, expected_batch_size=16)
        return open_and_set_dp
    raise SystemExit(f"no scenario {name}")


def main() -> None:
    rank, rdv, name, out, gen = sys.argv[1:6]
    # A hang shows as the test's timeout, long before gloo's default 30 minutes.
    dist.init_process_group("gloo", init_method=f"file://{rdv}", rank=int(rank), world_size=2,
                            timeout=datetime.timedelta(seconds=120))
    run = scenario(name, int(rank), Path(gen))
    start = time.monotonic()
    try:
        run()
        error = None
    except Exception as e:
        error = f"{type(e).__name__}: {e}"
    took = time.monotonic() - start
    (Path(out) / f"{name}-{rank}.json").write_text(json.dumps({"error": error, "seconds": took}))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
