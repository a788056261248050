#!/bin/bash
# Read the cards a real history gives, as a user would: a copy of ../shared/kitsoki-workspace stands in for the
# project, `mining.project_paths` names the folder the history's sessions ran in, and the whole history is
# mined (first_pass_sample 1000), proposed and listed.
#
#   bash tests/bench/cards_on_history.sh OUT HISTORY_ROOT PROJECT_CWD [PROJECT_CWD...]
#
# OUT is created (replaced) and holds the workspace with mine.txt, propose.txt and proposals.txt.
set -euo pipefail
out=$1; root=$2; shift 2
here=$(cd "$(dirname "$0")/../.." && pwd)
miner=${KITSOKI_MINER:-$here/.venv/bin/kitsoki-miner}
rm -rf "$out"; cp -r "$here/../shared/kitsoki-workspace" "$out"
export HOME="$out.home"; rm -rf "$HOME"; mkdir -p "$HOME"  # beside it (a key inside a workspace is refused); no default history: only HISTORY_ROOT
"$here/.venv/bin/python" - "$out/.kitsoki.yaml" "$@" <<'P'
import sys
path, cwds = sys.argv[1], sys.argv[2:]
text = open(path).read()
block = "  first_pass_sample: 1000\n  project_paths:\n" + "".join(f"    - '{c}'\n" for c in cwds)
text = text.replace("\nmining:\n", "\nmining:\n" + block, 1) if "\nmining:\n" in text else text + "\nmining:\n" + block
open(path, "w").write(text)
P
cd "$out"
"$miner" mine --seed --dir "$root" > mine.txt 2>&1
"$miner" propose > propose.txt 2>&1
"$miner" proposals > proposals.txt 2>&1
head -2 mine.txt
echo "cards: $(grep -cE '^[0-9a-f]{16}' proposals.txt || true)"
