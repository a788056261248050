"""Ask clusters: prompts grouped by what they ask (core/mining/asks.py's terms), in time order.

Each prompt joins the cluster it is most similar to, or starts one. A cluster is compared by its core: the
objects at least half its prompts act on, the verbs at least half use and the kind most of them are. So a
cluster started by "regenerate the api client from the openapi spec" takes "regen the client code" once a
few paraphrases have shown that api and client are what it is about, and never takes "explain the api
client" (another kind of request) or "regenerate the favicon" (another object).

Similarity of a prompt's terms A to a cluster's core C (objects weighted 1, general ones 0.3):

    0                                   when both have a kind and the kinds differ, or no object is shared
    2·w(A ∩ C) / (w(A) + w(C))          otherwise, + SAME_VERB_BONUS when a verb of A is in C's verbs,
                                        - SAME_VERB_BONUS when both name verbs and none is shared

A prompt joins the best cluster at or above ASK_SIMILARITY (ties to the oldest). Greedy in time order: a
prompt's cluster depends only on the prompts before it, which is what lets the recipe index fold in a
session going on without revisiting the rest.
"""

from __future__ import annotations

from collections import Counter

from core.mining.lexicon import GENERIC_WEIGHT

ASK_SIMILARITY = 0.6
"""At or above this, a prompt asks what a cluster asks."""
CORE_SHARE = 0.5
"""An object (verb, kind) is a cluster's when at least this share of its prompts have it."""
SAME_VERB_BONUS = 0.1


_FAMILY = {"a:add": "a:make", "a:create": "a:make", "a:implement": "a:make", "a:install": "a:make",
           "a:regenerate": "a:make", "a:update": "a:modify", "a:refactor": "a:modify", "a:format": "a:modify",
           "a:fix": "a:modify", "a:upgrade": "a:modify"}
"""Verbs people use for one request ("add a migration", "create a migration"): never weighed against."""


def weight(term: str) -> float:
    return GENERIC_WEIGHT if term.startswith("g:") else 1.0


def has_object(terms) -> bool:
    return any(t.startswith("o:") for t in terms)


class Cluster:
    """What a cluster's prompts ask, counted."""

    __slots__ = ("n", "objects", "verbs", "kinds", "_core", "_scoring")

    def __init__(self) -> None:
        self.n = 0
        self.objects: Counter[str] = Counter()
        self.verbs: Counter[str] = Counter()
        self.kinds: Counter[str] = Counter()
        self._core: tuple | None = None
        self._scoring: tuple | None = None

    def add(self, terms) -> None:
        self.n += 1
        for term in terms:
            head = term[:2]
            if head in ("o:", "g:"):
                self.objects[term] += 1
            elif head == "a:":
                self.verbs[term] += 1
            elif head == "k:":
                self.kinds[term] += 1
        self._core = self._scoring = None

    def core(self) -> tuple[dict[str, float], frozenset[str], str | None]:
        if self._core is None:
            need = CORE_SHARE * self.n
            objects = {t: weight(t) for t, c in self.objects.items() if c >= need}
            verbs = frozenset(t for t, c in self.verbs.items() if c >= need)
            kind = next((t for t, c in self.kinds.most_common(1) if c >= need), None)
            self._core = (objects, verbs, kind)
        return self._core

    def scoring(self) -> tuple[dict[str, float], float, frozenset[str], str | None, frozenset[str]]:
        """core() with what every comparison works out of it: the objects' total weight and the verbs'
        families (kept until the cluster changes: an ask is compared with dozens of clusters)."""
        if self._scoring is None:
            objects, verbs, kind = self.core()
            self._scoring = (objects, sum(objects.values()), verbs, kind,
                             frozenset(_FAMILY.get(t, t) for t in verbs))
        return self._scoring


class _Ask:
    """One prompt's side of `similarity`, worked out once for all the clusters it is compared with."""

    __slots__ = ("mine", "named", "kind", "verbs", "total", "_families")

    def __init__(self, terms) -> None:
        self.mine = {t: weight(t) for t in terms if t[:2] in ("o:", "g:")}
        self.named = [t for t in self.mine if t.startswith("o:")]
        self.kind = next((t for t in terms if t.startswith("k:")), None)
        self.verbs = {t for t in terms if t.startswith("a:")}
        self.total = sum(self.mine.values())
        self._families: set[str] | None = None

    def families(self) -> set[str]:
        if self._families is None:
            self._families = {_FAMILY.get(t, t) for t in self.verbs}
        return self._families

    def against(self, cluster: Cluster) -> float:
        scoring = cluster.scoring()
        objects = scoring[0]
        if not objects:
            return 0.0
        common = 0
        named = False
        for t, w in self.mine.items():  # summed in this order wherever it is summed: the same float
            if t in objects:
                common += w
                if not named and t.startswith("o:"):
                    named = True
        if not named:
            return 0.0
        return self.score(common, scoring)

    def score(self, common: float, scoring: tuple) -> float:
        """The similarity to a cluster whose core shares a named object with the ask, `common` being the
        weight the two share (summed in `mine`'s order)."""
        _objects, objects_total, verbs, kind, families = scoring
        if self.kind is not None and kind is not None and self.kind != kind:
            return 0.0
        score = 2 * common / (self.total + objects_total)
        if self.verbs & verbs:
            score += SAME_VERB_BONUS
        elif self.verbs and verbs and not self.families() & families:
            # Another verb on a partly shared object: "reseed the db" is not "add a db migration".
            score -= SAME_VERB_BONUS
        return min(score, 1.0)


def similarity(terms, cluster: Cluster) -> float:
    return _Ask(terms).against(cluster)


def same_project(a: str | None, b: str | None) -> bool:
    """One project: the same folder, or one inside the other (a session started in a subfolder)."""
    if not a or not b or a == b:
        return True
    a, b = a.rstrip("/"), b.rstrip("/")
    return a == b or a.startswith(b + "/") or b.startswith(a + "/")


class AskClusters:
    """Clusters in the order they started, with an index of which clusters' cores hold which object. An ask
    is this project's when it recurs in this project: prompts of different projects never share a cluster."""

    def __init__(self) -> None:
        self.clusters: list[Cluster] = []
        self.seed_terms: list[list[str]] = []
        self.projects: list[str | None] = []
        self.holding: dict[str, set[int]] = {}
        """Object (o: or g:) -> the clusters whose core holds it. A cluster whose core holds none of an ask's
        named (o:) objects scores 0 against it (_Ask.against), so only those that do are scored, and the
        weight each shares with the ask is summed from here: on a long history most clusters that ever held
        one of the ask's objects no longer have it in their core."""
        self._indexed: list[frozenset[str]] = []
        """Per cluster, the objects of its core as `holding` has them."""
        self.totals: list[float] = []
        """Per cluster, the weight of its core's objects (Cluster.scoring's, the same float), kept by `join`."""

    def best(self, terms, project: str | None = None) -> int | None:
        """The cluster these terms (asked in `project`) join, or None for a new one."""
        ask = _Ask(terms)
        holding = self.holding
        named: set[int] = set()
        for t in ask.named:
            held = holding.get(t)
            if held:
                named |= held
        if not named:
            return None
        common: dict[int, float] = {}
        get = common.get
        for t, w in ask.mine.items():  # _Ask.against's sum, in its order, for every cluster at once
            held = holding.get(t)
            if held:
                # only clusters holding a named object can score: a general object's others are not summed
                for cid in (held if t[0] == "o" else held & named):
                    common[cid] = get(cid, 0) + w
        best, best_score = None, ASK_SIMILARITY
        clusters, projects, total, totals = self.clusters, self.projects, ask.total, self.totals
        # Only a cluster that can reach ASK_SIMILARITY with the verb bonus is looked at (the score of one
        # that cannot is below every best score), in cluster order: ties go to the oldest.
        floor = ASK_SIMILARITY - 1e-9
        reach = [cid for cid in named if 2 * common[cid] / (total + totals[cid]) + SAME_VERB_BONUS >= floor]
        reach.sort()
        for cid in reach:
            if project and not same_project(project, projects[cid]):
                continue
            shared = common[cid]
            if 2 * shared / (total + totals[cid]) + SAME_VERB_BONUS < best_score - 1e-9:
                continue  # even with the verb bonus it cannot reach the best so far
            score = ask.score(shared, clusters[cid].scoring())
            if score > best_score + 1e-12 or (best is None and score >= best_score - 1e-12):
                best, best_score = cid, score
        return best

    def start(self, terms, project: str | None = None) -> int:
        cid = len(self.clusters)
        self.clusters.append(Cluster())
        self.seed_terms.append(sorted(set(terms)))
        self.projects.append(project)
        self._indexed.append(frozenset())
        self.totals.append(0)
        return cid

    def join(self, cid: int, terms) -> None:
        cluster = self.clusters[cid]
        cluster.add(terms)
        self.totals[cid] = cluster.scoring()[1]
        # The core of this cluster alone can have changed (its count grew): index its objects again.
        now = frozenset(cluster.core()[0])
        before = self._indexed[cid]
        if now != before:
            for term in before - now:
                self.holding[term].discard(cid)
            for term in now - before:
                self.holding.setdefault(term, set()).add(cid)
            self._indexed[cid] = now
