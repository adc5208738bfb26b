"""pytest setup of the HDL suite: the helpers next to this file are importable from every test
module (and from the simulator, which inherits sys.path through PYTHONPATH)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
