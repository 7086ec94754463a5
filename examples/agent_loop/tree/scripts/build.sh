#!/bin/sh
# Build the app into ./dist.
set -eu
out="${1:-dist}"
mkdir -p "$out"
cp -R app "$out/"
echo "built into $out"
