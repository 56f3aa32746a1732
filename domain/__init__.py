"""What edgewise speaks of: entities, edge types, edges and results (`types`), the episode input
contract (`episode`), labeled episodes (`gold`), the name rule (`names`), the per-file check of
signature types (`file_types`) and the error vocabulary (`errors`).

Kept apart from `signatures/` (the prompts) so that every layer, the signatures included, can
import these types without importing DSPy's signatures. Import from the module that holds a name;
the public API is `edgewise` itself.
"""
