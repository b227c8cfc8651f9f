"""The README's PyTorch quickstart and examples/torch_cnn run as written."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_readme_quickstart(generated, tmp_path):
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Training in PyTorch"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert '"generated/fiber"' in code
    # The quickstart opens generated/fiber, which make build writes; here the
    # test's build of it stands in, nothing else changes.
    script = tmp_path / "quickstart.py"
    script.write_text(code.replace('"generated/fiber"', repr(str(generated / "fiber"))))
    out = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    eps, delta = ast.literal_eval(out.stdout.strip())  # (ε, δ) after 16 steps
    assert 0 < eps <= 3.0 and 0 < delta < 1


@pytest.mark.skipif(not Path("/usr/share/datasets/fashion-mnist").exists(),
                    reason="dataset-fashion-mnist is not installed")
def test_torch_cnn_example(generated):
    out = subprocess.run([sys.executable, str(ROOT / "examples/torch_cnn/train.py"), "--optimizer",
                          str(generated / "fiber"), "--epochs", "0.1", "--batch", "256"],
                         cwd=ROOT, capture_output=True, text=True, timeout=600, env=dict(os.environ))
    assert out.returncode == 0, out.stderr
    assert "σ_DP" in out.stdout and "test accuracy" in out.stdout
