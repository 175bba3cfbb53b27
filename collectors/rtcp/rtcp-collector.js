'use strict'

const MongoCollector = require('../mongo-collector')
const RTCP_SETTINGS = require('./rtcp-settings')
const { CallAffinity } = require('./call-affinity')
const { entryDataStart, entryDataLength, entryKeyHash } = require('../../lib/shared/batch-codec')
const { fnv1a } = require('../../lib/master/distribution')

/**
 * The RTCP collector (its settings: rtcp-settings.js): UDP on 5005 by
 * default, hash distribution on the call (call-affinity.js: both ends of a call meet in one worker, which pairs
 * their reports into round-trip times and clock rates), RtcpWorker writing
 * call-quality streams. The calls it remembers for that are bounded by
 * `maxSources`; one forgotten is counted in `eventReasons.stateEvicted.callAffinity`.
 */
class RtcpCollector extends MongoCollector {
  static settings = RTCP_SETTINGS

  constructor (options = {}) {
    super(options)
    const { maxSources = RTCP_SETTINGS.worker.maxSources.default } = this.options.workerOptions
    this._calls = new CallAffinity({ maxSenders: maxSources, onEvict: () => this.ctx.count('stateEvicted', 'callAffinity') })
  }

  /**
   * The call of an RTCP datagram; for anything else its source (the hash of
   * the default key, so that entryKey can give the same number).
   */
  key (message) {
    const data = message.data
    const key = Buffer.isBuffer(data) ? this._calls.keyOf(data, 0, data.length) : -1
    return key >= 0 ? key : fnv1a(super.key(message))
  }

  /** key() read from a batch entry's bytes (the native receive path). */
  entryKey (buf, offset) {
    const start = entryDataStart(buf, offset)
    const key = this._calls.keyOf(buf, start, start + entryDataLength(buf, offset))
    return key >= 0 ? key : entryKeyHash(buf, offset)
  }
}

module.exports = RtcpCollector
