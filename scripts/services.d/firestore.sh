#!/usr/bin/env bash
# Firestore for the firestore tests: @firestore-emulator/server (npm, in $AC_NODE_PREFIX/node_modules) over gRPC
# on 127.0.0.1:8086 (tests/services.py). Its own start() binds 0.0.0.0, so bind loopback here.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=scripts/services.d/_background.inc
. scripts/services.d/_background.inc
service_main firestore-emulator 8086 "${1:-}" env NODE_PATH="$AC_NODE_PREFIX/node_modules" node -e '
const { ServerCredentials } = require("@grpc/grpc-js");
const { FirestoreServer } = require("@firestore-emulator/server");
const server = new FirestoreServer();
server.server.bindAsync("127.0.0.1:8086", ServerCredentials.createInsecure(), (err) => {
  if (err) { console.error(err); process.exit(1); }
  console.log("firestore emulator on 127.0.0.1:8086");
});
process.on("SIGTERM", () => { server.stop(); process.exit(0); });
'
