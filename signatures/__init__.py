"""The DSPy signatures that mirror the seed's three prompts, their variants, and the shapes a model
writes its reply in. The types they speak of live in `edgewise.domain`."""

from edgewise.signatures.extract_edge_attributes import ExtractEdgeAttributes
from edgewise.signatures.extract_edges import ExtractEdges
from edgewise.signatures.find_missing_facts import FindMissingFacts
from edgewise.signatures.replies import ExtractedEdge

__all__ = ["ExtractEdgeAttributes", "ExtractEdges", "ExtractedEdge", "FindMissingFacts"]
