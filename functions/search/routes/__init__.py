"""The search API's routers, one per audience: `files` (IAM), `me` (signed-in people), `docs`; and
`models`, the response models the routes return, imported when a route first answers."""

from __future__ import annotations

from typing import Any


class _ResponseModels:
    """`search.models`, imported when one of its models is first named.

    Powertools reads a route's return type (`Response[models.FileListPage]`, a string until then) when the
    route first answers: importing the handler builds no response model.
    """

    def __getattr__(self, name: str) -> Any:
        from search import models

        return getattr(models, name)


models = _ResponseModels()
