"""Intent clustering with the bitset filters picks the same seed as scoring every prefix candidate."""

import math
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from core.mining.episodes import Determinism, Episode, Measures
from core.mining.recipes import MIN_STEMS, PHRASING_SIMILARITY, SKIPPED, RecipeIndex, episode_key, sort_key


def _episode(i: int, bag: list[str]) -> Episode:
    return Episode(session=f"s{i % 5}", project=None, index=i, prompt=" ".join(bag), file=f"f{i % 5}",
                   line_start=i + 1, line_end=i + 1, actions=[], measures=Measures(),
                   determinism=Determinism.irreducible, stems=sorted(set(bag)))


def _reference(eps: list[Episode]) -> dict[str, str]:
    """The clustering as it was: every seed sharing a prefix stem scored (postings lists)."""
    eps = sorted(eps, key=sort_key)
    df = Counter(s for ep in eps for s in set(ep.stems))
    rank = {s: (n, s) for s, n in df.items()}
    t = PHRASING_SIMILARITY

    def prefix(bag):
        ranked = sorted(bag, key=lambda s: rank.get(s) or (0, s))
        return ranked[: len(ranked) - math.ceil(t * len(ranked) / (2 - t)) + 1]

    seeds, postings, first, out = [], {}, [], {}
    for ep in eps:
        key, bag = episode_key(ep), sorted(set(ep.stems))
        if len(bag) < MIN_STEMS:
            out[key] = SKIPPED
            continue
        best, best_score = None, t
        for cid in {c for s in prefix(bag) for c in postings.get(s, ())}:
            seed = seeds[cid]
            score = 2 * len(set(bag) & seed) / (len(bag) + len(seed))
            if score > best_score or (score == best_score and (best is None or cid < best)):
                best, best_score = cid, score
        if best is None:
            best = len(seeds)
            seeds.append(set(bag))
            first.append(key)
            for s in prefix(bag):
                postings.setdefault(s, []).append(best)
        out[key] = first[best]
    return out


_BAGS = st.lists(st.lists(st.sampled_from([f"w{i}" for i in range(14)]), min_size=0, max_size=12), max_size=60)


@settings(max_examples=200, deadline=None)
@given(_BAGS)
def test_same_clusters_as_scoring_every_prefix_candidate(bags):
    eps = [_episode(i, bag) for i, bag in enumerate(bags)]
    RecipeIndex(eps)
    assert {episode_key(ep): ep.cluster for ep in eps} == _reference(eps)
