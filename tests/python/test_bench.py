# SPDX-License-Identifier: GPL-2.0
"""python -m mprace.bench runs and writes its rows (the figures themselves are for the closing
notes and docs/python.md, not for a test: this machine's speed varies)."""
import csv
import os
import subprocess
import sys

import pytest


@pytest.mark.skipif(not os.access(os.environ.get("DMABENCH", ""), os.X_OK), reason="no dmabench built")
def test_bench_runs(tmp_path):
    out = tmp_path / "bench.csv"
    r = subprocess.run([sys.executable, "-m", "mprace.bench", "--dmabench", os.environ["DMABENCH"],
                        "--sizes", "1M", "--seconds", "0.05", "--reads", "50", "--csv", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader(open(out)))
    assert [x["what"] for x in rows] == ["stream", "read 4 KiB p50"]
    assert float(rows[0]["python"]) > 0 and float(rows[0]["cpp"]) > 0
    assert float(rows[1]["python"]) > 0 and float(rows[1]["cpp"]) > 0


@pytest.mark.skipif(not os.access(os.environ.get("DMABENCH", ""), os.X_OK), reason="no dmabench built")
def test_bench_net_runs(tmp_path):
    import mprace
    if not mprace.network_available():
        pytest.skip("this build has no network stage (no UCX)")
    out = tmp_path / "bench.csv"
    r = subprocess.run([sys.executable, "-m", "mprace.bench", "--dmabench", os.environ["DMABENCH"], "--net",
                        "--sizes", "256K", "--seconds", "0.05", "--reads", "50", "--csv", str(out)],
                       capture_output=True, text=True, timeout=300, env={**os.environ, "UCX_TLS": "tcp"})
    assert r.returncode == 0, r.stderr
    rows = {x["what"]: x for x in csv.DictReader(open(out))}
    assert float(rows["net"]["python"]) > 0 and float(rows["net"]["cpp"]) > 0


def test_bench_usage_errors():
    r = subprocess.run([sys.executable, "-m", "mprace.bench", "--dmabench", "/bin/true", "--sizes", "3"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "multiples of 4" in r.stderr
