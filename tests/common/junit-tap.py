# SPDX-License-Identifier: GPL-2.0
"""Prints pytest's JUnit XML (--junitxml) as TAP: one test point per test case, failures and
errors as "not ok", skips with their reason. Shared by the pytest suites (tests/hdl,
tests/python).  Usage: python junit-tap.py RESULTS.xml"""
import sys
import xml.etree.ElementTree as ET

cases = ET.parse(sys.argv[1]).getroot().iter("testcase")
points = []
for c in cases:
    name = c.get("classname", "").split(".")[-1] + "::" + c.get("name", "")
    bad = c.find("failure") if c.find("failure") is not None else c.find("error")
    skip = c.find("skipped")
    if bad is not None:
        points.append(f"not ok - {name}")
    elif skip is not None:
        points.append(f"ok - {name} # SKIP {skip.get('message', '')}".rstrip())
    else:
        points.append(f"ok - {name}")
print(f"1..{len(points)}")
for i, p in enumerate(points, 1):
    ok, rest = p.split(" - ", 1)
    print(f"{ok} {i} - {rest}")
