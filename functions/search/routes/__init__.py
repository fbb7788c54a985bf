"""The search API's routers, one per audience: `files` (IAM), `me` (signed-in people), `docs`; and, imported
when a route first uses them, `models`, the response models the routes return, and `upload_bodies`, the
upload routes' body models."""

from __future__ import annotations

import importlib
from typing import Any


class _OnFirstUse:
    """The module `name`, imported when one of its names is first used.

    Powertools reads a route's return type (`Response[models.FileListPage]`, a string until then) when the
    route first answers, and an upload route reads its body model when it answers: importing the handler
    builds no response model and no body model.
    """

    def __init__(self, name: str) -> None:
        self.module_name = name

    def __getattr__(self, name: str) -> Any:
        return getattr(importlib.import_module(self.module_name), name)


models = _OnFirstUse("search.models")
upload_bodies = _OnFirstUse("search.upload_bodies")
