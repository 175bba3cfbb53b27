'use strict'

// Which server an embedded database runs, once there is no MONGODB_URI to
// use and no server of ours on the port (./resolve-mongo.js): a real
// mongod this machine has (./mongod-binary.js), else one fetched once
// (./mongod-fetch.js), else the Java server (a JDK, and Maven for its first
// build), else one error naming every option and how to get it. Each
// option passed over is kept with its reason, for the one line that says
// what started. COLLECTOR_DB_SERVER=mongod or =java keeps to one kind.

const { DatabaseError } = require('../../exceptions')
const { createNoopLogger } = require('../shared/logger')
const { findMongod, mongodDownloadDir } = require('./mongod-binary')
const { fetchMongod } = require('./mongod-fetch')
const { javaServerMissing, JDK_HINT } = require('./java-build')

const KINDS = ['mongod', 'java']

/**
 * @typedef {object} ServerChoice
 * @property {'mongod'|'java'} kind
 * @property {string} [binary] the mongod's path
 * @property {string|null} [version] the mongod's version, from `--version`
 * @property {string} [source] where the mongod came from, for the log: "on PATH: /usr/bin/mongod"
 * @property {string[]} skipped the options passed over, each "what (why)"
 */

/**
 * @param {object} [options]
 * @param {NodeJS.ProcessEnv} [options.env=process.env] PATH, COLLECTOR_DB_SERVER, MONGOMS_*
 * @param {object} [options.logger] the fetch's progress, at info
 * @param {{ timeoutMs?: number, stallMs?: number }} [options.fetch] its bounds (./mongod-fetch.js)
 * @returns {Promise<ServerChoice>}
 * @throws {DatabaseError} when no option works: each named, with why not and how to get it
 */
async function chooseEmbeddedServer ({ env = process.env, logger = createNoopLogger(), fetch = {} } = {}) {
  const only = env.COLLECTOR_DB_SERVER || undefined
  if (only && !KINDS.includes(only)) throw new DatabaseError(`COLLECTOR_DB_SERVER must be mongod or java (unset: the first that this machine has), not ${JSON.stringify(only)}`)
  const skipped = []
  const why = {}
  if (only === 'java') {
    skipped.push('a mongod, found or fetched (COLLECTOR_DB_SERVER=java)')
  } else {
    const found = findMongod(env)
    if (found.binary) return { kind: 'mongod', ...found, skipped }
    why.mongod = found.looked
    skipped.push(`a mongod (${why.mongod})`)
    const fetched = await tryFetch(env, logger, fetch)
    if (fetched.binary) return { kind: 'mongod', binary: fetched.binary, version: fetched.version, source: `fetched just now: ${fetched.binary}`, skipped }
    why.fetch = fetched.reason
    skipped.push(`fetching one (${why.fetch})`)
  }
  if (only !== 'mongod') {
    why.java = javaServerMissing(env)
    if (!why.java) return { kind: 'java', skipped }
  }
  throw noServerError(why, only, env)
}

// The fetched mongod `{ binary, version }`, or `{ reason }` there is none.
async function tryFetch (env, logger, bounds) {
  // read as mongodb-memory-server reads it: set to anything but 1, on, yes or true, it is off
  if (env.MONGOMS_RUNTIME_DOWNLOAD !== undefined && !/^(1|on|yes|true)$/i.test(env.MONGOMS_RUNTIME_DOWNLOAD)) return { reason: `MONGOMS_RUNTIME_DOWNLOAD=${env.MONGOMS_RUNTIME_DOWNLOAD}` }
  try {
    return await fetchMongod({ env, logger, ...bounds })
  } catch (err) {
    return { reason: /^it failed /.test(err.message) ? err.message : `failed: ${err.message}` }
  }
}

function noServerError (why, only, env) {
  const lines = [`no MongoDB to write to${only ? ` (COLLECTOR_DB_SERVER=${only})` : ''}; any one of these will do:`,
    '  - MONGODB_URI set to your own MongoDB\'s connection string']
  if (why.mongod) {
    lines.push(`  - a mongod on PATH, or named by MONGOMS_SYSTEM_BINARY (${why.mongod}): MongoDB Community Server, https://www.mongodb.com/try/download/community`,
      `  - the network, once: a mongod is fetched into ${mongodDownloadDir(env)} (${why.fetch})`)
  }
  if (why.java) lines.push(`  - the Java server, mongo-java-server (${why.java}), which needs ${JDK_HINT}`)
  return new DatabaseError(lines.join('\n'))
}

module.exports = { chooseEmbeddedServer }
