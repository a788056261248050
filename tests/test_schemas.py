"""The committed JSON Schemas are exactly what the models generate (run `python -m server.schemas`)."""

import json

import orjson
import pytest

from core.schemas import SCHEMA_DIR, render
from server.schemas import MODELS


@pytest.mark.parametrize("name", sorted(MODELS))
def test_committed_schema_matches_the_model(name):
    path = SCHEMA_DIR / name
    assert path.exists(), f"{path} is missing: run `python -m server.schemas`"
    assert path.read_text() == render(MODELS[name]), f"{name} drifted: run `python -m server.schemas`"


def test_cli_json_validates_against_its_schema(tmp_path):
    import jsonschema
    from core.demo import demo_transcripts
    from core.transcripts.discover import discover
    from core.transcripts.ingest import scan

    report = orjson.loads(orjson.dumps(scan(discover(None, [demo_transcripts()]), workers=1).model_dump(mode="json")))
    schema = json.loads((SCHEMA_DIR / "sessions-report.schema.json").read_text())
    jsonschema.validate(report, schema)


def test_mine_outputs_validate_against_their_schemas(tmp_path):
    import jsonschema

    from builders import prompt, tool_use, uid
    from conftest import jsonl
    from core.mining.passes import MineResult, recipes_path, run_pass

    for sid in ("s1", "s2", "s3"):  # an ask recurs in three sessions, on three days
        a, b = uid(), uid()
        jsonl(tmp_path / "t" / f"{sid}.jsonl", [prompt(a, None, "bump the version and tag a release", session=sid,
                                                                       ts=f"2026-03-0{sid[1]}T10:00:00Z"),
                                                tool_use(b, a, "m", f"c{sid}", "Bash", {"command": "make release"},
                                                         session=sid)])
    # Sessions of another project, read on purpose: the recipes carry that mark in the schema's shape.
    report, recipes = run_pass(tmp_path, dirs=[tmp_path / "t"], home=tmp_path / "no-home", env={},
                               other_projects=True)
    assert recipes and all(r.other_projects for r in recipes) and report.other_projects == 3
    result = orjson.loads(orjson.dumps(MineResult(pass_=report, recipes=recipes).model_dump(mode="json", by_alias=True)))
    jsonschema.validate(result, json.loads((SCHEMA_DIR / "mine-result.schema.json").read_text()))
    jsonschema.validate(orjson.loads(recipes_path(tmp_path).read_bytes()),
                        json.loads((SCHEMA_DIR / "recipes.schema.json").read_text()))
