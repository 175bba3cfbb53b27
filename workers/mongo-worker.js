'use strict'

const mongoose = require('mongoose')
const Worker = require('./worker')
const Backoff = require('../lib/shared/backoff')
const DatabaseError = require('../exceptions/database-error')
const { redactUri, redactMessage } = require('../lib/mongo/redact-uri')
const { resolveDatabase } = require('../lib/mongo/resolve-mongo')
const { RedeliveryWatermarks } = require('./storage/redelivery-watermarks')
const { guardsEveryWrite } = require('./storage/write-guard')
const { raceDeadline } = require('../lib/shared/when-any')
const { isUnreachable } = require('../lib/mongo/unreachable')
const { findNotMongo } = require('../lib/mongo/not-mongo')
const { HeartbeatWatch } = require('../lib/mongo/heartbeat-watch')
const { resolveSettings } = require('../lib/shared/settings')
const { MONGO_SETTINGS } = require('./mongo-settings')
const { identifyServer, serverLine } = require('../lib/mongo/server-identity')
const { StorageKeeper } = require('./storage/storage-keeper')
const { checkRetention } = require('./storage/retention')

const LOG_INTERVAL_MS = 5000
// A flush that takes this long means the database is slower than the input (not down): logged.
const SLOW_FLUSH_MS = 1000

/**
 * A worker that buffers in memory and writes to MongoDB on a timer. It owns
 * one mongoose connection (closed last), retries with backoff while the
 * database is away, and on stop keeps flushing for up to `flushTimeout`.
 *
 * It acknowledges on store: every buffered item carries the checkpoint of
 * the message it came from (`item.seq`, from `this.checkpoint()`), and after
 * each flush the worker acknowledges everything older than the oldest item
 * still held. What it holds is bounded by the master's `maxInFlight`.
 * `init()` does not wait for the database: the collector listens at once
 * and the first flushes connect (and prepare) when the server answers.
 *
 * Subclasses implement `prepare()` (models, indexes; set up writers),
 * `writePending()` (one flush; throw on a database error after putting back
 * what was not written), `hasPending()`, `oldestPending()` (the smallest
 * checkpoint held, Infinity if none) and `abandonPending()`; and
 * `storageTargets()`, the collections they write that `retention` and
 * `maxStorage` reach (workers/storage/retention.js), which the leader
 * worker's StorageKeeper expires, holds to the budget and measures.
 */
class MongoWorker extends Worker {
  /**
   * The settings this worker takes, declared once (workers/mongo-settings.js):
   * their defaults, ranges and choices. A subclass with settings of its own
   * declares them: `static settings = { ...MongoWorker.settings, mine: { type, default, range } }`.
   */
  static settings = MONGO_SETTINGS

  /**
   * @param {object} [options] the worker options (the collector's `workerOptions`);
   *   its declared settings are checked (InvalidOptionError)
   * @param {object} [defaults] a subclass's own defaults, over the declared ones
   * @param {object} [declaration] the settings it takes (default: the class's `settings`; a definition's worker is given its definition's)
   */
  constructor (options = {}, defaults = {}, declaration = new.target.settings) {
    super(options)
    this.acknowledge = 'stored'
    this.settings = resolveSettings(declaration, defaults, options)
    this.backoff = new Backoff({ initial: this.settings.dbRetryDelay, factor: 2, max: 5000 })
    this.dbCounts = { dbErrors: 0, flushes: 0, abandoned: 0 }
    this.flushing = null
    this.writeStartedAt = 0
    this.retryAt = 0
    this.prepared = false
    this.preparing = null
    this.staged = null // effects of a redelivered batch still in doWork: { seq, applies }
    this.watermarks = new RedeliveryWatermarks()
    this.dbDown = false
    this.dbError = null
    this.lostAt = 0 // when the driver last lost the server (0: it has it, or never had)
    this.notMongo = null // the line said when what listens at the URI is not MongoDB (_probeServer)
    this.probedAt = 0
    this.abandoned = false
    this.finishing = false // flush() at stop: write everything now
    this.masterWaiting = false // onMasterWaiting() since the last write
    this.lastLog = {}
  }

  async init () {
    this._checkRetention()
    const uri = this.settings.mongoUri || process.env.MONGODB_URI
    if (!uri) throw new DatabaseError('no MongoDB configured: set the MONGODB_URI environment variable')
    this.uri = redactUri(uri)
    this.heartbeats = new HeartbeatWatch(this) // a driver monitor stuck on a check: the client is reconnected
    this.connection = mongoose.createConnection()
    this.connection.on('error', () => {}) // reported through connect and write failures
    // An idle worker learns of a database gone from the driver's heartbeat
    // (every 10 s), not at its next write: said in dbStats.
    this.connection.on('disconnected', () => { this.lostAt = this.lostAt || Date.now() })
    this.connection.on('connected', () => { this.lostAt = 0; this.notMongo = null })
    this.connection.on('reconnected', () => { this.lostAt = 0; this.notMongo = null })
    this.connectOptions = {
      dbName: resolveDatabase(this.settings.database, uri),
      serverSelectionTimeoutMS: this.settings.serverSelectionTimeoutMS,
      maxPoolSize: 4,
      bufferCommands: false
    }
    this.rawUri = uri
    this.timer = setInterval(() => this.flushSoon(), this.settings.flushInterval)
    this.flushSoon()
  }

  // Nothing is written before prepare() succeeded (indexes first). A first
  // connection that failed is not retried by the driver: open it again.
  _ensurePrepared () {
    if (this.heartbeats.reconnecting) return Promise.resolve(false) // its client is being reconnected (lib/mongo/heartbeat-watch.js)
    if (this.prepared) return Promise.resolve(true)
    if (!this.preparing) this.preparing = this._prepareOnce().finally(() => { this.preparing = null })
    return this.preparing
  }

  async _prepareOnce () {
    try {
      if (this.connection.readyState !== 1) await this.connection.openUri(this.rawUri, this.connectOptions)
      this.heartbeats.watch(this.connection.getClient())
      await this._checkServer()
      await this.prepare()
      this._startKeeper()
      this.prepared = true
      return true
    } catch (err) {
      this._onDbError(err, 'connect')
      return false
    }
  }

  /** The collections this worker writes that retention and the storage budget reach: none here (subclasses name theirs). */
  storageTargets () {
    return []
  }

  _checkRetention () {
    checkRetention(this.storageTargets(), this.settings, (line) => this.slot === 0 && this.logger.warn(`${this.constructor.name} ${line}`))
  }

  // Every worker keeps one; only the leader's acts (storage-keeper.js).
  _startKeeper () {
    const targets = uniqueByCollection(this.storageTargets())
    if (this.keeper || targets.length === 0) return
    const { retention = 0, retentionFor = [], maxStorage = 0, storageInterval = 60000, retentionBy = 'auto' } = this.settings
    this.keeper = new StorageKeeper(this.connection.db, targets, { retention, retentionFor, maxStorage, storageInterval, retentionBy }, {
      logger: this.logger,
      logAtMost: (key, level, fields, msg) => this.logAtMost(key, level, fields, msg),
      isLeader: () => this.leader
    })
    this.keeper.start()
  }

  onLeader (isLeader) {
    if (isLeader && this.keeper) this.keeper.tickSoon()
  }

  /**
   * Who the server is, said once per worker start (and again if it
   * changes) by the first worker, at debug level by the others. A server
   * known to break a guarantee we rely on is refused, nothing written,
   * unless its kind is in `allowServer`; accepted, the risk is said.
   */
  async _checkServer () {
    const hosts = (this.connection.getClient().options.hosts || []).map((address) => String(address.host || address))
    const server = this.server = await identifyServer(this.connection.db, hosts)
    const line = serverLine(server)
    const said = this._serverLine === line
    this._serverLine = line
    const level = this.slot === 0 ? 'info' : 'debug'
    if (!said) this.logger[level]({ server: server.kind, version: server.version, topology: server.topology }, `database: ${line}`)
    if (!server.risk) return
    if (!this.settings.allowServer.includes(server.kind)) {
      throw new DatabaseError(`${server.name} ${server.version}: ${server.risk}; nothing is written to it unless the collector is started with --allow-server ${server.kind}`)
    }
    if (!said) this.logger[this.slot === 0 ? 'warn' : 'debug']({ server: server.kind }, `${server.name}: ${server.risk} (accepted: --allow-server ${server.kind})`)
  }

  /**
   * Whether the effects of the redelivered batch `delivery` on one document
   * (`key` of `store`) are stored already, its origin's watermark read once
   * by `readWatermark(origin)` (storage/redelivery-watermarks.js).
   */
  redeliveredApplied (delivery, store, key, readWatermark) {
    return this.watermarks.applied(delivery, store, key, readWatermark)
  }

  // A dead worker's batches: where its first writes were not guarded, what it had sent may land yet (RedeliveryWatermarks#settle).
  async prepareRedelivered (messages, delivery) {
    await this.whenPrepared()
    await this.watermarks.settle(delivery.origin, guardsEveryWrite(this.server))
  }

  /** Reads ahead, for a redelivered batch, the watermarks of `origin` for `keys` of one `store` (`readMany(keys, origin)` → Map). */
  prefetchWatermarks (store, origin, keys, readMany) {
    return this.watermarks.prefetch(store, origin, keys, readMany)
  }

  /**
   * Holds the effects of a redelivered message until its whole batch has
   * been through doWork. Its messages are processed one at a time around
   * reads, and a flush in between would write part of the batch under the
   * batch's watermark: should this worker die too, the next one would take
   * the rest as stored.
   */
  stage (delivery, apply) {
    if (this.staged && this.staged.seq !== delivery.seq) this._commitStaged()
    if (!this.staged) this.staged = { seq: delivery.seq, applies: [] }
    this.staged.applies.push(apply)
  }

  _commitStaged () {
    const staged = this.staged
    this.staged = null
    for (const apply of staged.applies) apply()
  }

  // The oldest checkpoint held, staged effects included.
  _oldestHeld () {
    const oldest = this.oldestPending()
    return this.staged && this.staged.seq < oldest ? this.staged.seq : oldest
  }

  /** Resolves once the database is connected and prepared, retrying with the flush backoff (for reads on the redelivery path). */
  async whenPrepared () {
    while (!await this._ensurePrepared()) {
      await new Promise((resolve) => setTimeout(resolve, Math.max(50, this.retryAt - Date.now())))
    }
  }

  // The next write takes everything (DefinitionWorker: no sink waits for its turn); one in progress took its own.
  onMasterWaiting () {
    this.masterWaiting = true
    if (this.flushing) this.flushing.then(() => this.flushSoon(), () => this.flushSoon())
    else this.flushSoon()
  }

  flushSoon () {
    if (this.writeStartedAt && Date.now() - this.writeStartedAt > SLOW_FLUSH_MS) this._probeServer()
    if (this.flushing || Date.now() < this.retryAt) return this.flushing
    this.flushing = this._flushOnce().finally(() => { this.flushing = null })
    return this.flushing
  }

  async _flushOnce () {
    if (this.staged && this.finished(this.staged.seq)) this._commitStaged()
    if (!await this._ensurePrepared()) return
    const started = Date.now()
    this.writeStartedAt = started
    try {
      await this.writePending()
      this.dbCounts.flushes++
      this.backoff.reset()
      this.dbDown = false
      this.dbError = this.notMongo = null
      this._noteSlowFlush(Date.now() - started)
    } catch (err) {
      this._onDbError(err, 'write')
    } finally {
      this.writeStartedAt = 0
      this._acknowledgeStored()
    }
  }

  // Everything older than the oldest item still held is stored.
  _acknowledgeStored () {
    if (this.abandoned) return
    this.stored(this._oldestHeld() - 1)
  }

  _noteSlowFlush (ms) {
    if (ms < SLOW_FLUSH_MS && !this.hasBacklog()) return
    this.logAtMost('slow', 'warn', { flushMs: ms, uri: this.uri },
      'database slower than input: a flush took long or left a backlog; the master holds what is not stored (in memory up to maxInFlight and --memory-budget per worker, past that in the disk buffer when it is on)')
  }

  /** More is waiting than one flush writes (override with the subclass's measure). */
  hasBacklog () {
    return false
  }

  _onDbError (err, stage) {
    this.dbCounts.dbErrors++
    this.dbDown = true
    const unreachable = isUnreachable(err)
    if (unreachable || stage === 'connect') this._probeServer()
    this.dbError = ((unreachable || stage === 'connect') && this.notMongo) || redactMessage(err)
    const delay = this.backoff.next()
    this.retryAt = Date.now() + delay
    this.heartbeats.check()
    this.logAtMost(unreachable ? 'down' : 'error', 'warn', { stage, uri: this.uri, error: this.dbError, retryInMs: delay },
      unreachable ? `database unreachable (${this.dbError}); holding messages and retrying` : `database ${stage} failed (${this.dbError}); holding messages and retrying`)
  }

  /**
   * The driver reads a port taken by another program as a timeout, a stalled
   * write or an older cause: asked directly (lib/mongo/not-mongo.js), at most
   * every 5 s, on a connection error or a write running past SLOW_FLUSH_MS.
   */
  _probeServer () {
    if (this.probing || Date.now() - this.probedAt < LOG_INTERVAL_MS) return
    this.probedAt = Date.now()
    this.probing = findNotMongo(this.rawUri).then((line) => {
      this.notMongo = line
      if (line) this.logAtMost('notMongo', 'warn', { uri: this.uri, error: line }, `database unreachable: ${line}; holding messages and retrying`)
    }, () => {}).finally(() => { this.probing = null })
  }

  /**
   * The message being processed is one its decoder refused: counted by
   * reason in the worker's `malformed` (`this.counts.malformed`) and dropped
   * under that reason in the master's counters. Nothing of it is stored, so
   * it is not `processed`.
   */
  refuse (reason) {
    const malformed = this.counts.malformed
    malformed[reason] = (malformed[reason] || 0) + 1
    this.dropMessage(reason)
  }

  /** One line per `key` at most every 5 s; `fields` and `msg` may be functions, called only for a line written (a hot path builds nothing). */
  logAtMost (key, level, fields, msg) {
    const now = Date.now()
    if (now - (this.lastLog[key] || 0) < LOG_INTERVAL_MS) return
    this.lastLog[key] = now
    this.logger[level](typeof fields === 'function' ? fields() : fields, typeof msg === 'function' ? msg() : msg)
  }

  /**
   * On stop: write everything pending, retrying for up to flushTimeout, and
   * never past it, not even for a write in progress: the master kills a
   * worker that outlives its drainTimeout. What is abandoned stays unacked: kept in the disk buffer,
   * or dead-lettered as `shutdown` (`dropped.shutdown` if none can be written), or in a rolling
   * restart handed to this slot's next worker.
   */
  async flush () {
    clearInterval(this.timer)
    this.finishing = true // everything is written now (DefinitionWorker: no sink waits for its turn)
    const deadline = Date.now() + this.settings.flushTimeout
    while ((this.hasPending() || this.staged || this.flushing) && Date.now() < deadline) {
      if (this.flushing) {
        await raceDeadline(this.flushing, deadline)
        continue
      }
      const wait = Math.min(this.retryAt - Date.now(), deadline - Date.now())
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait))
      this.retryAt = 0
      await raceDeadline(this.flushSoon(), deadline)
    }
    if (this.hasPending() || this.staged || this.flushing) {
      this.staged = null
      this.abandoned = true
      this.dbCounts.abandoned++
      this.abandonPending()
    }
  }

  async close () {
    clearInterval(this.timer)
    if (this.keeper) this.keeper.stop()
    if (this.heartbeats) await this.heartbeats.stop()
    if (this.connection) await this.connection.close().catch(() => {})
  }

  /**
   * The memory this worker keeps per sender, per map: keys `held`, and keys
   * `evicted` over the map's bound (docs/call-quality.md, Memory). Subclasses add theirs.
   */
  stateStats () {
    return { held: { watermarks: this.watermarks.size }, evicted: { watermarks: this.watermarks.evicted } }
  }

  dbStats () {
    const writeMs = this.writeStartedAt ? Date.now() - this.writeStartedAt : 0
    return {
      dbErrors: this.dbCounts.dbErrors,
      driverReconnects: this.heartbeats ? this.heartbeats.reconnects : 0, // clients reconnected because the driver's monitor was stuck
      dbDown: this.dbDown || (this.prepared && this.lostAt > 0) || this.notMongo !== null,
      dbError: this.notMongo || this.dbError || (this.prepared && this.lostAt > 0 ? `the driver has had no server to write to for ${Math.round((Date.now() - this.lostAt) / 1000)} s (its heartbeat)` : null),
      dbStalled: writeMs > this.settings.serverSelectionTimeoutMS,
      writeInProgressMs: writeMs,
      flushes: this.dbCounts.flushes,
      retryInMs: this.dbDown ? Math.max(0, this.retryAt - Date.now()) : 0, // the next attempt, while down
      connecting: Boolean(this.preparing), connected: this.prepared, // until its first connect and preparation, not known to be ok
      // The leader's: what each collection holds, keeps and deleted (null in the others).
      storage: this.keeper ? this.keeper.stats() : null
    }
  }
}

// One target per collection (two sinks may write one: a streams sink's
// packet counters and a counters sink), the first named.
function uniqueByCollection (targets) {
  const seen = new Set()
  return targets.filter((target) => !seen.has(target.collection) && seen.add(target.collection))
}

module.exports = MongoWorker
