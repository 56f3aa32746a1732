#!/usr/bin/env bash
# Reproduces this folder's compiles: the recall levers on the 1.5B, the typed grammar among them, each
# judged against the program so far on dev, stratified by source (seed 0): dev-40/ on 40 dev
# episodes (--dev-size 40), dev-101/ on all 101 (the one shipped). The second reuses the first's
# replies from DSPy's cache. Coverage by entity, samples and the fact as a span are measured apart
# (../dev-conversational-levers-1.5b, ../samples-1.5b, ../compile-recall-1.5b): each is one or more
# full passes per alternative, beyond these runs' time on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/../../.."
LEVERS="type_signatures,typed_grammar,retype=unique,gleaning,fact_dates,date_guards,speaker_names"
edgewise optimize --model local/qwen2.5-coder-1.5b --optimizer program \
  --train train --dev dev --dev-size 40 --seed 0 --levers "$LEVERS" --out runs/program-recall-typed-dev40-1.5b
edgewise optimize --model local/qwen2.5-coder-1.5b --optimizer program \
  --train train --dev dev --seed 0 --levers "$LEVERS" --out runs/program-recall-typed-1.5b
