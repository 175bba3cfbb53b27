'use strict'

// A mongod fetched once, through mongodb-memory-server-core, into its cache
// (./mongod-binary.js finds it there on every later start). Bounded in
// time: the fetch runs in a child process (./mongod-fetch-child.js) that is
// killed when no byte came for `stallMs` or the whole took `timeoutMs`. A
// failure is remembered for an hour beside the cache, so that a machine
// without the network does not wait for it at every start (asked with
// other MONGOMS_* settings, a mirror say, it is tried at once).

const fs = require('node:fs')
const path = require('node:path')
const { fork } = require('node:child_process')
const { DatabaseError } = require('../../exceptions')
const { createNoopLogger } = require('../shared/logger')
const { makeDir } = require('../shared/make-dir')
const { readJsonFile, writeJsonFile } = require('../shared/json-file')
const { mongodDownloadDir } = require('./mongod-binary')
const { tailOf } = require('./child-server')

const CHILD = path.join(__dirname, 'mongod-fetch-child.js')
const FETCH_TIMEOUT_MS = 10 * 60 * 1000
const FETCH_STALL_MS = 30 * 1000
const RETRY_AFTER_MS = 60 * 60 * 1000
const PROGRESS_LOG_MS = 5000
/** Beside the binaries: when the last fetch failed, and why. */
const FAILURE_FILE = 'collector-cluster-fetch-failed.json'

/**
 * Fetches a mongod into mongodb-memory-server's cache (MONGOMS_DOWNLOAD_DIR,
 * else ~/.cache/mongodb-binaries) and resolves with it; says where from and
 * how far it got at info. mongodb-memory-server's own settings apply
 * (MONGOMS_VERSION, MONGOMS_DOWNLOAD_MIRROR, MONGOMS_DOWNLOAD_URL,
 * MONGOMS_DISTRO, ...); its retries default to one attempt
 * (MONGOMS_MAX_RETRIES), since the Java server is the next option.
 *
 * @param {object} [options]
 * @param {NodeJS.ProcessEnv} [options.env=process.env]
 * @param {object} [options.logger]
 * @param {number} [options.timeoutMs=600000] the whole fetch
 * @param {number} [options.stallMs=30000] without a byte (or before the first)
 * @returns {Promise<{ binary: string, version: string }>}
 * @throws {DatabaseError} the reason in one line: the failure, the bound
 *   reached, or an earlier failure within the hour (FAILURE_FILE)
 */
async function fetchMongod ({ env = process.env, logger = createNoopLogger(), timeoutMs = FETCH_TIMEOUT_MS, stallMs = FETCH_STALL_MS } = {}) {
  const dir = mongodDownloadDir(env)
  const failureFile = path.join(dir, FAILURE_FILE)
  const earlier = readJsonFile(failureFile)
  const key = fetchKey(env)
  const since = earlier && earlier.key === key ? Date.now() - Date.parse(earlier.failedAt) : Infinity
  if (since >= 0 && since < RETRY_AFTER_MS) {
    const ago = since < 60000 ? 'less than a minute' : minutes(since)
    throw new DatabaseError(`it failed ${ago} ago (${earlier.reason}); tried again after ${minutes(RETRY_AFTER_MS)}, or at the next start once ${failureFile} is removed`)
  }
  try {
    const fetched = await runFetch({ env: childEnv(env, dir), logger, timeoutMs, stallMs })
    fs.rmSync(failureFile, { force: true })
    return fetched
  } catch (err) {
    try {
      makeDir(dir)
      writeJsonFile(failureFile, { failedAt: new Date().toISOString(), key, reason: err.message })
    } catch {} // not remembered: the next start tries again
    throw err
  }
}

// What a fetch was asked for: a failure is remembered for these settings
// only, so that a mirror or another version set after it is tried at once.
function fetchKey (env) {
  return ['VERSION', 'DOWNLOAD_URL', 'DOWNLOAD_MIRROR', 'ARCHIVE_NAME', 'DISTRO', 'PLATFORM', 'ARCH', 'USE_HTTP']
    .map((name) => env[`MONGOMS_${name}`] || '').join('|')
}

function childEnv (env, dir) {
  const { MONGOMS_SYSTEM_BINARY, ...rest } = env // a named binary is never fetched over
  return { ...rest, MONGOMS_DOWNLOAD_DIR: dir, MONGOMS_MAX_RETRIES: env.MONGOMS_MAX_RETRIES || '1' }
}

function runFetch ({ env, logger, timeoutMs, stallMs }) {
  return new Promise((resolve, reject) => {
    // execArgv: none of the parent's (an --inspect port, test runner flags)
    const child = fork(CHILD, [], { env, execArgv: [], stdio: ['ignore', 'ignore', 'pipe', 'ipc'], serialization: 'json' })
    const stderr = tailOf(child.stderr)
    const fetch = { version: '', url: '', begun: Date.now(), timeoutMs, loggedAt: 0, loggedBytes: -1, result: null }
    const fail = (reason) => {
      if (fetch.result) return
      fetch.result = { error: new DatabaseError(reason) }
      child.kill('SIGKILL')
    }
    const from = () => (fetch.url ? ` from ${fetch.url}` : '')
    const overall = setTimeout(() => fail(`not done after ${minutes(timeoutMs)}${from()}`), timeoutMs)
    let stall
    const alive = () => {
      clearTimeout(stall)
      stall = setTimeout(() => fail(`no data for ${seconds(stallMs)}${from()}`), stallMs)
    }
    alive()
    child.on('message', (message) => {
      alive()
      if (message.event === 'failed') fail(message.reason)
      else onMessage(fetch, message, logger)
    })
    child.once('error', (err) => fail(`could not run the fetch: ${err.message}`))
    child.once('close', (code, signal) => {
      clearTimeout(overall)
      clearTimeout(stall)
      const said = stderr.text().split('\n').pop()
      const { result } = fetch
      if (result && !result.error) resolve(result)
      else reject(result ? result.error : new DatabaseError(`the fetch ended (${signal || `exit code ${code}`}) without a word${said ? `: ${said}` : ''}`))
    })
  })
}

// The child's start, progress and success, said at info.
function onMessage (fetch, message, logger) {
  if (message.event === 'start') {
    Object.assign(fetch, { version: message.version, url: message.url })
    logger.info({ version: message.version, url: message.url, dir: message.dir }, `fetching mongod ${message.version} once, from ${message.url} into ${message.dir} (up to ${minutes(fetch.timeoutMs)}; if it fails, the next option is used)`)
  } else if (message.event === 'progress') {
    logProgress(logger, fetch, message)
  } else if (message.event === 'done') {
    fetch.result = { binary: message.binary, version: fetch.version }
    logger.info({ binary: message.binary }, `fetched mongod ${fetch.version} in ${seconds(Date.now() - fetch.begun)}: ${message.binary} (later starts use it from there)`)
  }
}

// Every PROGRESS_LOG_MS, and at the end; of the archive, not its checksum file.
function logProgress (logger, progress, { url, bytes, total }) {
  const now = Date.now()
  if (/\.md5$/.test(url) || bytes === progress.loggedBytes || (now - progress.loggedAt < PROGRESS_LOG_MS && bytes < total)) return
  progress.loggedAt = now
  progress.loggedBytes = bytes
  const of = total > 0 ? ` of ${size(total)} (${Math.floor(100 * bytes / total)} %)` : ''
  logger.info({ bytes, total }, `fetching mongod ${progress.version}: ${size(bytes)}${of}`)
}

function size (bytes) {
  return bytes < 1048576 ? `${(bytes / 1024).toFixed(1)} KB` : `${(bytes / 1048576).toFixed(1)} MB`
}

function seconds (ms) {
  return `${+(ms / 1000).toFixed(1)} s`
}

function minutes (ms) {
  return ms < 60000 ? seconds(ms) : `${Math.round(ms / 60000)} min`
}

module.exports = { fetchMongod, FAILURE_FILE }
