#!/usr/bin/env bash
# ctest, then a list of the tests it skipped with each one's reason (the SKIP line the test
# printed before exiting 77) and their count: ctest itself shows only `***Skipped`, and "skip
# loudly" has to be true where people look (scripts/test.sh and CI call this).
# usage: scripts/ctest.sh BUILD_DIR [ctest options...]; exits with ctest's status.
set -uo pipefail
dir=${1:?usage: scripts/ctest.sh BUILD_DIR [ctest options...]}
shift
junit="$(cd "$dir" && pwd)/ctest-results.xml"
rm -f "$junit"
ctest --test-dir "$dir" --output-junit "$junit" "$@"
rc=$?
if [ -f "$junit" ]; then
  python3 - "$junit" <<'PY' || echo "scripts/ctest.sh: could not read $junit" >&2
import sys
import xml.etree.ElementTree as ET

skipped = []
for case in ET.parse(sys.argv[1]).getroot().iter("testcase"):
    if case.get("status") != "notrun" and case.find("skipped") is None:
        continue
    out = case.findtext("system-out") or ""
    lines = [l.strip() for l in out.splitlines() if l.strip()]
    said = [l for l in lines if l.upper().startswith("SKIP")]
    reason = (said or lines or ["(the test printed no reason)"])[-1]
    skipped.append((case.get("name"), reason))
print("== %d test%s skipped%s" % (len(skipped), "" if len(skipped) == 1 else "s",
                                   ":" if skipped else ""))
for name, reason in skipped:
    print("   %s: %s" % (name, reason))
PY
fi
exit $rc
