"""Shared test setup: edgewise's offline defaults load before LiteLLM, and no test reaches a network."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import edgewise  # noqa: F401  (sets LiteLLM's offline model map before anything imports it)

TESTS = Path(__file__).resolve().parent
# The support modules (fakes, the mock server, paths) sit in tests/; the tests sit in folders that
# mirror the packages, and some reuse another test module's episodes by its module name.
TEST_FOLDERS = sorted(str(folder) for folder in TESTS.iterdir() if any(folder.glob("test_*.py")))
sys.path[:0] = [str(TESTS), *TEST_FOLDERS]

from fakes import ScriptedLM


@pytest.fixture
def episode_fields() -> dict:
    """A small episode in the seed's JSON shape."""
    return {
        "episodeContent": "Alice joined Acme Corp in March 2021. She lives in Berlin with her husband Bob.",
        "previousEpisodes": ["Alice talked about her new job."],
        "entities": [
            {"name": "Alice", "type": "Person"},
            {"name": "Acme Corp", "type": "Organization"},
            {"name": "Berlin", "type": "Place"},
            {"name": "Bob", "type": "Person"},
        ],
        "referenceTime": "2025-04-30T12:00:00Z",
        "edgeTypes": [
            {"name": "WORKS_AT", "description": "a person works for an organization"},
            {"name": "MARRIED_TO", "description": "spouses", "symmetric": True},
        ],
    }


@pytest.fixture
def scripted_lm():
    """Factory for ScriptedLM so tests state their replies inline."""
    return ScriptedLM
