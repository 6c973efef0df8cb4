"""Suite-wide guards that hold before any test module is imported."""

from __future__ import annotations

import os

# LiteLLM (in the test extra, for its callback layer) fetches its model price map from the
# network at import unless told to read the copy it ships; no test may reach the network.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
