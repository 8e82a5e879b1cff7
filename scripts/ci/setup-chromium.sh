#!/usr/bin/env bash
# Installs Debian's chromium (used by the UI's end-to-end tests) when /usr/bin/chromium is missing.
# Needs root (or sudo) and access to the Debian package mirror; does nothing when chromium exists.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends chromium fonts-dejavu-core
/usr/bin/chromium --version
