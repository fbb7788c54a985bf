"""Keys next to a key or past a folder, in the index's key order (UTF-8 keys of at most `MAX_KEY_BYTES`):
where a folder list's Query starts or goes on (`file_index.read.folder_reader`).
"""

from __future__ import annotations

from file_index.rules.objects import MAX_KEY_BYTES

_TOP_CHAR = "\U0010ffff"
# The greatest string of 1, 2 and 3 UTF-8 bytes (DynamoDB orders strings by their UTF-8 bytes).
_TOP_TAIL = ("", "\x7f", "\u07ff", "\uffff")


def top_key(stem: str) -> str:
    """The greatest key of at most `MAX_KEY_BYTES` UTF-8 bytes that starts with `stem`."""
    room = MAX_KEY_BYTES - len(stem.encode("utf-8", "surrogatepass"))
    if room <= 0:
        return stem
    return stem + _TOP_CHAR * (room // 4) + _TOP_TAIL[room % 4]


def _next_char(ch: str, step: int) -> str | None:
    code = ord(ch) + step
    if 0xD800 <= code <= 0xDFFF:
        code = 0xE000 if step > 0 else 0xD7FF
    return chr(code) if 0 <= code <= 0x10FFFF else None


def key_after(key: str) -> str | None:
    """The least key greater than `key` (None: there is none)."""
    if len(key.encode("utf-8", "surrogatepass")) < MAX_KEY_BYTES:
        return key + "\x00"
    while key:
        following = _next_char(key[-1], 1)
        if following is not None:
            return key[:-1] + following
        key = key[:-1]
    return None


def key_before(key: str) -> str | None:
    """The greatest key less than `key` (None: there is none)."""
    if not key:
        return None
    preceding = _next_char(key[-1], -1)
    return key[:-1] if preceding is None or key[-1] == "\x00" else top_key(key[:-1] + preceding)


def past_folder(folder: str, ascending: bool) -> str | None:
    """Where a read goes on past every key of `folder` (which ends with its delimiter), inclusive."""
    stem, delimiter = folder[:-1], folder[-1]
    step = _next_char(delimiter, 1 if ascending else -1)
    if step is None:
        return None if ascending else stem
    return stem + step if ascending else top_key(stem + step)
