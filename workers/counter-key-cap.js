'use strict'

const { NewKeyLimit } = require('./new-key-limit')

/**
 * A counters sink's cap on the keys its counts name that a sender chooses
 * (syslog: the HOSTNAME, one counter document per host, severity and day).
 * A count `{ metric, key }` whose `key` is known, or new within this
 * worker's `maxNewKeysPerMinute`, is counted under `metric`; past the cap
 * under the sink's `otherwise` metric, so the count is kept, only not per
 * key, and `overflowed` says how many were. Keys remembered: `maxKnownKeys`
 * (the least recently seen forgotten). The record itself is stored either
 * way: the cap concerns the counters only (the definition's `cardinality`
 * is what refuses records).
 *
 * A redelivered message goes where the worker that died with it counted it,
 * as far as the database tells: that worker's choice was its own memory's,
 * and counting it under the other metric would count it twice (each
 * document's guard sees only its own batches). Before such a batch the sink
 * claims it in the `otherwise` documents of its days (prepareRedelivered:
 * their watermark raised to it in one write each, which answers whether
 * they held it already). Held: every count of the batch goes there (its
 * increment skipped there as applied, or where the dead worker put it).
 * Not held: each under its own metric (what the dead worker counted there,
 * if anything, is skipped the same way), and a write of the dead worker's
 * still on the wire is refused in the `otherwise` documents, which it
 * reaches only after the claim. A read instead of the claim left that
 * write to land between the read and this worker's counts: the batch's
 * overflow counted under `otherwise` and again under each host.
 */
class CounterKeyCap {
  /**
   * @param {{ collection: string, otherwise?: string, maxNewKeysPerMinute?: number, maxKnownKeys?: number }} spec a counters sink's, settings resolved
   * @param {object|null} host its worker's (sink.js sinkHost): the log
   */
  static of (spec, host, store) {
    return spec.maxNewKeysPerMinute > 0 ? new CounterKeyCap(spec, host, store) : null
  }

  /** `store`: the sink's CounterStore (the documents a count goes to, their watermarks). */
  constructor ({ collection, otherwise, maxNewKeysPerMinute, maxKnownKeys = 10 * maxNewKeysPerMinute }, host, store) {
    this.limit = new NewKeyLimit({ share: maxNewKeysPerMinute, known: maxKnownKeys })
    this.collection = collection
    this.otherwise = otherwise
    this.host = host
    this.store = store
    this.overflowed = 0
    this.redelivered = null // { origin, batchId, held: Set of the `otherwise` documents that hold that batch }
  }

  /** The metric a count of a message (under `context`) at `at` (a Date or ms) is counted under. */
  metricOf (count, context, at) {
    if (count.key === undefined) return count.metric
    const remote = context.message.remote
    const address = remote ? remote.address : null
    if (context.redelivered) return this.redeliveredMetric(count, context, address, at)
    if (this.limit.admits(count.key, address)) return count.metric
    this.overflowed++
    if (this.host) {
      this.host.logAtMost(`counterKeys:${this.collection}`, 'warn', { collection: this.collection, ...this.limit.minuteStats(), overflowed: this.overflowed },
        'counts of new keys beyond the counters sink\'s maxNewKeysPerMinute (share) are counted under its `otherwise` metric (the sink\'s overflowed); busiestSource brought the most this minute')
    }
    return this.otherwise
  }

  // Decided by the database, not by this worker's memory: the dead worker's was its own.
  redeliveredMetric (count, context, address, at) {
    const r = this.redelivered
    const mark = context.mark
    const claimed = r !== null && r.origin === mark.origin && r.batchId === mark.batchId
    if (claimed && r.held.has(this.store.documentId(this.otherwise, at))) return this.otherwise
    this.limit.admits(count.key, address, true)
    // Not claimed (the claim failed): the `otherwise` document covers the batch
    // too when this worker's counts are written (nothing added), so a write of
    // the dead worker's landing after them is refused there at least.
    if (!claimed) this.store.increment(this.otherwise, at, 0, mark)
    return count.metric
  }

  /**
   * Before a redelivered batch: claims it in the `otherwise` documents its
   * messages may go to (by their arrival, the counts' time unless `of`
   * gives one), learning which held it already.
   */
  async prepareRedelivered (messages, delivery) {
    this.redelivered = null
    if (!this.store.collection) return
    const dates = messages.map((m) => m.receivedAt || delivery.receivedAt || Date.now())
    const held = await this.store.claim(this.otherwise, dates, delivery.origin, delivery.batchId)
    this.redelivered = { origin: delivery.origin, batchId: delivery.batchId, held }
  }

  stats () {
    return { newKeys: this.limit.counts.admitted, overflowed: this.overflowed }
  }
}

module.exports = { CounterKeyCap }
