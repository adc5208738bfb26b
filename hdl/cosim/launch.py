# SPDX-License-Identifier: GPL-2.0
"""Starts the simulated board for libpcidriver's "sim:" device (docs/cosim.md).

Run by the application's libpcidriver (vboard/src/sim_backend.c) with the venv's Python and the
two sockets of sim_board.py as inherited file descriptors (MPRACE_SIM_FDS). It analyses the RTL
with GHDL into a cache directory named after the sources' paths and contents (once per change of the RTL;
a lock serialises concurrent first uses), then replaces itself with the simulator, so that the
application's child is the simulator itself.

Environment: MPRACE_SIM_BUILD (cache directory; default $XDG_CACHE_HOME/mprace or ~/.cache/mprace),
MPRACE_SIM_WAVE (write a GHW waveform there), and the options sim_board.py reads.
"""
import fcntl
import hashlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
import rtl_build  # noqa: E402  (the RTL's source list, one place; next to this file)

# the top for each PCIe block (the sim: option block=)
TOPLEVELS = {"xilinx": "mprace_dma_top", "ptile": "mprace_dma_top_ptile",
             "htile": "mprace_dma_top_htile"}


def cache_root():
    # absolute: the simulator runs in the build directory, so a path relative to where the
    # application started would name another place there
    if os.environ.get("MPRACE_SIM_BUILD"):
        return Path(os.environ["MPRACE_SIM_BUILD"]).resolve()
    base = os.environ.get("XDG_CACHE_HOME") or (
        os.path.join(os.environ["HOME"], ".cache") if os.environ.get("HOME") else None)
    if not base:
        base = os.path.join(tempfile.gettempdir(), f"mprace-{os.getuid()}")
    return (Path(base) / "mprace").resolve()


def build(toplevel):
    digest = hashlib.sha256(toplevel.encode() + b"\0")
    for src in rtl_build.SOURCES:
        # the path too: GHDL's mcode build keeps no code, it reads the sources again when the
        # simulation starts, so a library is only valid while its sources stay where they were
        digest.update(str(src).encode() + b"\0" + src.read_bytes())
    bdir = cache_root() / f"sim-{digest.hexdigest()[:16]}"
    bdir.mkdir(parents=True, exist_ok=True)
    with open(bdir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (bdir / ".built").exists():
            from cocotb_tools.runner import get_runner
            get_runner("ghdl").build(sources=rtl_build.SOURCES, hdl_toplevel=toplevel,
                                     build_dir=bdir, build_args=["--std=08"], always=True)
            (bdir / ".built").touch()
    return bdir


def main():
    # what fails here ends up, last line first, in the application's pd_open_error()
    if not shutil.which("ghdl"):
        sys.exit("sim: ghdl not found on PATH: ./bootstrap.sh check installs it")
    try:
        import cocotb_tools.config as cfg
        import find_libpython
    except ImportError as e:
        sys.exit(f"sim: {e.name} missing in {sys.executable}: ./bootstrap.sh check builds the venv")
    block = os.environ.get("MPRACE_SIM_BLOCK", "xilinx")
    if block not in TOPLEVELS:
        sys.exit(f"sim: block {block}: xilinx, ptile or htile")
    toplevel = TOPLEVELS[block]
    try:
        bdir = build(toplevel)
    except Exception as e:      # GHDL's own messages are in the log above this line
        sys.exit(f"sim: analysing the RTL failed ({e})")
    env = dict(os.environ)
    libpython = find_libpython.find_libpython()
    if not libpython:
        sys.exit("sim: cannot find libpython for the simulator's Python")
    env.update({
        "GPI_USERS": f"{libpython};{cfg.pygpi_entry_point()}",
        "PYGPI_PYTHON_BIN": sys.executable,
        "PYTHONPATH": os.pathsep.join([str(HERE)] + sys.path),
        "PATH": env.get("PATH", "/usr/bin:/bin") + os.pathsep + str(cfg.libs_dir),
        "COCOTB_TOPLEVEL": toplevel,
        "COCOTB_TEST_MODULES": "sim_board",
        "TOPLEVEL_LANG": "vhdl",
        "COCOTB_TRUST_INERTIAL_WRITES": "1",
        "COCOTB_RESULTS_FILE": os.devnull,
        "COCOTB_LOG_LEVEL": env.get("COCOTB_LOG_LEVEL", "WARNING"),
        "PYTHONDONTWRITEBYTECODE": "1",
    })
    width = env.get("MPRACE_SIM_WIDTH", "256")
    if width not in ("256", "512"):
        sys.exit(f"sim: width {width}: the engine is 256 or 512 bits wide")
    cmd = ["ghdl", "-r", "--work=top", "--std=08", f"--workdir={bdir}", toplevel,
           f"-gdata_w_g={width}", "--vpi=" + cfg.lib_entry("vpi", "ghdl"),
           "--ieee-asserts=disable-at-0"]
    if env.get("MPRACE_SIM_WAVE"):
        cmd.append(f"--wave={env['MPRACE_SIM_WAVE']}")
    os.chdir(bdir)
    os.execvpe(cmd[0], cmd, env)


if __name__ == "__main__":
    main()
