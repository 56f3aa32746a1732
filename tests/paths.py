"""Where the tests find the repository and their fixtures, written once, so that a test file can
sit in any folder of `tests/`."""

from __future__ import annotations

from pathlib import Path
from typing import Final

TESTS: Final = Path(__file__).resolve().parent
ROOT: Final = TESTS.parent
FIXTURES: Final = TESTS / "fixtures"
