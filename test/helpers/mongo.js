'use strict'

const { startJavaServer } = require('../../lib/mongo/java-server')
const { startMongod } = require('../../lib/mongo/mongod-server')

let shared = null
let counter = 0

/**
 * The MongoDB for this test process: MONGODB_URI when set; else, with
 * COLLECTOR_TEST_MONGOD=/path/to/mongod, that mongod (in memory: a
 * throw-away dbpath); else the Java server. One, on an ephemeral port,
 * started on first use and reused after.
 *
 * The server does not keep the process alive; it is killed when the test
 * process exits (an 'exit' hook; the Java server's own stdin watchdog, or
 * mongod's parent-death signal where setpriv exists, if the process is
 * killed outright), so `node --test` leaves no server behind.
 *
 * @param {{ logger?: object }} [options]
 * @returns {Promise<{ uri: string, server: import('../../lib/mongo/child-server').EmbeddedServer|null }>}
 */
function getTestMongo ({ logger } = {}) {
  if (process.env.MONGODB_URI) return Promise.resolve({ uri: process.env.MONGODB_URI, server: null })
  if (!shared) {
    const mongod = process.env.COLLECTOR_TEST_MONGOD
    shared = (mongod ? startMongod({ mongod, port: 0, unref: true, logger }) : startJavaServer({ port: 0, unref: true, logger }))
      .then((server) => ({ uri: server.uri, server }))
    shared.catch(() => { shared = null })
  }
  return shared
}

/**
 * A database name no other test (or test process) uses: prefix, pid, time
 * and a counter, within MongoDB's 63-character limit.
 * @param {string} [prefix='test']
 * @returns {string}
 */
function uniqueDbName (prefix = 'test') {
  counter += 1
  const clean = String(prefix).replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 30)
  return `${clean}_${process.pid}_${Date.now().toString(36)}_${counter}`
}

module.exports = { getTestMongo, uniqueDbName }
