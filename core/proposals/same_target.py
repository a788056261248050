"""Two proposals that would draft the same thing are one: recipes mapped to the same target are merged before
drafting, so a person never sees two cards that add the same intent, the same state or the same setting.

Same target:
- intent: ENRICH of the same intent; or new intents that ask the same thing (the clusters' similarity between
  what most of each recipe's phrasings ask, core/mining/clusters.py) or would get the same name;
- gate: ENRICH of the same state; or a new review state before the same action;
- binding or world: the same interface or world key with the same value.

The merged recipe keeps the id, kind and mapping of the highest-priority one (its card and trace stay
where they were) and gathers the others' phrasings, instances and sessions, so the card's evidence is all of it.
"""

from __future__ import annotations

from collections import Counter

from core.mining.clusters import ASK_SIMILARITY, Cluster, same_project, similarity
from core.mining.recipes import Instance, Phrasing, Recipe
from core.proposals.model import Mapping


def _ask_of(recipe: Recipe) -> Cluster:
    from core.mining.asks import understand  # here: grouping by target reads no ask unless two intents meet

    cluster = Cluster()
    for phrasing in recipe.phrasings:
        terms = understand(phrasing.text).terms
        for _ in range(phrasing.count):
            cluster.add(terms)
    return cluster


def _same_ask(a: Recipe, b: Recipe) -> bool:
    ca, cb = _ask_of(a), _ask_of(b)
    core_b = [t for t in cb.core()[0]] + list(cb.core()[1]) + ([cb.core()[2]] if cb.core()[2] else [])
    core_a = [t for t in ca.core()[0]] + list(ca.core()[1]) + ([ca.core()[2]] if ca.core()[2] else [])
    return similarity(core_b, ca) >= ASK_SIMILARITY and similarity(core_a, cb) >= ASK_SIMILARITY


def target(recipe: Recipe, mapping: Mapping, name: str | None = None) -> tuple:
    """What a draft of this recipe would change, as a key: equal keys draft the same thing."""
    if recipe.kind in ("binding", "world"):
        # Per value: two projects' habits read together (other projects mined on purpose) are two cards
        # for the person to choose between, never one that picks another project's value for them.
        return (recipe.kind, recipe.iface, recipe.value)
    if mapping.classification == "ENRICH" and mapping.near:
        return (recipe.kind, "enrich", mapping.near)
    if recipe.kind == "gate":
        return ("gate", "new", tuple(recipe.action_signature))
    return (recipe.kind, "new", name or recipe.id)


def merge(recipes: list[Recipe]) -> Recipe:
    """One recipe from several that draft the same thing; the first (highest priority) leads."""
    lead = recipes[0]
    if len(recipes) == 1:
        return lead
    phrasings: Counter[str] = Counter()
    seen: dict[tuple, Instance] = {}
    signature: dict[str, None] = {}
    for recipe in recipes:
        for p in recipe.phrasings:
            phrasings[p.text] += p.count
        for i in recipe.instances:
            seen.setdefault((i.session, i.path, i.line_start), i)
        for s in recipe.action_signature:
            signature.setdefault(s, None)
    instances = sorted(seen.values(), key=lambda i: (i.path, i.line_start, i.session))
    stamps_first = [r.first_seen for r in recipes if r.first_seen]
    stamps_last = [r.last_seen for r in recipes if r.last_seen]
    return lead.model_copy(update={
        "phrasings": [Phrasing(text=t, count=n) for t, n in sorted(phrasings.items(), key=lambda kv: (-kv[1], kv[0]))],
        "instances": instances,
        "sessions": len({i.session for i in instances}),
        "action_signature": list(signature),
        "priority": max(r.priority for r in recipes),
        "first_seen": min(stamps_first) if stamps_first else None,
        "last_seen": max(stamps_last) if stamps_last else None,
        "tool_calls": sum(r.tool_calls for r in recipes),
        "edit_rerun_cycles": sum(r.edit_rerun_cycles for r in recipes),
        "retries": sum(r.retries for r in recipes),
    })


def group_same_targets(mapped: list[tuple[Recipe, Mapping, tuple]]) -> list[list[int]]:
    """Indices of `mapped` (recipe, mapping, target) grouped by what they would draft, in the order of each
    group's first (highest-priority) member. New intents that ask the same thing are one group too."""
    groups: list[list[int]] = []
    for n, (recipe, mapping, key) in enumerate(mapped):
        at = next((g for g, members in enumerate(groups)
                   if _one_project(mapped[members[0]][0], recipe)
                   and (mapped[members[0]][2] == key
                        or (recipe.kind == "intent" and key[1] == "new" and mapped[members[0]][0].kind == "intent"
                            and mapped[members[0]][2][1] == "new" and _same_ask(mapped[members[0]][0], recipe)))),
                  None)
        if at is None:
            groups.append([n])
        else:
            groups[at].append(n)
    return groups


def _one_project(a: Recipe, b: Recipe) -> bool:
    """Two projects' recipes (other projects mined on purpose) are never one card."""
    if not a.projects or not b.projects:
        return True
    return any(same_project(x, y) for x in a.projects for y in b.projects)
