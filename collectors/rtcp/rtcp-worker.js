'use strict'

const StreamWorker = require('../../workers/stream-worker')
const DecodeError = require('../../exceptions/decode-error')
const { tryDecodeRtcp, DECODE_REASONS } = require('./decoder')
const { toStreamUpdates } = require('./to-stream-updates')
const { CallQuality } = require('./call-quality')
const { callAnalytics } = require('./quality-analytics')
const RTCP_SETTINGS = require('./rtcp-settings')

// StreamWorker counts a refused message by the `reason` of the DecodeError
// decode() returns. One per reason, made once: a refusal costs neither a
// stack capture nor a throw.
const REFUSALS = Object.freeze(Object.fromEntries(DECODE_REASONS.map((reason) => [reason, new DecodeError(reason, `invalid RTCP (${reason})`)])))

/**
 * Decodes RTCP compound packets (RFC 3550) into stream updates: each report
 * block is a packet from the reporter to the reported source, with the call
 * quality it tells (call-quality.js). Malformed datagrams are counted by
 * reason (see decoder.js DECODE_REASONS) and skipped.
 */
class RtcpWorker extends StreamWorker {
  /** Its settings (rtcp-settings.js). */
  static settings = RTCP_SETTINGS.worker

  constructor (options = {}, defaults = {}) {
    super(options, defaults)
    const { tolerate, codec, clockRate, jitterBuffer, maxSources } = this.settings
    // --tolerate: deviations decoded anyway, counted by name
    this.decodeOptions = tolerate.length ? { tolerate: [...tolerate] } : undefined
    this.deviations = {}
    this.quality = new CallQuality({ codec, clockRate, jitterBuffer, maxSources })
  }

  decode (message) {
    const decoded = tryDecodeRtcp(message.data, this.decodeOptions)
    if (decoded.packets === null) return REFUSALS[decoded.reason]
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
    const decoded = tryDecodeRtcp(message.data, this.decodeOptions)
    return decoded.packets === null ? REFUSALS[decoded.reason] : toStreamUpdates(decoded, message.rinfo, this.receivedAt())
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
