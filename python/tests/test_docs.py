"""The README's PyTorch quickstart and its Fashion-MNIST command run as written."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_readme_quickstart(tmp_path):
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Training in PyTorch"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert 'ft.Optimizer(model.parameters(), "fiber"' in code  # by name: compiled into the session's cache
    script = tmp_path / "quickstart.py"
    script.write_text(code)
    out = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    eps, delta = ast.literal_eval(out.stdout.strip())  # (ε, δ) after 16 steps
    assert 0 < eps <= 3.0 and 0 < delta < 1


@pytest.mark.skipif(not Path("/usr/share/datasets/fashion-mnist").exists(),
                    reason="dataset-fashion-mnist is not installed")
def test_fashion_mnist_example():
    readme = (ROOT / "README.md").read_text()
    cmd = re.search(r"`python3 (examples/fashion_mnist/train.py [^`]*)`", readme).group(1).split()
    assert cmd[1:3] == ["--optimizer", "fiber"]  # by name, as written
    out = subprocess.run([sys.executable, *cmd, "--epochs", "0.1", "--threads", "2"],
                         cwd=ROOT, capture_output=True, text=True, timeout=600, env=dict(os.environ))
    assert out.returncode == 0, out.stderr
    assert "σ_DP" in out.stdout and "test accuracy" in out.stdout
