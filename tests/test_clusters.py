"""Ask clustering: the recipe index's clusters (candidates from its object index) are those of scoring every
cluster in time order, and a session going on folds in to the same clusters as a fresh run."""

from hypothesis import given, settings
from hypothesis import strategies as st

from core.mining.clusters import ASK_SIMILARITY, Cluster, has_object, similarity
from core.mining.episodes import Determinism, Episode, Measures
from core.mining.recipes import SKIPPED, RecipeIndex, episode_key, sort_key


def _episode(i: int, terms: list[str]) -> Episode:
    return Episode(session=f"s{i % 5}", project=None, index=i, prompt=" ".join(terms), file=f"f{i % 5}",
                   line_start=i + 1, line_end=i + 1, actions=[], measures=Measures(),
                   determinism=Determinism.irreducible, stems=sorted(set(terms)))


def _reference(eps: list[Episode]) -> dict[str, str]:
    """Every cluster scored for every prompt, in time order; ties to the oldest."""
    eps = sorted(eps, key=sort_key)
    clusters: list[Cluster] = []
    first: list[str] = []
    out = {}
    for ep in eps:
        key, terms = episode_key(ep), ep.stems
        if not has_object(terms):
            out[key] = SKIPPED
            continue
        best, best_score = None, ASK_SIMILARITY
        for cid, cluster in enumerate(clusters):
            score = similarity(terms, cluster)
            if score > best_score + 1e-12 or (best is None and score >= best_score - 1e-12):
                best, best_score = cid, score
        if best is None:
            best = len(clusters)
            clusters.append(Cluster())
            first.append(key)
        clusters[best].add(terms)
        out[key] = first[best]
    return out


_TERMS = st.lists(st.sampled_from(["k:change", "k:inquire", "a:update", "a:fix", "o:changelog", "o:api",
                                   "o:client", "o:version", "g:error", "g:file", "o:docs"]), max_size=6)


@settings(max_examples=200, deadline=None)
@given(st.lists(_TERMS, max_size=50))
def test_same_clusters_as_scoring_every_cluster(bags):
    eps = [_episode(i, bag) for i, bag in enumerate(bags)]
    RecipeIndex(eps)
    assert {episode_key(ep): ep.cluster for ep in eps} == _reference(eps)


@settings(max_examples=60, deadline=None)
@given(st.lists(_TERMS, min_size=2, max_size=40), st.integers(min_value=1, max_value=39))
def test_appended_prompts_cluster_as_a_fresh_run(bags, cut):
    eps = [_episode(i, bag) for i, bag in enumerate(bags)]
    cut = min(cut, len(eps) - 1)
    index = RecipeIndex(eps[:cut])
    index.sync(eps)  # folded in or rebuilt: the clusters are the same either way
    incremental = {episode_key(ep): ep.cluster for ep in eps}
    fresh = [_episode(i, bag) for i, bag in enumerate(bags)]
    RecipeIndex(fresh)
    assert incremental == {episode_key(ep): ep.cluster for ep in fresh}


def test_kinds_never_mix_and_general_words_do_not_join():
    update = ["a:update", "k:change", "o:changelog"]
    explain = ["a:explain", "k:inquire", "o:changelog"]
    fix_errors = ["a:fix", "k:change", "o:lint", "g:error"]
    fix_other = ["a:fix", "k:change", "o:checkout", "g:error"]
    eps = [_episode(i, t) for i, t in enumerate([update, explain, update, fix_errors, fix_other])]
    RecipeIndex(eps)
    assert eps[0].cluster == eps[2].cluster
    assert eps[1].cluster != eps[0].cluster
    assert eps[3].cluster != eps[4].cluster
