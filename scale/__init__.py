"""Extraction past one machine, on the same per-line contract as `edgewise extract`.

`ray_driver.extract_files` is `edgewise extract --engine ray` as a Python function (files in, one
results file out); `ray_stage.extract` is a compiled program as a Ray Data stage (a dataset in, a
dataset out); `ray_files` reads the input and writes the results file. Those need the `ray` extra.
`rows` (what a dataset row means) and `batch_report` (the run's summary, shared with the local
engine) need no Ray.
"""
