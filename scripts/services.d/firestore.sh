#!/usr/bin/env bash
# Firestore for the firestore tests: @firestore-emulator/server (npm, in $AC_NODE_PREFIX/node_modules) over
# gRPC, this run's own, on a free loopback port. Its own start() binds 0.0.0.0, so bind loopback here.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=scripts/services.d/_background.inc
. scripts/services.d/_background.inc
service_main firestore-emulator ACTIONCACHE_TEST_FIRESTORE_HOST "127.0.0.1:{port}" "${1:-}" \
  env NODE_PATH="$AC_NODE_PREFIX/node_modules" FIRESTORE_PORT="{port}" node -e '
const { ServerCredentials } = require("@grpc/grpc-js");
const { FirestoreServer } = require("@firestore-emulator/server");
const server = new FirestoreServer();
const address = "127.0.0.1:" + process.env.FIRESTORE_PORT;
server.server.bindAsync(address, ServerCredentials.createInsecure(), (err) => {
  if (err) { console.error(err); process.exit(1); }
  console.log("firestore emulator on " + address);
});
process.on("SIGTERM", () => { server.stop(); process.exit(0); });
'
