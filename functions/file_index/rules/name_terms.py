"""What a name is found by: the terms a name is indexed under, and whether a query word matches it.

A **term** is a short string (at most `MAX_TERM` characters) under which the name index keeps one item per
file, ordered by upload time (`file_index.write.names`). `name_terms(name)` is every term of a name: at
each word start its prefixes of at most `SHORT_TERM` characters and its **whole term** (`prefix_terms`'
longest there: the word's first class run and one character past it, or `MAX_TERM` characters), and the
CJK bigrams; `lookup_term(word)` is the one term whose items hold every name `word` matches (so a search
reads the items of that term only), and `matches(name, query_words)` decides on the name itself.

Text is compared **folded** (`fold`): Unicode NFKC (full- and half-width forms fold, `ｶﾞ` reads `ガ`), case
folded (`Straße` reads `strasse`), and accents dropped from Latin, Greek and Cyrillic letters only (`Café`
reads `cafe`; Japanese voicing marks count: `が` is not `か`).

A name reads as a **stream**: its letters and digits folded, everything else dropped, with **word starts**
where a word of the name begins: after a character that is not a letter or a digit, where a lower-case
letter meets a capital (`reportQ3final`), before the last capital of a run followed by a lower-case letter
(`HTMLParser`), and where letters, digits and CJK (Han, Hiragana, Katakana, Hangul) meet each other.
A query word (`query_words`: `q` cut at white space, each word read as a stream) matches a name where the
name's stream, from a word start, begins with it (`mp3` matches `song.mp3` and `MP3_mix.wav`, not
`MP4_clip_3.mov`); or, for a query word whose first two characters are CJK, from any place in a CJK run
(`資料` matches `会議資料.pptx`; a single CJK character matches only at the start of a run or word).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from functools import lru_cache

# The longest term: a query word longer than this is looked up by its first MAX_TERM characters at most and
# checked whole on each item.
MAX_TERM = 8

# A name's terms at a word start are its prefixes of at most this many characters and its longest one (the
# whole term): a query word no longer, or one that stops inside its whole term, is read under its first
# SHORT_TERM characters and checked on each item. Every prefix term (`prefix_terms`, the first layout)
# made 24.8 terms a name over measure 16's names in measure 21; these make 16.7.
SHORT_TERM = 3

# A name's terms at a word start reach this many class runs (letters, digits, CJK) and one character into
# the next, so a query word that goes on past them is read under that much of it: `mp3` under `mp3` (all
# of it), `img_2017` under `img2`. One run keeps a camera's `IMG_20170412_093015.jpg` to 22 terms (two: 27).
TERM_RUNS = 1

_SEPARATOR, _LETTER, _DIGIT, _CJK = "s", "l", "d", "c"

# Han (with radicals, iteration and ideographic number marks), Hiragana, Katakana and Hangul, as code point
# ranges (inclusive). Half-width katakana and compatibility ideographs are folded into these by NFKC.
_CJK_RANGES = (
    (0x1100, 0x11FF),  # Hangul Jamo
    (0x2E80, 0x2FDF),  # CJK and Kangxi radicals
    (0x3005, 0x3007),  # 々 〆 〇
    (0x3021, 0x3029),  # Hangzhou numerals
    (0x3031, 0x3035),  # vertical kana repeat marks
    (0x3038, 0x303C),
    (0x3041, 0x30FF),  # Hiragana, Katakana (its punctuation is not a letter: a separator)
    (0x3131, 0x318E),  # Hangul compatibility jamo
    (0x31F0, 0x31FF),  # Katakana phonetic extensions
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xA960, 0xA97F),  # Hangul Jamo extended-A
    (0xAC00, 0xD7FF),  # Hangul syllables, Jamo extended-B
    (0xF900, 0xFAFF),
    (0x1B000, 0x1B16F),  # Kana supplement and extended
    (0x20000, 0x323AF),
)
_ACCENTED_SCRIPTS = ("LATIN ", "GREEK ", "CYRILLIC ")


@lru_cache(maxsize=4096)
def _class(ch: str) -> str:
    """`s` separator (not a letter, mark or digit), `c` CJK, `d` digit, `l` letter or mark."""
    category = unicodedata.category(ch)
    if category[0] not in "LMN":
        return _SEPARATOR
    code = ord(ch)
    if any(low <= code <= high for low, high in _CJK_RANGES):
        return _CJK
    return _DIGIT if category[0] == "N" else _LETTER


@lru_cache(maxsize=4096)
def _accent_folds(ch: str) -> bool:
    return unicodedata.name(ch, "").startswith(_ACCENTED_SCRIPTS)


def _drop_accents(text: str) -> str:
    """`text` (NFC) without the combining marks of Latin, Greek and Cyrillic letters."""
    kept: list[str] = []
    folds = False
    for ch in unicodedata.normalize("NFD", text):
        if unicodedata.category(ch)[0] == "M":
            if folds:
                continue
        else:
            folds = _accent_folds(ch)
        kept.append(ch)
    return unicodedata.normalize("NFC", "".join(kept))


def fold(text: str) -> str:
    """`text` as compared: NFKC, case-folded, accents of Latin, Greek and Cyrillic letters dropped."""
    if text.isascii():
        return text.lower()
    return _drop_accents(unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold()))


def _kind(ch: str) -> str:
    """The class of `ch`, with `u` for a capital (its case starts words)."""
    kind = _class(ch)
    if kind == _LETTER and unicodedata.category(ch) in ("Lu", "Lt"):
        return "u"
    return kind


def folded_words(text: str) -> list[str]:
    """The folded words of `text` in order (the module docstring's word starts)."""
    result: list[str] = []
    current: list[str] = []
    kinds: list[str] = []

    def flush() -> None:
        folded = fold("".join(current))
        if folded.isascii():
            if folded:
                result.append(folded)
        else:
            # Case folding may yield separators (`İ` folds to `i` and a dot): they cut words too.
            # A combining mark that begins a word has lost its letter: it is dropped (as the stream is
            # read again, it would join the word before).
            word: list[str] = []
            for ch in folded:
                if not word and unicodedata.category(ch)[0] == "M":
                    continue
                if _class(ch) != _SEPARATOR:
                    word.append(ch)
                elif word:
                    result.append("".join(word))
                    word = []
            if word:
                result.append("".join(word))
        current.clear()
        kinds.clear()

    for ch in text if text.isascii() else _drop_accents(unicodedata.normalize("NFKC", text)):
        kind = _kind(ch)
        if kind == _SEPARATOR:
            flush()
            continue
        if current:
            previous = kinds[-1]
            classes_meet = (previous in (_DIGIT, _CJK) or kind in (_DIGIT, _CJK)) and previous != kind
            if classes_meet or (previous == _LETTER and kind == "u" and current[-1].islower()):
                flush()
            elif kinds[-2:] == ["u", "u"] and kind == _LETTER and ch.islower():
                # `HTMLParser`: the last capital starts the next word.
                last = current.pop()
                kinds.pop()
                flush()
                current.append(last)
                kinds.append("u")
        current.append(ch)
        kinds.append(kind)
    flush()
    return result


def _stream(name: str) -> tuple[str, list[int]]:
    """`name`'s stream and its word starts (positions in the stream, ascending)."""
    words = folded_words(name)
    starts: list[int] = []
    position = 0
    for word in words:
        starts.append(position)
        position += len(word)
    return "".join(words), starts


def _runs_end(text: str, start: int, runs: int) -> int:
    """The position just after `runs` class runs of `text` from `start` (or its end)."""
    position = start
    for _ in range(runs):
        if position >= len(text):
            break
        kind = _class(text[position])
        while position < len(text) and _class(text[position]) == kind:
            position += 1
    return position


def _is_cjk_pair(text: str, position: int) -> bool:
    return position + 1 < len(text) and _class(text[position]) == _CJK == _class(text[position + 1])


def query_words(q: str) -> list[str]:
    """The words of a query as they are looked up and matched: `q` cut at white space, each word's
    stream (folded, only letters and digits), in order, empty ones and repeats dropped."""
    # NFC again: Hangul jamo parted by a separator (`ᄀ_ᅡ`) join into one syllable.
    streams = (unicodedata.normalize("NFC", "".join(folded_words(part))) for part in q.split())
    return list(dict.fromkeys(word for word in streams if word))


def prefix_terms(name: str) -> list[str]:
    """Every prefix term of `name`, in a stable order, each once (what the name index kept at first).

    At each word start: a CJK character and the two characters from it; any other, the stream's prefixes
    of at most MAX_TERM characters that end inside its first TERM_RUNS class runs or one character past
    them. At every other place in a CJK run: the two characters from it (a bigram).
    """
    return list(dict.fromkeys(term for terms, _ in _places(name) for term in terms))


def name_terms(name: str) -> list[str]:
    """Every term `name` is indexed under, in a stable order, each once: its `prefix_terms` of at most
    SHORT_TERM characters, and each word start's whole term (its longest prefix term, where the name goes
    on past it or it fills MAX_TERM: a query word is read under a whole term only when it runs past it)."""
    kept: dict[str, None] = {}
    for terms, whole in _places(name):
        kept.update(dict.fromkeys(term for term in terms if len(term) <= SHORT_TERM))
        if whole is not None:
            kept.setdefault(whole)
    return list(kept)


def _places(name: str) -> list[tuple[list[str], str | None]]:
    """The prefix terms of `name` by the place they start at (a word start's, shortest first, or a bigram),
    with the place's whole term: its longest prefix term, if over SHORT_TERM characters and the name goes on
    past it (or it fills MAX_TERM)."""
    stream, starts = _stream(name)
    places: list[tuple[list[str], str | None]] = []
    word_starts = set(starts)
    for position in range(len(stream)):
        if position in word_starts:
            if _class(stream[position]) == _CJK:
                longest = 2
            else:
                longest = min(MAX_TERM, _runs_end(stream, position, TERM_RUNS) + 1 - position)
        elif _is_cjk_pair(stream, position):
            places.append(([stream[position : position + 2]], None))
            continue
        else:
            continue
        rest = len(stream) - position
        terms = [stream[position : position + length] for length in range(1, min(longest, rest) + 1)]
        # A query word is read under the whole term only when it runs past it or fills MAX_TERM: a name
        # that ends at the term (`song.mp3` at `songmp3`) is never found under it.
        whole = longest > SHORT_TERM and (rest > longest or rest == longest == MAX_TERM)
        places.append((terms, terms[-1] if whole else None))
    return places


@lru_cache(maxsize=256)
def _query_word(word: str) -> str:
    """`word` as `query_words` reads it (so `Abc` reads `abc`); ValueError unless that is one word."""
    read = query_words(word)
    if len(read) != 1 or len(word.split()) != 1:
        raise ValueError(f"not one query word (letters or digits, no white space): {word!r}")
    return read[0]


def prefix_term(word: str) -> str:
    """The prefix term (`prefix_terms`) whose items hold every name that `word` matches.

    A query word beginning with a CJK character: its first two characters (or the one). Any other: its
    first MAX_TERM characters at most, and no further than one character past its first TERM_RUNS class
    runs. `word` is read as `query_words` reads it; ValueError unless that is one word.
    """
    word = _query_word(word)
    if _class(word[0]) == _CJK:
        return word[:2]
    return word[: min(MAX_TERM, _runs_end(word, 0, TERM_RUNS) + 1)]


def lookup_term(word: str) -> str:
    """The term whose items hold every name that `word` (one of `query_words`) matches.

    Its `prefix_term` where the word runs past it or it fills MAX_TERM (a whole term); else the prefix
    term's first SHORT_TERM characters (all of a CJK word's, which has at most two). `word` is read as
    `query_words` reads it; ValueError unless that is one word.
    """
    word = _query_word(word)
    term = prefix_term(word)
    # A word that runs past its prefix term (or fills MAX_TERM) is read under it: every name it matches has
    # that term as a word start's whole term. Any other is read under its first SHORT_TERM characters.
    if len(word) > len(term) or len(term) == MAX_TERM:
        return term
    return term[:SHORT_TERM]


def matches(name: str, query: Sequence[str]) -> bool:
    """Every word of `query` (from `query_words`; each is read as it reads one) matches `name` (the module
    docstring's rule). ValueError for a word that is not one query word."""
    stream, starts = _stream(name)
    for word in map(_query_word, query):
        # Inside a CJK run, a match may start anywhere with two CJK characters.
        places = range(len(stream)) if _is_cjk_pair(word, 0) else starts
        found = any(stream.startswith(word, place) for place in places)
        if not found:
            return False
    return True
