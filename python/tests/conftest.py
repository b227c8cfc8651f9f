"""Fixtures: the optimizers built by fibergen build (with their host
kernels) and the fibergen command, from $FIBERGEN_GENERATED and
$FIBERGEN_BIN (make python-test sets both), else built here with Go."""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))

# The resume record of this test session's own (and its subprocesses'),
# not the user's: set before libfibergen.so is loaded, whose Go runtime
# reads the environment once.
_STATE = tempfile.mkdtemp(prefix="fibergen-pytest-state-")
os.environ["FIBERGEN_STATE_DIR"] = _STATE
atexit.register(shutil.rmtree, _STATE, True)

# The compile cache of this session's own, likewise: an optimizer opened by
# name compiles once per session, and never into the user's cache.
_CACHE = tempfile.mkdtemp(prefix="fibergen-pytest-cache-")
os.environ["FIBERGEN_CACHE"] = _CACHE
atexit.register(shutil.rmtree, _CACHE, True)

OPTIMIZERS = sorted(p.stem for p in (ROOT / "optimizers").glob("*.dsl"))


@pytest.fixture(scope="session")
def fibergen_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if env := os.environ.get("FIBERGEN_BIN"):
        return Path(env)
    out = tmp_path_factory.mktemp("bin") / "fibergen"
    subprocess.run(["go", "build", "-o", str(out), "./cmd/fibergen"], cwd=ROOT, check=True)
    return out


@pytest.fixture(scope="session")
def generated(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    if env := os.environ.get("FIBERGEN_GENERATED"):
        return Path(env)
    fibergen_bin: Path = request.getfixturevalue("fibergen_bin")
    out = tmp_path_factory.mktemp("generated")
    dsl = [str(ROOT / "optimizers" / f"{n}.dsl") for n in OPTIMIZERS]
    subprocess.run([str(fibergen_bin), "build", "-o", str(out), *dsl], check=True, stdout=subprocess.DEVNULL)
    return out
