#!/usr/bin/env bash
# Step 8 of benchmarks/run_results.sh as it ran here (a fresh clone at e15a824, installed as the README says).
edgewise optimize --model local --optimizer mipro --train train --dev dev --budget 160 --out runs/prog
edgewise bench --models local --programs default,runs/prog --baseline default --split smoke --seed 0 --out runs/bench-smoke
