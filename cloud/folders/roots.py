"""Where batches live on a server: the batch root holding the people's folders (NEXUS_BATCH_ROOT) and the
folder of the batches' state, read from the environment. Apart from the batch service so that whatever only
resolves paths in people's folders (a session's reference models) needs nothing of how batches run."""
from __future__ import annotations

import os
from dataclasses import dataclass

ROOT_ENV = "NEXUS_BATCH_ROOT"
STATE_ENV = "NEXUS_BATCH_STATE"
DEFAULT_STATE = ".nexus-batches"


class NotConfigured(ValueError):
    """The server has no batch root."""


@dataclass(frozen=True)
class Roots:
    root: str  # real path of the batch root
    state: str  # real path of the folder holding one state folder per batch

    @classmethod
    def from_env(cls) -> Roots:
        raw = os.environ.get(ROOT_ENV, "").strip()
        if not raw:
            raise NotConfigured(f"batches are not configured on this server: an admin sets {ROOT_ENV} to the "
                                "folder holding the models")
        root = os.path.realpath(raw)
        if not os.path.isdir(root):
            raise NotConfigured(f"the batch root ({ROOT_ENV}) is not a folder on this server")
        state = os.path.realpath(os.environ.get(STATE_ENV, "").strip() or os.path.join(root, DEFAULT_STATE))
        return cls(root, state)

    def state_dir(self, batch_id: str) -> str:
        return os.path.join(self.state, batch_id)
