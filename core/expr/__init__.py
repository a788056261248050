"""kitsoki's expression language: expr-lang programs in guards and templates (internal/expr).

syntax: the one grammar and parser; check: kitsoki's compile check (types, whitelist); templates: the
`{{ }}` template language. The loader checks with these; the flow runner (core.flows.expressions)
evaluates the same trees.
"""
