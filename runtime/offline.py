"""Process-wide defaults that keep edgewise offline unless the user says otherwise.

DSPy and LiteLLM fetch a model price map from the internet on first use; edgewise runs on offline
machines, so it asks them to use their bundled copy (a user can still set the variables to "False").
"""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
