#!/usr/bin/env bash
# Regenerates src/privacy/rules/gitleaks.toml (the secret rules knowledge-db
# redacts with) from a gitleaks checkout, and says what changed.
#
#   scripts/update-secret-rules.sh /path/to/gitleaks [REF]
#
# REF is a tag or commit of that checkout (default: its newest v* tag). The
# file is copied verbatim under a header naming the version and commit, and
# converted to gitleaks.json (what the binary reads); the licence beside it is
# refreshed. The script prints the rules added, removed
# and changed (regex, entropy, keywords, allowlists), and the version string
# to put in src/privacy/rules.rs (GITLEAKS_VERSION). Then run
#   cargo nextest run --lib privacy && cargo nextest run --test privacy_rules
# (every rule must compile in Rust's regex crate, the planted secrets must
# still be caught) and re-run the scan of docs/privacy.md.
set -euo pipefail

checkout=${1:?usage: $0 /path/to/gitleaks [REF]}
here=$(cd "$(dirname "$0")/.." && pwd)
rules="$here/src/privacy/rules"
# A bare mirror or a normal clone: git -C works on both.
git_dir=$checkout
[ -d "$checkout/.git" ] && git_dir="$checkout/.git"
ref=${2:-$(git --git-dir="$git_dir" tag --list 'v*' --sort=-v:refname | head -n 1)}
commit=$(git --git-dir="$git_dir" rev-parse "$ref^{commit}")

new=$(mktemp)
trap 'rm -f "$new"' EXIT
{
  echo "# Vendored by knowledge-db from gitleaks $ref (commit $commit),"
  echo "# config/gitleaks.toml, unchanged below this header. MIT licence: LICENSE-gitleaks."
  echo "# Regenerate with scripts/update-secret-rules.sh; do not edit by hand."
  git --git-dir="$git_dir" show "$ref:config/gitleaks.toml"
} > "$new"

python3 - "$rules/gitleaks.toml" "$new" <<'PY'
import sys, tomllib
old_path, new_path = sys.argv[1], sys.argv[2]
def load(path):
    try:
        with open(path, "rb") as f:
            return {r["id"]: r for r in tomllib.load(f).get("rules", [])}
    except FileNotFoundError:
        return {}
old, new = load(old_path), load(new_path)
added = sorted(set(new) - set(old))
removed = sorted(set(old) - set(new))
changed = sorted(i for i in set(old) & set(new) if old[i] != new[i])
print(f"rules: {len(old)} -> {len(new)}")
for name, ids in (("added", added), ("removed", removed), ("changed", changed)):
    print(f"{name} ({len(ids)}): {', '.join(ids) if ids else '-'}")
for i in changed:
    keys = sorted(k for k in set(old[i]) | set(new[i]) if old[i].get(k) != new[i].get(k))
    print(f"  {i}: {', '.join(keys)}")
known = {"id", "description", "regex", "secretGroup", "entropy", "keywords", "path", "allowlists", "tags"}
unknown = sorted({k for r in new.values() for k in r} - known)
if unknown:
    print(f"WARNING: fields src/privacy/rules.rs does not read yet: {', '.join(unknown)}")
PY

cp "$new" "$rules/gitleaks.toml"
chmod 644 "$rules/gitleaks.toml"
# The same rules as compact JSON: what the binary reads (serde_json parses it
# in a fifth of the time toml takes, paid on a hook's first use). A unit test
# checks that both files hold the same data.
python3 - "$rules/gitleaks.toml" "$rules/gitleaks.json" <<'PY'
import json, sys, tomllib
with open(sys.argv[1], "rb") as f:
    data = tomllib.load(f)
with open(sys.argv[2], "w") as f:
    json.dump(data, f, separators=(",", ":"), ensure_ascii=False)
    f.write("\n")
PY
git --git-dir="$git_dir" show "$ref:LICENSE" > "$rules/LICENSE-gitleaks"
echo "wrote $rules/gitleaks.toml and gitleaks.json from gitleaks $ref ($commit)"
echo "set GITLEAKS_VERSION in src/privacy/rules.rs to \"$ref\", then run the tests named at the top of this script"
