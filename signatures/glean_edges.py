"""`GleanEdges`: a continuation turn that asks for the edges the last reply missed.

The seed's `reflexion` prompt asks a second model call which facts are missing; GraphRAG's
gleaning asks the same model, in the same chat, to add what it missed. The second keeps the whole
first request as the conversation's prefix, so a server with a prompt cache evaluates only the new
turn. The reply schema leaves out the (source, type, target) triples already written
(`modules.gleaning`), so the model can only add.
"""

from __future__ import annotations

import dspy

from edgewise.signatures.replies import ExtractedEdge

EARLIER_TURNS = "earlier_turns"


class GleanEdges(dspy.Signature):
    """Some relationships between the ENTITIES that the CURRENT EPISODE states were missed in the last
    extraction. Add them now, under the same rules: only facts not already extracted above, each once,
    both ends from ENTITIES. Answer with an empty list when none were missed."""

    earlier_turns: list[dict[str, str]] = dspy.InputField(
        desc="the chat so far: the extraction request and the reply to it"
    )
    edges: list[ExtractedEdge] = dspy.OutputField(
        desc="the edges the last reply missed, each once; an empty list when none were missed"
    )
