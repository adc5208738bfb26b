#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Every C and C++ code block of the docs, built and run against the build tree (TAP).

A block with a main() is a program: it is compiled, linked with libpcidriver, libmprace and
libbufmgr and run on the virtual board; it must exit 0 within 60 s. A block without one is a
fragment of such a program: it is compiled as the body of a function that has `board`,
`engine`, `samples` and `keep_going` (the names the docs' fragments use), so that an API the
docs show cannot drift away from the headers.

Command lines of `mprace -d emu...` run as written; those of `dmabench` run on a short sweep
(a few options appended: later options win); those of `dmabench -d sim:` on two sizes with
sim:'s own defaults, skipped while the simulator environment (tests/hdl's venv) is not built.

A block that includes a CUDA header (bufmgr/cuda*.hpp, bufmgr/net_cuda.hpp) is built with the CUDA toolkit of the
build (DOCS_CUDA_HOME, from configure) and the static cudart, and skipped without one; it is
only run if it has a main(); one that includes bufmgr/net.hpp is linked with UCX
(DOCS_UCX_LIBS, from configure) and skipped without it. A fragment's #include lines go above
the function.

Usage: docs-examples.py TOP_SRCDIR TOP_BUILDDIR (environment: DOCS_CC, DOCS_CXX, DOCS_FLAGS,
DOCS_CUDA_HOME)
"""
import concurrent.futures
import glob
import os
import re
import shlex
import subprocess
import sys
import tempfile

top, build = sys.argv[1], sys.argv[2]
cc = shlex.split(os.environ.get("DOCS_CC", "cc"))
cxx = shlex.split(os.environ.get("DOCS_CXX", "c++"))
flags = shlex.split(os.environ.get("DOCS_FLAGS", ""))
incs = [f"-I{top}/{d}" for d in ("pcidriver/lib", "pcidriver/include", "spec/include",
                                 "libmprace/include", "libbufmgr/include")]
libdirs = [f"{build}/libmprace/.libs", f"{build}/pcidriver/lib/.libs"]
libs = [f"-L{d}" for d in libdirs] + [f"-Wl,-rpath,{d}" for d in libdirs] + \
    ["-lmprace", "-lpcidriver", "-pthread"]

cuda_home = os.environ.get("DOCS_CUDA_HOME", "")
cuda_flags = [f"-I{cuda_home}/include"] if cuda_home else []
cuda_libs = [f"-L{cuda_home}/lib64", "-lcudart_static", "-ldl", "-lrt"] if cuda_home else []
ucx_libs = shlex.split(os.environ.get("DOCS_UCX_LIBS", ""))

FRAGMENT = """#include <chrono>
#include <vector>
#include <bufmgr/bufmgr.hpp>
#include <bufmgr/mprace_transfer.hpp>
#include <mprace/mprace.hpp>

[[maybe_unused]] static void fragment(mprace::Board &board, mprace::DMAEngine &engine,
				      std::vector<float> &samples, bool keep_going)
{
	{
%s
	}
}

int main() { return 0; }
"""

docs = [f"{top}/README.md"] + sorted(glob.glob(f"{top}/docs/*.md"))
sim_ready = os.access(f"{build}/tests/hdl/.venv/bin/python", os.X_OK)
blocks = []
commands = []   # (doc, line, command, exit codes that pass; None: skipped)
for path in docs:
    text = open(path, encoding="utf-8").read()
    for m in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.S | re.M):
        line = text.count("\n", 0, m.start()) + 1
        doc = os.path.relpath(path, top)
        if m.group(1) in ("c", "cpp"):
            blocks.append((doc, line, m.group(1), m.group(2)))
        elif m.group(1) in ("", "sh"):
            body = re.sub(r"\\\n\s*", " ", m.group(2))   # join continued lines
            for k, cmd in enumerate(body.splitlines(), line + 1):
                if re.search(r"(^|\| )(\$ )?mprace -d emu", cmd):
                    commands.append((doc, k, re.sub(r"^\$ ", "", cmd), (0,)))
                elif re.match(r"(\$ )?dmabench( |$)", cmd):
                    # as written, on a short sweep (options given later win); 3: the GPU
                    # modes of the line had no GPU
                    cmd = re.sub(r"\s+#.*$", "", re.sub(r"^\$ ", "", cmd))
                    if re.search(r"(-d|--device)[ =]sim", cmd):
                        # the simulated RTL, timed in simulated time by its own defaults
                        commands.append((doc, k, cmd + " -s 4K:8K:2 --plot none --no-progress",
                                         (0,) if sim_ready else None))
                        continue
                    commands.append((doc, k, cmd + " -s 4K:64K:4 -t 0.005 -r 1 --plot none "
                                     "--no-progress", (0, 3)))

env = dict(os.environ)
env.setdefault("PCIDRIVER_BACKEND_PATH", f"{build}/vboard/.libs")
env.setdefault("MPRACE_SIM_BUILD", f"{build}/tests/hdl/sim_build/cosim")
cmd_env = dict(env, PATH=f"{build}/tools:" + env.get("PATH", ""))
cmd_env.pop("PCIDRIVER_DEVICE", None)   # the docs' "default board" is the tools' fallback


def check_block(tmp, n, doc, line, lang, code):
    """Compiles (and runs, for a program) one code block; returns its TAP line and comments."""
    name = f"{doc}:{line}"
    program = re.search(r"\bint\s+main\s*\(", code) is not None
    uses_cuda = re.search(r"#include\s*[<\"]bufmgr/(net_)?cuda", code) is not None
    if uses_cuda and not cuda_home:
        return [f"ok {n} - {name} # SKIP uses CUDA: this build has no CUDA toolkit"]
    uses_ucx = re.search(r"#include\s*[<\"]bufmgr/net\.hpp", code) is not None
    if uses_ucx and not ucx_libs:
        return [f"ok {n} - {name} # SKIP uses the network stage: this build has no UCX"]
    src = os.path.join(tmp, f"ex{n}.{'c' if lang == 'c' and program else 'cpp'}")
    with open(src, "w") as f:
        if program:
            f.write(code)
        else:
            hoisted = "".join(l + "\n" for l in code.splitlines() if l.startswith("#include"))
            body = "\n".join(l for l in code.splitlines() if not l.startswith("#include"))
            f.write(hoisted + FRAGMENT % body)
    exe = os.path.join(tmp, f"ex{n}")
    # a fragment's function is never called, so nothing of it reaches the linker: checking
    # it (templates instantiated) is all a build would do
    out = [src, "-o", exe] + libs + (cuda_libs if uses_cuda else []) + \
        (ucx_libs if uses_ucx else []) if program else ["-fsyntax-only", src]
    comp = (cc if src.endswith(".c") else cxx) + flags + incs + \
        (cuda_flags if uses_cuda else []) + \
        (["-std=gnu11"] if src.endswith(".c") else ["-std=c++17"]) + out
    r = subprocess.run(comp, capture_output=True, text=True)
    if r.returncode != 0:
        return [f"not ok {n} - {name}: {'program' if program else 'fragment'} does not compile"] + \
            [f"# {l}" for l in r.stderr.splitlines()[:15]]
    if not program:
        return [f"ok {n} - {name}: fragment compiles"]
    try:
        r = subprocess.run([exe], capture_output=True, text=True, timeout=60, env=env)
        rc = r.returncode
    except subprocess.TimeoutExpired:
        rc = "timeout"
    if rc == 0:
        return [f"ok {n} - {name}: program runs, exit 0"]
    return [f"not ok {n} - {name}: program exit {rc}"] + \
        [f"# {l}" for l in ((r.stdout + r.stderr).splitlines()[:10] if rc != "timeout" else [])]


def check_commands(tmp, first):
    """Runs the docs' command lines in order, in one directory (a later one may read what an
    earlier one wrote); returns the TAP lines and comments of each."""
    results = []
    for n, (doc, line, cmd, good) in enumerate(commands, first):
        if good is None:
            results.append([f"ok {n} - {doc}:{line}: `{cmd}` # SKIP no simulator environment yet"])
            continue
        try:
            r = subprocess.run(cmd, shell=True, cwd=tmp, capture_output=True, text=True,
                               timeout=60, env=cmd_env)
            rc = r.returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
        if rc in good:
            results.append([f"ok {n} - {doc}:{line}: `{cmd}` exits {rc}"])
        else:
            results.append([f"not ok {n} - {doc}:{line}: `{cmd}` exit {rc}"] +
                           [f"# {l}" for l in (r.stderr.splitlines()[:5] if rc != "timeout" else [])])
    return results


print(f"1..{len(blocks) + len(commands)}", flush=True)
# the blocks on every core (their compiles dominate), the command lines in order beside them;
# the checks look at exit codes, not at times; reported in order
with tempfile.TemporaryDirectory() as tmp, \
        concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
    cmd_dir = os.path.join(tmp, "commands")
    os.mkdir(cmd_dir)
    command_job = pool.submit(check_commands, cmd_dir, len(blocks) + 1)
    jobs = [pool.submit(check_block, tmp, n, *b) for n, b in enumerate(blocks, 1)]
    for job in jobs:
        print("\n".join(job.result()), flush=True)
    for lines in command_job.result():
        print("\n".join(lines), flush=True)
