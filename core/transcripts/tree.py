"""Conversation order from parent links (Claude uuid/parentUuid, Pi id/parentId).

File order is not conversation order once a person rewinds, forks or resumes, so both readers
walk the tree: roots and siblings in file order, depth first. A parent that is not in the file
makes its child a root; a cycle is broken at its earliest node. Each is reported, never fatal.
"""

from __future__ import annotations

from collections.abc import Hashable


def conversation_order(
    parent_of: dict[Hashable, Hashable | None],
) -> tuple[list[Hashable], list[Hashable], list[Hashable]]:
    """Depth-first order of every node in `parent_of` (whose insertion order is file order).

    Returns (order, dangling, cycle_breaks): nodes whose parent is missing, and nodes made roots
    to break a cycle.
    """
    children: dict[Hashable, list[Hashable]] = {}
    roots: list[Hashable] = []
    dangling: list[Hashable] = []
    for node, parent in parent_of.items():
        if parent is None or parent == node:
            roots.append(node)
        elif parent in parent_of:
            children.setdefault(parent, []).append(node)
        else:
            roots.append(node)
            dangling.append(node)

    order: list[Hashable] = []
    seen: set[Hashable] = set()

    def walk(root: Hashable) -> None:
        stack = [root]
        while stack:
            node = stack.pop()
            if node in seen:
                continue
            seen.add(node)
            order.append(node)
            kids = children.get(node)
            if kids:
                stack.extend(reversed(kids))

    for root in roots:
        walk(root)
    cycle_breaks: list[Hashable] = []
    if len(seen) < len(parent_of):
        # Whatever is left hangs off a cycle: make its earliest node a root and go on.
        for node in parent_of:
            if node not in seen:
                cycle_breaks.append(node)
                walk(node)
    return order, dangling, cycle_breaks


def path_to_root(leaf: Hashable, parent_of: dict[Hashable, Hashable | None]) -> set[Hashable]:
    """The nodes from `leaf` up to its root (the active branch), stopping at a cycle."""
    path: set[Hashable] = set()
    node = leaf
    while node is not None and node in parent_of and node not in path:
        path.add(node)
        node = parent_of[node]
    return path
