# Sourced by the setup scripts (setup-clients.sh, make-import-fixtures.sh,
# pg-test-server.sh): what a failed install means.
#
#   install_failed WHO WHAT LOG REGISTRY    (REGISTRY: npm, pypi or apt)
#
# An install that failed while its registry answers is a failure: exit 1,
# naming the package and showing the end of the log. Exit 3 ("registries
# unreachable": test.sh then skips the tests that need it, and says so) only
# when the registry truly cannot be reached, and never under CI (CI=true, as
# .ci/run sets it): a CI run must not pass without the tests an install was for.

ci_run() { case "${CI:-}" in true | TRUE | True | 1 | yes) return 0 ;; *) return 1 ;; esac; }

registry_reachable() {
  case $1 in
    npm) timeout 30 npm ping >/dev/null 2>&1 ;;
    pypi)
      local index=${PIP_INDEX_URL:-$(python3 -m pip config get global.index-url 2>/dev/null || true)}
      timeout 30 python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=20).read(1)' \
        "${index:-https://pypi.org/simple/}" >/dev/null 2>&1 ;;
    apt) timeout 120 apt-get update --error-on=any >/dev/null 2>&1 ;;
    *) return 1 ;;
  esac
}

install_failed() {
  local who=$1 what=$2 log=$3 registry=$4
  echo "$who: $what could not be installed (see $log):" >&2
  tail -5 "$log" >&2 2>/dev/null || true
  if registry_reachable "$registry"; then
    echo "$who: FAILED: the $registry registry answers, so this is a failed install of $what, not an offline machine" >&2
    exit 1
  fi
  if ci_run; then
    echo "$who: FAILED: the $registry registry cannot be reached, and CI=$CI: a CI run does not skip the tests that need $what" >&2
    exit 1
  fi
  echo "$who: the $registry registry cannot be reached: the tests that need $what are skipped (exit 3; under CI=true this fails)" >&2
  exit 3
}
