// Verdaccio on loopback for the npm install tests (tests/it/npm.rs).
//
// Usage: node serve.js VERDACCIO_DIR ROOT
//   VERDACCIO_DIR  the installed verdaccio package (target/npm-registry/node_modules/verdaccio)
//   ROOT           a temporary folder holding config.yaml and the registry's storage
//
// Listens on 127.0.0.1 on a port the kernel picks and prints that port on the first
// line of stdout. It lives as long as its stdin is open: the test binary holds the
// other end, so when the tests end (or are killed) the kernel closes it and this
// process exits, removing ROOT. No node process outlives the tests, whichever
// runner started them and however it stopped. Its log (stderr) is ROOT/verdaccio.log;
// when it fails, ROOT is kept for a look.
"use strict";
const fs = require("fs");
const path = require("path");

const [verdaccioDir, root] = process.argv.slice(2);
let done = false;
function exit(code) {
  if (done) return;
  done = true;
  if (code === 0) {
    fs.rmSync(root, { recursive: true, force: true });
  } else {
    process.stderr.write(`kept ${root} for a look\n`);
  }
  try {
    process.exit(code);
  } catch (error) {
    // A library's exit hook threw: pino flushing Verdaccio's log to a stdout nobody
    // reads any more (EPIPE). Thrown on to the uncaughtException handler, whose
    // exit() returns at once, it left this process running with its stdin closed,
    // deaf to SIGTERM. Node runs the exit hooks once: this second call exits.
    process.exit(code);
  }
}
process.on("uncaughtException", (error) => {
  process.stderr.write(`verdaccio failed: ${error && error.stack ? error.stack : error}\n`);
  exit(1);
});
process.stdin.on("end", () => exit(0));
process.stdin.on("error", () => exit(0));
process.stdin.resume();
for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"]) process.on(signal, () => exit(0));

const { runServer } = require(path.resolve(verdaccioDir));
runServer(path.join(root, "config.yaml"))
  .then((app) => {
    const server = app.listen(0, "127.0.0.1", () => {
      process.stdout.write(`${server.address().port}\n`);
    });
    server.on("error", (error) => {
      process.stderr.write(`verdaccio: ${error}\n`);
      exit(1);
    });
  })
  .catch((error) => {
    process.stderr.write(`verdaccio did not start: ${error && error.stack ? error.stack : error}\n`);
    exit(1);
  });
