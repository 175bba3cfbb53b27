'use strict'

const { mongo: { ObjectId } } = require('mongoose') // the driver mongoose uses: one copy loaded
const MongoWorker = require('../../workers/mongo-worker')
const { CounterStore } = require('../../workers/storage/counter-store')
const { checkAccounted } = require('../../workers/storage/write-accounting')
const { defineSyslogModels } = require('./syslog-schema')
const { parseSyslog } = require('./parser')
const SYSLOG_SETTINGS = require('./syslog-settings')

const DUPLICATE_KEY = 11000
const SEQ = Symbol('checkpoint') // a record's checkpoint; symbol keys are not serialized

/**
 * Parses syslog (RFC 5424, RFC 3164; anything else is kept raw and counted)
 * and stores messages with batched insertMany, counting messages per minute
 * per host and severity in the counter store (`syslog.<host>.<severity>`).
 */
class SyslogWorker extends MongoWorker {
  /** Its settings (syslog-settings.js). */
  static settings = SYSLOG_SETTINGS.worker

  constructor (options = {}, defaults = {}) {
    super(options, defaults)
    this.buffer = []
    this.counterStore = new CounterStore(null, { preallocateRate: this.settings.preallocateRate })
    this.counts = { messages: 0, stored: 0, malformed: {}, deviations: {}, dropped: 0, inserts: 0 }
    const { strict, lenient } = this.settings
    this.parseOptions = { strict, lenient, receivedAt: null }
  }

  /** One message's record: the parser with this collector's --strict/--lenient. */
  parse (data, receivedAt) {
    this.parseOptions.receivedAt = receivedAt
    return parseSyslog(data, this.parseOptions)
  }

  async prepare () {
    const { Message, Counter } = await defineSyslogModels(this.connection, this.settings)
    this.messages = Message.collection
    this.counterStore.collection = Counter.collection
  }

  // Each message's `_id` is its messageKey(): the same when a batch is
  // redelivered after a worker died, so its insert collides (E11000) where
  // the first one landed. Its counter increment is skipped where the
  // counter document already covers its batch (see CounterStore).
  doWork (message) {
    const receivedAt = new Date()
    const record = this.parse(message.data, receivedAt)
    const remote = message.rinfo || message.remote
    record._id = new ObjectId(this.messageKey())
    record.source = remote.address
    this.counts.messages++
    if (record.format === 'raw') this.countMalformed(record.error || 'unparsed')
    else if (record.deviations) this.countDeviations(record.deviations)
    // The counters pending are per host, a name the sender chooses: bounded
    // with the messages (they outlive them when only the counters' write fails).
    if (this.buffer.length >= this.settings.maxPending || this.counterStore.size >= this.settings.maxPending) return this.drop()
    const delivery = this.delivery()
    record[SEQ] = delivery.seq
    this.buffer.push(record)
    const { counter, at } = counterOf(record, remote, receivedAt)
    if (this.buffer.length >= this.settings.maxBatch) this.flushSoon()
    if (!delivery.redelivered) return this.counterStore.increment(counter, at, 1, delivery)
    return this.countRedelivered(counter, at, delivery)
  }

  // The counters a redelivered batch touches, read in one go.
  async prepareRedelivered (messages, delivery) {
    await this.whenPrepared()
    const receivedAt = new Date()
    const ids = messages.map((message) => {
      const { counter, at } = counterOf(this.parse(message.data, receivedAt), message.rinfo || message.remote, receivedAt)
      return this.counterStore.documentId(counter, at)
    })
    await this.prefetchWatermarks('counters', delivery.origin, ids, (keys, origin) => this.counterStore.watermarks(keys, origin))
  }

  async countRedelivered (counter, at, delivery) {
    await this.whenPrepared()
    const id = this.counterStore.documentId(counter, at)
    const applied = await this.redeliveredApplied(delivery, 'counters', id, (origin) => this.counterStore.watermark(id, origin))
    if (!applied) this.stage(delivery, () => this.counterStore.increment(counter, at, 1, delivery))
  }

  countMalformed (reason) {
    this.counts.malformed[reason] = (this.counts.malformed[reason] || 0) + 1
  }

  // Lenient readings (parser DEVIATIONS) are stored parsed, and counted by name.
  countDeviations (names) {
    for (const name of names) this.counts.deviations[name] = (this.counts.deviations[name] || 0) + 1
  }

  drop () {
    this.counts.dropped++
    this.dropMessage('workerFull')
    this.logAtMost('drop', 'error', { maxPending: this.settings.maxPending, dropped: this.counts.dropped },
      'pending syslog messages reached maxPending while the database is unavailable; dropping messages')
  }

  // The driver gives each document its _id before sending, so a batch sent
  // again after a failure collides (E11000) where it had landed: inserts are
  // idempotent across retries.
  // Writes what is buffered now, not what arrives meanwhile: under steady
  // input the loop would otherwise never end, and neither the counters nor
  // the acknowledgement after it would come.
  async writePending () {
    for (let remaining = this.buffer.length; remaining > 0 && this.buffer.length > 0;) {
      const docs = this.buffer.splice(0, Math.min(remaining, this.settings.maxBatch))
      remaining -= docs.length
      this.writing = docs
      try {
        this.counts.inserts++
        try {
          checkAccounted(await this.messages.insertMany(docs, { ordered: false }), docs.length, 0, 'syslog inserts')
        } catch (err) {
          if (!onlyDuplicates(err)) throw err
          checkAccounted(err.result, docs.length, err.writeErrors.length, 'syslog inserts')
        }
      } catch (err) {
        this.buffer.unshift(...docs)
        throw err
      } finally {
        this.writing = null
      }
      this.counts.stored += docs.length
    }
    await this.counterStore.flush()
  }

  hasPending () {
    return this.buffer.length > 0 || this.counterStore.size > 0
  }

  hasBacklog () {
    return this.buffer.length >= this.settings.maxBatch
  }

  oldestPending () {
    let min = this.counterStore.oldestPending()
    if (this.writing && this.writing.length > 0 && this.writing[0][SEQ] < min) min = this.writing[0][SEQ]
    if (this.buffer.length > 0 && this.buffer[0][SEQ] < min) min = this.buffer[0][SEQ]
    return min
  }

  abandonPending () {
    const unconfirmed = this.writing ? this.writing.length : 0
    this.counts.dropped += this.buffer.length + unconfirmed
    this.logger.error({ pending: this.buffer.length, unconfirmed, uri: this.uri },
      'database too slow or unavailable at shutdown: syslog messages not stored (counted by the master as dropped.shutdown, or kept in its disk buffer for the next start; unconfirmed ones may still land)')
    this.buffer = []
    this.counterStore.clear()
  }

  stats () {
    return {
      messages: this.counts.messages,
      stored: this.counts.stored,
      malformed: { ...this.counts.malformed },
      deviations: { ...this.counts.deviations },
      dropped: this.counts.dropped,
      pending: this.buffer.length,
      dbWrites: this.counts.inserts + this.counterStore.stats.ops,
      counterRepeats: this.counterStore.repeats(),
      ...this.dbStats(),
      ...this.stateStats()
    }
  }
}

function onlyDuplicates (err) {
  return Array.isArray(err.writeErrors) && err.writeErrors.length > 0 && err.writeErrors.every((e) => e.code === DUPLICATE_KEY)
}

/** The per-minute counter a syslog record counts in, and when. */
function counterOf (record, remote, receivedAt) {
  return { counter: `syslog.${record.host || remote.address}.${record.severityName || 'unknown'}`, at: record.timestamp || receivedAt }
}

module.exports = SyslogWorker
