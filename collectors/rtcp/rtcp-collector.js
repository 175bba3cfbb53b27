'use strict'

const path = require('node:path')
const MongoCollector = require('../mongo-collector')
const RtcpConfig = require('./rtcp-config')
const { CallAffinity } = require('./call-affinity')
const { codecNamed } = require('./codecs')
const InvalidOptionError = require('../../exceptions/invalid-option-error')
const { entryDataStart, entryDataLength, entryKeyHash } = require('../../lib/shared/batch-codec')
const { fnv1a } = require('../../lib/master/distribution')

const DEFAULTS = { name: 'rtcp', protocol: 'udp', port: 5005, distribution: 'hash', worker: path.join(__dirname, 'rtcp-worker.js') }

/**
 * The RTCP collector: UDP on 5005 by default, hash distribution on the call
 * (call-affinity.js: both ends of a call meet in one worker, which pairs
 * their reports into round-trip times and clock rates), RtcpWorker writing
 * call-quality streams. The calls it remembers for that are bounded by
 * `maxSources`; one forgotten is counted in `eventReasons.stateEvicted.callAffinity`.
 */
class RtcpCollector extends MongoCollector {
  static workerOptionKeys = RtcpConfig.WORKER_KEYS

  constructor (options = {}) {
    super({ ...DEFAULTS, ...options })
    const { codec, maxSources } = this.options.workerOptions
    codecNamed(codec) // refused here, not in every worker
    if (maxSources !== undefined && !(Number.isInteger(maxSources) && maxSources >= 1)) throw new InvalidOptionError('maxSources', maxSources, 'must be a positive integer')
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
