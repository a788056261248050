"""The committed JSON Schemas are exactly what the models generate (run `python -m core.schemas`)."""

import json

import orjson
import pytest

from core.schemas import MODELS, SCHEMA_DIR, render


@pytest.mark.parametrize("name", sorted(MODELS))
def test_committed_schema_matches_the_model(name):
    path = SCHEMA_DIR / name
    assert path.exists(), f"{path} is missing: run `python -m core.schemas`"
    assert path.read_text() == render(MODELS[name]), f"{name} drifted: run `python -m core.schemas`"


def test_cli_json_validates_against_its_schema(tmp_path):
    import jsonschema
    from core.demo import demo_transcripts
    from core.transcripts.discover import discover
    from core.transcripts.ingest import scan

    report = orjson.loads(orjson.dumps(scan(discover(None, [demo_transcripts()]), workers=1).model_dump(mode="json")))
    schema = json.loads((SCHEMA_DIR / "sessions-report.schema.json").read_text())
    jsonschema.validate(report, schema)
