'use strict'

// Runs in a worker thread of the master (started by basic-auth.js): bcrypt
// is slow by design (~70 ms at cost 10), and on the master's own thread
// every password checked would stall the receive path that long.

const { parentPort } = require('node:worker_threads')
const bcrypt = require('bcryptjs')

parentPort.on('message', ({ id, password, hash }) => {
  let ok = false
  try {
    ok = bcrypt.compareSync(password, hash)
  } catch {
    ok = false // a malformed hash cannot match (web-config.js refuses those anyway)
  }
  parentPort.postMessage({ id, ok })
})
