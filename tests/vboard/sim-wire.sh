#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The socket protocol of "sim:" is defined once, in hdl/cosim/wire.py; the C side's numbers
# (vboard/src/sim_wire.h) must be the same (TAP).
exec "${PYTHON:-python3}" - "$top_srcdir" <<'PY'
import importlib.util
import re
import sys

top = sys.argv[1]
spec = importlib.util.spec_from_file_location("wire", f"{top}/hdl/cosim/wire.py")
wire = importlib.util.module_from_spec(spec)
spec.loader.exec_module(wire)
text = open(f"{top}/vboard/src/sim_wire.h", encoding="utf-8").read()
c = {m[0]: int(m[1], 0) for m in re.findall(r"#define SIM_(\w+) (0x[0-9a-f]+|\d+)u?l*l*", text)}
names = [n for n in dir(wire) if n.isupper() and n != "HDR"]
checks = [("HDR_SIZE", wire.HDR.size)] + [(n, getattr(wire, n)) for n in names]
print(f"1..{len(checks) + 1}")
for i, (name, value) in enumerate(checks, 1):
    ok = c.get(name) == value
    print(f"{'ok' if ok else 'not ok'} {i} - SIM_{name}: sim_wire.h {c.get(name)}, wire.py {value}")
extra = sorted(set(c) - {n for n, _ in checks})
print(f"{'not ok' if extra else 'ok'} {len(checks) + 1} - sim_wire.h defines nothing wire.py does not"
      + (f": {extra}" if extra else ""))
PY
