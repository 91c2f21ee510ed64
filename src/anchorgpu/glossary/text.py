"""Text normalisation for search: small pure functions.

``fold`` makes text case-, accent- and ё/е-insensitive; ``compact`` also drops spaces, hyphens and
punctuation so that ``nv link``, ``NVLink`` and ``nv-link`` compare equal; ``tokens`` splits into words.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from difflib import SequenceMatcher
from functools import lru_cache

__all__ = ["SPELLINGS", "STOPWORDS", "compact", "fold", "fuzzy_ratio", "is_cyrillic", "ratio_upper_bound", "shared_stem", "token_similarity", "tokens", "trigrams"]

_SPLIT = re.compile(r"[^0-9a-zа-я]+")
#: Combining marks (accents, diaeresis of ё, breve of й) left over after NFKD decomposition.
_COMBINING = re.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]")
#: Words that carry no meaning in a glossary query, in both languages (after folding).
STOPWORDS = frozenset(
    {
        "a", "an", "the", "of", "in", "on", "for", "to", "is", "are", "what", "whats", "how", "and", "or", "vs",
        "does", "do", "with",
        "что", "такое", "это", "как", "и", "или", "в", "во", "на", "по", "для", "с", "со", "к", "о", "об", "у",
    }
)


def fold(text: str) -> str:
    """Lowercase, strip accents and diacritics (so ё → е, й → и), keep letters/digits/spaces/punctuation.

    >>> fold("Ёмкость HBM3E")
    'емкость hbm3e'
    >>> fold("Café  déjà")
    'cafe  deja'
    """
    # Decompose, casefold, decompose again: some compatibility forms only show their capitals once decomposed
    # (Hypothesis found "ᾼ" → "Α" + a mark), and casefolding can create new decomposable letters.
    decomposed = unicodedata.normalize("NFKD", unicodedata.normalize("NFKD", text).casefold())
    return decomposed if decomposed.isascii() else _COMBINING.sub("", decomposed)


def compact(text: str) -> str:
    """``fold`` without anything but letters and digits: the key for exact/prefix comparison.

    >>> compact("NV-Link"), compact("nv link"), compact("KV-кэш")
    ('nvlink', 'nvlink', 'kvкэш')
    """
    return _SPLIT.sub("", fold(text))


#: Technical words people type in Cyrillic that mean the Latin acronym (after folding).
SPELLINGS = {"гпу": "gpu", "цпу": "cpu", "куда": "cuda", "нвлинк": "nvlink", "рокм": "rocm", "врам": "vram",
             "хбм": "hbm", "фсдп": "fsdp", "лора": "lora"}
#: Format names typed in Cyrillic letters followed by digits: "фп8" → "fp8", "бф16" → "bf16", "инт4" → "int4".
_FORMAT_PREFIXES = {"фп": "fp", "бф": "bf", "инт": "int", "нвфп": "nvfp", "мхфп": "mxfp"}
_CYRILLIC_FORMAT = re.compile(r"^(фп|бф|инт|нвфп|мхфп)(\d+)$")


def _spelling(word: str) -> str:
    """The Latin spelling of a Cyrillic acronym or format name, else the word itself.

    >>> _spelling("фп8"), _spelling("бф16"), _spelling("гпу"), _spelling("кэш")
    ('fp8', 'bf16', 'gpu', 'кэш')
    """
    found = _CYRILLIC_FORMAT.match(word)
    if found:
        return _FORMAT_PREFIXES[found.group(1)] + found.group(2)
    return SPELLINGS.get(word, word)


def tokens(text: str, *, drop_stopwords: bool = False) -> tuple[str, ...]:
    """Words of ``fold(text)``, with Cyrillic spellings of acronyms mapped to the acronym (``гпу`` → ``gpu``).

    >>> tokens("Кэш KV (ключей и значений)", drop_stopwords=True)
    ('кэш', 'kv', 'ключеи', 'значении')
    >>> tokens("Проброс ГПУ")
    ('проброс', 'gpu')
    """
    words = tuple(_spelling(w) for w in _SPLIT.split(fold(text)) if w)
    return tuple(w for w in words if w not in STOPWORDS) if drop_stopwords else words


def trigrams(word: str) -> frozenset[str]:
    """Character trigrams of a padded word.

    >>> sorted(trigrams("gpu"))
    ['  g', ' gp', 'gpu', 'pu ']
    """
    padded = f"  {word} "
    return frozenset(padded[i : i + 3] for i in range(len(padded) - 2))


def shared_stem(a: str, b: str) -> bool:
    """True when two words share a long common prefix (Russian endings, English plurals).

    >>> shared_stem("тензорного", "тензорныи"), shared_stem("gpus", "gpu"), shared_stem("fp8", "fp4")
    (True, True, False)
    >>> shared_stem("allredcue", "all")
    False
    """
    if a[:3] != b[:3]:
        return False
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    shorter, longer = sorted((len(a), len(b)))
    if longer > shorter + 3:  # an ending, not a different word: "allreduce" does not share a stem with "all"
        return False
    return shorter >= 3 and n >= 3 and n >= 0.7 * shorter and (n == shorter or n >= 5)


def token_similarity(query_word: str, name_word: str) -> float:
    """How well one query word matches one word of a name, in [0, 1].

    1.0 equal; 0.9 the query word is a prefix (≥ 2 letters) of the name word; 0.85 shared stem;
    otherwise the difflib ratio when it is at least 0.75 (typos), else 0. Digits must agree, so
    ``fp8`` never matches ``fp4`` and ``hbm3`` never stands for ``hbm4``.

    >>> token_similarity("nvlnik", "nvlink") >= 0.75, token_similarity("fp8", "fp4")
    (True, 0.0)
    """
    if query_word == name_word:
        return 1.0
    if _digits(query_word) != _digits(name_word) and _digits(query_word) and not name_word.startswith(query_word):
        return 0.0
    if len(query_word) >= 2 and name_word.startswith(query_word):
        return 0.9
    if shared_stem(query_word, name_word):
        return 0.85
    if min(len(query_word), len(name_word)) < 4 or query_word[0] != name_word[0]:
        return 0.0  # a typo rarely changes the first letter ("шардирование" is not "бронирование")
    ratio = fuzzy_ratio(query_word, name_word, cutoff=0.75)
    if ratio < 0.8 and max(len(query_word), len(name_word)) <= 5 and sorted(query_word) != sorted(name_word):
        return 0.0  # in a word this short, 0.75 is two changed letters ("vram" vs "vera"), not a typo
    return ratio if ratio >= 0.75 else 0.0


@lru_cache(maxsize=8192)
def _char_counts(word: str) -> Counter[str]:
    return Counter(word)


def ratio_upper_bound(a: str, b: str) -> float:
    """An upper bound of ``SequenceMatcher(None, a, b).ratio()`` from shared letters, cheap to compute.

    >>> ratio_upper_bound("nvlnik", "nvlink")
    1.0
    """
    if not a or not b:
        return 0.0
    counts_a, counts_b = _char_counts(a), _char_counts(b)
    shared = sum(min(n, counts_b[ch]) for ch, n in counts_a.items() if ch in counts_b)
    return 2.0 * shared / (len(a) + len(b))


@lru_cache(maxsize=65536)
def fuzzy_ratio(a: str, b: str, *, cutoff: float = 0.0) -> float:
    """difflib's similarity ratio of two strings, or 0.0 early when it cannot reach ``cutoff``.

    >>> round(fuzzy_ratio("blakwell", "blackwell"), 3), fuzzy_ratio("fsdp", "moe", cutoff=0.7)
    (0.941, 0.0)
    """
    shorter, longer = sorted((len(a), len(b)))
    if 2.0 * shorter / ((shorter + longer) or 1) < cutoff or ratio_upper_bound(a, b) < cutoff:
        return 0.0
    return SequenceMatcher(None, a, b).ratio()


@lru_cache(maxsize=16384)
def _digits(word: str) -> str:
    return "".join(ch for ch in word if ch.isdigit())


def is_cyrillic(text: str) -> bool:
    """True when most letters of ``text`` are Cyrillic (``кэш KV`` yes, ``KV cache`` no, ``fp8`` no).

    >>> is_cyrillic("кэш KV"), is_cyrillic("голое железо"), is_cyrillic("KV cache"), is_cyrillic("H100 и H200")
    (True, True, False, False)
    """
    letters = [ch for ch in text if ch.isalpha()]
    cyrillic = sum(1 for ch in letters if "\u0400" <= ch <= "\u04ff")
    return bool(letters) and cyrillic * 2 > len(letters)
