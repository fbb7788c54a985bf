"""Measure 16's data: file names as people's uploads have them, in Latin script and in CJK scripts.

`make_files(objects)` gives `objects` uploads to one bucket by `USERS` uploaders over 2017 (upload times
uniform over the year, sizes log-uniform from 1 B to 10 GiB), named: camera files
(`IMG_20170412_093015.jpg`, 33%), documents of two or three words drawn from a vocabulary of `VOCABULARY`
words with Zipf frequencies and a year (`invoice_march_2017.pdf`, 37%), screenshots
(`Screenshot 2017-04-12 at 09.30.15.png`, 14%), opaque ids (`3f9a0c12be77.bin`, 8%), and Japanese,
Chinese and Korean documents (8%): words of a short list run together as those languages write them
(`会議資料_2017.pdf`, `项目报告.docx`), Korean ones apart (`회의록 2017.hwp`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from bench.entries import log_uniform_size

USERS = 100
USER = "user0007"
VOCABULARY = 3000
YEAR_START = datetime(2017, 1, 1, tzinfo=UTC)
YEAR_END = datetime(2018, 1, 1, tzinfo=UTC)
_SYLLABLES = "in vo ice re port mar ch bud get con tract no tes de sign pla n ta x me et ing pho to sca le"
_SYLLABLES += " da ta fi nal"
_COMMON = ["report", "invoice", "notes", "final", "draft", "budget", "contract", "meeting", "plan", "scan"]
# Words of each language, most frequent first; (words, joiner).
_CJK = {
    "ja": (
        "資料 会議 報告書 見積書 請求書 議事録 企画書 提案書 写真 旅行 契約書 プレゼン 予算 名刺 最終版 報告",
        "",
    ),
    "zh": ("报告 会议 记录 项目 合同 发票 预算 计划 照片 资料 总结 方案", ""),
    "ko": ("회의록 보고서 계약서 사진 견적서 회의 자료 예산 기획서 최종", " "),
}


@dataclass(frozen=True)
class NamedFile:
    key: str
    user: str
    name: str
    size: int
    upload_date: str


def vocabulary(rng: random.Random) -> list[str]:
    syllables = _SYLLABLES.split()
    found: list[str] = list(_COMMON)
    seen = set(found)
    while len(found) < VOCABULARY:
        word = "".join(rng.choice(syllables) for _ in range(rng.randint(2, 4)))
        if word not in seen and len(word) > 3:
            seen.add(word)
            found.append(word)
    return found


def _cjk_name(rng: random.Random, moment: datetime) -> str:
    language = rng.choice(sorted(_CJK))
    vocab, joiner = _CJK[language]
    choices = vocab.split()
    picked = rng.choices(choices, [1 / rank for rank in range(1, len(choices) + 1)], k=rng.randint(1, 2))
    stem = joiner.join(dict.fromkeys(picked))
    year = f"{joiner or '_'}{moment:%Y}" if rng.random() < 0.5 else ""
    return f"{stem}{year}.{rng.choice(['pdf', 'docx', 'xlsx', 'hwp' if language == 'ko' else 'pptx'])}"


def make_files(objects: int, seed: int = 15) -> tuple[list[NamedFile], str]:
    """`objects` files and a rare word of their names (in about 0.05% of them, at least one)."""
    rng = random.Random(seed)
    vocab = vocabulary(rng)
    weights = [1 / rank for rank in range(1, len(vocab) + 1)]
    files: list[NamedFile] = []
    keys: set[str] = set()
    used: dict[str, int] = {}  # documents per vocabulary word
    for n in range(objects):
        moment = YEAR_START + timedelta(seconds=rng.randrange(365 * 86400))
        roll = rng.random()
        if roll < 0.33:
            name = f"IMG_{moment:%Y%m%d_%H%M%S}.jpg"
        elif roll < 0.70:
            chosen = rng.choices(vocab, weights, k=rng.randint(2, 3))
            for word in set(chosen):
                used[word] = used.get(word, 0) + 1
            name = "_".join(chosen) + f"_{moment:%Y}.{rng.choice(['pdf', 'docx', 'xlsx', 'txt'])}"
        elif roll < 0.84:
            name = f"Screenshot {moment:%Y-%m-%d} at {moment:%H.%M.%S}.png"
        elif roll < 0.92:
            name = f"{rng.getrandbits(48):012x}.bin"
        else:
            name = _cjk_name(rng, moment)
        user = f"user{rng.randrange(USERS):04d}"
        key = f"{user}/{name}"
        if key in keys:
            key = f"{user}/{n}-{name}"
            name = key.split("/", 1)[1]
        keys.add(key)
        upload_date = moment.strftime("%Y-%m-%dT%H:%M:%S.000Z")
        files.append(NamedFile(key, user, name, log_uniform_size(rng), upload_date))
    target = max(1, objects // 2000)  # about 0.05% of the files
    rare = min((word for word in vocab if word in used), key=lambda word: (abs(used[word] - target), word))
    return files, rare
