"""Measure 21: every write unit one upload costs, entries and name index together, on DynamoDB Local.

The indexer's own code path writes each upload: `file_index.write.writer.apply_event` under the default
deployment's placement (`cdk.json`: 16 bucket shards, the bucket's time index, the name index) with a
`file_index.write.names.NameIndex` on a name table marked complete at creation, as a new deployment's is (term
items and key items). Every write request it makes asks for
`ReturnConsumedCapacity=INDEXES` (a botocore `before-parameter-build` hook), and DynamoDB Local's answer
(the units AWS bills: one per started 1 KB of the item, in the table and again in every GSI the item
enters, leaves or moves in) is summed per upload over four parts: the `FileMetaData` entry, its GSIs,
the `FileNameIndex` items and their user GSI. Each file is uploaded as a new key, overwritten (a new size
and a later upload time) and deleted (a delete in an unversioned bucket: a tombstone); and, under another
key, backfilled (`file_index.write.listed_objects.backfill_object`, the command line's and the state
machine's write: the entry and its name items). Measure 16's names are written again with
`multiAttributeIndex` on (the Z-order index: one GSI more for the entry), and without a name index (the
entries alone). Each name set is written again with the name index's first layout (`Variant.first_layout`:
a term item for every prefix term, `name_terms.prefix_terms`), so before and after print in one run.

CPU: each write's CPU time in this process (`time.process_time`, the writer, its SDK calls and its pool of
name item writers; DynamoDB Local is a process of its own), per upload, for measure 16's names against the
same uploads without a name index: the CPU the name items cost the indexer per record.

Names: measure 16's people's names (`name_data.py`: camera files, documents, screenshots, ids, CJK),
ordinary document names (`DOCUMENT_NAMES`), and one name of 255 bytes (`LONG_NAME`: the longest name most
file systems allow). Dollars: on-demand write request units at `backfill_batch.PRICES`, storage and reads
left out, and so are the indexer's upload statistics (one upload in a hundred adds one update of a
statistics item, `file_index.rules.upload_statistics`). A write whose condition fails reports no capacity (AWS
bills it all the same); the note counts them (none in these paths).

    .venv/bin/python -m bench --only upload_writes --no-charts
"""

from __future__ import annotations

import statistics
import threading
import time
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.backfill_batch import PRICES
from bench.report import Row, progress

ENTRY_TABLE = "FileMetaData"
# The same table with the Z-order index (`multiAttributeIndex` on), for the variant that has it.
Z_ORDER_TABLE = "FileMetaData-zorder"
NAME_TABLE = "FileNameIndex"
BUCKET = "fileupload.bench"
USER = "user0007"
# Name item writes in flight (the indexer's pool holds `write_concurrency`, 32 by default).
NAME_WRITERS = 8
WRITE_OPERATIONS = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"})
# Names people give documents (not the bench's generated ones): reports, minutes, contracts, scans.
DOCUMENT_NAMES = (
    "Invoice_March_2024_Acme-Corp.pdf",
    "Quarterly Report - Final Draft (2).docx",
    "Meeting notes 2024-03-12 Project Phoenix kickoff.docx",
    "2023 Annual Budget Review v3 FINAL.xlsx",
    "Scan 12 Mar 2024 at 09.41.pdf",
    "Resume - Jane Doe - Senior Software Engineer.pdf",
    "Team offsite photos Lisbon June 2023.zip",
    "Contract_Amendment_No2_signed_2024-01-15.pdf",
    "Presentation Q3 Sales Results EMEA.pptx",
    "Tax return 2022 - John Smith - copy.pdf",
)
_LONG_TEXT = (
    "Minutes of the joint steering committee meeting on infrastructure procurement, vendor evaluation, "
    "security compliance review, budget reallocation and hiring plans for fiscal year 2025 - approved by "
    "legal, finance and operations - revision 14 (final, signed by all department heads)"
)
LONG_NAME = _LONG_TEXT[: 255 - len(".pdf")] + ".pdf"
assert len(LONG_NAME.encode()) == 255
# The parts of an upload's write units, in the order the notes give them.
PARTS = ("entry", "entry GSIs", "name items", "name user GSI")
KINDS = ("new key", "overwrite", "delete", "backfilled entry")


@dataclass
class Units:
    """Write units by part (`PARTS`), and the requests and failed conditions that made them."""

    parts: dict[str, float] = field(default_factory=lambda: dict.fromkeys(PARTS, 0.0))
    requests: dict[str, float] = field(default_factory=dict)  # write requests by operation
    failed_conditions: int = 0
    # CPU of this process (the writer, its SDK calls and its name item pool) while it wrote, in ms.
    cpu_ms: float = 0.0

    @property
    def total(self) -> float:
        return sum(self.parts.values())

    @property
    def entries(self) -> float:
        return self.parts["entry"] + self.parts["entry GSIs"]

    @property
    def names(self) -> float:
        return self.parts["name items"] + self.parts["name user GSI"]


def tally(consumed: Iterable[Mapping[str, Any]], *, entry_tables: Collection[str], name_table: str) -> Units:
    """Sum DynamoDB's `ConsumedCapacity` answers (one per table a request wrote, `INDEXES` detail) into the
    four parts. Raises ValueError for another table, or an answer whose parts do not add up to its total."""
    units = Units()
    roles = dict.fromkeys(entry_tables, ("entry", "entry GSIs"))
    roles[name_table] = ("name items", "name user GSI")
    for answer in consumed:
        table = answer.get("TableName")
        if table not in roles:
            raise ValueError(f"capacity of an unexpected table: {table!r}")
        own, indexes = roles[table]
        in_table = float(answer.get("Table", {}).get("CapacityUnits", 0.0))
        in_indexes = sum(
            float(index.get("CapacityUnits", 0.0))
            for index in answer.get("GlobalSecondaryIndexes", {}).values()
        )
        total = float(answer.get("CapacityUnits", 0.0))
        if abs(total - in_table - in_indexes) > 1e-9:
            raise ValueError(f"{table}: {total} units in all, {in_table} + {in_indexes} in its parts")
        units.parts[own] += in_table
        units.parts[indexes] += in_indexes
    return units


def describe(units: Units, requests: Mapping[str, float], failed: int) -> tuple[str, str, str]:
    """A row's words for an upload: its units by part, its requests by operation, its failed conditions
    (DynamoDB Local reports no capacity for a write whose condition failed; AWS bills it all the same)."""
    return (
        ", ".join(f"{part} {units.parts[part]:.1f}" for part in PARTS),
        ", ".join(f"{name} {n:.1f}" for name, n in sorted(requests.items())),
        f"; {failed} failed conditions" if failed else "",
    )


def mean_units(measured: Sequence[Units]) -> Units:
    """The mean upload of `measured` (parts, requests and failed conditions per upload)."""
    count = len(measured)
    mean = Units()
    for part in PARTS:
        mean.parts[part] = sum(one.parts[part] for one in measured) / count
    for one in measured:
        for name, n in one.requests.items():
            mean.requests[name] = mean.requests.get(name, 0.0) + n / count
    mean.failed_conditions = sum(one.failed_conditions for one in measured)
    mean.cpu_ms = sum(one.cpu_ms for one in measured) / count
    return mean


class CapacityLog:
    """Asks every write request of a botocore client for `ReturnConsumedCapacity=INDEXES` and keeps the
    answers (and the write operations and failed conditions) since the last `take`."""

    def __init__(self, client: Any) -> None:
        self._lock = threading.Lock()
        self._consumed: list[dict[str, Any]] = []
        self._requests: Counter[str] = Counter()
        self._failed = 0
        client.meta.events.register("before-parameter-build.dynamodb", self._ask)
        client.meta.events.register("after-call.dynamodb", self._keep)

    def _ask(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        if model.name in WRITE_OPERATIONS:
            params["ReturnConsumedCapacity"] = "INDEXES"

    def _keep(self, parsed: Mapping[str, Any], model: Any, **_: Any) -> None:
        if model.name not in WRITE_OPERATIONS:
            return
        answer = parsed.get("ConsumedCapacity")
        answers = answer if isinstance(answer, list) else [answer] if answer else []
        with self._lock:
            self._requests[model.name] += 1
            self._consumed.extend(answers)
            if parsed.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                self._failed += 1

    def take(self) -> Units:
        with self._lock:
            units = tally(self._consumed, entry_tables=(ENTRY_TABLE, Z_ORDER_TABLE), name_table=NAME_TABLE)
            units.requests = {name: float(n) for name, n in self._requests.items()}
            units.failed_conditions = self._failed
            self._consumed, self._requests, self._failed = [], Counter(), 0
        return units


@dataclass(frozen=True)
class Upload:
    user: str
    name: str


@dataclass(frozen=True)
class Variant:
    """A set of uploads, written under the default deployment (`cdk.json`), or the same with its Z-order
    index switched on (`z_order`), or with the first layout's name terms (`first_layout`: every prefix term,
    `name_terms.prefix_terms`, as the name index was first built: the "before" of its terms in this run)."""

    label: str
    uploads: Sequence[Upload]
    z_order: bool = False
    first_layout: bool = False
    # False: the entries alone (`apply_event` with no name index), for the CPU the name items cost.
    name_index: bool = True


def people_uploads(files: int) -> list[Upload]:
    """`files` of measure 16's people's names (the seed of its write rows)."""
    from bench.name_data import make_files

    sample, _ = make_files(files, seed=16)
    return [Upload(file.user, file.key.split("/", 1)[1]) for file in sample]


def measure(variants: Sequence[Variant]) -> dict[str, dict[str, list[Units]]]:
    """Per variant and kind (`KINDS`), the units of each upload, on a fresh DynamoDB Local."""
    import dataclasses

    import boto3

    from bench import deployment
    from bench.entries import create_event
    from file_index.rules import schema
    from file_index.rules.key_pattern import KeyPattern
    from file_index.rules.name_items import entry_items
    from file_index.rules.name_terms import prefix_terms
    from file_index.rules.objects import ObjectEvent
    from file_index.store import name_index_flag
    from file_index.write import conditions, listed_objects, names, writer
    from local_stack.dynamodb_local import DynamoDBLocalProcess  # Java only when measured

    config = deployment.stack_config()
    if not config.name_index:
        raise RuntimeError("the default deployment keeps no name index (cdk.json nameIndex): nothing to add")
    # The deployment's own placement and table, and the same with the Z-order index on.
    placements = {
        False: config.placement,
        True: dataclasses.replace(config.placement, multi_attribute_index=True),
    }
    tables = {False: ENTRY_TABLE, True: Z_ORDER_TABLE}
    key_pattern = KeyPattern.parse(None)
    started = datetime(2017, 8, 20, 9, 0, tzinfo=UTC)
    measured: dict[str, dict[str, list[Units]]] = {}
    with DynamoDBLocalProcess() as local:
        dynamodb = boto3.client(
            "dynamodb",
            endpoint_url=local.endpoint_url,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        for z_order, table in tables.items():
            dynamodb.create_table(
                **schema.create_table_request(
                    table,
                    multi_attribute_index=placements[z_order].multi_attribute_index,
                    bucket_time_index=config.bucket_time_index,
                )
            )
        dynamodb.create_table(**schema.create_name_table_request(NAME_TABLE))
        name_index_flag.mark_table_complete(dynamodb, NAME_TABLE, datetime.now(UTC))
        # As the indexer's: the items of a name written and deleted in parallel on a pool of its own.
        pool = ThreadPoolExecutor(max_workers=NAME_WRITERS, thread_name_prefix="upload-writes")

        class FirstLayoutNameIndex(names.NameIndex):
            """The name index as first built: a term item for every prefix term of the name."""

            def items_of(self, entry: Mapping[str, Any], since: str) -> list[dict[str, Any]]:
                return entry_items(entry, since, terms=prefix_terms)

        # Per entry table (the removals read the key's entry back) and layout.
        name_indexes = {
            (table, first): (FirstLayoutNameIndex if first else names.NameIndex)(
                dynamodb, NAME_TABLE, entry_table=table, executor=pool
            )
            for table in tables.values()
            for first in (False, True)
        }
        log = CapacityLog(dynamodb)
        sequence = 0
        for set_number, variant in enumerate(variants):
            progress(f"upload writes: {len(variant.uploads)} uploads of {variant.label}")
            placement, table = placements[variant.z_order], tables[variant.z_order]
            name_index = name_indexes[table, variant.first_layout] if variant.name_index else None
            by_kind: dict[str, list[Units]] = {kind: [] for kind in KINDS}
            for number, upload in enumerate(variant.uploads):
                # A folder of its own per upload, so no two keys meet; the name is the upload's.
                key = f"{upload.user}/s{set_number}n{number}/{upload.name}"
                moment = started + timedelta(minutes=number)
                events = {
                    "new key": create_event(
                        bucket=BUCKET,
                        key=key,
                        user=upload.user,
                        size=1000 + number,
                        moment=moment,
                        sequence=sequence,
                    ),
                    "overwrite": create_event(
                        bucket=BUCKET,
                        key=key,
                        user=upload.user,
                        size=5000 + number,
                        moment=moment + timedelta(days=1),
                        sequence=sequence + 1,
                    ),
                }
                events["delete"] = ObjectEvent(
                    event_name="ObjectRemoved:Delete",
                    bucket=BUCKET,
                    key=key,
                    event_time=moment + timedelta(days=2),
                    sequencer=f"{0x0055AED6DCD9028100 + (sequence + 2) * 0x100:018X}",
                    size=None,
                    e_tag=None,
                    version_id=None,
                    upload_user=upload.user,
                    file_id=events["new key"].file_id,
                )
                sequence += 3
                log.take()  # nothing before this upload counts
                for kind, event in events.items():
                    cpu_started = time.process_time()
                    outcome = writer.apply_event(
                        dynamodb, table, event, s3=None, placement=placement, names=name_index
                    )
                    if outcome is conditions.Outcome.STALE:
                        raise RuntimeError(f"{kind} of {key!r} was stale: the measure's events are wrong")
                    by_kind[kind].append(log.take())
                    by_kind[kind][-1].cpu_ms = (time.process_time() - cpu_started) * 1000
                listed = listed_objects.ListedObject(
                    key=f"{upload.user}/b{set_number}n{number}/{upload.name}",
                    size=1000 + number,
                    e_tag="d41d8cd98f00b204e9800998ecf8427e",
                    last_modified=moment,
                )
                cpu_started = time.process_time()
                written = listed_objects.backfill_object(
                    dynamodb, table, BUCKET, listed, key_pattern, placement, name_index
                )
                if written is not listed_objects.BackfillOutcome.WRITTEN:
                    raise RuntimeError(f"the backfill of {listed.key!r} wrote nothing: {written}")
                by_kind["backfilled entry"].append(log.take())
                by_kind["backfilled entry"][-1].cpu_ms = (time.process_time() - cpu_started) * 1000
            measured[variant.label] = by_kind
        pool.shutdown()
    return measured


def terms_of(variant: Variant) -> list[int]:
    from file_index.rules.name_terms import name_terms, prefix_terms

    if not variant.name_index:
        return [0 for _ in variant.uploads]
    terms = prefix_terms if variant.first_layout else name_terms
    return [len(terms(upload.name)) for upload in variant.uploads]


def rows(
    measured: Mapping[str, Mapping[str, Sequence[Units]]],
    terms: Mapping[str, Sequence[int]],
    cpu_against: Mapping[str, str] | None = None,
) -> list[Row]:
    """Per name set and kind: write units per upload against the entry's alone (ratio: ours ÷ entry's);
    and for each set named in `cpu_against`, this process's CPU per upload against that of the set it
    names (the same uploads written without a name index: ratio ours ÷ it)."""
    price = PRICES.dynamodb_per_million_write_units
    out: list[Row] = []
    for set_name, by_kind in measured.items():
        counts = terms[set_name]
        spread = (
            f"{counts[0]} terms"
            if len(counts) == 1
            else f"{statistics.mean(counts):.1f} terms a name ({min(counts)}–{max(counts)})"
        )
        for kind, measured_units in by_kind.items():
            mean = mean_units(measured_units)
            split, requests, failed = describe(mean, mean.requests, mean.failed_conditions)
            out.append(
                Row(
                    f"21. write units per {kind}, {set_name}",
                    "WCU/upload",
                    mean.total,
                    mean.entries,
                    "the entry and its GSIs alone",
                    None if mean.entries == 0 else mean.total / mean.entries,
                    f"ours ÷ the entry's; {split}; ${mean.total * price:,.2f} per million at ${price} per "
                    f"million write units (on-demand, us-east-1, {PRICES.as_of}); {spread}; "
                    f"{len(measured_units)} uploads; requests per upload: {requests}{failed}; DynamoDB "
                    "Local's ConsumedCapacity (INDEXES)",
                )
            )
    for set_name, alone in (cpu_against or {}).items():
        for kind, measured_units in measured[set_name].items():
            ours, without = mean_units(measured_units).cpu_ms, mean_units(measured[alone][kind]).cpu_ms
            out.append(
                Row(
                    f"21. writer CPU per {kind}, {set_name}",
                    "ms/upload",
                    ours,
                    without,
                    "the same without a name index",
                    ours / without if without else None,
                    f"ours ÷ without; the name items' share {ours - without:.2f} ms an upload; CPU of the "
                    "writing process (the writer, its SDK calls, its name item pool; DynamoDB Local apart), "
                    f"mean of {len(measured_units)} uploads",
                )
            )
    return out


PEOPLE = "measure 16's names"
# The "before" of the name terms, written in the same run (`Variant.first_layout`).
BEFORE = "before: every prefix term (the first layout)"
ENTRIES_ALONE = f"{PEOPLE}, no name index (the entries alone)"


def variants(files: int) -> list[Variant]:
    people = people_uploads(files)
    documents = [Upload(USER, name) for name in DOCUMENT_NAMES]
    longest = [Upload(USER, LONG_NAME)]
    return [
        Variant(PEOPLE, people),
        Variant(f"{PEOPLE}, {BEFORE}", people, first_layout=True),
        Variant("document names", documents),
        Variant(f"document names, {BEFORE}", documents, first_layout=True),
        Variant("a 255-byte name", longest),
        Variant(f"a 255-byte name, {BEFORE}", longest, first_layout=True),
        Variant(f"{PEOPLE}, multiAttributeIndex on", people, z_order=True),
        Variant(ENTRIES_ALONE, people, name_index=False),
    ]


def run(*, files: int) -> list[Row]:
    chosen = variants(files)
    return rows(
        measure(chosen),
        {variant.label: terms_of(variant) for variant in chosen},
        cpu_against={PEOPLE: ENTRIES_ALONE},
    )
