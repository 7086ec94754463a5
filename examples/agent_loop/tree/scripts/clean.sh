#!/bin/sh
# Remove build output.
set -eu
rm -rf "${1:-dist}"
