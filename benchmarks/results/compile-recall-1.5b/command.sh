#!/usr/bin/env bash
# Reproduces this folder's compile: the recall levers on the 1.5B, judged on the 24 dev episodes of
# --dev-size 24 --seed 0 (stratified by source), each against the program so far.
cd "$(dirname "$0")/../../.."
edgewise optimize --model local/qwen2.5-coder-1.5b --optimizer program \
  --train train --dev dev --dev-size 24 --seed 0 \
  --levers "type_signatures,retype,gleaning,fact_span,fact_dates,date_guards,speaker_names" \
  --out runs/program-recall-1.5b
