#!/usr/bin/env bash
# System packages the sandboxes use: bubblewrap (the default sandbox) and docker.io (the docker backend's
# tests start a private engine), plus Go for the Go test projects and Chromium for the trajectory viewer's test.
# Installs them on Debian/Ubuntu when run as root; otherwise says how.
set -uo pipefail
need=()
command -v bwrap >/dev/null || need+=(bubblewrap)
command -v dockerd >/dev/null || need+=(docker.io)
# toolchains of the test projects (python3, node, cmake, cargo ship with the image; Go does not)
command -v go >/dev/null || need+=(golang-go)
# a headless browser: the test of `terminus view` loads its pages (tests/test_view.py), and so can you
command -v chromium >/dev/null || need+=(chromium)
((${#need[@]})) || exit 0
if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
  echo "installing system packages: ${need[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null && exit 0
  echo "warning: apt-get could not install ${need[*]}" >&2
fi
echo "warning: missing system packages: ${need[*]}." >&2
echo "  Debian/Ubuntu: sudo apt-get install ${need[*]}; conda: conda install -c conda-forge bubblewrap" >&2
echo "  Without bubblewrap the sandbox falls back to 'local'; without dockerd the docker tests are skipped." >&2
exit 0
