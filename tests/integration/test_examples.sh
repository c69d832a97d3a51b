#!/usr/bin/env bash
# examples/ as a newcomer runs them (issue 15 item 15): the strategy and model files are modules
# and say so when run with kevo script (exit 2, with the command that uses them); llm_chat.lua
# without a model says how to configure one (no traceback); kevo script --llm names the model;
# the walkthrough runs to its end.
set -u
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
out="$tmp/out.txt"
t() { # t NAME EXPECTED_RC CMD...
  local name=$1 want=$2; shift 2
  "$@" >"$out" 2>&1; local rc=$?
  if [ "$rc" != "$want" ]; then
    echo "FAIL $name: exit $rc, want $want"; sed 's/^/  | /' "$out"; fail=1
  else echo "ok   $name"; fi
}
has() { grep -q -- "$1" "$out" || { echo "FAIL: output lacks '$1'"; sed 's/^/  | /' "$out"; fail=1; }; }
lacks() { ! grep -q -- "$1" "$out" || { echo "FAIL: output has '$1'"; sed 's/^/  | /' "$out"; fail=1; }; }
ex="$KEVO_SRC/examples"
unset KEVO_LLM KEVO_LLM_BASE_URL KEVO_LLM_KEY_ENV

t "compose.lua run directly" 2 "$KEVO" script "$ex/compose.lua"
has "compose.lua is a strategy, not a script: kevo run loads it"; has "kevo run softmax --strategy"
t "custom_strategy.lua run directly" 2 "$KEVO" script "$ex/custom_strategy.lua"
has "custom_strategy.lua is a strategy, not a script"
t "cost_model.lua run directly" 2 "$KEVO" script "$ex/cost_model.lua"
has "is a model for the model evaluator, not a script"; has "KEVO_EVALUATOR=model:"
t "llm_chat.lua without a model" 2 "$KEVO" script "$ex/llm_chat.lua"
has "no language model is configured"; has "kevo script --llm openai:gpt-4.1"; lacks "traceback"
printf 'print("KEVO_LLM=" .. tostring(os.getenv("KEVO_LLM")), ...)\n' > show.lua
t "kevo script --llm" 0 "$KEVO" script --llm vllm:tiny show.lua x
has "KEVO_LLM=vllm:tiny	x"
t "kevo script --llm without a value" 2 "$KEVO" script --llm
has "takes PROVIDER:MODEL"
t "the walkthrough" 0 "$KEVO" script "$ex/walkthrough.lua"
has "== step 8: the result"; lacks "compile_error at"

[ $fail = 0 ] && echo "all example tests passed"
exit $fail
