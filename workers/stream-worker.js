'use strict'

const mongoose = require('mongoose')
const Worker = require('./worker')
const Backoff = require('../lib/backoff')
const DatabaseError = require('../exceptions/database-error')
const { redactUri } = require('../lib/mongo/redact-uri')
const { PacketCoalescer, invalidReason } = require('./storage/packet-coalescer')
const StreamWriter = require('./storage/stream-writer')
const { CounterStore } = require('./storage/counter-store')
const StreamSweeper = require('./storage/stream-sweeper')
const { defineModels } = require('./storage/schemas')

/** Defaults of the StreamWorker's options (the collector's `workerOptions`). */
const STREAM_DEFAULTS = Object.freeze({
  mongoUri: undefined, // else MONGODB_URI
  database: undefined, // else the URI's database, else 'collector'
  streamsCollection: 'streams',
  countersCollection: 'counters',
  flushInterval: 250,
  maxStreamsPerFlush: 5000, // distinct pending streams that trigger an early flush
  maxPending: 100000, // distinct pending streams held while the database is away
  flushTimeout: 20000, // how long flush() on stop keeps retrying
  streamTimeout: 60000,
  byeGrace: 5000,
  sweepInterval: 1000,
  sweep: true,
  preallocateRate: 0.001,
  counterMetric: undefined, // default `${collector name}.packets`
  serverSelectionTimeoutMS: 5000,
  retryDelay: 200
})

const LOG_INTERVAL_MS = 5000

/**
 * A Worker that turns decoded packets into race-free stream upserts.
 * Subclasses implement `decode(message)` → an item or array of items:
 * - packet `{ fromID, toID, IP, highestPacketNum, timestamp, fields? }`
 * - side update `{ sideID, IP?, timestamp, fields }`
 * - end `{ endID, timestamp }` (the endpoint said goodbye)
 * and may throw a DecodeError (counted by its `reason`, skipped).
 */
class StreamWorker extends Worker {
  constructor (options = {}) {
    super(options)
    this.settings = { ...STREAM_DEFAULTS, ...options }
    this.coalescer = new PacketCoalescer(this.settings.maxPending)
    this.backoff = new Backoff({ initial: this.settings.retryDelay, factor: 2, max: 5000 })
    this.counts = { packets: 0, items: 0, malformed: {}, droppedPending: 0, rejected: 0, dbErrors: 0, flushes: 0 }
    this.inFlightEntries = 0
    this.flushing = null
    this.retryAt = 0
    this.prepared = false
    this.lastLog = {}
  }

  decode () {
    throw new Error(`${this.constructor.name} must implement decode(message)`)
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
    this.metric = this.settings.counterMetric || `${this.collectorName || 'streams'}.packets`
    this.counterStore = new CounterStore(null, { preallocateRate: this.settings.preallocateRate })
    this.timer = setInterval(() => this.flushSoon(), this.settings.flushInterval)
    await this.prepare().catch((err) => this.onDbError(err, 'prepare'))
  }

  // Indexes first: no stream is written before the unique index exists.
  async prepare () {
    const { Stream, Counter } = await defineModels(this.connection, {
      streams: this.settings.streamsCollection,
      counters: this.settings.countersCollection
    })
    await StreamWriter.prepare(Stream.collection)
    this.writer = new StreamWriter(Stream.collection)
    this.counterStore.collection = Counter.collection
    this.sweeper = new StreamSweeper(Stream.collection, {
      streamTimeout: this.settings.streamTimeout,
      byeGrace: this.settings.byeGrace,
      interval: this.settings.sweepInterval,
      logger: this.logger
    })
    this.prepared = true
    if (this.leader) this.onLeader(true)
  }

  doWork (message) {
    let items
    try {
      items = this.decode(message)
    } catch (err) {
      return this.countMalformed(err.reason || 'decode-error')
    }
    if (items === null || items === undefined) return
    if (!Array.isArray(items)) return this.accept(items)
    for (let i = 0; i < items.length; i++) this.accept(items[i])
  }

  accept (item) {
    const reason = invalidReason(item)
    if (reason) return this.countMalformed(reason)
    this.counts.items++
    if (!this.coalescer.add(item, this.inFlightEntries)) return this.dropPending()
    if (item.fromID === undefined) return
    this.counts.packets++
    this.counterStore.increment(this.metric, item.timestamp === undefined ? Date.now() : item.timestamp)
    if (this.coalescer.size >= this.settings.maxStreamsPerFlush) this.flushSoon()
  }

  countMalformed (reason) {
    this.counts.malformed[reason] = (this.counts.malformed[reason] || 0) + 1
  }

  dropPending () {
    this.counts.droppedPending++
    this.logAtMost('dropPending', 'error', { maxPending: this.settings.maxPending, dropped: this.counts.droppedPending },
      'pending stream updates reached maxPending while the database is unavailable; dropping packets')
  }

  flushSoon () {
    if (this.flushing || Date.now() < this.retryAt) return this.flushing
    this.flushing = this.flushOnce().finally(() => { this.flushing = null })
    return this.flushing
  }

  async flushOnce () {
    if (!this.prepared) {
      try {
        await this.prepare()
      } catch (err) {
        return this.onDbError(err, 'prepare')
      }
    }
    const entries = this.coalescer.take()
    this.inFlightEntries = entries.length
    try {
      await this.writeEntries(entries)
      await this.counterStore.flush()
      this.counts.flushes++
      this.backoff.reset()
      this.dbDown = false
    } catch (err) {
      this.onDbError(err, 'write')
    } finally {
      this.inFlightEntries = 0
    }
  }

  async writeEntries (entries) {
    if (entries.length === 0) return
    let result
    try {
      result = await this.writer.write(entries)
    } catch (err) {
      this.coalescer.restore(err.unwritten || entries)
      throw err
    }
    this.coalescer.restore(result.unresolved)
    for (const { entry, error } of result.failed) {
      this.counts.rejected += entry.count
      this.logAtMost('rejected', 'error', { error }, 'the database rejected a stream update')
    }
  }

  onDbError (err, stage) {
    this.counts.dbErrors++
    this.dbDown = true
    const delay = this.backoff.next()
    this.retryAt = Date.now() + delay
    this.logAtMost('db', 'warn', { stage, uri: this.uri, error: redactMessage(err), retryInMs: delay, pending: this.coalescer.size },
      'database unavailable; keeping updates and retrying')
  }

  logAtMost (key, level, fields, msg) {
    const now = Date.now()
    if (now - (this.lastLog[key] || 0) < LOG_INTERVAL_MS) return
    this.lastLog[key] = now
    this.logger[level](fields, msg)
  }

  /** On stop: write everything pending, retrying for up to flushTimeout. */
  async flush () {
    clearInterval(this.timer)
    const deadline = Date.now() + this.settings.flushTimeout
    while (this.hasPending() && Date.now() < deadline) {
      if (this.flushing) await this.flushing
      const wait = Math.min(this.retryAt - Date.now(), deadline - Date.now())
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait))
      this.retryAt = 0
      await this.flushSoon()
    }
    if (this.hasPending()) this.abandonPending()
  }

  hasPending () {
    return this.coalescer.size > 0 || Boolean(this.counterStore && this.counterStore.size > 0)
  }

  abandonPending () {
    const packets = this.coalescer.take().reduce((sum, entry) => sum + entry.count, 0)
    this.counts.droppedPending += packets
    this.logger.error({ packets, uri: this.uri }, 'database still unavailable at shutdown; pending stream updates dropped')
  }

  async close () {
    clearInterval(this.timer)
    if (this.sweeper) await this.sweeper.stop()
    if (this.connection) await this.connection.close().catch(() => {})
  }

  onLeader (isLeader) {
    if (!this.sweeper || !this.settings.sweep) return
    if (isLeader) this.sweeper.start()
    else this.sweeper.stop()
  }

  stats () {
    const streamOps = this.writer ? this.writer.stats.ops : 0
    return {
      packets: this.counts.packets,
      malformed: { ...this.counts.malformed },
      droppedPending: this.counts.droppedPending,
      rejected: this.counts.rejected,
      pendingStreams: this.coalescer.size,
      dbWrites: streamOps + (this.counterStore ? this.counterStore.stats.ops : 0),
      streamWrites: streamOps,
      writesPerPacket: this.counts.packets ? streamOps / this.counts.packets : 0,
      duplicateRetries: this.writer ? this.writer.stats.duplicateRetries : 0,
      dbErrors: this.counts.dbErrors,
      dbDown: Boolean(this.dbDown),
      flushes: this.counts.flushes,
      sweeper: this.leader && this.sweeper ? { ...this.sweeper.stats } : null
    }
  }
}

// Driver messages may quote a connection string; never let credentials out.
function redactMessage (err) {
  return String((err && err.message) || err).replace(/mongodb(\+srv)?:\/\/\S+/g, (uri) => redactUri(uri))
}

StreamWorker.DEFAULTS = STREAM_DEFAULTS

module.exports = StreamWorker
