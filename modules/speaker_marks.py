"""Speaker marks in the program: the extraction asks who states each edge, and edges marked quoted go.

With `ProgramOptions.speaker_marks` the extraction signature is `signatures.speaker_marks`' (an added
instruction and a `statedBy` mark on every reply edge), and the edges the model marks `quoted` are
dropped before post-processing, each with a `marked_quoted` warning. The mark rides on the seed
reply shape's edges (and the attributed edges of `in-extraction`, which are that shape), which
reach post-processing as the model wrote them; the compact shapes and the fact span rebuild their
edges, so they take no mark. Edges a gleaning turn adds carry no mark and are kept.
"""

from __future__ import annotations

import dspy

from edgewise.domain.types import ExtractionWarning
from edgewise.modules.call_context import CallContext
from edgewise.modules.options import ProgramOptions
from edgewise.signatures.replies import ExtractedEdge
from edgewise.signatures.speaker_marks import EDGES_FIELD, is_quoted, with_speaker_marks


def speaker_signature(signature: type[dspy.Signature], options: ProgramOptions) -> type[dspy.Signature]:
    """The extraction predictor's signature with speaker marks when the options ask for them.

    Raises ValueError for a reply shape whose edges the program rebuilds (the compact shapes), which
    would lose the mark before it is read.
    """
    if not options.speaker_marks:
        return signature
    (item,) = signature.output_fields[EDGES_FIELD].annotation.__args__
    if not issubclass(item, ExtractedEdge):  # a program option that does not fit, as EdgeExtractor says
        raise ValueError("speaker marks need the seed reply shape (output_shape 'seed')")  # noqa: TRY004
    return with_speaker_marks(signature)


def drop_marked_quoted(raw: list[ExtractedEdge], context: CallContext) -> list[ExtractedEdge]:
    """`raw` less the edges the model marked as stated by quoted text, each with a warning."""
    kept: list[ExtractedEdge] = []
    for edge in raw:
        if is_quoted(edge):
            context.warn(
                ExtractionWarning(
                    code="marked_quoted",
                    message="dropped: the model marked it as stated by quoted, forwarded or instruction "
                    "text, not the speaker",
                    edge=edge.model_dump(),
                )
            )
        else:
            kept.append(edge)
    return kept
