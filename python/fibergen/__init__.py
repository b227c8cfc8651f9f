"""fibergen from Python: generated DP optimizers as torch.optim.Optimizer
(``fibergen.torch``) and the privacy accountant (``fibergen.privacy``),
both driving fibergen's Go runtime through libfibergen.so."""

from ._lib import FibergenError, NonFiniteExample, NonFiniteGradient

__all__ = ["FibergenError", "NonFiniteExample", "NonFiniteGradient"]
__version__ = "0.1.0"
