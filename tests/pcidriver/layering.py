#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The layers of docs/architecture.md, checked (TAP):

* every #include "..." of a layer resolves in that layer or one below it (spec/ at the
  bottom; libpcidriver; the virtual board beside the kernel backend; libmprace; libbufmgr;
  the tools) - nothing includes from a layer above or beside it;
* each installed header folder holds one layer's headers (mprace-spec/ the spec's, mprace/
  libmprace's, vboard/ the virtual board's, pcidriver/ libpcidriver's), and nothing in the
  tree includes the deprecated paths kept for one release (mprace/vboard.h,
  mprace/engine_spec.h, mprace/pattern.h);
* the co-simulation runtime (hdl/cosim, installed on its own) never reaches into the HDL tests
  (tests/hdl) or outside the layout it is installed in (hdl/, spec/);
* the built libpcidriver and libmprace contain no virtual board code and do not depend on
  its library: an application that never names "emu:" carries no simulator;
* a static build of libpcidriver (its sources compiled without -fPIC, as for libpcidriver.a)
  calls no dlopen: a static application gets exactly the backends it links.

Usage: layering.py TOP_SRCDIR TOP_BUILDDIR
"""
import os
import re
import subprocess
import sys
import tempfile

top, build = sys.argv[1], sys.argv[2]

# layer -> (source dirs, include dirs it may use besides its own)
SPEC = ["spec/include"]
PCIDRIVER = ["pcidriver/lib", "pcidriver/include"]
LAYERS = {
    "spec": (["spec/include"], []),
    "pcidriver/lib": (["pcidriver/lib"], ["pcidriver/include"] + SPEC),
    "vboard": (["vboard"], ["vboard/src", "vboard/include"] + PCIDRIVER + SPEC),
    "libmprace": (["libmprace"], ["libmprace/include", "libmprace/src"] + PCIDRIVER + SPEC),
    "libbufmgr": (["libbufmgr/include"], ["libbufmgr/include", "libmprace/include"] +
                  PCIDRIVER + SPEC),
    # the tools register the virtual board at link time (its public header only)
    "tools": (["tools"], ["tools/common", "libbufmgr/include", "libmprace/include",
                          "vboard/include"] + PCIDRIVER + SPEC),
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

results = []


def check(ok, name, why=""):
    results.append((ok, name, why))


for layer, (srcs, incs) in LAYERS.items():
    bad = []
    for src in srcs:
        for root, _, files in os.walk(os.path.join(top, src)):
            for f in files:
                if not f.endswith((".c", ".h", ".cpp", ".hpp", ".cu", ".cuh")):
                    continue
                path = os.path.join(root, f)
                with open(path, encoding="utf-8") as fh:
                    text = fh.read()
                for inc in INCLUDE.findall(text):
                    if inc == "config.h":
                        continue   # configure's, in the build tree's top
                    dirs = [root] + [os.path.join(top, d) for d in [src] + incs]
                    if not any(os.path.isfile(os.path.join(d, inc)) for d in dirs):
                        bad.append(f"{os.path.relpath(path, top)}: \"{inc}\"")
    check(not bad, f"layering: {layer} includes only from itself and the layers below",
          "; ".join(bad[:5]))

# Installed header folders: one per layer (the folders under each layer's include directory).
FOLDERS = {"spec/include": ["mprace-spec"], "libmprace/include": ["mprace"],
           "vboard/include": ["vboard"]}
bad = []
for inc, want in FOLDERS.items():
    have = sorted(d for d in os.listdir(os.path.join(top, inc))
                  if os.path.isdir(os.path.join(top, inc, d)))
    if have != want:
        bad.append(f"{inc} holds {have}, expected {want}")
DEPRECATED = re.compile(r'#\s*include\s+["<](mprace/(?:vboard|engine_spec|pattern)\.h)[">]')
for root, dirs, files in os.walk(top):
    dirs[:] = [d for d in dirs if d not in (".git", "build", "compat") and not d.startswith("build-")]
    for f in files:
        if f.endswith((".c", ".h", ".cpp", ".hpp", ".cu", ".cuh")):
            with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
                for m in DEPRECATED.findall(fh.read()):
                    bad.append(f"{os.path.relpath(os.path.join(root, f), top)} includes {m}")
check(not bad, "layering: one layer per installed header folder, no deprecated include paths",
      "; ".join(bad[:5]))

# hdl/cosim: imports only its own modules, the generated spec (../../spec/python) and
# installed packages; no path into the HDL tests (tests/hdl) or above the installed layout.
cosim = os.path.join(top, "hdl", "cosim")
bad = []
own = {f[:-3] for f in os.listdir(cosim) if f.endswith(".py")}
for f in sorted(os.listdir(cosim)):
    if not f.endswith(".py"):
        continue
    with open(os.path.join(cosim, f), encoding="utf-8") as fh:
        text = fh.read()
    code = re.sub(r'("""|\'\'\')(.|\n)*?\1', "", text)   # docstrings may name the tests
    code = re.sub(r"#.*", "", code)
    if re.search(r'"tests"|hdl/tests|tests/hdl|parents\[[3-9]\]', code):
        bad.append(f"{f}: reaches outside hdl/cosim, hdl/rtl and spec/")
    for mod in re.findall(r"^\s*(?:from|import)\s+(\w+)", code, re.M):
        if mod in ("mprace_tb", "hdl_runner", "conftest") or mod.startswith("test_"):
            bad.append(f"{f}: imports {mod}")
check(not bad, "layering: hdl/cosim never reaches into the HDL tests", "; ".join(bad[:5]))


def dynsyms(lib):
    out = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True)
    return out.stdout if out.returncode == 0 else None


def needed(lib):
    out = subprocess.run(["objdump", "-p", lib], capture_output=True, text=True)
    return re.findall(r"NEEDED\s+(\S+)", out.stdout)


for name, lib in [("libpcidriver", "pcidriver/lib/.libs/libpcidriver.so"),
                  ("libmprace", "libmprace/.libs/libmprace.so")]:
    path = os.path.join(build, lib)
    if not os.path.exists(path):
        results.append((None, f"layering: {name} has no simulator code", "no shared build"))
        continue
    syms = dynsyms(path) or ""
    emu = [l.split()[-1] for l in syms.splitlines() if re.search(r"\b(emu_|mp_vboard)", l)]
    deps = [d for d in needed(path) if "vboard" in d]
    check(syms != "" and not emu and not deps, f"layering: {name} has no simulator code",
          f"symbols {emu[:5]}, needs {deps}")

# libpcidriver as a static archive would be built: no PIC, so no plugin loader.
cc = os.environ.get("DOCS_CC", "cc").split()
srcs = [os.path.join(top, "pcidriver/lib", f) for f in ("pcidriver.c", "backend_registry.c",
                                                         "backend_kernel.c")]
objs = []
with tempfile.TemporaryDirectory() as tmp:
    ok = True
    for src in srcs:
        obj = os.path.join(tmp, os.path.basename(src) + ".o")
        r = subprocess.run(cc + ["-c", "-O2", "-D_GNU_SOURCE", '-DPD_BACKEND_DIR="/nonexistent"',
                                 f"-I{top}/pcidriver/lib", f"-I{top}/pcidriver/include",
                                 src, "-o", obj], capture_output=True, text=True)
        ok = ok and r.returncode == 0
        objs.append(obj)
    undefined = ""
    if ok:
        r = subprocess.run(["nm", "-u"] + objs, capture_output=True, text=True)
        undefined = r.stdout
    check(ok and "dlopen" not in undefined and "emu_" not in undefined,
          "layering: static libpcidriver loads no plugins (no dlopen)",
          "did not compile" if not ok else "references dlopen")

print(f"1..{len(results)}")
for i, (ok, name, why) in enumerate(results, 1):
    if ok is None:
        print(f"ok {i} - {name} # SKIP {why}")
    else:
        print(f"{'ok' if ok else 'not ok'} {i} - {name}")
        if not ok and why:
            print(f"# {why}")
