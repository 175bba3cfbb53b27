'use strict'

const MongoWorker = require('./mongo-worker')
const { CounterStore, counterTarget } = require('./storage/counter-store')
const { guardsEveryWrite } = require('./storage/write-guard')
const { counterSchema, defineModel } = require('./storage/schemas')

const { COUNTER_SETTINGS } = require('./mongo-settings')

/**
 * A worker for collectors whose data is counts: each message becomes
 * increments of per-minute counters (`CounterStore`: one document per metric
 * per UTC day with `daily`, `hourly.HH`, `minute.HH.MM`). A subclass
 * implements one method, `countsOf(message)`, returning
 * `[{ metric, n?, at? }]` (n defaults to 1, at to now); throwing an error
 * with a `reason` (a `DecodeError`) refuses the message, counted in the
 * master's `dropped[reason]`. It may be called more than once for a message
 * (a redelivered batch is read ahead), so keep it free of side effects.
 *
 * Everything else is here: buffering and one bulk write per flush, holding
 * increments while the database is away, acknowledging only what is stored,
 * and counting a batch redelivered after a worker died exactly once (each
 * counter document records the highest batch of each origin it covers).
 */
class CounterWorker extends MongoWorker {
  /** Its settings (workers/mongo-settings.js). */
  static settings = COUNTER_SETTINGS

  constructor (options = {}, defaults = {}) {
    super(options, defaults)
    this.counterStore = new CounterStore(null, { preallocateRate: this.settings.preallocateRate, guardAll: () => guardsEveryWrite(this.server) })
    this.counts = { messages: 0, increments: 0, malformed: {}, dropped: 0 }
  }

  /**
   * The increments a message makes. Override.
   * @param {{ data: Buffer }} message
   * @returns {Array<{ metric: string, n?: number, at?: Date|number }>}
   */
  countsOf (message) {
    throw new Error(`${this.constructor.name} must implement countsOf(message)`)
  }

  async prepare () {
    const Counter = await defineModel(this.connection, 'Counter', counterSchema, this.settings.countersCollection)
    this.counterStore.collection = Counter.collection
  }

  storageTargets () {
    return [counterTarget(this.settings.countersCollection)]
  }

  doWork (message) {
    this.counts.messages++
    const counts = this.decode(message)
    if (counts === null) return
    const delivery = this.delivery()
    if (this.counterStore.size >= this.settings.maxPending) {
      this.counts.dropped++
      return this.dropMessage('workerFull')
    }
    if (!delivery.redelivered) {
      for (const c of counts) this.counterStore.increment(c.metric, c.at, c.n, delivery)
      this.counts.increments += counts.length
      return
    }
    return this.countRedelivered(counts, delivery)
  }

  // The counts of a message, each with its time and n; null when refused.
  decode (message) {
    let counts
    const now = Date.now()
    try {
      counts = this.countsOf(message) || []
    } catch (err) {
      if (!err || typeof err.reason !== 'string') throw err
      this.refuse(err.reason)
      return null
    }
    return counts.map((c) => ({ metric: c.metric, n: c.n === undefined ? 1 : c.n, at: c.at === undefined ? now : c.at }))
  }

  // A redelivered batch: read, in one query, the counter documents it touches.
  async prepareRedelivered (messages, delivery) {
    await super.prepareRedelivered(messages, delivery)
    const ids = []
    for (const message of messages) {
      let counts
      try {
        counts = this.countsOf(message) || []
      } catch {
        continue
      }
      for (const c of counts) ids.push(this.counterStore.documentId(c.metric, c.at === undefined ? Date.now() : c.at))
    }
    await this.prefetchWatermarks('counters', delivery.origin, ids, (keys, origin) => this.counterStore.watermarks(keys, origin))
  }

  async countRedelivered (counts, delivery) {
    await this.whenPrepared()
    for (const c of counts) {
      const id = this.counterStore.documentId(c.metric, c.at)
      const applied = await this.redeliveredApplied(delivery, 'counters', id, (origin) => this.counterStore.watermark(id, origin))
      if (!applied) this.stage(delivery, () => this.counterStore.increment(c.metric, c.at, c.n, delivery))
    }
    this.counts.increments += counts.length
  }

  async writePending () {
    await this.counterStore.flush()
  }

  hasPending () {
    return this.counterStore.size > 0
  }

  oldestPending () {
    return this.counterStore.oldestPending()
  }

  abandonPending () {
    this.logger.error({ pending: this.counterStore.size }, 'database unavailable at shutdown: counter increments not stored (their messages are counted by the master as dropped.shutdown, or kept in its disk buffer for the next start)')
    this.counterStore.clear()
  }

  stats () {
    return {
      messages: this.counts.messages,
      increments: this.counts.increments,
      malformed: { ...this.counts.malformed },
      dropped: this.counts.dropped,
      pending: this.counterStore.size,
      dbWrites: this.counterStore.stats.ops,
      counterRepeats: this.counterStore.repeats(),
      ...this.dbStats(),
      ...this.stateStats()
    }
  }
}

module.exports = CounterWorker
