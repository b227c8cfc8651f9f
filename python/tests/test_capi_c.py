"""The C ABI from C: capi/testdata/misuse.c, compiled against the
libfibergen.h and libfibergen.so that make python-lib builds, checks what
the library refuses (sizes that wrap, NULL outputs, trailing JSON, a
gradient released twice or raw, a checkpoint resumed twice)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from fibergen import _lib

ROOT = Path(__file__).resolve().parents[2]


def test_misuse_from_c(generated, tmp_path):
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler")
    lib = _lib.library_path()
    if not lib.exists() or not lib.with_suffix(".h").exists():
        pytest.skip(f"{lib} and its header are not built (make python-lib)")
    exe = tmp_path / "misuse"
    subprocess.run([cc, "-Wall", "-Werror", "-o", str(exe), str(ROOT / "capi" / "testdata" / "misuse.c"),
                    f"-I{lib.parent}", str(lib), f"-Wl,-rpath,{lib.parent}"], check=True)
    r = subprocess.run([str(exe), str(generated), str(tmp_path / "state")], capture_output=True, text=True)
    assert r.returncode == 0 and "FAIL" not in r.stdout, r.stdout + r.stderr
    assert r.stdout.count("ok ") >= 20, r.stdout
