"""Programs by name: the compiled-program artifact (save, load, the shipped ones) and the names a
command or `edgewise.load` accepts (the seed and Graphiti baselines, `default`, a compiled program).

Inference needs only this package to turn a name into a ready program; the optimizer writes the
artifacts it reads.
"""
