"""Progress on a terminal (rich): the backfill's objects listed, written, skipped and rate; the
migration's items scanned, updated, already placed and skipped; index-names' phase and counts."""

from __future__ import annotations

import time
from types import TracebackType

from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn

from file_index.write.name_sync import NameSyncCounts
from file_search_admin.backfill import BackfillCounts
from file_search_admin.migrate import MigrateCounts


class BackfillProgress:
    """A live line on stderr; `enabled=False` (not a terminal, or --json) shows nothing at all."""

    def __init__(self, *, enabled: bool, console: Console | None = None) -> None:
        self._progress = Progress(
            SpinnerColumn(),
            TextColumn("[bold]{task.description}"),
            TextColumn("listed {task.fields[listed]:>10,}"),
            TextColumn("written {task.fields[written]:>10,}"),
            TextColumn("skipped {task.fields[skipped]:>10,}"),
            TextColumn("{task.fields[rate]:>8,.0f} objects/s"),
            TimeElapsedColumn(),
            console=console or Console(stderr=True),
            disable=not enabled,
        )
        self._task: TaskID | None = None
        self._started = time.monotonic()

    def __enter__(self) -> BackfillProgress:
        self._progress.start()
        self._started = time.monotonic()
        self._task = self._progress.add_task("backfill", total=None, listed=0, written=0, skipped=0, rate=0.0)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._progress.stop()

    def update(self, counts: BackfillCounts) -> None:
        if self._task is None:
            return
        elapsed = time.monotonic() - self._started
        self._progress.update(
            self._task,
            listed=counts.listed,
            written=counts.written,
            skipped=counts.skipped,
            rate=counts.listed / elapsed if elapsed > 0 else 0.0,
        )


class MigrateProgress:
    """A live line on stderr for `migrate`; `enabled=False` shows nothing at all."""

    def __init__(self, *, enabled: bool, console: Console | None = None) -> None:
        self._progress = Progress(
            SpinnerColumn(),
            TextColumn("[bold]{task.description}"),
            TextColumn("scanned {task.fields[scanned]:>10,}"),
            TextColumn("updated {task.fields[updated]:>10,}"),
            TextColumn("already {task.fields[already]:>10,}"),
            TextColumn("skipped {task.fields[skipped]:>8,}"),
            TimeElapsedColumn(),
            console=console or Console(stderr=True),
            disable=not enabled,
        )
        self._task: TaskID | None = None

    def __enter__(self) -> MigrateProgress:
        self._progress.start()
        self._task = self._progress.add_task(
            "migrate", total=None, scanned=0, updated=0, already=0, skipped=0
        )
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._progress.stop()

    def update(self, counts: MigrateCounts) -> None:
        if self._task is not None:
            self._progress.update(
                self._task,
                scanned=counts.scanned,
                updated=counts.updated,
                already=counts.already,
                skipped=counts.skipped,
            )


class NameSyncProgress:
    """A live line on stderr for `index-names`; `enabled=False` shows nothing at all."""

    def __init__(self, *, enabled: bool, console: Console | None = None) -> None:
        self._progress = Progress(
            SpinnerColumn(),
            TextColumn("[bold]{task.description}"),
            TextColumn("entries {task.fields[entries]:>10,}"),
            TextColumn("name items {task.fields[items]:>10,}"),
            TextColumn("put {task.fields[put]:>10,}"),
            TextColumn("removed {task.fields[removed]:>8,}"),
            TimeElapsedColumn(),
            console=console or Console(stderr=True),
            disable=not enabled,
        )
        self._task: TaskID | None = None

    def __enter__(self) -> NameSyncProgress:
        self._progress.start()
        self._task = self._progress.add_task(
            "index-names: entries", total=None, entries=0, items=0, put=0, removed=0
        )
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._progress.stop()

    def update(self, counts: NameSyncCounts) -> None:
        if self._task is not None:
            self._progress.update(
                self._task,
                description=f"index-names: {counts.phase}",
                entries=counts.entries,
                items=counts.items,
                put=counts.put,
                removed=counts.removed,
            )
