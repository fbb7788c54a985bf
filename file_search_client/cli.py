"""The search client's command line (`s3-file-search`): search, get, download, status.

The API's URL comes from `--api-url` or `FILE_SEARCH_API_URL`. Requests to a deployed API (https on an
AWS host, or `--sigv4`) are signed with the caller's AWS credentials; the local stack takes plain HTTP.

Results go to stdout; hints, warnings and errors to stderr, so that stdout can be piped. Exit status: 0
done, 1 the API or the network failed, 2 bad arguments (found here, or answered 400 by the API), 3 the
local file could not be written, 141 the reader of stdout closed it early (`| head`): the client stops
quietly, with the status a shell reports for a command that SIGPIPE ended (128 + 13), as `cat` or `yes`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import unicodedata
import urllib.parse
from collections.abc import Iterator, Sequence
from http import HTTPStatus
from pathlib import Path
from typing import Any, TextIO

from file_search_client import __version__
from file_search_client.http import ApiError, SearchApiClient, fetch, key_path

COLUMNS = (("objectKey", "KEY"), ("size", "SIZE"), ("uploadUser", "USER"), ("uploadDate", "UPLOADED"))
FIELDS = (
    "objectKey",
    "bucketName",
    "fileId",
    "size",
    "uploadUser",
    "uploadDate",
    "sequencer",
    "eTag",
    "versionId",
)


EXIT_API_ERROR = 1
EXIT_USAGE = 2
EXIT_LOCAL_WRITE_ERROR = 3
# 128 + SIGPIPE: what a shell reports for a command that wrote into a closed pipe (`yes | head`). Python
# keeps SIGPIPE ignored so that a closed socket is an exception, not death (its `signal` documentation
# advises against restoring the default action); the client ends with the status the signal would give.
EXIT_OUTPUT_CLOSED = 141

EXAMPLES = """examples:
  python -m file_search_client --api-url http://127.0.0.1:8000 search --user USER001 --date 2017-08-20
  python -m file_search_client search --bucket my-bucket --min-size 1000000 --all --json
  python -m file_search_client get USER001_FILE001.txt
  python -m file_search_client download USER001_FILE001.txt -o FILE001.txt --force
  python -m file_search_client status

A deployed API (https://<id>.execute-api.<region>.amazonaws.com/<stage>) is called with SigV4 signatures
made from your AWS credentials; set FILE_SEARCH_API_URL to leave out --api-url.
"""


class LocalWriteError(Exception):
    """The downloaded file could not be written where asked (not a fault of the API)."""


class OutputClosed(Exception):
    """The reader of stdout closed it (`| head`): not a fault of the API, nor of the network."""


@contextlib.contextmanager
def _writing() -> Iterator[None]:
    """Writes of results to stdout: a closed pipe raises OutputClosed, never an OSError read as the
    network's."""
    try:
        yield
    except BrokenPipeError:
        raise OutputClosed from None


def build_parser() -> argparse.ArgumentParser:
    installed = Path(sys.argv[0]).name == "s3-file-search"
    parser = argparse.ArgumentParser(
        # `s3-file-search` when installed as a package, `python -m file_search_client` from a clone.
        prog="s3-file-search" if installed else "file_search_client",
        description=__doc__,
        # Installed, the examples name the command that runs them.
        epilog=EXAMPLES.replace("python -m file_search_client", "s3-file-search") if installed else EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument(
        "--api-url",
        default=os.environ.get("FILE_SEARCH_API_URL"),
        help="the API's URL, with the stage of a deployed API (default: $FILE_SEARCH_API_URL)",
    )
    parser.add_argument(
        "--sigv4",
        action="store_true",
        default=None,
        help="sign requests with SigV4 even if the URL is not an execute-api https URL",
    )
    parser.add_argument("--region", help="the API's region for signing (default: from the URL or profile)")
    commands = parser.add_subparsers(dest="command", required=True)

    search = commands.add_parser("search", help="list a user's or a bucket's files")
    who = search.add_mutually_exclusive_group(required=True)
    who.add_argument("--user", help="a user's files, in upload order unless --sort size")
    who.add_argument("--bucket", help="a bucket's files, largest first (a time box: see orderedBy)")
    search.add_argument("--date", help="one UTC day, YYYY-MM-DD (not with --from/--to)")
    search.add_argument("--from", dest="from_", metavar="FROM", help="earliest upload, a day or a timestamp")
    search.add_argument("--to", help="latest upload, a day or a timestamp (inclusive)")
    search.add_argument("--min-size", type=int, help="smallest size in bytes, inclusive")
    search.add_argument("--max-size", type=int, help="largest size in bytes, inclusive")
    search.add_argument(
        "--sort",
        choices=("uploadDate", "size"),
        help="the order of a user's or a bucket's list: size (largest first) or uploadDate (a bucket's "
        "newest first, a user's oldest first); without it a user's list is by uploadDate, a bucket's by "
        "the API's plan (see orderedBy)",
    )
    search.add_argument(
        "--order",
        choices=("asc", "desc"),
        help="sort direction (default: asc for --user by upload time; desc for --user --sort size and for "
        "--bucket)",
    )
    search.add_argument("--q", help="words of the file's name, each the start of a word (newest first)")
    search.add_argument("--prefix", help="only keys under this prefix (a folder), in key order")
    search.add_argument(
        "--delimiter", choices=["/"], help="with /: list the sub-folders of --prefix as well (commonPrefixes)"
    )
    search.add_argument("--ext", help="only names with this extension (pdf, tar.gz; case-insensitive)")
    search.add_argument(
        "--content-type", help="only this content type (image/png) or major type (image/*); needs enrich"
    )
    search.add_argument(
        "--meta",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="only files whose user metadata NAME is VALUE (repeatable); needs enrich",
    )
    search.add_argument(
        "--tag",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="only files tagged NAME=VALUE (repeatable); needs enrich",
    )
    search.add_argument("--limit", type=int, help="items per page (API default 100, at most 1000)")
    search.add_argument("--cursor", help="continue from a page's nextCursor")
    search.add_argument("--all", action="store_true", help="follow nextCursor through every page")
    search.add_argument("--json", action="store_true", help="print JSON instead of a table")

    get = commands.add_parser("get", help="one file's metadata by its exact key")
    get.add_argument("key", help="the object's exact S3 key (not URL-encoded)")
    get.add_argument("--json", action="store_true", help="print JSON instead of a table")

    download = commands.add_parser("download", help="download a file through a presigned URL")
    download.add_argument("key", help="the object's exact S3 key (not URL-encoded)")
    download.add_argument(
        "-o", "--output", help="file to write, '-' for stdout (default: the key's last part, here)"
    )
    download.add_argument(
        "-f", "--force", "--overwrite", action="store_true", help="replace the file if it exists"
    )

    status = commands.add_parser("status", help="the index state and the indexer's backlog")
    status.add_argument("--json", action="store_true", help="print the API's JSON answer")
    return parser


def printable(value: Any) -> str:
    """`value` as text safe for a terminal: control characters (ESC, tab, newline...) in a key are shown
    escaped (`\\x1b`, `\\t`), so a key cannot recolour the terminal or break the table's columns."""
    text = str(value)
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in text)


def _char_width(char: str) -> int:
    """Columns a terminal gives `char`: 2 for East Asian wide and fullwidth characters (CJK, kana,
    Hangul syllables, most emoji), 0 for combining marks and Hangul's medial and final jamo (they join the
    character before), 1 otherwise; an ambiguous-width character counts 1, as outside CJK locales."""
    if unicodedata.east_asian_width(char) in ("W", "F"):
        return 2
    if unicodedata.category(char) in ("Mn", "Me") or "\u1160" <= char <= "\u11ff":
        return 0
    return 1


def display_width(text: str) -> int:
    """Columns `text` takes in a terminal (`printable` text: no control characters)."""
    if text.isascii():
        return len(text)
    return sum(_char_width(char) for char in text)


def format_table(items: Sequence[dict[str, Any]]) -> str:
    """A plain text table of list items, sizes right-aligned; padded by display width, so a CJK name
    (two columns a character) lines up with ASCII ones."""
    rows = [[printable(item.get(name, "")) for name, _ in COLUMNS] for item in items]
    headers = [title for _, title in COLUMNS]
    widths = [
        max([display_width(headers[i]), *(display_width(row[i]) for row in rows)])
        for i in range(len(COLUMNS))
    ]

    def line(cells: Sequence[str]) -> str:
        parts = []
        for cell, width, (name, _) in zip(cells, widths, COLUMNS, strict=True):
            pad = " " * (width - display_width(cell))
            parts.append(pad + cell if name == "size" else cell + pad)
        return "  ".join(parts).rstrip()

    return "\n".join([line(headers), *(line(row) for row in rows)])


def format_item(item: dict[str, Any]) -> str:
    names = [name for name in FIELDS if name in item]
    width = max(len(name) for name in names)
    return "\n".join(f"{name.ljust(width)}  {printable(item[name])}" for name in names)


BUILDING_WARNING = "the index is being built: results may be incomplete"


def _count(value: Any) -> str:
    # A null figure could not be read (or has no datapoint): never show it as 0.
    return "?" if value is None else str(value)


def format_status(status: dict[str, Any]) -> str:
    """The answer of GET /status as aligned lines: state, each bucket's run and progress, the backlog."""
    rows: list[tuple[str, str]] = [("index", str(status.get("indexState")))]
    for bucket in status.get("buckets", []):
        rows.append(("bucket", f"{bucket.get('bucket')}: {bucket.get('state')}"))
        if bucket.get("operation"):
            run = [f"{bucket['operation']} {bucket.get('runId') or ''}".rstrip()]
            for label, name in (
                ("started", "startedAt"),
                ("updated", "updatedAt"),
                ("finished", "finishedAt"),
            ):
                if bucket.get(name):
                    run.append(f"{label} {bucket[name]}")
            rows.append(("run", ", ".join(run)))
        progress = bucket.get("progress") or {}
        if progress:
            rows.append(("progress", ", ".join(f"{name} {value}" for name, value in progress.items())))
        if bucket.get("lastError"):
            rows.append(("last error", str(bucket["lastError"])))
    queue = status.get("queue") or {}
    age = queue.get("oldestMessageAgeSeconds")
    rows.append(
        (
            "queue",
            f"{_count(queue.get('messagesWaiting'))} waiting, {_count(queue.get('messagesInFlight'))} in "
            f"flight, {_count(queue.get('messagesDelayed'))} delayed; oldest "
            + ("unknown" if age is None else f"{age} s"),
        )
    )
    rows.append(("dead letters", _count((status.get("deadLetterQueue") or {}).get("messages"))))
    if status.get("unavailable"):
        rows.append(("unavailable", ", ".join(status["unavailable"])))
    width = max(len(name) for name, _ in rows)
    return "\n".join(f"{name.ljust(width)}  {value}" for name, value in rows)


def _named_filters(kind: str, pairs: Sequence[str]) -> dict[str, str]:
    """`--meta NAME=VALUE` (or `--tag`) as the API's `meta.NAME=VALUE` parameters."""
    filters: dict[str, str] = {}
    for pair in pairs:
        name, _, value = pair.partition("=")
        filters[f"{kind}.{name}"] = value
    return filters


def _search(client: SearchApiClient, args: argparse.Namespace, out: TextIO) -> None:
    params = {
        "user": args.user,
        "bucket": args.bucket,
        "date": args.date,
        "from": args.from_,
        "to": args.to,
        "minSize": args.min_size,
        "maxSize": args.max_size,
        "q": args.q,
        "prefix": args.prefix,
        "delimiter": args.delimiter,
        "ext": args.ext,
        "contentType": args.content_type,
        **_named_filters("meta", args.meta),
        **_named_filters("tag", args.tag),
        "sort": args.sort,
        "order": args.order,
        "limit": args.limit,
        "cursor": args.cursor,
    }
    items: list[dict[str, Any]] = []
    folders: list[str] = []
    states: list[str] = []
    ordered_by = None
    while True:
        page = client.get_json("/files", params)
        items.extend(page["items"])
        folders.extend(page.get("commonPrefixes") or [])
        ordered_by = page.get("orderedBy", ordered_by)
        if "indexState" in page:
            states.append(page["indexState"])
        next_cursor = page.get("nextCursor")
        if not (args.all and next_cursor):
            break
        params["cursor"] = next_cursor
    # One partial page makes the whole answer partial.
    index_state = "BUILDING" if "BUILDING" in states else (states[-1] if states else None)
    if index_state == "BUILDING":
        print(BUILDING_WARNING, file=sys.stderr)
    if args.json:
        answer: dict[str, Any] = {"items": items, "nextCursor": next_cursor}
        if ordered_by is not None:
            answer["orderedBy"] = ordered_by
        if args.delimiter is not None:
            answer["commonPrefixes"] = folders
        if index_state is not None:
            answer["indexState"] = index_state
        with _writing():
            json.dump(answer, out, indent=2, ensure_ascii=False)
            out.write("\n")
        return
    with _writing():
        for folder in folders:
            out.write(f"{printable(folder)}  (folder)\n")
        out.write(format_table(items) + "\n")
    if next_cursor:
        # A hint, not a result: stdout stays the table alone.
        print(f"more results: --cursor {next_cursor} or --all", file=sys.stderr)


def _get(client: SearchApiClient, args: argparse.Namespace, out: TextIO) -> None:
    item = client.get_json(key_path("files", args.key))
    with _writing():
        if args.json:
            json.dump(item, out, indent=2, ensure_ascii=False)
            out.write("\n")
        else:
            out.write(format_item(item) + "\n")


def _download(client: SearchApiClient, args: argparse.Namespace, out: TextIO) -> None:
    to_stdout = args.output == "-"
    # Never write outside the current directory by default: keys may hold "../" or absolute paths.
    target = Path(args.output) if args.output else Path(_local_name(args.key))
    if not to_stdout:
        # Checked before the download too, so a refusal costs no transfer; written exclusively below.
        _check_target(target, force=args.force)
    response = client.get(key_path("download", args.key))
    location = response.headers.get("Location") or response.headers.get("location")
    if response.status not in (301, 302, 303, 307) or not location:
        raise ApiError(response.status, "expected a redirect to the file")
    data = fetch(location)
    if to_stdout:
        with _writing():
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
        return
    _write(target, data, force=args.force)
    with _writing():
        out.write(f"{target} ({len(data)} bytes)\n")


def _local_name(key: str) -> str:
    name = Path(key).name
    return name if name not in ("", ".", "..") else "download"


def _check_target(target: Path, *, force: bool) -> None:
    if target.is_dir():
        raise LocalWriteError(f"{target} is a directory: give a file name with -o")
    if not target.parent.is_dir():
        raise LocalWriteError(f"cannot write {target}: folder {target.parent} does not exist")
    if target.exists() and not force:
        raise LocalWriteError(f"{target} exists: pass --force to replace it")


def _write(target: Path, data: bytes, *, force: bool) -> None:
    try:
        # "x" fails if the file appeared since the check: an existing file is replaced only with --force.
        with target.open("wb" if force else "xb") as file:
            file.write(data)
    except FileExistsError:
        raise LocalWriteError(f"{target} exists: pass --force to replace it") from None
    except OSError as error:
        raise LocalWriteError(f"cannot write {target}: {error.strerror or error}") from None


def _status(client: SearchApiClient, args: argparse.Namespace, out: TextIO) -> None:
    status = client.get_json("/status")
    with _writing():
        if args.json:
            json.dump(status, out, indent=2, ensure_ascii=False)
        else:
            out.write(format_status(status))
        out.write("\n")


def _check_search_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """What argparse cannot check alone and the client knows before any request: exit 2 with usage."""
    if args.date is not None and (args.from_ is not None or args.to is not None):
        parser.error("--date cannot be combined with --from or --to")
    for name in ("min_size", "max_size", "limit"):
        value = getattr(args, name)
        if value is not None and value < (1 if name == "limit" else 0):
            parser.error(
                f"--{name.replace('_', '-')} must be {'at least 1' if name == 'limit' else '0 or more'}"
            )
    if args.min_size is not None and args.max_size is not None and args.min_size > args.max_size:
        parser.error("--min-size must not be greater than --max-size")
    for kind in ("meta", "tag"):
        for pair in getattr(args, kind) or []:
            if "=" not in pair or pair.startswith("="):
                parser.error(f"--{kind} takes NAME=VALUE, not {pair!r}")


def _discard_stdout() -> None:
    """Point stdout at the null device, so that Python's flush at exit finds no closed pipe to report."""
    with contextlib.suppress(OSError, ValueError):  # a stdout without a descriptor (a test's capture)
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)


COMMANDS = {"search": _search, "get": _get, "download": _download, "status": _status}


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    stream = out or sys.stdout
    if not args.api_url:
        parser.error("give --api-url or set FILE_SEARCH_API_URL")
    parsed = urllib.parse.urlsplit(args.api_url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        parser.error(f"--api-url {args.api_url!r} is not an http:// or https:// URL with a host")
    if args.command == "search":
        _check_search_arguments(parser, args)
    try:
        client = SearchApiClient(args.api_url, sign=args.sigv4, region=args.region)
        COMMANDS[args.command](client, args, stream)
        with _writing():
            # Written out here, inside the try, rather than when Python flushes stdout at exit.
            stream.flush()
    except OutputClosed:
        _discard_stdout()
        return EXIT_OUTPUT_CLOSED
    except LocalWriteError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_LOCAL_WRITE_ERROR
    except ApiError as error:
        print(f"error: {error}", file=sys.stderr)
        # A 400 says the request was wrong: an argument, as argparse's own errors.
        return EXIT_USAGE if error.status == HTTPStatus.BAD_REQUEST else EXIT_API_ERROR
    except OSError as error:
        # Only network faults are left here: local writes raise LocalWriteError.
        print(f"error: cannot reach {args.api_url}: {error}", file=sys.stderr)
        return EXIT_API_ERROR
    return 0
