# SPDX-License-Identifier: GPL-2.0
"""Every ```python block of docs/python.md runs (in a fresh interpreter, on the virtual board).
A block whose first lines say "# needs: MODULE ..." is skipped where a MODULE is not installed
("gpu": where no CUDA GPU can be used; "network": where the build has no network stage)."""
import importlib.util
import os
import re
import subprocess
import sys

import pytest

import mprace

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "python.md")


def blocks():
    text = open(DOC, encoding="utf-8").read()
    for m in re.finditer(r"^```python\n(.*?)^```", text, re.S | re.M):
        line = text.count("\n", 0, m.start()) + 1
        yield pytest.param(m.group(1), id=f"python.md:{line}")


@pytest.mark.parametrize("code", list(blocks()))
def test_doc_example_runs(code, tmp_path):
    for line in re.findall(r"^# needs: (.+)$", code, re.M):
        for need in line.split():
            if need == "gpu":
                if not mprace.cuda_available():
                    pytest.skip(mprace.cuda_unavailable_reason())
            elif need == "network":
                if not mprace.network_available():
                    pytest.skip("this build has no network stage (no UCX)")
            elif importlib.util.find_spec(need) is None:
                pytest.skip(f"{need} is not installed")
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
