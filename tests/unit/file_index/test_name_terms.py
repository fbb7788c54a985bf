"""What a query word matches (`file_index.rules.name_terms`), the terms a name is indexed under, and the law
that ties them: every name a word matches is under the word's lookup term."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from file_index.rules.name_terms import (
    MAX_TERM,
    SHORT_TERM,
    fold,
    folded_words,
    lookup_term,
    matches,
    name_terms,
    prefix_terms,
    query_words,
)


def finds(q: str, name: str) -> bool:
    return matches(name, query_words(q))


@pytest.mark.parametrize(
    ("q", "name", "found"),
    [
        # A query word's pieces are consecutive in the name as typed.
        ("mp3", "song.mp3", True),
        ("mp3", "MP3_mix.wav", True),
        ("mp3", "MP4_clip_3.mov", False),
        ("q3", "reportQ3final.xlsx", True),
        ("q3", "Q1_report_30.pdf", False),
        ("2017-04-12", "IMG_20170412_093015.jpg", True),
        ("2017-04-12", "Screenshot 2017-04-12 at 09.30.15.png", True),
        ("2017-04-13", "Screenshot 2017-04-12 at 09.30.15.png", False),
        ("invoice_march", "Invoice March 2024.pdf", True),
        ("report.pdf", "Q3 report.pdf", True),
        # A match starts at a word start.
        ("inv", "Invoice", True),
        ("voice", "Invoice", False),
        ("2024", "report2024.pdf", True),
        ("report", "reportQ3final", True),
        ("final", "reportQ3final", True),
        ("parser", "HTMLParser.py", True),
        ("mlp", "HTMLParser.py", False),
        # Every word of the query.
        ("march 2024 inv", "Invoice_March_2024.pdf", True),
        ("march 2023", "Invoice_March_2024.pdf", False),
        # Han, Hiragana, Katakana, Hangul: any part of two characters, or a run's first character.
        ("資料", "会議資料.pptx", True),
        ("議資料", "会議資料.pptx", True),
        ("告書", "報告書2024.pdf", True),
        ("告書2024", "報告書2024.pdf", True),
        ("会", "会議資料.pptx", True),
        ("書2024", "報告書2024.pdf", False),
        ("議", "会議資料.pptx", False),
        ("写真", "がっこうの写真.png", True),
        ("의록", "회의록_2024년_3월.docx", True),
        ("년", "회의록_2024년_3월.docx", True),
        ("資料", "会議資.pptx", False),
        # Voicing marks count; width folds.
        ("がっこう", "かっこう.txt", False),
        ("がっこう", "がっこう.txt", True),
        ("ぱん", "はん.txt", False),
        ("ｶﾀｶﾅ", "カタカナ.txt", True),
        ("カタカナ", "ｶﾀｶﾅ.txt", True),
        ("ｶﾞｲﾄﾞ", "ガイド.pdf", True),
        ("カイト", "ｶﾞｲﾄﾞ.pdf", False),
        ("ＡＢＣ", "abc.txt", True),
        ("abc12", "ＡＢＣ１２.txt", True),
        # Case and accents of Latin, Greek and Cyrillic letters fold.
        ("cafe", "Café.txt", True),
        ("CAFÉ", "cafe.txt", True),
        ("strasse", "Straße.txt", True),
        ("ΣΟΦΙΑ", "σοφία.txt", True),
        ("елка", "Ёлка.txt", True),
        ("ﬁle", "FILE.txt", True),
    ],
)
def test_what_a_query_word_matches(q: str, name: str, found: bool) -> None:
    assert finds(q, name) is found
    if found:
        assert all(lookup_term(word) in name_terms(name) for word in query_words(q))


def test_query_words_are_cut_at_white_space_and_read_as_streams() -> None:
    assert query_words("Invoice  march_2024 INVOICE -- Café") == ["invoice", "march2024", "cafe"]
    assert query_words(" _-. ") == []
    assert query_words("ｶﾞｲﾄﾞ ＡＢＣ") == ["ガイド", "abc"]


def test_the_folded_words_of_a_name() -> None:
    assert folded_words("reportQ3final.xlsx") == ["report", "q", "3", "final", "xlsx"]
    assert folded_words("HTMLParser.py") == ["html", "parser", "py"]
    assert folded_words("IMG_20170412_093015.jpg") == ["img", "20170412", "093015", "jpg"]
    assert folded_words("Invoice_March_2024.pdf") == ["invoice", "march", "2024", "pdf"]
    assert folded_words("会議資料2024abc.pdf") == ["会議資料", "2024", "abc", "pdf"]
    assert folded_words("がっこう") == ["がっこう"]
    assert fold("ｶﾞ Ｂ Straße Ñ") == "ガ b strasse n"


@pytest.mark.parametrize(
    ("word", "term"),
    [
        ("inv", "inv"),
        ("invoicemarch", "invoicem"),
        ("mp3", "mp3"),
        ("q3final", "q3"),
        ("img2017", "img2"),
        ("20170412", "20170412"),
        ("資料", "資料"),
        ("報告書", "報告"),
        ("会", "会"),
        ("資x", "資x"),
        # A word that stops inside its prefix term is read under its first SHORT_TERM characters.
        ("report", "rep"),
        ("docx", "doc"),
        ("img2", "img"),
        ("reportf", "rep"),
        ("invoicem", "invoicem"),
    ],
)
def test_lookup_terms(word: str, term: str) -> None:
    assert lookup_term(word) == term


def test_terms_of_names() -> None:
    assert name_terms("会議資料.pptx") == ["会", "会議", "議資", "資料", "p", "pp", "ppt"]
    # `songmp3` is no whole term: the name ends there, so no query word it matches runs past it.
    assert name_terms("song.mp3") == ["s", "so", "son", "m", "mp", "mp3", "3"]
    camera = ["i", "im", "img", "img2", "2", "20", "201", "20170412", "0", "09", "093", "093015j"]
    assert name_terms("IMG_20170412_093015.jpg") == [*camera, "j", "jp", "jpg"]
    assert name_terms("") == []


def test_the_prefix_terms_of_a_name() -> None:
    song = ["s", "so", "son", "song", "songm", "songmp", "songmp3", "m", "mp", "mp3", "3"]
    assert prefix_terms("song.mp3") == song
    assert prefix_terms("会議資料.pptx") == ["会", "会議", "議資", "資料", "p", "pp", "ppt", "pptx"]
    assert prefix_terms("") == []


@pytest.mark.parametrize("word", ["", " ", "-_.", "a b", "mp 3"])
def test_a_string_that_is_not_one_query_word_is_refused(word: str) -> None:
    with pytest.raises(ValueError, match="not one query word"):
        lookup_term(word)
    with pytest.raises(ValueError, match="not one query word"):
        matches("abc", [word])


def test_a_word_is_read_as_query_words_reads_it() -> None:
    # A query word given decomposed (NFKD) is composed again.
    decomposed = unicodedata.normalize("NFKD", "회의록")
    assert lookup_term("MP3") == lookup_term("mp-3") == "mp3"
    assert lookup_term(decomposed) == "회의"
    assert matches("회의록_2024.docx", [decomposed, "ＭＰ3"]) is False
    assert matches("회의록_mp3.docx", [decomposed, "ＭＰ3"]) is True


# Characters of every script the rules name, and the ones that fold: capitals, accents, ß and ligatures,
# final sigma, dotted I, a title-case digraph, full- and half-width forms with voicing marks, combining marks
# on their own, Devanagari's vowel signs, circled and Roman numerals, separators.
ALPHABET = (
    "aAbBzZqQ039 _.-"
    "éÉñßİﬁǅ\u0301"
    "ΣσςάΑ"
    "ДдЁё"
    "会議資料報告書年"
    "がかぱはっこうの"
    "カタガナーパ"
    "ｶﾀｶﾞﾅﾊﾟﾞ"
    "ＡＢｃ１２"
    "회의록월"
    "हिन्दी"
    "\u3099①Ⅻ・ㄱㅏ\u1100\u1161"
)
texts = st.text(alphabet=st.sampled_from(ALPHABET), max_size=14)
PROPERTY = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _is_cjk(ch: str) -> bool:
    script = unicodedata.name(ch, "")
    scripts = ("CJK ", "HIRAGANA ", "KATAKANA ", "HANGUL ", "IDEOGRAPHIC ")
    return script.startswith(scripts) or "KATAKANA-HIRAGANA" in script


def reference_matches(name: str, word: str) -> bool:
    """The rule written out plainly: the name's words joined from a word start begin with `word`, or (for a
    word whose first two characters are CJK) the joined words from any place begin with it."""
    name_words = folded_words(name)
    if any("".join(name_words[index:]).startswith(word) for index in range(len(name_words))):
        return True
    joined = "".join(name_words)
    return len(word) >= 2 and _is_cjk(word[0]) and _is_cjk(word[1]) and word in joined


def cut_words(name: str, data: st.DataObject) -> list[str]:
    """Query words cut from `name`: from its raw text and from its stream."""
    stream = "".join(folded_words(name))
    raw_start = data.draw(st.integers(0, len(name)))
    raw_end = data.draw(st.integers(raw_start, len(name)))
    start = data.draw(st.integers(0, len(stream)))
    end = data.draw(st.integers(start, min(len(stream), start + MAX_TERM + 3)))
    return query_words(name[raw_start:raw_end]) + query_words(stream[start:end])


@PROPERTY
@given(name=texts, data=st.data())
def test_every_name_a_word_matches_is_under_its_lookup_term(name: str, data: st.DataObject) -> None:
    terms = name_terms(name)
    assert len(terms) == len(set(terms))
    assert all(0 < len(term) <= MAX_TERM for term in terms)
    for word in cut_words(name, data):
        if matches(name, [word]):
            assert lookup_term(word) in terms, (name, word)


@PROPERTY
@given(name=texts, data=st.data(), other=texts)
def test_matches_agrees_with_the_reference(name: str, data: st.DataObject, other: str) -> None:
    for word in cut_words(name, data) + query_words(other):
        assert matches(name, [word]) is reference_matches(name, word), (name, word)


@PROPERTY
@given(name=texts, data=st.data())
def test_a_short_word_read_whole_reads_exactly_the_names_it_matches(name: str, data: st.DataObject) -> None:
    terms = set(name_terms(name))
    for word in cut_words(name, data):
        if lookup_term(word) == word:
            assert (word in terms) is matches(name, [word]), (name, word)


@PROPERTY
@given(q=texts)
def test_query_words_are_their_own_query_words(q: str) -> None:
    for word in query_words(q):
        assert query_words(word) == [word]
        assert fold(word) == word


@PROPERTY
@given(name=texts)
def test_the_terms_are_the_short_and_whole_prefix_terms(name: str) -> None:
    terms = name_terms(name)
    assert set(terms) <= set(prefix_terms(name))
    assert all(len(term) <= SHORT_TERM or term in _longest_prefix_terms(name) for term in terms)


def _longest_prefix_terms(name: str) -> set[str]:
    every = prefix_terms(name)
    longest = {term for term in every if not any(other.startswith(term) and other != term for other in every)}
    return longest | {term for term in every if len(term) == MAX_TERM}
