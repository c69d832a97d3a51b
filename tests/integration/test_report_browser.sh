#!/usr/bin/env bash
# The report page in a real browser (headless Chromium): its script ran without an error, drew
# both charts with one point per verified evaluation, and made the table sortable; a screenshot
# renders. Installs Debian's chromium when missing (as root); skips (77) loudly only if it cannot.
set -u
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! command -v chromium >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing chromium (test-only dependency)..."
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >"$tmp/apt.log" 2>&1 ||
      { apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >"$tmp/apt.log" 2>&1; }
  fi
  if ! command -v chromium >/dev/null; then
    echo "SKIP: chromium is not installed and could not be installed (apt-get install chromium as root)" >&2
    tail -5 "$tmp/apt.log" 2>/dev/null >&2
    exit 77
  fi
fi
fail=0
db=$tmp/kevo.db
"$KEVO" script "$KEVO_SRC/tests/integration/report_fixture.lua" "$db" >"$tmp/fixture" || { echo "FAIL: fixture"; exit 1; }
read -r _ run1 _ _ < <(sed -n 1p "$tmp/fixture")
read -r _ run2 _ _ < <(sed -n 2p "$tmp/fixture")
"$KEVO" report "$run1" --db "$db" --html "$tmp/r1.html" >/dev/null || { echo "FAIL: report"; exit 1; }
"$KEVO" report "$run2" --db "$db" --html "$tmp/r2.html" >/dev/null || { echo "FAIL: report run 2"; exit 1; }

browse() { # browse PAGE OUT: the DOM after scripts ran, console output in OUT.err
  timeout 120 chromium --headless --disable-gpu --no-sandbox --user-data-dir="$tmp/profile" \
    --enable-logging=stderr --v=0 --virtual-time-budget=5000 --dump-dom "file://$1" >"$2" 2>"$2.err"
}
check() { # check FILE PATTERN WHAT
  grep -qE -- "$2" "$1" || { echo "FAIL: $3 (no /$2/ in $(basename "$1"))"; fail=1; return; }
  echo "ok   $3"
}
browse "$tmp/r1.html" "$tmp/dom1.html" || { echo "FAIL: chromium exit $?"; tail "$tmp/dom1.html.err"; exit 1; }
check "$tmp/dom1.html" '<body data-rendered="1"' "the page's script ran to the end"
check "$tmp/dom1.html" 'id="js-errors" data-errors="0"' "no script errors recorded"
check "$tmp/dom1.html" 'id="chart-evals"[^>]*data-points="23"' "evaluations chart: 23 verified points"
check "$tmp/dom1.html" 'id="chart-tokens"[^>]*data-points="23"' "tokens chart: 23 verified points"
check "$tmp/dom1.html" 'id="chart-evals"[^>]*data-fails="19"' "evaluations chart: 19 failures marked"
n=$(grep -o '<circle' "$tmp/dom1.html" | wc -l)
[ "$n" = 46 ] && echo "ok   46 circles drawn" || { echo "FAIL: $n circles, want 46"; fail=1; }
grep -q '<path d="M' "$tmp/dom1.html" && echo "ok   best-so-far line drawn" || { echo "FAIL: no best-so-far path"; fail=1; }
if grep -E "Uncaught|CONSOLE\(|console error" "$tmp/dom1.html.err" | grep -v "dbus" | head -5 | grep .; then
  echo "FAIL: console errors above"; fail=1
else echo "ok   no console errors"; fi
if grep -q '<script>alert' "$tmp/dom1.html"; then echo "FAIL: hostile script in the DOM"; fail=1; fi

browse "$tmp/r2.html" "$tmp/dom2.html" || { echo "FAIL: chromium exit on run 2"; exit 1; }
check "$tmp/dom2.html" '<body data-rendered="1"' "run without tokens or a best kernel renders"
check "$tmp/dom2.html" 'id="js-errors" data-errors="0"' "run 2: no script errors"
check "$tmp/dom2.html" 'no LLM tokens spent' "run 2: the tokens chart says why it is empty"

timeout 120 chromium --headless --disable-gpu --no-sandbox --user-data-dir="$tmp/profile" --window-size=1300,2000 \
  --screenshot="$tmp/r1.png" "file://$tmp/r1.html" >/dev/null 2>&1
size=$(stat -c %s "$tmp/r1.png" 2>/dev/null || echo 0)
[ "$size" -gt 50000 ] && echo "ok   screenshot ($size bytes)" || { echo "FAIL: screenshot $size bytes"; fail=1; }
[ -n "${KEVO_REPORT_SCREENSHOT:-}" ] && cp "$tmp/r1.png" "$KEVO_REPORT_SCREENSHOT"
exit $fail
