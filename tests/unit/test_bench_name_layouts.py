"""Measure 22's model of the name index's layouts: the first layout priced as measure 21 measured it, shorter
terms and packed blocks priced by their items' sizes, and the reads of a shorter term checked."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.name_data import NamedFile, make_files
from bench.name_layouts import (
    BLOCK_OVERHEAD,
    ENTRY_UNITS,
    LAYOUTS,
    OVERFLOW,
    POSTING_OVERHEAD,
    Layout,
    batch_units,
    curve,
    other_names,
    packed_units,
    people_rows,
    per_file_units,
    price,
    query_words,
    read_cost,
    rows_of,
    spread_over,
)
from file_index.rules import name_terms
from tests.unit.file_index.test_name_terms import cut_words, texts

TODAY = LAYOUTS[0]
SHORT = Layout("terms ≤3 and whole words, an item a file, user GSI", 3, True, False, True)
PACKED = Layout("terms ≤3, packed, 1 shard", 3, False, True, False, 1)


def _file(name: str, user: str = "user0007", day: str = "2017-06-01") -> NamedFile:
    return NamedFile(f"{user}/{name}", user, name, 1000, f"{day}T12:00:00.000Z")


def test_today_costs_two_units_a_term_and_two_for_the_key_item() -> None:
    """As measure 21 measures it: an item per term and the key item, each under 1 KB, each in the user GSI."""
    file = _file("IMG_20170412_093015.jpg")
    assert per_file_units(TODAY, file) == 2 * (len(name_terms.prefix_terms(file.name)) + 1)


def test_shorter_terms_keep_those_up_to_their_length_and_each_word_starts_longest() -> None:
    terms = SHORT.terms("report_2017.pdf")
    assert set(terms) == {"r", "re", "rep", "report2", "2", "20", "201", "2017p", "p", "pd", "pdf"}
    assert set(terms) <= set(name_terms.prefix_terms("report_2017.pdf"))
    # The terms the name index keeps (`name_terms.name_terms`).
    assert set(terms) == set(name_terms.name_terms("report_2017.pdf"))


@pytest.mark.parametrize(
    ("word", "term"),
    [
        ("img", "img"),  # as short as the layout's terms: today's term
        ("repo", "rep"),  # ends inside its first run: read under its first 3 characters, checked
        ("img2017", "img2"),  # runs past its first run: every name it matches has that longest term
        ("report", "rep"),  # `report_2017`'s longest term is `report2`: read under "rep", checked
        ("reportfinal", "reportfi"),  # fills MAX_TERM: every name it matches has that longest term
    ],
)
def test_a_query_word_is_read_under_a_term_every_name_it_matches_has(word: str, term: str) -> None:
    layout = SHORT
    assert layout.read_term(word) == term
    for name in ("IMG_20170412_093015.jpg", "report_2017.pdf", "reportFinal.docx", "repository.zip"):
        if name_terms.matches(name, [word]):
            assert term in layout.terms(name)


def test_a_packed_block_costs_a_unit_per_started_kb_of_its_postings() -> None:
    # Two files sharing every term of length up to 3 ("a", "ab", "abc"): one block each for both.
    first, second = _file("abc.x"), _file("abc.y")
    units, heat = packed_units(PACKED, [first, second])
    terms = set(PACKED.terms(first.name)) | set(PACKED.terms(second.name))
    block_sizes = {
        term: BLOCK_OVERHEAD
        + sum(POSTING_OVERHEAD + len(f.name) for f in (first, second) if term in PACKED.terms(f.name))
        for term in terms
    }
    assert all(size < 1024 for size in block_sizes.values())
    assert units == len(terms) + 2  # a unit a block, and the two key items
    assert sum(heat.values()) == len(terms)


def test_packing_a_batch_never_costs_more_than_an_item_a_file() -> None:
    files, _ = make_files(200, seed=16)
    per_file = Layout("terms ≤3, an item a file", 3, False, False, False, 1)
    assert batch_units(PACKED, files[:100]) < batch_units(per_file, files[:100])


def test_reads_count_what_the_read_term_holds_against_what_matches() -> None:
    files = [_file(name) for name in ("report.pdf", "repair.pdf", "replica.pdf", "notes.txt")]
    median, p90, read_units = read_cost(SHORT, files, [("report", 1)])
    # "report" is read under "rep", which three names have; one of them matches.
    assert (median, p90) == (3.0, 3.0)
    assert read_units > 0.5  # the found file's entry, and what the Query read


def test_query_words_count_the_names_they_match() -> None:
    files, _ = make_files(300, seed=16)
    for word, found in query_words(files, random.Random(1), 20):
        assert found == sum(name_terms.matches(file.name, [word]) for file in files)
        assert found >= 1  # drawn from a name


def test_rows_price_every_layout_against_today() -> None:
    files, _ = make_files(300, seed=16)
    words = query_words(files, random.Random(1), 10)
    priced = [price(layout, files, words, other_names()) for layout in (TODAY, PACKED)]
    rows = rows_of(priced, files=300, queries=10)
    assert len(rows) == 6
    today_new, packed_new = rows[0], rows[3]
    assert today_new.ours == today_new.comparison
    assert packed_new.ours is not None
    assert today_new.ours is not None
    assert packed_new.ours < today_new.ours / 3
    assert "a 255-byte name" in packed_new.note


def test_the_curve_sets_each_layouts_new_key_with_the_entry_against_its_reads() -> None:
    files, _ = make_files(300, seed=16)
    words = query_words(files, random.Random(1), 10)
    priced = [price(layout, files, words, other_names()) for layout in (TODAY, PACKED)]

    drawn = curve(priced)

    today, packed = drawn["layouts"]
    assert today["busyUnits"] == priced[0].units["busy"]["new key"] + ENTRY_UNITS["new key"]
    assert packed["aloneUnits"] == priced[1].units["one at a time"]["new key"] + ENTRY_UNITS["new key"]
    assert (today["p90ItemsRead"], today["readUnits"]) == priced[0].reads[1:]
    assert not today["secondStage"]
    assert drawn["targets"] == {"busy": 10.0, "ceiling": 20.0, "alone": 25.0}


CAPPED = Layout("capped", 3, True, True, False, 1, stage=1000, cap=4, long_name=20)


def test_a_capped_name_keeps_its_first_terms_and_the_first_characters_of_the_rest() -> None:
    name = "alpha beta gamma delta epsilon.txt"
    terms = CAPPED.terms(name)
    assert len(terms) > 4
    indexed = CAPPED.indexed(name)
    assert indexed[:4] == terms[:4]
    assert indexed[4:] == list(dict.fromkeys("+" + term[0] for term in terms[4:]))


def test_a_word_past_the_cap_is_found_under_its_overflow_term() -> None:
    long_file = _file("alpha beta gamma delta epsilon.txt")
    other = _file("epsilon.txt")
    median, _, _ = read_cost(CAPPED, [long_file, other], [("epsilon", 2)])
    assert CAPPED.read_term("epsilon") == "eps"
    assert "eps" not in CAPPED.indexed(long_file.name)
    # "eps" holds the short name, "+e" the long one (and the short one, capped too): each read once.
    assert median == 1.0


def test_a_long_names_postings_hold_no_name() -> None:
    short, long_name = _file("a.txt"), _file("a-name-longer-than-twenty-bytes.txt")
    assert CAPPED.holds_name(short.name)
    assert not CAPPED.holds_name(long_name.name)
    assert packed_units(CAPPED, [long_name])[0] < packed_units(PACKED, [long_name])[0] + 1


def test_a_second_stage_packs_a_backfill_as_it_packs_a_busy_bucket() -> None:
    files, _ = make_files(2000, seed=16)
    words = query_words(files, random.Random(1), 5)
    staged = Layout("staged", 3, False, True, False, 1, stage=1000)
    priced = price(staged, files, words, {})
    assert priced.units["backfill"]["new key"] == pytest.approx(priced.units["busy"]["new key"], rel=0.25)
    unstaged = price(PACKED, files, words, {})
    assert priced.units["backfill"]["new key"] < unstaged.units["backfill"]["new key"]


# Names of words in a few letters and digits, so long runs, shared prefixes and word starts abound.
word_names = st.lists(st.text(alphabet="abrept0127", min_size=1, max_size=10), min_size=1, max_size=6).map(
    lambda words: "_".join(words) + ".pdf"
)


def word_start_prefixes(name: str, data: st.DataObject) -> list[str]:
    """Query words that begin at a word start of `name`: the joined words from there, cut to a length."""
    words = name_terms.folded_words(name)
    if not words:
        return []
    start = data.draw(st.integers(0, len(words) - 1))
    rest = "".join(words[start:])
    return [rest[: data.draw(st.integers(1, min(len(rest), name_terms.MAX_TERM + 4)))]]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.one_of(texts, word_names), data=st.data())
def test_every_layout_reads_a_word_under_a_term_each_name_it_matches_has(
    name: str, data: st.DataObject
) -> None:
    """The model's reads are exact: a name a query word matches has the term the word is read under (or,
    capped, the overflow term of its first character), whatever the script, for every layout."""
    drawn = cut_words(name, data) + word_start_prefixes(name, data)
    words = [word for word in drawn if name_terms.matches(name, [word])]
    for layout in (*LAYOUTS, CAPPED):
        indexed = set(layout.indexed(name))
        for word in words:
            assert layout.read_term(word) in indexed or OVERFLOW + word[0] in indexed, (
                layout.label,
                name,
                word,
            )


def test_blocks_of_a_persons_own_cost_more_as_the_bucket_has_more_people() -> None:
    files, _ = make_files(1000, seed=16)
    words = query_words(files, random.Random(1), 5)
    rows = people_rows(files, (10, 1000), words)
    few, many = (row.ours for row in rows)
    assert few is not None
    assert many is not None
    assert few < many
    assert {file.user for file in spread_over(files, 10, random.Random(1))} <= {
        f"person{n:05d}" for n in range(10)
    }
