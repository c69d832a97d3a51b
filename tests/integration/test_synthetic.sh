#!/usr/bin/env bash
# A run under the model evaluator (KEVO_EVALUATOR=model:FILE) is marked synthetic wherever its
# results are shown: kevo run's summary, kevo show (text and --json), kevo report (text, --json,
# the HTML page) and kevo export (README.md, provenance.json). A run measured on a GPU is not.
set -u
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export KEVO_DB="$tmp/kevo.db"
cd "$tmp"
if ! "$KEVO" script <(echo 'require "kevo.archive"; require "kevo.recipe"') 2>/dev/null; then
  echo "SKIP: this build lacks kevo.archive or kevo.recipe, which kevo run needs" >&2; exit 77
fi
out="$tmp/out.txt"
t() { # t NAME EXPECTED_RC CMD...
  local name=$1 want=$2; shift 2
  "$@" >"$out" 2>&1; local rc=$?
  if [ "$rc" != "$want" ]; then
    echo "FAIL $name: exit $rc, want $want"; sed 's/^/  | /' "$out"; fail=1
  else echo "ok   $name"; fi
}
has() { grep -q -- "$1" "${2:-$out}" || { echo "FAIL: ${2:-output} lacks '$1'"; sed 's/^/  | /' "${2:-$out}"; fail=1; }; }

KEVO_EVALUATOR="model:$KEVO_SRC/examples/cost_model.lua" \
  t "a synthetic run" 0 "$KEVO" run "$KEVO_SRC/tests/integration/run_fixtures/toyscale.yaml" --max-evals 6
has "synthetic"
t "kevo show" 0 "$KEVO" show last
has "SYNTHETIC   every verdict and time of this run comes from the model evaluator"
has "best (synthetic): candidate"
has "(synthetic: speed-ups and times from the model evaluator)"
t "kevo show --json" 0 "$KEVO" show last --json
has '"synthetic":.*cost_model.lua'
t "kevo report" 0 "$KEVO" report last --html page.html
has "SYNTHETIC: every verdict and time"; has "over the reference (synthetic)"
has "computed    by the model evaluator"
has '<p class="synthetic">SYNTHETIC' page.html
has "<strong>Synthetic</strong>: computed by the model evaluator" page.html
grep -q "Measured on" page.html && { echo "FAIL: the page says Measured on"; fail=1; }
t "kevo report --json" 0 "$KEVO" report last --json
has '"synthetic":[[:space:]]*".*cost_model.lua"'
if "$KEVO" script <(echo 'require "kevo.cuda"') 2>/dev/null; then
  t "kevo export" 0 "$KEVO" export last ex
  has "note: SYNTHETIC"
  has "^\*\*SYNTHETIC.\*\*" ex/README.md
  has '"synthetic"' ex/provenance.json
  grep -q '"measured_on"' ex/provenance.json && { echo "FAIL: provenance says measured_on"; fail=1; }
else
  echo "skip kevo export: this build has no kevo.cuda"
fi

[ $fail = 0 ] && echo "all synthetic-marking tests passed"
exit $fail
