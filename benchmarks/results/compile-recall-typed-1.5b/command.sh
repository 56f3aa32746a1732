#!/usr/bin/env bash
# Reproduces this folder's compile: the recall levers on the 1.5B, the typed grammar among them, judged
# on the 40 dev episodes of --dev-size 40 --seed 0 (stratified by source), each against the program so
# far. Three server slots, for the samples lever (k replies per request).
set -euo pipefail
cd "$(dirname "$0")/../../.."
edgewise optimize --model local/qwen2.5-coder-1.5b --optimizer program \
  --train train --dev dev --dev-size 40 --seed 0 --local-slots 3 \
  --levers "formulation=entities,type_signatures,typed_grammar,retype,gleaning,samples,fact_span,fact_dates,date_guards,speaker_names" \
  --out runs/program-recall-typed-1.5b
