"""PyYAML's C loader reading YAML as Go's yaml.v3 does (YAML 1.2 booleans).

kitsoki decodes story and fixture files with yaml.v3, where only true/false are booleans; YAML
1.1 (PyYAML's default) would also read yes/no/on/off, turning every state's `on:` key into True.
"""

from __future__ import annotations

import re

import yaml

BOOL = "tag:yaml.org,2002:bool"


class Yaml12Loader(yaml.CSafeLoader):
    """libyaml's safe loader with YAML 1.2 booleans."""


Yaml12Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != BOOL]
    for first, resolvers in yaml.CSafeLoader.yaml_implicit_resolvers.items()}
Yaml12Loader.add_implicit_resolver(BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))
