"""Bilingual glossary search: best match first, as small pure functions.

A query is compared with every name of every entry (id, English and Russian term, all aliases) and, last,
with the words of its texts. Tiers, best first (the score bands do not overlap):

=========  =====================================================================  ==========
tier       when                                                                   score
=========  =====================================================================  ==========
exact      same letters and digits (``nv link`` = ``NVLink``) or the same words    950–1000
           in another order (``кэш KV`` = ``KV-кэш``)
prefix     the query starts a name (``hbm3`` → ``HBM3e``)                          800–900
tokens     the query's words match the name's words, exactly, by prefix, by a     500–780
           shared stem (Russian endings) or with a typo (difflib ratio ≥ 0.75,
           same first letter, ≥ 0.8 in words of up to five letters); +20 when
           the name is the entry's own term or id, not an alias
fuzzy      the whole query resembles a whole name (difflib ratio ≥ 0.7, same      440–500
           first letter)
text       the query's words occur in the definitions                             100–250
=========  =====================================================================  ==========

Everything is case-, accent- and ё/е-insensitive (:func:`anchorgpu.glossary.text.fold`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

from anchorgpu.glossary.loader import Glossary
from anchorgpu.glossary.model import Entry, Lang, SearchHit
from anchorgpu.glossary.text import compact, fuzzy_ratio, shared_stem, token_similarity, tokens, trigrams

__all__ = ["Name", "name_score", "rank", "search_glossary", "text_score", "text_word_matches"]

Tier = Literal["exact", "prefix", "tokens", "fuzzy", "text"]
#: Added to a word or typo match on the entry's own term or id (not on an alias), within the tier's band:
#: "quantisaton" then finds Quantization above GPTQ, whose alias "GPT quantization" only mentions the word.
TERM_BONUS = 20.0


@dataclass(frozen=True, slots=True)
class Name:
    """One searchable name of an entry, pre-normalised. ``lang`` is None for the id."""

    text: str
    key: str  # compact form
    words: tuple[str, ...]
    lang: Lang | None


@dataclass(frozen=True, slots=True)
class _Indexed:
    entry: Entry
    names: tuple[Name, ...]
    text_words: frozenset[str]


def name_score(
    query_key: str,
    query_words: tuple[str, ...],
    name: Name,
    similarity: Callable[[str, str], float] = token_similarity,
    key_ratio: Callable[[str, str], float] | None = None,
) -> tuple[float, Tier] | None:
    """Score one query against one name, or None when they do not match at all.

    ``similarity`` compares one query word with one name word (default :func:`token_similarity`) and
    ``key_ratio`` the whole query with the whole name (default :func:`fuzzy_ratio`); the search passes
    precomputed tables of the same values.

    >>> n = Name("KV-кэш", compact("KV-кэш"), tokens("KV-кэш"), "ru")
    >>> name_score(compact("кэш KV"), tokens("кэш KV"), n)
    (950.0, 'exact')
    >>> name_score(compact("kv"), tokens("kv"), n)[1]
    'prefix'
    """
    if not query_key or not name.key:
        return None
    if query_key == name.key:
        return 1000.0, "exact"
    if len(query_words) > 1 and sorted(query_words) == sorted(name.words):
        return 950.0, "exact"
    if len(query_key) >= 2 and name.key.startswith(query_key):
        return 800.0 + 100.0 * len(query_key) / len(name.key), "prefix"
    best: tuple[float, Tier] | None = None
    if query_words and name.words:
        # a multi-word name is also compared as one word, so "allredcue" still meets "all-reduce"
        words = name.words if len(name.words) == 1 else (*name.words, name.key)
        sims = [max(similarity(q, w) for w in words if w in name.words or len(q) >= 0.7 * len(w)) for q in query_words]
        if max(sims) >= 0.75:
            if len(name.words) > 1 and any(
                len(q) >= 0.7 * len(name.key) and similarity(q, name.key) >= 0.75 for q in query_words
            ):
                coverage = 1.0
            else:
                coverage = sum(1 for w in name.words if any(similarity(q, w) >= 0.75 for q in query_words)) / len(name.words)
            score = 500.0 + 200.0 * (sum(sims) / len(sims)) + 80.0 * coverage
            best = (min(score, 780.0), "tokens")
    if best is None and min(len(query_key), len(name.key)) >= 4 and query_key[0] == name.key[0]:
        ratio = key_ratio(query_key, name.key) if key_ratio else fuzzy_ratio(query_key, name.key, cutoff=0.7)
        if ratio >= 0.7:
            best = (440.0 + 200.0 * (ratio - 0.7), "fuzzy")
    return best


def text_word_matches(query_word: str, text_word: str) -> bool:
    """A query word found in a text: equal, a prefix of ≥ 4 letters, or the same stem.

    >>> text_word_matches("experts", "expert"), text_word_matches("gpu", "gpus"), text_word_matches("fp8", "fp4")
    (True, True, False)
    """
    if query_word[:3] != text_word[:3]:
        return False
    return query_word == text_word or (len(query_word) >= 4 and text_word.startswith(query_word)) or shared_stem(
        query_word, text_word
    )


def text_score(query_words: tuple[str, ...], text_words: frozenset[str]) -> float:
    """Share of query words found in an entry's texts (see :func:`text_word_matches`), as 100–250; 0 if none.

    >>> text_score(("experts", "resident"), frozenset({"every", "expert", "is", "resident"}))
    250.0
    """
    if not query_words:
        return 0.0
    found = sum(1 for q in query_words if any(text_word_matches(q, w) for w in text_words))
    return 100.0 + 150.0 * found / len(query_words) if found else 0.0


def _index_entry(entry: Entry) -> _Indexed:
    names: list[Name] = []
    labelled: list[tuple[str, Lang | None]] = [(entry.id, None), (entry.term.en, "en"), (entry.term.ru, "ru")]
    labelled += [(a, "en") for a in entry.aliases_en] + [(a, "ru") for a in entry.aliases_ru]
    seen: set[str] = set()
    for text, lang in labelled:
        key = compact(text)
        if key in seen:
            continue
        seen.add(key)
        names.append(Name(text, key, tokens(text, drop_stopwords=True) or tokens(text), lang))
    body = " ".join(
        [entry.short.en, entry.short.ru, entry.long.en, entry.long.ru, " ".join(entry.tags), " ".join(entry.codes)]
    )
    return _Indexed(entry, tuple(names), frozenset(tokens(body, drop_stopwords=True)))


@dataclass(frozen=True, slots=True)
class _Index:
    items: tuple[_Indexed, ...]
    name_vocab: frozenset[str]
    text_vocab: frozenset[str]
    trigram_postings: Mapping[str, frozenset[str]]  # trigram -> name words and keys containing it
    text_by_prefix: Mapping[str, tuple[str, ...]]  # first three letters -> text words

    def name_candidates(self, word: str) -> set[str]:
        """Name words that share a padded trigram with ``word``: every word that can be equal, extend it,
        share its stem or be within a typo of it (the rest are skipped without comparing)."""
        found: set[str] = set()
        for gram in trigrams(word):
            found |= self.trigram_postings.get(gram, frozenset())
        return found


_INDEXES: dict[int, tuple[Glossary, _Index]] = {}


def _index(glossary: Glossary) -> _Index:
    cached = _INDEXES.get(id(glossary))
    if cached is None or cached[0] is not glossary:
        items = tuple(_index_entry(e) for e in glossary.entries.values())
        name_vocab = frozenset(w for item in items for name in item.names for w in (*name.words, name.key))
        text_vocab = frozenset(w for item in items for w in item.text_words)
        postings: dict[str, set[str]] = {}
        for word in name_vocab:
            for gram in trigrams(word):
                postings.setdefault(gram, set()).add(word)
        by_prefix: dict[str, list[str]] = {}
        for word in text_vocab:
            by_prefix.setdefault(word[:3], []).append(word)
        index = _Index(
            items=items,
            name_vocab=name_vocab,
            text_vocab=text_vocab,
            trigram_postings={g: frozenset(ws) for g, ws in postings.items()},
            text_by_prefix={p: tuple(ws) for p, ws in by_prefix.items()},
        )
        cached = (glossary, index)
        _INDEXES[id(glossary)] = cached
    return cached[1]


def rank(
    query: str,
    item: _Indexed,
    lang: Lang | None,
    similarity: Callable[[str, str], float] = token_similarity,
    text_hits: Mapping[str, frozenset[str]] | None = None,
    key_ratio: Callable[[str, str], float] | None = None,
    touched: frozenset[str] | None = None,
) -> SearchHit | None:
    """The best way ``query`` matches one indexed entry (names first, then its texts).

    ``similarity`` and ``text_hits`` (query word → matching text words) are precomputed by the search so
    that each word pair is compared once per query, not once per entry; ``touched`` (every name word or key
    that matched something) lets names that cannot match be skipped without scoring.
    """
    query_key = compact(query)
    query_words = tokens(query, drop_stopwords=True) or tokens(query)
    best: SearchHit | None = None
    for name in item.names:
        if touched is not None and name.key not in touched and touched.isdisjoint(name.words):
            if not name.key.startswith(query_key):
                continue
        scored = name_score(query_key, query_words, name, similarity, key_ratio)
        if scored is None:
            continue
        score, tier = scored
        if tier == "tokens" and name.text in (item.entry.id, item.entry.term.en, item.entry.term.ru):
            score = min(score + TERM_BONUS, 799.0)  # the entry named by the query above entries whose alias mentions it
        if lang is not None and name.lang == lang:
            score += 1.0  # in a tie, prefer the name in the reader's language
        if best is None or score > best.score:
            best = SearchHit(entry=item.entry, score=score, tier=tier, matched=name.text)
    if best is None:
        if text_hits is None:
            score = text_score(query_words, item.text_words)
        else:
            found = sum(1 for q in query_words if not text_hits[q].isdisjoint(item.text_words))
            score = 100.0 + 150.0 * found / len(query_words) if found else 0.0
        if score >= 175.0 or (score and len(query_words) == 1):
            best = SearchHit(entry=item.entry, score=score, tier="text", matched="")
    return best


def search_glossary(glossary: Glossary, query: str, lang: Lang | None = None, *, limit: int = 10) -> list[SearchHit]:
    """Entries matching ``query``, best first; an empty query matches nothing."""
    if not compact(query):
        return []
    index = _index(glossary)
    query_words = tokens(query, drop_stopwords=True) or tokens(query)
    table = {q: {w: v for w in index.name_candidates(q) if (v := token_similarity(q, w)) > 0.0} for q in query_words}

    def similarity(q: str, w: str) -> float:
        return table[q].get(w, 0.0) if q in table else token_similarity(q, w)

    query_key = compact(query)
    key_table = {k: r for k in index.name_candidates(query_key) if (r := fuzzy_ratio(query_key, k, cutoff=0.7)) >= 0.7}

    def key_ratio(q: str, k: str) -> float:
        return key_table.get(k, 0.0) if q == query_key else fuzzy_ratio(q, k, cutoff=0.7)

    text_hits = {q: frozenset(w for w in index.text_by_prefix.get(q[:3], ()) if text_word_matches(q, w)) for q in query_words}
    touched = frozenset(key_table).union(*(table[q] for q in query_words), [query_key])
    hits = [
        hit
        for item in index.items
        if (hit := rank(query, item, lang, similarity, text_hits, key_ratio, touched)) is not None
    ]
    order = lang or "en"
    hits.sort(key=lambda h: (-h.score, len(h.entry.term.get(order)), h.entry.id))
    return hits[:limit]
