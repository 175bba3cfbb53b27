'use strict'

const { NewKeyLimit } = require('./new-key-limit')

/**
 * A counters sink's cap on the keys its counts name that a sender chooses
 * (syslog: the HOSTNAME, one counter document per host, severity and day).
 * A count `{ metric, key, otherwise }` whose `key` is known, or new within
 * this worker's `maxNewKeysPerMinute`, is counted under `metric`; past the
 * cap under `otherwise`, so the count is kept, only not per key, and
 * `overflowed` says how many were. Keys remembered: `maxKnownKeys` (the least
 * recently seen forgotten). The record itself is stored either way: the
 * cap concerns the counters only (the definition's `cardinality` is what
 * refuses records).
 */
class CounterKeyCap {
  /**
   * @param {{ collection: string, maxNewKeysPerMinute?: number, maxKnownKeys?: number }} spec a counters sink's, settings resolved
   * @param {object|null} host its worker's (sink.js sinkHost): the log
   */
  static of (spec, host) {
    return spec.maxNewKeysPerMinute > 0 ? new CounterKeyCap(spec, host) : null
  }

  constructor ({ collection, maxNewKeysPerMinute, maxKnownKeys = 10 * maxNewKeysPerMinute }, host) {
    this.limit = new NewKeyLimit({ share: maxNewKeysPerMinute, known: maxKnownKeys })
    this.collection = collection
    this.host = host
    this.overflowed = 0
  }

  /**
   * The metric a count is counted under. A redelivered message's keys all
   * pass, as the definition's cap has them (NewKeyLimit#admits: the worker
   * that died with it may have counted them so).
   */
  metricOf (count, context) {
    const remote = context.message.remote
    if (count.key === undefined || this.limit.admits(count.key, remote ? remote.address : null, context.redelivered)) return count.metric
    this.overflowed++
    if (this.host) {
      this.host.logAtMost(`counterKeys:${this.collection}`, 'warn', { collection: this.collection, ...this.limit.minuteStats(), overflowed: this.overflowed },
        'counts of new keys beyond the counters sink\'s maxNewKeysPerMinute (share) are counted under their `otherwise` metric (the sink\'s overflowed); busiestSource brought the most this minute')
    }
    return count.otherwise
  }

  stats () {
    return { newKeys: this.limit.counts.admitted, overflowed: this.overflowed }
  }
}

module.exports = { CounterKeyCap }
