"""Extraction past one machine: a compiled program as a Ray Data stage (`edgewise.scale.ray_stage`),
on the same per-line contract as `edgewise extract`. Needs the `ray` extra."""
