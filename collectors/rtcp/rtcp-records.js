'use strict'

const DecodeError = require('../../exceptions/decode-error')
const { tryDecodeRtcp, DECODE_REASONS } = require('./decoder')
const { CallQuality } = require('./call-quality')

// A refused datagram is counted by the `reason` of its DecodeError. One per
// reason, made once: a refusal costs neither a stack capture nor a throw.
const REFUSALS = Object.freeze(Object.fromEntries(DECODE_REASONS.map((reason) => [reason, new DecodeError(reason, `invalid RTCP (${reason})`)])))

const decodeOptions = new WeakMap() // settings → the decoder's options (--tolerate, --reduced-size), made once

/**
 * An RTCP compound datagram decoded (decoder.js), pure: `{ packets,
 * deviations?, reducedSize? }`, or the DecodeError of its reason
 * (DECODE_REASONS). `settings.tolerate`: deviations decoded anyway;
 * `settings.reducedSize`: RFC 5506 reduced-size datagrams accepted.
 */
function decodeRtcp (data, settings) {
  let options = decodeOptions.get(settings)
  if (options === undefined) {
    const { tolerate = [], reducedSize = false } = settings
    options = tolerate.length || reducedSize ? { tolerate: [...tolerate], reducedSize } : null
    decodeOptions.set(settings, options)
  }
  const decoded = tryDecodeRtcp(data, options || undefined)
  return decoded.packets === null ? REFUSALS[decoded.reason] : decoded
}

/** A worker's call-quality memory (call-quality.js), from the collector's settings. */
function callQualityOf ({ codec, clockRate, jitterBuffer, maxSources }) {
  return new CallQuality({ codec, clockRate, jitterBuffer, maxSources })
}

module.exports = { decodeRtcp, callQualityOf, REFUSALS }
