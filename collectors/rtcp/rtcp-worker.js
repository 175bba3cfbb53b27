'use strict'

const StreamWorker = require('../../workers/stream-worker')
const DecodeError = require('../../exceptions/decode-error')
const { decodeRtcp, callQualityOf } = require('./rtcp-records')
const { toStreamUpdates } = require('./to-stream-updates')
const { callAnalytics } = require('./quality-analytics')

/**
 * The RTCP collector's worker as a StreamWorker class, for a collector of
 * the class way that carries RTCP (extend it, or name it as a worker):
 * RTCP compound packets (RFC 3550) decoded into stream updates, as the RTCP
 * definition (index.js) does, with the same call-quality memory and
 * figures.
 */
class RtcpWorker extends StreamWorker {
  /** Its settings: the RTCP definition's. */
  static settings = require('./index').Collector.settings.worker

  constructor (options = {}, defaults = {}) {
    super(options, defaults)
    this.deviations = {} // --tolerate: deviations decoded anyway, counted by name
    this.quality = callQualityOf(this.settings)
  }

  decode (message) {
    const decoded = decodeRtcp(message.data, this.settings)
    if (decoded instanceof DecodeError) return decoded
    if (decoded.deviations) for (const name of decoded.deviations) this.deviations[name] = (this.deviations[name] || 0) + 1
    return toStreamUpdates(decoded, message.rinfo, this.receivedAt(), this.quality)
  }

  // When the master received the datagram (its batch's first message, within
  // a loop turn of it): the arrival time RTT pairs SRs and reports by, and
  // the time the stream records, whatever the worker's backlog.
  receivedAt () {
    const delivery = this.delivery()
    return delivery && delivery.receivedAt > 0 ? delivery.receivedAt : Date.now()
  }

  // The endpoints only, leaving the call-quality memory alone.
  peek (message) {
    const decoded = decodeRtcp(message.data, this.settings)
    return decoded instanceof DecodeError ? decoded : toStreamUpdates(decoded, message.rinfo, this.receivedAt())
  }

  streamAnalytics (doc, endedAt) {
    return callAnalytics(doc, endedAt)
  }

  stats () {
    return { ...super.stats(), deviations: { ...this.deviations }, quality: this.quality.stats() }
  }

  // Beside the stream worker's maps, what it remembers of the calls.
  stateStats () {
    const { held, evicted } = super.stateStats()
    const calls = this.quality.memory()
    return { held: { ...held, ...calls.held }, evicted: { ...evicted, ...calls.evicted } }
  }
}

module.exports = RtcpWorker
