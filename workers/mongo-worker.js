'use strict'

const mongoose = require('mongoose')
const Worker = require('./worker')
const Backoff = require('../lib/backoff')
const DatabaseError = require('../exceptions/database-error')
const { redactUri } = require('../lib/mongo/redact-uri')

/** Options every MongoDB-writing worker understands. */
const MONGO_DEFAULTS = Object.freeze({
  mongoUri: undefined, // else MONGODB_URI
  database: undefined, // else the URI's database
  flushInterval: 250,
  maxPending: 100000,
  flushTimeout: 20000, // how long flush() on stop keeps retrying
  serverSelectionTimeoutMS: 5000,
  retryDelay: 200
})

const LOG_INTERVAL_MS = 5000

/**
 * A worker that buffers in memory and writes to MongoDB on a timer. It owns
 * one mongoose connection (closed last), retries with backoff while the
 * database is away (nothing is lost within the subclass's pending bound),
 * and on stop keeps flushing for up to `flushTimeout`.
 *
 * Subclasses implement `prepare()` (models, indexes; set up writers),
 * `writePending()` (one flush; throw on a database error after putting back
 * what was not written), `hasPending()` and `abandonPending()`.
 */
class MongoWorker extends Worker {
  constructor (options = {}, defaults = {}) {
    super(options)
    this.settings = { ...MONGO_DEFAULTS, ...defaults, ...options }
    this.backoff = new Backoff({ initial: this.settings.retryDelay, factor: 2, max: 5000 })
    this.dbCounts = { dbErrors: 0, flushes: 0 }
    this.flushing = null
    this.retryAt = 0
    this.prepared = false
    this.dbDown = false
    this.lastLog = {}
  }

  async init () {
    const uri = this.settings.mongoUri || process.env.MONGODB_URI
    if (!uri) throw new DatabaseError('no MongoDB configured: set the MONGODB_URI environment variable')
    this.uri = redactUri(uri)
    this.connection = mongoose.createConnection(uri, {
      dbName: this.settings.database,
      serverSelectionTimeoutMS: this.settings.serverSelectionTimeoutMS,
      maxPoolSize: 4
    })
    this.connection.on('error', () => {}) // reported through write failures
    this.timer = setInterval(() => this.flushSoon(), this.settings.flushInterval)
    await this.ensurePrepared()
  }

  // Nothing is written before prepare() succeeded (indexes first).
  async ensurePrepared () {
    if (this.prepared) return true
    try {
      await this.prepare()
      this.prepared = true
      return true
    } catch (err) {
      this.onDbError(err, 'prepare')
      return false
    }
  }

  flushSoon () {
    if (this.flushing || Date.now() < this.retryAt) return this.flushing
    this.flushing = this.flushOnce().finally(() => { this.flushing = null })
    return this.flushing
  }

  async flushOnce () {
    if (!await this.ensurePrepared()) return
    try {
      await this.writePending()
      this.dbCounts.flushes++
      this.backoff.reset()
      this.dbDown = false
    } catch (err) {
      this.onDbError(err, 'write')
    }
  }

  onDbError (err, stage) {
    this.dbCounts.dbErrors++
    this.dbDown = true
    const delay = this.backoff.next()
    this.retryAt = Date.now() + delay
    this.logAtMost('db', 'warn', { stage, uri: this.uri, error: redactMessage(err), retryInMs: delay },
      'database unavailable; keeping updates and retrying')
  }

  logAtMost (key, level, fields, msg) {
    const now = Date.now()
    if (now - (this.lastLog[key] || 0) < LOG_INTERVAL_MS) return
    this.lastLog[key] = now
    this.logger[level](fields, msg)
  }

  /**
   * On stop: write everything pending, retrying for up to flushTimeout, and
   * never past it, not even for a write in progress: the master kills a
   * worker that outlives its drainTimeout, and whatever is abandoned must be
   * counted and logged here first, not lost without a word.
   */
  async flush () {
    clearInterval(this.timer)
    const deadline = Date.now() + this.settings.flushTimeout
    while ((this.hasPending() || this.flushing) && Date.now() < deadline) {
      if (this.flushing) {
        await raceDeadline(this.flushing, deadline)
        continue
      }
      const wait = Math.min(this.retryAt - Date.now(), deadline - Date.now())
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait))
      this.retryAt = 0
      await raceDeadline(this.flushSoon(), deadline)
    }
    if (this.hasPending() || this.flushing) this.abandonPending()
  }

  async close () {
    clearInterval(this.timer)
    if (this.connection) await this.connection.close().catch(() => {})
  }

  dbStats () {
    return { dbErrors: this.dbCounts.dbErrors, dbDown: this.dbDown, flushes: this.dbCounts.flushes }
  }
}

function raceDeadline (promise, deadline) {
  let timer
  const expired = new Promise((resolve) => { timer = setTimeout(resolve, Math.max(0, deadline - Date.now())) })
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer))
}

// Driver messages may quote a connection string; never let credentials out.
function redactMessage (err) {
  return String((err && err.message) || err).replace(/mongodb(\+srv)?:\/\/\S+/g, (uri) => redactUri(uri))
}

MongoWorker.DEFAULTS = MONGO_DEFAULTS

module.exports = MongoWorker
