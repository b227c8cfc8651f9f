"""fibergen's privacy accountant (Go package privacy) from Python.

The same accountants, PLD (the default) and RDP, that ``fibergen privacy``
and the runtime's budgets use, reached through libfibergen.so: not a second
implementation. These functions know no optimizer, so under ``sampling="cyclic"``
they account independent noise; a correlated-noise optimizer's run (a noise
block) is accounted by its own ``set_budget`` and ``spent()``, or by
``fibergen privacy --optimizer``.
"""

from __future__ import annotations

from typing import NamedTuple

from . import _lib

__all__ = ["Guarantee", "epsilon", "sigma", "delta"]


class Guarantee(NamedTuple):
    """A run's noise multiplier and the (ε, δ)-DP it gives over its steps."""
    sigma: float
    epsilon: float
    delta: float
    order: float  # the Rényi order the bound comes from (rdp), 0 (pld)
    steps: int
    accountant: str  # "pld" or "rdp"


def _ask(dataset_size: int, batch_size: int, epochs: float, delta: float, sampling: str, accountant: str,
         **q: float) -> Guarantee:
    a = _lib.privacy({"dataset_size": dataset_size, "batch_size": batch_size, "epochs": epochs,
                      "delta": delta, "sampling": sampling, "accountant": accountant, **q})
    return Guarantee(a["sigma"], a["epsilon"], a["delta"], a["order"], a["steps"], a["accountant"])


def epsilon(sigma: float, *, dataset_size: int, batch_size: int, epochs: float, delta: float = 0.0,
            sampling: str = "poisson", accountant: str = "pld") -> Guarantee:
    """The (ε, δ) that epochs passes over dataset_size examples in batches of
    batch_size (Poisson sampling: the expected size) spend at noise
    multiplier sigma; δ = 1/N^1.1 when delta is 0. ``accountant`` is "pld"
    (privacy loss distributions, the tighter) or "rdp"."""
    return _ask(dataset_size, batch_size, epochs, delta, sampling, accountant, sigma=sigma)


def sigma(epsilon: float, *, dataset_size: int, batch_size: int, epochs: float, delta: float = 0.0,
          sampling: str = "poisson", accountant: str = "pld") -> Guarantee:
    """The smallest noise multiplier whose run spends at most epsilon, and
    what it spends."""
    return _ask(dataset_size, batch_size, epochs, delta, sampling, accountant, epsilon=epsilon)


def delta(sigma: float, epsilon: float, *, dataset_size: int, batch_size: int, epochs: float,
          sampling: str = "poisson", accountant: str = "pld") -> Guarantee:
    """The smallest δ of an (epsilon, δ) guarantee that the run gives at noise
    multiplier sigma (the converse of ``epsilon``)."""
    return _ask(dataset_size, batch_size, epochs, 0.0, sampling, accountant, sigma=sigma, epsilon=epsilon)
