"""Relation candidate pools (candidates.mjs `buildCandidatePools`, reference/evolve-store.md §4).

Deterministic and never throws: dialect-normalize, drop expired records, an exact-key pass first
(`learning_key`; newest by created_at, then id, is kept), then IDF-weighted Dice over the tokens of
subject and insight (evidence excluded; English and German stopwords removed) plus a path boost,
per seed the candidates scoring >= FLOOR, best first, at most TOP_K. No transitive closure.
"""

from __future__ import annotations

import math
import re
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from core.learnings.schema import learning_key, normalize, now_utc, parse_time

FLOOR = 0.085
TOP_K = 8
MAX_POOL_HOPS = 2
EXACT_PATH_BOOST = 0.05
DIR_PATH_BOOST = 0.025
MAX_SHARED = 8

STOPWORDS = frozenset("""
the and for are but not you all any can had her was one our out has him his how its may new now old see
two way who did get let put say she too use with that this from they will have been were what when where
which while into than then them these those there their your about after again also because before being
both each more most other over same some such only very just should would could does doing done here why
off under until upon onto per via
der die das und ist nicht ein eine einen einem einer eines mit für von zu zum zur den dem des im auf aus
bei nach wie wird werden wurde sind sein oder auch als aber noch nur schon sich sie wir ihr ich man
kann können muss müssen soll sollte dass wenn weil durch über unter vor bis beim
""".split())
_SPLIT = re.compile(r"[^a-z0-9]+")


class PoolMember(BaseModel):
    id: str
    key: str
    score: float
    base: float
    boost: float
    type: str
    sharedTokens: list[str]


class PoolResult(BaseModel):
    pools: dict[str, list[PoolMember]] = Field(default_factory=dict)
    """Seed id -> its candidates."""
    duplicates: list[dict] = Field(default_factory=list)
    """Exact-key groups: {key, kept, dropped[]} (ids)."""
    stats: dict[str, int] = Field(default_factory=dict)


def tokens(record: dict) -> list[str]:
    text = " ".join(str(record.get(k) or "") for k in ("subject", "insight")).lower()
    seen: dict[str, None] = {}
    for tok in _SPLIT.split(text):
        if len(tok) >= 3 and tok not in STOPWORDS:
            seen.setdefault(tok, None)
    return list(seen)


def _dir(path: str) -> str | None:
    parts = [p for p in path.replace("\\", "/").split("/") if p]
    return "/".join(parts[:2]) if len(parts) >= 3 else None


def path_boost(a: dict, b: dict) -> float:
    pa = [p for p in a.get("file_paths") or [] if isinstance(p, str)]
    pb = [p for p in b.get("file_paths") or [] if isinstance(p, str)]
    if set(pa) & set(pb):
        return EXACT_PATH_BOOST
    da = {d for d in map(_dir, pa) if d}
    db = {d for d in map(_dir, pb) if d}
    return DIR_PATH_BOOST if da & db else 0.0


def _created(record: dict) -> float:
    dt = parse_time(record.get("created_at"))
    return dt.timestamp() if dt else float("-inf")


def build_candidate_pools(records: list[Any], *, now: datetime | None = None, top_k: int = TOP_K,
                          floor: float = FLOOR) -> PoolResult:
    now = now or now_utc()
    stats = dict(input=0, expired=0, unkeyable=0, duplicateGroups=0, duplicatesDropped=0, scored=0, pairs=0,
                 retained=0, seedsWithPool=0)
    seen_refs: set[int] = set()
    live: list[tuple[dict, str]] = []
    for raw in records if isinstance(records, list) else []:
        if not isinstance(raw, dict) or id(raw) in seen_refs:
            continue
        seen_refs.add(id(raw))
        stats["input"] += 1
        try:
            rec = normalize(raw)
        except Exception:  # hostile input never throws
            stats["unkeyable"] += 1
            continue
        expires = parse_time(rec.get("expires_at"))
        if expires is not None and expires <= now:
            stats["expired"] += 1
            continue
        key = learning_key(rec)
        if key is None or not isinstance(rec.get("id"), str) or not rec["id"]:
            stats["unkeyable"] += 1
            continue
        live.append((rec, key))
    groups: dict[str, list[dict]] = {}
    for rec, key in live:
        groups.setdefault(key, []).append(rec)
    kept: list[tuple[dict, str]] = []
    duplicates = []
    for key in sorted(groups):
        members = sorted(groups[key], key=lambda r: (-_created(r), r["id"]))
        kept.append((members[0], key))
        if len(members) > 1:
            stats["duplicateGroups"] += 1
            stats["duplicatesDropped"] += len(members) - 1
            duplicates.append({"key": key, "kept": members[0]["id"], "dropped": [m["id"] for m in members[1:]]})
    kept.sort(key=lambda rk: rk[0]["id"])
    toks = [tokens(r) for r, _ in kept]
    n = len(kept)
    df: dict[str, int] = {}
    for ts in toks:
        for t in ts:
            df[t] = df.get(t, 0) + 1
    idf = {t: math.log((n + 1) / (d + 0.5)) for t, d in df.items()}
    stats["scored"] = n
    scores: dict[int, list[tuple[float, float, float, list[str], int]]] = {i: [] for i in range(n)}
    for i in range(n):
        for j in range(i + 1, n):
            stats["pairs"] += 1
            shared = [t for t in toks[i] if t in set(toks[j])]
            denom = sum(idf[t] for t in toks[i]) + sum(idf[t] for t in toks[j])
            base = 2 * sum(idf[t] for t in shared) / denom if denom > 0 and shared else 0.0
            boost = path_boost(kept[i][0], kept[j][0])
            score = base + boost
            if score >= floor and base > 0:
                scores[i].append((score, base, boost, shared[:MAX_SHARED], j))
                scores[j].append((score, base, boost, shared[:MAX_SHARED], i))
    pools: dict[str, list[PoolMember]] = {}
    for i in range(n):
        ranked = sorted(scores[i], key=lambda s: (-s[0], -_created(kept[s[4]][0]), kept[s[4]][0]["id"]))[:top_k]
        if not ranked:
            continue
        stats["seedsWithPool"] += 1
        stats["retained"] += len(ranked)
        pools[kept[i][0]["id"]] = [PoolMember(id=kept[j][0]["id"], key=kept[j][1], score=round(score, 6),
                                              base=round(base, 6), boost=boost, type=str(kept[j][0].get("type")),
                                              sharedTokens=shared)
                                   for score, base, boost, shared, j in ranked]
    return PoolResult(pools=pools, duplicates=duplicates, stats=stats)
