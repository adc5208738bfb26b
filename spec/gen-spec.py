#!/usr/bin/env python3
"""Generate every file that restates spec/dma-engine.toml: the C header, the VHDL package,
the Python module of the cocotb tests, the kernel module's ID table and the doc tables.

    spec/gen-spec.py            rewrite the generated files in the source tree
    spec/gen-spec.py --check    exit 1 (and show a diff) if any generated file differs
    spec/gen-spec.py --check --tap   the same, reported as TAP (one test per file)

The generated files are committed so that building needs no Python.
"""
import argparse
import difflib
import os
import pprint
import sys

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib  # type: ignore

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPEC = "spec/dma-engine.toml"
C_HEADER = "spec/include/mprace-spec/engine_spec.h"
VHDL_PKG = "spec/vhdl/engine_spec_pkg.vhd"
PY_MODULE = "spec/python/engine_spec.py"
PY_PACKAGE_SPEC = "python/src/mprace/_spec.py"
KERNEL_IDS = "spec/kernel/pcidriver_ids.h"
DOC = "docs/dma-engine.md"
GENERATED = "Generated from spec/dma-engine.toml by spec/gen-spec.py: do not edit."
DOC_BEGIN = "<!-- BEGIN GENERATED from spec/dma-engine.toml by spec/gen-spec.py: do not edit -->"
DOC_END = "<!-- END GENERATED -->"


def load(top):
    with open(os.path.join(top, SPEC), "rb") as f:
        return tomllib.load(f)


def fields(reg):
    return [dict(name=f[0], lsb=f[1], width=f[2], doc=f[3]) for f in reg.get("fields", [])]


def mask(width, lsb=0):
    return ((1 << width) - 1) << lsb


# ----------------------------------------------------------------------------- C

def gen_c(s):
    e = s["engine"]
    out = []
    w = out.append
    w(f"/* {GENERATED} */")
    w("/* SPDX-License-Identifier: LGPL-2.1-or-later */")
    w("#ifndef MPRACE_ENGINE_SPEC_H")
    w("#define MPRACE_ENGINE_SPEC_H")
    w("")
    w("#include <stdint.h>")
    w("")
    w("/* Engine constants */")
    for key in ["magic", "version_major", "version_minor", "bar", "bar0_size", "granule",
                "max_desc_len", "desc_size", "ring_min_entries", "ring_max_entries",
                "page_size", "pattern_word_bytes"]:
        w(f"#define MP_ENGINE_{key.upper()} 0x{e[key]:X}u")
    w("")
    w("/* PCI identity of our boards */")
    for k, v in s["ids"].items():
        w(f"#define MP_ID_{k.upper()} 0x{v:04X}u")
    w("")
    w("/* Global registers: byte offsets in BAR0 */")
    for r in s["register"]:
        w(f"#define MP_REG_{r['name']} 0x{r['offset']:03X}u /* {r['access']}: {r['doc']} */")
        for f in fields(r):
            p = f"MP_REG_{r['name']}_{f['name']}"
            w(f"#define {p}_SHIFT {f['lsb']}u")
            w(f"#define {p}_MASK 0x{mask(f['width'], f['lsb']):08X}u")
    w("")
    w("/* Channels */")
    for c in s["channel"]:
        w(f"#define MP_CH_{c['name']} {c['index']}u")
        w(f"#define MP_CH_{c['name']}_BASE 0x{c['base']:03X}u")
    w(f"#define MP_CH_COUNT {len(s['channel'])}u")
    bases = [c["base"] for c in s["channel"]]
    step = bases[1] - bases[0]
    w(f"#define MP_CH_BASE(ch) (0x{bases[0]:03X}u + (ch) * 0x{step:02X}u)")
    w("")
    w("/* Per-channel registers: byte offsets from MP_CH_BASE(ch) */")
    for r in s["channel_register"]:
        w(f"#define MP_CHREG_{r['name']} 0x{r['offset']:02X}u /* {r['access']}: {r['doc']} */")
        for f in fields(r):
            p = f"MP_CHREG_{r['name']}_{f['name']}"
            w(f"#define {p}_SHIFT {f['lsb']}u")
            w(f"#define {p}_MASK 0x{mask(f['width'], f['lsb']):08X}u")
    w("")
    w("/* Channel states (STATUS.STATE) */")
    w("#define MP_STATE_IDLE 0u")
    w("#define MP_STATE_RUNNING 1u")
    w("#define MP_STATE_ERROR 2u")
    w("")
    w("/* Test logic selections (TEST_CONTROL) */")
    w("#define MP_C2H_SOURCE_USER 0u")
    w("#define MP_C2H_SOURCE_PATTERN 1u")
    w("#define MP_C2H_SOURCE_LOOPBACK 2u")
    w("#define MP_H2C_SINK_USER 0u")
    w("#define MP_H2C_SINK_CHECKER 1u")
    w("#define MP_H2C_SINK_LOOPBACK 2u")
    w("")
    w("/* Descriptor: byte offsets of its 32-bit words */")
    for d in s["descriptor"]:
        w(f"#define MP_DESC_{d['name']} 0x{d['offset']:02X}u /* {d['owner']}: {d['doc']} */")
        for f in fields(d):
            p = f"MP_DESC_{d['name']}_{f['name']}"
            w(f"#define {p}_SHIFT {f['lsb']}u")
            w(f"#define {p}_MASK 0x{mask(f['width'], f['lsb']):08X}u")
    w("")
    w("/* The descriptor as it lies in host memory (little-endian words). */")
    w("struct mp_hw_desc {")
    for d in s["descriptor"]:
        w(f"\tuint32_t {d['name'].lower()};")
    w("};")
    w("")
    w("#ifdef __cplusplus")
    w("static_assert(sizeof(struct mp_hw_desc) == MP_ENGINE_DESC_SIZE, \"descriptor size\");")
    w("#else")
    w("_Static_assert(sizeof(struct mp_hw_desc) == MP_ENGINE_DESC_SIZE, \"descriptor size\");")
    w("#endif")
    w("")
    w("/* Error codes */")
    for er in s["error"]:
        w(f"#define MP_ERR_{er['name']} {er['code']}u /* {er['doc']} */")
    w("")
    w("/* Interrupt sources: bit in IRQ_STATUS/IRQ_ENABLE, and MSI vector when enough are granted */")
    for i in s["irq"]:
        w(f"#define MP_IRQ_{i['name']}_BIT {i['bit']}u")
        w(f"#define MP_IRQ_{i['name']}_VECTOR {i['vector']}u")
    w(f"#define MP_IRQ_SOURCES {len(s['irq'])}u")
    w("")
    w("/* Name of an error code, for messages. */")
    w("static inline const char *mp_engine_error_name(unsigned int code)")
    w("{")
    w("\tswitch (code) {")
    for er in s["error"]:
        w(f"\tcase MP_ERR_{er['name']}: return \"{er['name']}\";")
    w("\tdefault: return \"UNKNOWN\";")
    w("\t}")
    w("}")
    w("")
    w("/* Register names, for tools that access registers by name. */")
    w("struct mp_reg_name { const char *name; uint32_t offset; const char *access; };")
    w("static const struct mp_reg_name mp_reg_names[] = {")
    for r in s["register"]:
        w(f"\t{{ \"{r['name']}\", 0x{r['offset']:03X}u, \"{r['access']}\" }},")
    for c in s["channel"]:
        for r in s["channel_register"]:
            w(f"\t{{ \"{c['name']}_{r['name']}\", 0x{c['base'] + r['offset']:03X}u, \"{r['access']}\" }},")
    w("};")
    w("#define MP_REG_NAME_COUNT (sizeof(mp_reg_names) / sizeof(mp_reg_names[0]))")
    w("")
    w("#endif /* MPRACE_ENGINE_SPEC_H */")
    return "\n".join(out) + "\n"


# ----------------------------------------------------------------------------- VHDL

def gen_vhdl(s):
    e = s["engine"]
    out = []
    w = out.append
    w("-- SPDX-License-Identifier: GPL-2.0")
    w(f"-- {GENERATED}")
    w("-- The register map, descriptor layout and error codes of the DMA engine (docs/dma-engine.md).")
    w("library ieee;")
    w("use ieee.std_logic_1164.all;")
    w("")
    w("package engine_spec_pkg is")
    w("")
    w(f"  constant MAGIC_c            : std_logic_vector(31 downto 0) := x\"{e['magic']:08X}\";")
    w(f"  constant VERSION_MAJOR_c    : natural := {e['version_major']};")
    w(f"  constant VERSION_MINOR_c    : natural := {e['version_minor']};")
    w(f"  constant BAR0_SIZE_c        : natural := {e['bar0_size']};")
    w(f"  constant GRANULE_c          : natural := {e['granule']};")
    w(f"  constant MAX_DESC_LEN_c     : natural := {e['max_desc_len']};")
    w(f"  constant DESC_SIZE_c        : natural := {e['desc_size']};")
    w(f"  constant RING_MIN_ENTRIES_c : natural := {e['ring_min_entries']};")
    w(f"  constant RING_MAX_ENTRIES_c : natural := {e['ring_max_entries']};")
    w(f"  constant PAGE_SIZE_c        : natural := {e['page_size']};")
    w("")
    w("  -- Global registers (byte offsets in BAR0)")
    for r in s["register"]:
        w(f"  constant REG_{r['name']}_c : natural := 16#{r['offset']:03X}#;")
        for f in fields(r):
            w(f"  constant {r['name']}_{f['name']}_LSB_c : natural := {f['lsb']};")
            w(f"  constant {r['name']}_{f['name']}_WIDTH_c : natural := {f['width']};")
    w("")
    w("  -- Channels")
    for c in s["channel"]:
        w(f"  constant CH_{c['name']}_c : natural := {c['index']};")
        w(f"  constant CH_{c['name']}_BASE_c : natural := 16#{c['base']:03X}#;")
    w("")
    w("  -- Per-channel registers (byte offsets from the channel base)")
    for r in s["channel_register"]:
        w(f"  constant CHREG_{r['name']}_c : natural := 16#{r['offset']:02X}#;")
        for f in fields(r):
            w(f"  constant CH_{r['name']}_{f['name']}_LSB_c : natural := {f['lsb']};")
            w(f"  constant CH_{r['name']}_{f['name']}_WIDTH_c : natural := {f['width']};")
    w("")
    w("  -- Channel states")
    w("  constant STATE_IDLE_c    : natural := 0;")
    w("  constant STATE_RUNNING_c : natural := 1;")
    w("  constant STATE_ERROR_c   : natural := 2;")
    w("")
    w("  -- Descriptor words (byte offsets)")
    for d in s["descriptor"]:
        w(f"  constant DESC_{d['name']}_c : natural := 16#{d['offset']:02X}#;")
        for f in fields(d):
            w(f"  constant DESC_{d['name']}_{f['name']}_LSB_c : natural := {f['lsb']};")
            w(f"  constant DESC_{d['name']}_{f['name']}_WIDTH_c : natural := {f['width']};")
    w("")
    w("  -- Error codes")
    for er in s["error"]:
        w(f"  constant ERR_{er['name']}_c : natural := {er['code']};")
    w("")
    w("  -- Interrupt sources (IRQ_STATUS bit, MSI vector)")
    for i in s["irq"]:
        w(f"  constant IRQ_{i['name']}_BIT_c : natural := {i['bit']};")
        w(f"  constant IRQ_{i['name']}_VECTOR_c : natural := {i['vector']};")
    w("")
    w("end package engine_spec_pkg;")
    return "\n".join(out) + "\n"


# ----------------------------------------------------------------------------- Python

def gen_python(s):
    """The whole spec as a dict literal, for the cocotb tests (no TOML parser needed)."""
    return "\n".join([
        f'"""{GENERATED}"""',
        "# SPDX-License-Identifier: GPL-2.0",
        "",
        f"SPEC = {pprint.pformat(s, width=100, sort_dicts=False)}",
        "",
    ])


def gen_python_package(s):
    """The register map and codes the Python package uses: every register by its C name
    (channel registers as C2H_CONTROL, ...) with offset, access, reset value, fields and doc."""
    e = s["engine"]
    regs = {}
    for r in s["register"]:
        regs[r["name"]] = (r["offset"], r["access"], r.get("reset"), tuple(tuple(f[:3]) for f in r.get("fields", [])), r["doc"])
    for c in s["channel"]:
        for r in s["channel_register"]:
            regs[f"{c['name']}_{r['name']}"] = (c["base"] + r["offset"], r["access"], r.get("reset"),
                                                tuple(tuple(f[:3]) for f in r.get("fields", [])), r["doc"])
    lines = [
        f'"""{GENERATED}"""',
        "# SPDX-License-Identifier: LGPL-2.1-or-later",
        "",
        f"MAGIC = 0x{e['magic']:08X}",
        f"VERSION_MAJOR = {e['version_major']}",
        f"VERSION_MINOR = {e['version_minor']}",
        f"BAR0_SIZE = {e['bar0_size']}",
        f"GRANULE = {e['granule']}",
        f"MAX_DESC_LEN = {e['max_desc_len']}",
        "",
        "# name: (byte offset in BAR0, access, reset value or None, fields as (name, lsb, width), doc)",
        f"REGISTERS = {pprint.pformat(regs, width=100, sort_dicts=False)}",
        "",
        "# engine error code: (name, doc)",
        f"ERRORS = {pprint.pformat({x['code']: (x['name'], x['doc']) for x in s['error']}, width=100, sort_dicts=False)}",
        "",
    ]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- kernel

def gen_kernel_ids(s):
    """The PCI IDs of our boards, as entries of pcidriver.ko's pci_device_id table."""
    i = s["ids"]
    return "\n".join([
        f"/* {GENERATED} */",
        "/* SPDX-License-Identifier: GPL-2.0 */",
        "/* The boards pcidriver.ko binds by itself (others: driver_override or new_id). */",
        f"PCIDRV_BOARD_ID(0x{i['vendor']:04x}, 0x{i['device']:04x}, "
        f"0x{i['subsystem_vendor']:04x}, 0x{i['subsystem_device']:04x})",
        "",
    ])


# ----------------------------------------------------------------------------- Markdown

def field_rows(items, base=0):
    rows = []
    for r in items:
        off = base + r["offset"]
        acc = r.get("access", r.get("owner", ""))
        rows.append(f"| 0x{off:03X} | {r['name']} | {acc} | {r['doc']} |")
        for f in fields(r):
            bits = f"{f['lsb']}" if f["width"] == 1 else f"{f['lsb'] + f['width'] - 1}:{f['lsb']}"
            rows.append(f"| | `[{bits}]` {f['name']} | | {f['doc']} |")
    return rows


def gen_doc_tables(s):
    e = s["engine"]
    out = [DOC_BEGIN, ""]
    w = out.append
    w("### Constants")
    w("")
    w("| name | value |")
    w("|---|---|")
    for k, v in e.items():
        w(f"| {k} | {hex(v) if isinstance(v, int) and v > 9 else v} |")
    w("")
    w("### Global registers (BAR0)")
    w("")
    w("| offset | register / `[bits]` field | access | meaning |")
    w("|---|---|---|---|")
    out.extend(field_rows(s["register"]))
    w("")
    w("### Channel registers")
    w("")
    for c in s["channel"]:
        w(f"Channel {c['name']} (index {c['index']}) at BAR0 + 0x{c['base']:03X}: {c['doc']}")
        w("")
    w("| offset in channel | register / `[bits]` field | access | meaning |")
    w("|---|---|---|---|")
    out.extend(field_rows(s["channel_register"]))
    w("")
    w("### Descriptor (32 bytes, little-endian)")
    w("")
    w("| offset | word / `[bits]` field | written by | meaning |")
    w("|---|---|---|---|")
    out.extend(field_rows(s["descriptor"]))
    w("")
    w("### Error codes")
    w("")
    w("| code | name | meaning |")
    w("|---|---|---|")
    for er in s["error"]:
        w(f"| {er['code']} | {er['name']} | {er['doc']} |")
    w("")
    w("### Interrupt sources")
    w("")
    w("| IRQ_STATUS bit | source | MSI vector (when at least 4 are granted; else 0) |")
    w("|---|---|---|")
    for i in s["irq"]:
        w(f"| {i['bit']} | {i['name']} | {i['vector']} |")
    w("")
    w(DOC_END)
    return "\n".join(out)


def splice_doc(text, tables):
    b = text.find(DOC_BEGIN)
    en = text.find(DOC_END)
    if b < 0 or en < 0:
        raise SystemExit(f"{DOC}: generated-section markers not found")
    return text[:b] + tables + text[en + len(DOC_END):]


def outputs(top):
    s = load(top)
    with open(os.path.join(top, DOC), encoding="utf-8") as f:
        doc = f.read()
    return {C_HEADER: gen_c(s), VHDL_PKG: gen_vhdl(s), PY_MODULE: gen_python(s),
            PY_PACKAGE_SPEC: gen_python_package(s),
            KERNEL_IDS: gen_kernel_ids(s), DOC: splice_doc(doc, gen_doc_tables(s))}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare instead of writing")
    ap.add_argument("--tap", action="store_true", help="with --check: print TAP on stdout")
    ap.add_argument("--top", default=TOP, help="source tree (default: this script's tree)")
    a = ap.parse_args()
    bad = 0
    outs = outputs(a.top)
    if a.tap:
        print(f"1..{len(outs)}")
    for n, (rel, want) in enumerate(outs.items(), 1):
        path = os.path.join(a.top, rel)
        have = open(path, encoding="utf-8").read() if os.path.exists(path) else ""
        if a.tap:
            print(f"{'ok' if have == want else 'not ok'} {n} - {rel} matches {SPEC}")
        if have == want:
            continue
        if a.check:
            bad += 1
            print(f"DRIFT: {rel} differs from what {SPEC} generates:", file=sys.stderr)
            sys.stderr.writelines(difflib.unified_diff(
                want.splitlines(True), have.splitlines(True), "generated", rel, n=1))
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(want)
            print(f"wrote {rel}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
