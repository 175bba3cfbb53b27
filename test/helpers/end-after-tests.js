'use strict'
// Preloaded into every test file's process (`node --test --require`): a file
// whose tests are over but whose process does not end (a failed test left a
// server or a timer behind) is ended 30 s later and counted as failed, with a
// line that says why. Node's --test-force-exit would end it at once, but it
// loses verdicts: on Node 26 the runner reported 46 of rtcp-codec.test.js's 57
// tests, no failure, exit 0 (nodejs/node#64833).
const GRACE_MS = 30_000

// The runner's own process loads this too; there a hook would make a second,
// empty run. NODE_TEST_CONTEXT is set in the processes it starts for files.
if (process.env.NODE_TEST_CONTEXT) {
  require('node:test').after(() => {
    setTimeout(() => {
      process.stderr.write(`${process.argv[1]}: its tests are over but the process kept running ${GRACE_MS / 1000} s (a handle left open); ended as failed\n`)
      process.exit(process.exitCode || 1)
    }, GRACE_MS).unref()
  })
}
