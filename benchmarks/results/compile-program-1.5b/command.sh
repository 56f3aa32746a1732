#!/usr/bin/env bash
# Reproduces this folder: the program search for the 1.5B on 40 dev episodes (shipped as
# optimize/compiled/qwen2.5-coder-1.5b-program).
cd "$(dirname "$0")/../../.."
edgewise optimize --model local --optimizer program --dev-size 40 \
  --levers type_signatures,fact_dates,precision,input_order --budget 260 --out runs/program-1.5b
