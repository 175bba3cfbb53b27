'use strict'

const net = require('node:net')
const { createNoopLogger } = require('../shared/logger')
const { formatHost } = require('./child-server')
const { startEmbeddedServer } = require('./embedded-server')
const { chooseEmbeddedServer } = require('./choose-server')
const { redactUri, assertNoPassword } = require('./redact-uri')
const { identifyServer, serverLine } = require('./server-identity')
const { findStartedServer } = require('./started-servers')
const { findNotMongo } = require('./not-mongo')

const PROBE_TIMEOUT_MS = 1000
/** The database written when neither `--database` nor the URI names one. */
const DEFAULT_DATABASE = 'collector'

/**
 * Decides which MongoDB to use, in this order:
 * 1. `uri` (a command-line flag: must not hold a password, see assertNoPassword,
 *    unless it is the value of MONGODB_URI itself),
 * 2. `env.MONGODB_URI`,
 * 3. the embedded server collector-cluster started (`collector db start`, or
 *    another collector's) when it is what answers on host:port,
 * 4. an embedded server started here (on `port` if free, else an ephemeral
 *    port): a real mongod on PATH or in mongodb-memory-server's cache, else
 *    one fetched once, else the Java server (./choose-server.js); the
 *    caller owns it and must `stop()` it.
 * What is used is said in one line, with each option passed over and why
 * (at warn when the port was refused): a MongoDB on host:port that we did
 * not start (see ./started-servers.js) is another program's, and is
 * written to only when `uri` or MONGODB_URI names it.
 *
 * @param {object} [options]
 * @param {string} [options.uri] explicit connection string
 * @param {NodeJS.ProcessEnv} [options.env=process.env]
 * @param {object} [options.logger] pino-like; default no-op. Only redacted URIs are logged.
 * @param {number} [options.port=27017]
 * @param {string} [options.host='127.0.0.1']
 * @param {number} [options.probeTimeoutMs=1000] for the existing-server check
 * @param {boolean} [options.unref=false] passed to the embedded server
 * @param {string} [options.dbPath] where an embedded server keeps its data; none: memory
 * @returns {Promise<{ uri: string, server: import('./child-server').EmbeddedServer|null }>}
 */
async function resolveMongo ({ uri, env = process.env, logger = createNoopLogger(), port = 27017, host = '127.0.0.1', probeTimeoutMs = PROBE_TIMEOUT_MS, unref = false, dbPath } = {}) {
  if (uri) {
    // a URI read back from MONGODB_URI (e.g. on a restart) is allowed its password
    if (uri !== env.MONGODB_URI) assertNoPassword(uri)
    logger.info({ uri: redactUri(uri) }, 'using MongoDB from the explicit URI')
    warnIfNotMongo(uri, logger, probeTimeoutMs)
    return { uri, server: null }
  }
  if (env.MONGODB_URI) {
    logger.info({ uri: redactUri(env.MONGODB_URI) }, 'using MongoDB from MONGODB_URI')
    warnIfNotMongo(env.MONGODB_URI, logger, probeTimeoutMs)
    return { uri: env.MONGODB_URI, server: null }
  }
  const skipped = ['MONGODB_URI (not set)']
  const localUri = `mongodb://${formatHost(host)}:${port}`
  const local = await probeLocal(localUri, host, port, probeTimeoutMs)
  if (local.started) {
    const { kind, pid, dbPath: data } = local.started
    logger.info({ uri: localUri, kind, serverPid: pid, dbPath: data }, `using the embedded database collector-cluster started at ${localUri} (${kind}, pid ${pid}, ${data ? `data in ${data}` : 'in memory'}): ${serverLine(local.identity)}; skipped: ${skipped.join(', ')}`)
    return { uri: localUri, server: null }
  }
  const where = `${formatHost(host)}:${port}`
  if (local.identity) {
    skipped.push(`${where} (answers as ${serverLine(local.identity)}, a server collector-cluster did not start: nothing is written to it unless MONGODB_URI or --mongo-uri names it)`)
  } else if (local.taken) {
    skipped.push(`${where} (taken by something that does not answer as MongoDB)`)
  } else {
    skipped.push(`${where} (nothing answers there)`)
  }
  const choice = await chooseEmbeddedServer({ env, logger })
  return startOrJoin({ host, port: local.taken ? 0 : port, env, logger, unref, dbPath, choice, skipped, warn: local.taken }, localUri, probeTimeoutMs)
}

// How long a collector whose embedded server could not start on the usual
// port waits for one that collector-cluster started there meanwhile (a
// server starting takes seconds: the Java one 5 to 10 here).
const RACE_WAIT_MS = 20000

// Starts the embedded server on the usual port, else on an ephemeral one.
// Two collectors started at the same moment both find the port free: the
// second's server fails on the port or on the data folder's lock, which
// the first's holds; the first's server is then used, as by a collector
// started a second later (before, the second's ephemeral server failed on
// that lock too, and the collector with it).
async function startOrJoin (options, localUri, probeTimeoutMs) {
  try {
    const server = await startEmbeddedServer(options)
    return { uri: server.uri, server }
  } catch (err) {
    if (options.port === 0) throw err
    const { host, port, logger } = options
    const theirs = await ourServerAppears(localUri, host, port, probeTimeoutMs, /lock/i.test(err.message))
    if (theirs) {
      const { kind, pid } = theirs.started
      logger.info({ uri: localUri, kind, serverPid: pid }, `using the embedded database collector-cluster started at ${localUri} meanwhile (${kind}, pid ${pid}): this collector's own could not start there (${err.message})`)
      return { uri: localUri, server: null }
    }
    logger.warn({ port, err: err.message }, 'could not start the embedded server on its usual port; trying an ephemeral one')
    const server = await startEmbeddedServer({ ...options, port: 0 })
    return { uri: server.uri, server }
  }
}

// The probe of host:port once a server collector-cluster started answers
// there; null when none does within RACE_WAIT_MS, or at once when the port
// is free and the data folder was not locked (no server of ours starting).
async function ourServerAppears (localUri, host, port, probeTimeoutMs, locked) {
  const until = Date.now() + RACE_WAIT_MS
  for (;;) {
    const local = await probeLocal(localUri, host, port, probeTimeoutMs)
    if (local.started) return local
    if ((!local.taken && !locked) || Date.now() >= until) return null
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
}

// A URI whose server is another program (the port taken): said at start, in
// one line, instead of the driver's timeouts later. Not awaited: the
// collector listens meanwhile, and the workers hold what arrives.
function warnIfNotMongo (uri, logger, probeTimeoutMs) {
  findNotMongo(uri, { timeoutMs: 2 * probeTimeoutMs }).then((line) => {
    if (line) logger.warn({ uri: redactUri(uri) }, `${line}: nothing is stored until MongoDB answers there (the workers hold what arrives)`)
  }, () => {})
}

/**
 * The database the workers are told to use: `database` when given (the
 * `--database` flag); else undefined when the URI names one (the driver
 * takes it from the URI); else DEFAULT_DATABASE, so a URI without a
 * database (the embedded server's, `mongodb://host:port/`) does not fall
 * through to the driver's own default, `test`.
 * @param {string|undefined} database
 * @param {string} uri
 * @returns {string|undefined}
 */
function resolveDatabase (database, uri) {
  if (database !== undefined && database !== '') return database
  return uriDatabase(uri) ? undefined : DEFAULT_DATABASE
}

/**
 * The database a MongoDB URI names (`mongodb[+srv]://[auth@]hosts/<db>?options`), or undefined.
 * @param {string} uri
 * @returns {string|undefined}
 */
function uriDatabase (uri) {
  const match = /^mongodb(?:\+srv)?:\/\/[^/?#]*\/([^?#]+)/.exec(uri || '')
  return match ? decodeURIComponent(match[1]) : undefined
}

/**
 * What answers on host:port: nothing (`taken` false), something that is
 * not MongoDB (no `identity`), a MongoDB (`identity`, see
 * identifyServer), and whether collector-cluster started it (`started`,
 * its record). Asked with read-only commands: buildInfo, hello,
 * serverStatus (for the pid it reports).
 * @returns {Promise<{ taken: boolean, identity?: object, started?: object|null }>}
 */
async function probeLocal (uri, host, port, timeoutMs) {
  if (!await isListening(host, port, timeoutMs)) return { taken: false }
  const { MongoClient } = require('mongodb')
  const client = new MongoClient(uri, { serverSelectionTimeoutMS: timeoutMs, connectTimeoutMS: timeoutMs, socketTimeoutMS: timeoutMs, directConnection: true })
  try {
    const db = client.db('admin')
    const identity = await identifyServer(db, [host])
    const status = await db.command({ serverStatus: 1 }).catch(() => ({}))
    return { taken: true, identity, started: findStartedServer({ pid: Number(status.pid), port }) }
  } catch {
    return { taken: true }
  } finally {
    await client.close().catch(() => {})
  }
}

/**
 * True when a TCP connection to host:port succeeds within `timeoutMs`.
 * @param {string} host
 * @param {number} port
 * @param {number} timeoutMs
 * @returns {Promise<boolean>}
 */
function isListening (host, port, timeoutMs) {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port })
    const done = (result) => {
      socket.destroy()
      resolve(result)
    }
    socket.setTimeout(timeoutMs, () => done(false))
    socket.once('connect', () => done(true))
    socket.once('error', () => done(false))
  })
}

/**
 * True when a MongoDB at `uri` answers `ping` within about `timeoutMs`.
 * @param {string} uri
 * @param {number} [timeoutMs=1000]
 * @returns {Promise<boolean>}
 */
async function pingMongo (uri, timeoutMs = PROBE_TIMEOUT_MS) {
  const { MongoClient } = require('mongodb')
  const client = new MongoClient(uri, { serverSelectionTimeoutMS: timeoutMs, connectTimeoutMS: timeoutMs, socketTimeoutMS: timeoutMs, directConnection: true })
  try {
    await client.db('admin').command({ ping: 1 })
    return true
  } catch {
    return false
  } finally {
    await client.close().catch(() => {})
  }
}

// Between the probe and the bind another process may take the port.
module.exports = { resolveMongo, resolveDatabase, uriDatabase, DEFAULT_DATABASE, pingMongo, isListening, redactUri, assertNoPassword }
