# SPDX-License-Identifier: GPL-2.0
"""Fixtures of the Python package's suite (run-python-tests.sh builds the package first)."""
import numpy as np
import pytest

import mprace


@pytest.fixture
def board():
    with mprace.open("emu:") as b:
        yield b


def pattern(seed: int, words: int) -> np.ndarray:
    """The engine's test pattern (spec: word n after seed s is s + n mod 2^32)."""
    return (np.uint64(seed) + np.arange(words, dtype=np.uint64)).astype(np.uint32)
