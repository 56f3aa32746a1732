"""The default vocabulary: relationship types a program offers when an episode lists none.

Graphiti's default and many CORE spaces send no edge types. With none, a small model is shown no type
but the one its reply schema names as an example, and writes that one for every edge (WORKS_AT from a
speaker to her car, to a game, to an event). A short list of the relationships personal memory is
made of (people, work, study, home, family, pets, care, things liked, owned and attended) gives it
names to choose from; the decoding grammar then keeps it to them, as with a vocabulary the user
gives. It applies only to an episode without edge types; one that has them is left as it is.
"""

from __future__ import annotations

from typing import Final

from edgewise.domain.types import EdgeType

_TYPES: Final[tuple[tuple[str, str, bool], ...]] = (
    ("WORKS_AT", "A person works for, is employed by, runs or volunteers at an organization.", False),
    ("STUDIES_AT", "A person is a student at a school, university or course.", False),
    ("TEACHES_AT", "A person teaches at or is on the staff of a school, university or studio.", False),
    ("WORKS_ON", "A person works on, leads or contributes to a project or product.", False),
    ("MEMBER_OF", "A person belongs to a club, team, band, party or community group.", False),
    ("LIVES_IN", "A person lives in a city, district or country (not a trip or visit).", False),
    ("BORN_IN", "A person was born in a place.", False),
    ("VISITED", "A person travelled to or visited a place.", False),
    ("LOCATED_IN", "An organization, school, venue or place is located in a place.", False),
    ("PART_OF", "An organization, group or place is part of a larger one.", False),
    ("MARRIED_TO", "Two people are married to each other.", True),
    ("DATING", "Two people are in a romantic relationship (dating, partners, engaged), not married.", True),
    ("PARENT_OF", "The source is the mother or father of the target.", False),
    ("SIBLING_OF", "Two people are brothers or sisters.", True),
    ("RELATIVE_OF", "Two people are family other than parent, sibling or spouse.", True),
    ("FRIEND_OF", "Two people are friends.", True),
    ("KNOWS", "Two people know each other, with no closer relationship stated.", True),
    ("COLLEAGUE_OF", "Two people work together or are called colleagues or teammates.", True),
    ("ROOMMATE_OF", "Two people who are not family or partners share a home.", True),
    ("NEIGHBOR_OF", "Two people live next door to or on the same street as each other.", True),
    ("MANAGES", "The source is the manager, boss or team lead of the target.", False),
    ("MENTORS", "The source teaches, coaches or mentors the target person.", False),
    ("TREATED_BY", "A patient (person or pet) is treated by a doctor, therapist or vet.", False),
    ("OWNS_PET", "A person owns or keeps the pet.", False),
    ("OWNS", "A person owns a thing (a car, a house, an instrument).", False),
    ("USES", "A person uses a product, tool or service.", False),
    ("LIKES", "A person likes, loves or enjoys something or someone.", False),
    ("DISLIKES", "A person dislikes, hates or avoids something or someone.", False),
    ("ATTENDS", "A person attends, attended or will attend an event.", False),
    ("PARTICIPATES_IN", "A person takes part in an activity, game, group or event.", False),
    ("CREATED", "A person made, wrote, painted, built or founded something.", False),
)

DEFAULT_EDGE_TYPES: Final[tuple[EdgeType, ...]] = tuple(
    EdgeType(name=name, description=description, symmetric=symmetric)
    for name, description, symmetric in _TYPES
)
"""The default vocabulary, as an episode's `edgeTypes` would list it."""
