"""The proposer's one call into the impact: each drafted proposal's impact, attached to its card, and a
narrower phrasing drafted first when the broad one moves routes."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from core.kitsoki.model import Workspace
from core.proposals.impact import NARROWER_TRIES, Impact
from core.proposals.impact.readers import binding_readers, state_readers, world_readers
from core.proposals.impact.replay import replay, staged_intents

if TYPE_CHECKING:
    from core.kitsoki.inventory import Inventory


def assess(model: Workspace, live: Inventory, routers, proposal, files: dict[str, bytes], recipe) -> Impact:
    """The impact of one drafted proposal (its staged files against the live tree)."""
    if proposal.suggestion_only or not files:
        return Impact(note="a suggestion: it changes no file, so nothing routes differently")
    if proposal.kind == "world" and recipe.iface:
        readers = world_readers(model, recipe.iface)
        return Impact(reads=readers, note="" if readers else
                      f"nothing in this project reads world.{recipe.iface}")
    if proposal.kind == "binding" and recipe.iface:
        readers = binding_readers(model, recipe.iface)
        return Impact(reads=readers, note="" if readers else
                      f"nothing in this project invokes the {recipe.iface} interface")
    from core.proposals.validate import staged_load

    # the tree the draft's checks just loaded (cached there: the same files, before its proof was added)
    proof = proposal.proof.path if proposal.proof is not None else None
    staged = staged_load(model, {rel: data for rel, data in files.items() if rel != proof})
    impact = replay(model, live, staged_intents(model, live, staged, files), getattr(routers, "by_story", None))
    if proposal.kind == "gate" and proposal.mapping.near and ":" in proposal.mapping.near:
        story_slug, state = proposal.mapping.near.split(":", 1)
        impact.reads = state_readers(model, story_slug, state)
    if not impact.gained and not impact.moved and not impact.reads:
        impact.note = "no past prompt, fixture input or phrase routes differently"
    return impact


def weigh(model: Workspace, live: Inventory, routers, recipe, mapping, built: tuple,
          rebuild: Callable[[object], tuple]) -> tuple:
    """The proposer's one call: the impact of the drafted proposal, attached to it (card text and
    `proposal.impact`); when it moves routes, a narrower phrasing of the same ask is drafted first
    and kept instead if it gains without moving anything."""
    proposal, files, artifact = built
    try:
        impact = assess(model, live, routers, proposal, files, recipe)
    except Exception as exc:  # noqa: BLE001 - a card whose impact failed says so, never hides it
        impact = Impact(note=f"the impact could not be computed ({type(exc).__name__}: {exc})")
        return attach(proposal, files, artifact, impact)
    if impact.moved and recipe.kind == "intent":
        tried = []
        for narrower in narrower_recipes(recipe, proposal):
            phrase = narrower.phrasings[0].text
            try:
                candidate = rebuild(narrower)
            except Exception as exc:  # noqa: BLE001 - a narrower draft that fails leaves the first one
                tried.append(f'"{phrase}": does not draft ({exc})')
                continue
            candidate[0].evidence = proposal.evidence  # the evidence is the whole ask's, not the phrasing's
            try:
                other = assess(model, live, routers, candidate[0], candidate[1], recipe)
            except Exception as exc:  # noqa: BLE001
                tried.append(f'"{phrase}": its impact could not be computed ({exc})')
                continue
            if other.gained and not other.moved:
                other.narrower = tried + [f'"{phrase}" instead of the broader phrasing, which moves '
                                          f'{len(impact.moved)} route(s)']
                proposal, files, artifact, impact = (*candidate, other)
                break
            tried.append(f'"{phrase}": ' + (f"moves {len(other.moved)} route(s) too" if other.moved
                                            else "gains no past prompt"))
        else:
            impact.narrower = tried or ["no narrower phrasing: every phrasing of this ask holds the words that "
                                        "take the moved inputs"]
    return attach(proposal, files, artifact, impact)


def attach(proposal, files: dict[str, bytes], artifact, impact: Impact) -> tuple:
    proposal.impact = impact
    proposal.summary_markdown += impact.markdown()
    if artifact is not None:
        artifact.summary_markdown = proposal.summary_markdown
    return proposal, files, artifact


def narrower_recipes(recipe, proposal) -> Iterable:
    """The recipe narrowed to one of its own phrasings that holds more words than a drafted phrase:
    it still says what was asked, and takes fewer inputs."""
    from core.kitsoki.routing import content_stems

    from core.proposals.mapper import usable_phrasings

    added = [line[1:].strip().lstrip("- ").strip("'\"") for change in proposal.files for line in
             change.diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
    drafted = [content_stems(text) for text in added if text]
    drafted = [stems for stems in drafted if stems]
    if not drafted:
        return []
    out, seen = [], set()
    for phrasing in usable_phrasings(recipe):
        stems = content_stems(phrasing.text)
        if stems in seen or not any(d < stems for d in drafted):
            continue
        seen.add(stems)
        out.append(recipe.model_copy(update={"phrasings": [phrasing]}))
        if len(out) >= NARROWER_TRIES:
            break
    return out
