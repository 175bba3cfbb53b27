'use strict'

// Runs in an RTCP worker: what each report block says about its call,
// worked out from the block and what the worker remembers of the call (its ends' earlier reports and
// SRs: call-affinity.js sends both ends of a call to one worker). The figures and their units are in
// docs/call-quality.md; the formulas are cited where they are computed.

const { voipRFactor, mosFromR, MODEL } = require('./e-model')
const { codecNamed, DEFAULT_CODEC } = require('./codecs')
const { MediaClocks } = require('./media-clocks')
const { QualityStats } = require('./quality-stats')
const { MAX_SOURCES, JITTER_BUFFER_MS } = require('./constants')
const { WINDOW_MS, fromReceiverReports, packetOf, windowSpan, windowsOf } = require('./packet-time')
const { BoundedMap } = require('../../lib/shared/bounded-map')
const { minuteKey, minuteKeyOf } = require('./minute-key')
const { allowedWindows } = require('./window-allowance')

const NTP_UNIT = 65536 // LSR and DLSR count 1/65536 s (RFC 3550 §6.4.1)
const MAX_JITTER_MS = 10000 // an interarrival jitter beyond is not a call's
const PEER_TERM_MS = 60000 // the other direction's delay is combined while this fresh
const MAX_DROPOUT = 3000 // RFC 3550 A.1: a larger jump of the highest sequence is a restart
// A round trip is the difference of arrival times in whole ms less DLSR in
// 1/65536 s, summed over two terms (or one doubled): this close below zero
// it is zero within the precision of the clocks, not an impossible value.
const RTT_PRECISION_MS = 2 * (1 + 1000 / NTP_UNIT)
const LSR_UNKNOWN = Symbol('lsr-unknown')
const NO_MEDIA = Symbol('no-media')
const LATE = Symbol('late')
const NO_WINDOWS = Object.freeze({ span: 0, windows: Object.freeze([]), coarse: false })

/** Why a report's figures are not used: counted by reason, flagged on the side. */
const INVALID_REASONS = Object.freeze([
  'lost-exceeds-expected', // cumulative lost beyond the packets its sequence range allows
  'fraction-without-expected', // a fraction lost while no packet was expected since the last report
  'jitter-out-of-range', // more than MAX_JITTER_MS
  'lsr-unknown', // LSR names no SR of the reported source seen here
  'rtt-negative' // LSR/DLSR and arrival times give a round trip below zero
])

/** Why a report with usable values gives no MOS: counted by reason, on the side too. */
// no-media: no packet expected since the last report (hold, silence, the call's end); not stored (skip):
// duplicate (the side's last report again within REPEAT_MS, sent twice), late (older than the side's last).
const UNSCORED_REASONS = Object.freeze(['no-media', 'duplicate', 'late'])
const REPEAT_MS = 500

/** MOS bands, best first (docs/call-quality.md); `unknown` when there is no MOS. */
const BANDS = Object.freeze(['good', 'fair', 'poor'])

function bandOf (mos) {
  if (mos === null) return 'unknown'
  return mos >= 4.0 ? 'good' : mos >= 3.6 ? 'fair' : 'poor'
}

/**
 * Per-worker memory of the calls it sees, bounded: at most `maxSources`
 * sources (SSRCs) and as many stream sides. Past that the
 * one not heard from longest is forgotten (counted per map, memory()) and
 * its next figures start as for a new call: a report's loss over its
 * interval falls back to the fraction lost, an RTT waits for the next SR.
 */
class CallQuality {
  constructor ({ codec = DEFAULT_CODEC, clockRate, jitterBuffer = JITTER_BUFFER_MS, maxSources = MAX_SOURCES } = {}) {
    this.codec = codecNamed(codec)
    this.codecName = codec
    this.jitterBuffer = jitterBuffer
    this.clockRate = clockRate === undefined ? this.codec.clockRate : clockRate
    this.clockRateSource = clockRate === undefined ? 'default' : 'configured'
    // Each stream's clock and codec: its SRs (reference), its call's SDP (announce, bindCall).
    this.clocks = new MediaClocks({ codec: this.codec, codecName: codec, clockRate: this.clockRate, clockRateSource: this.clockRateSource, maxSources })
    this.sides = new BoundedMap(maxSources) // 'reporter>reported' → { seq, lost, term, termAt, minute, window, windowTokens, … }
    this.invalid = Object.fromEntries(INVALID_REASONS.map((reason) => [reason, 0]))
    this.unscoredCounts = Object.fromEntries(UNSCORED_REASONS.map((reason) => [reason, 0]))
    this.windowsCoarse = 0 // reports booked whole to one window, over a side's allowance (window-allowance.js)
  }

  /**
   * The figures of one report block from `reporter` about `block.ssrc`,
   * at `at` (ms; over HEP the agent's capture time) and at the collector at `arrivedAt` (its windows' allowance runs on that clock), as side statistics for the stream worker. `xr` is what the same datagram's XR VoIP
   * Metrics block says of that stream, if any.
   *
   * The last values go into `fields` (given, or a new object). A report
   * whose interval carried no media (nothing expected since the previous
   * one: hold, silence suppression, the end of a call) or whose delay is
   * unknown gives no MOS, counted by reason (UNSCORED_REASONS).
   *
   * @returns {{ fields: object, stats: QualityStats }}
   */
  report (reporter, block, at, xr, fields = {}, arrivedAt = at) {
    const key = reportKey(reporter, block.ssrc)
    const side = this.side(key, at)
    const media = this.clocks.mediaOf(block.ssrc)
    const stats = new QualityStats()
    stats.setMedia(media)
    // An impossible value leaves out its own figure (a null), and the MOS
    // when it is the loss or the jitter; the report's other figures stand.
    const flags = []
    const previousSeq = side.seq
    if (repeated(side, block, at)) return this.skip('duplicate')
    const loss = this.loss(side, block, flags, stats)
    if (loss === LATE) return this.skip('late')
    // Jitter is kept in RTP timestamp units and turned into ms where it is
    // read, with the best clock rate the stream's side came to know.
    let jitter = block.jitter
    if (jitter / media.clockRate * 1000 > MAX_JITTER_MS) {
      flags.push('jitter-out-of-range')
      jitter = null
    }
    const rttMs = this.roundTrip(reporter, block.ssrc, side, block.lsr, block.dlsr, at, flags)
    const rttBasis = rttMs === null ? null : side.basis
    if (stats.restarts > 0) side.anchorAt = undefined
    if (typeof loss === 'number') fromReceiverReports(side, block.highestSeq, at)
    const packet = stats.packet = packetOf(media, side)
    for (const reason of flags) {
      this.invalid[reason]++
      stats.addInvalid(reason)
    }
    mediaFields(fields, media)
    if (loss === NO_MEDIA) return this.unscored('no-media', stats, fields, rttMs, rttBasis)
    const figures = loss !== null && jitter !== null ? this.figures(media, loss, jitter, rttMs, rttBasis, side.measuredRtt, xr, packet.ms) : null
    if (figures) {
      figures.pathMs = rttBasis === 'both-directions' ? side.term : null // this direction's part of the round trip, as the collector sees it
      const from = stats.intervalExpected > 0 ? previousSeq : undefined
      const span = windowSpan(packet.ms)
      // An interval, or a measured delay, is booked to windows: as many new ones as the side's allowance lets.
      const booked = stats.intervalExpected > 0 || figures.delayBasis === 'measured' ? allowedWindows(side, span, windowsOf(span, from, block.highestSeq), arrivedAt) : NO_WINDOWS
      if (booked.coarse) { this.windowsCoarse++; stats.windowsCoarse = 1 }
      stats.addReport(figures, at, minuteKeyOf(at), booked.span, booked.windows)
      // The call's discard rate and burstiness, as XR says them since the start of reception: the last report's wins ($max by seq).
      if (xr) stats.xr = { seq: block.highestSeq, discardRate: xr.discardRate, burstR: figures.burstR }
      scoredFields(fields, figures, jitter / media.clockRate * 1000, packet)
    }
    return { fields, stats }
  }

  // A report of an interval without media: its RTT stands (RTCP still
  // flows), it gives no loss, jitter or MOS and no minute bucket.
  unscored (reason, stats, fields, rttMs, rttBasis) {
    this.countUnscored(reason, stats)
    stats.addRtt(rttMs, rttBasis)
    fields.lossRate = null
    fields.rttMs = rttMs
    fields.rttBasis = rttBasis
    fields.delayMs = fields.delayBasis = fields.rFactor = fields.mos = null
    return { fields, stats }
  }

  skip (reason) { // a report not stored: toStreamUpdates leaves its item out
    this.unscoredCounts[reason]++
    return { skip: reason }
  }

  countUnscored (reason, stats) {
    this.unscoredCounts[reason]++
    stats.addUnscored(reason)
  }

  /**
   * Loss over the interval since this side's previous report, RFC 3550
   * A.3: Δ cumulative lost / Δ extended highest sequence number (0 when
   * duplicates make Δ lost negative). Without a previous report here, the
   * reporter's own fraction lost (§6.4.1, 8-bit). The stream's overall loss
   * comes from the first and last reports (`quality.loss.first/last`, see
   * sideQuality); a restart of the reporter's numbering (the highest
   * sequence going back, or on by more than 16 × MAX_DROPOUT at once with a
   * lost count that does not fit) is counted
   * in `quality.loss.restarts`, and then the overall figure is the sum of
   * the intervals instead. NO_MEDIA when no packet was expected since the
   * previous report: the interval carried no media to judge.
   */
  loss (side, block, flags, stats) {
    const seq = block.highestSeq
    const lost = block.cumulativeLost
    if (lost > seq + 1) {
      flags.push('lost-exceeds-expected')
      return null
    }
    const previous = side.seq
    const expected = previous === undefined ? undefined : seq - previous
    let loss = block.fractionLost / 256
    // A long forward gap whose lost count fits is an interval like any other
    // (reports missed at high packet rates); one that does not fit, or a
    // step back, is the reporter starting over.
    const jumped = expected > MAX_DROPOUT * 16 && !(lost >= side.lost && lost - side.lost <= expected)
    if (expected !== undefined && (expected < 0 || jumped)) {
      if (expected < 0 && -expected < MAX_DROPOUT) return LATE // an older report arriving late: skipped
      stats.restarts = 1
      side.seq = seq
      side.lost = lost
      return loss
    }
    if (expected !== undefined) {
      const lostInInterval = lost - side.lost
      if (expected === 0 && block.fractionLost > 0) flags.push('fraction-without-expected')
      else if (lostInInterval > expected) flags.push('lost-exceeds-expected')
      if (flags.length > 0) return null
      // More received than expected (Δ lost below zero): duplicates, or
      // packets counted lost that came late. Counted; the loss stays ≥ 0.
      if (lostInInterval < 0) stats.excessReceived = -lostInInterval
      side.lost = lost // the excess counted once, not again at the next report
      if (expected === 0) return NO_MEDIA
      loss = Math.max(0, lostInInterval) / expected
      stats.intervalExpected = expected
      stats.intervalLost = Math.max(0, lostInInterval)
    } else if (lost < 0) stats.excessReceived = -lost // a negative cumulative lost (signed, §6.4.1)
    side.seq = seq
    side.lost = lost
    stats.addEnds(seq, lost)
    return loss
  }

  /**
   * Round-trip time in ms, or null. The block's LSR names the SR of the
   * reported source that the reporter last received, DLSR how long it held
   * it (RFC 3550 §6.4.1). The collector saw that SR arrive, and this report:
   * their arrival times less DLSR give the one-way delay from the source to
   * the reporter, plus the difference of the two ends' delays to the
   * collector. The same from the other end's reports cancels that
   * difference: RTT = one direction + the other (`side.basis`
   * 'both-directions'). With one direction only (the other end sends no SR,
   * or has not echoed one yet), RTT = 2 × it, assuming a symmetric path and
   * both ends equally far from the collector: 'one-direction', an estimate
   * kept apart from the measured RTT (quality-stats.js).
   */
  roundTrip (reporter, ssrc, side, lsr, dlsr, at, flags) {
    const term = this.oneWay(ssrc, lsr, dlsr, at)
    if (term === null) return null
    if (term === LSR_UNKNOWN) {
      flags.push('lsr-unknown')
      return null
    }
    side.term = term
    side.termAt = at
    const peer = this.sides.get(reportKey(ssrc, reporter))
    const both = peer && peer.term !== undefined && at - peer.termAt <= PEER_TERM_MS
    let rtt = both ? term + peer.term : 2 * term
    side.basis = both ? 'both-directions' : 'one-direction'
    if (rtt < 0 && rtt >= -RTT_PRECISION_MS) rtt = 0 // zero within the clocks' precision
    if (rtt < 0) {
      flags.push('rtt-negative')
      return null
    }
    // The round trip is the call's: both directions score with it from now on.
    if (both) side.measuredRtt = peer.measuredRtt = rtt
    return rtt
  }

  /**
   * An XR DLRR item (RFC 3611 §4.5): `reporter` held the RRTR of `ssrc`
   * named by `lrr` for `dlrr` — the same measure as a report block's
   * LSR/DLSR, for an end that sends no SR. It gives no figures of its own:
   * its delay combines with the other direction's in roundTrip.
   */
  delayReport (reporter, ssrc, lrr, dlrr, at) {
    const term = this.oneWay(ssrc, lrr, dlrr, at)
    if (term === null || term === LSR_UNKNOWN) return
    const side = this.side(reportKey(reporter, ssrc), at)
    side.term = term
    side.termAt = at
  }

  /**
   * The delay from `ssrc` to the end that reports it (plus the difference
   * of their delays to the collector): this report's arrival less the
   * arrival of the reference `lsr` names, less `dlsr`. Null when there is
   * none to pair (no SR received yet, or its SRs do not come to this
   * worker), LSR_UNKNOWN when it names none of the recent ones seen.
   */
  oneWay (ssrc, lsr, dlsr, at) {
    if (lsr === 0) return null // no SR received yet (§6.4.1)
    const source = this.clocks.sources.get(ssrc)
    if (!source || source.refs.length === 0) return null
    const ref = source.refs.find((r) => r.mid === lsr)
    if (ref) return at - ref.at - dlsr / NTP_UNIT * 1000
    // One older than those kept is not known to be wrong.
    return ((lsr - source.refs[0].mid) | 0) >= 0 ? LSR_UNKNOWN : null
  }

  /**
   * G.107's burst ratio BurstR = 1 / (p + q) of a two-state model whose
   * mean sojourns are XR's mean burst and gap durations in packets
   * (p = 1 / gap length, q = 1 / burst length): 1 for no bursts. An
   * approximation: XR's bursts are loss-dense periods, not runs of losses.
   */
  burstRatio (burstMs, gapMs, packetMs) {
    if (!(burstMs > 0) || !(gapMs > 0)) return 1
    return 1 / (packetMs / Math.max(gapMs, packetMs) + packetMs / Math.max(burstMs, packetMs))
  }

  /**
   * R and MOS by the G.107 E-model (e-model.js) with the stream's codec's
   * Ie and Bpl (codecs.js): Ppl is the interval's loss, or XR's loss +
   * discard rate when the reporter sends VoIP Metrics (RFC 3611 §4.7.1),
   * with its burst ratio. The mouth-to-ear delay Ta = T is the endpoints'
   * part — the jitter buffer (XR's nominal delay, else `--jitter-buffer`)
   * plus the codec's delay — plus half a measured round trip: the last the
   * call measured both ways (`measuredRtt`, this report's when it did),
   * else XR's round-trip delay (the endpoint's own measure); Tr = 2T.
   * `delayBasis` says which: 'measured', or 'endpoints' when no round trip
   * was measured (no network term: a MOS the network can only lower). A
   * one-direction estimate (`rttBasis` 'one-direction') is stored beside,
   * never scored: it read 402 ms on a 221 ms path, 41.9 ms through a relay.
   */
  figures (media, loss, jitter, rttMs, rttBasis, measuredRtt, xr, packetMs) {
    let Ppl = loss * 100
    let BurstR = 1
    let bufferMs = this.jitterBuffer
    let roundTripMs = measuredRtt === undefined ? null : measuredRtt
    if (xr) {
      Ppl = (xr.lossRate + xr.discardRate) * 100
      BurstR = this.burstRatio(xr.burstDurationMs, xr.gapDurationMs, packetMs)
      if (xr.jbNominalMs > 0) bufferMs = xr.jbNominalMs
      if (roundTripMs === null && xr.roundTripDelayMs > 0) roundTripMs = xr.roundTripDelayMs
    }
    // The codec's delay is one packet plus its look-ahead: the stream's real packet, not the planning one.
    const endpointsMs = bufferMs + media.codec.delayMs - media.codec.packetMs + packetMs
    const delayBasis = roundTripMs === null ? 'endpoints' : 'measured'
    const T = (roundTripMs === null ? 0 : roundTripMs / 2) + endpointsMs
    const R = voipRFactor(media.codec.Ie, media.codec.Bpl, Ppl, BurstR, T, T, 2 * T)
    return { loss, jitter, rttMs, rttBasis, delayMs: T, endpointsMs, delayBasis, rFactor: R, mos: mosFromR(R), burstR: BurstR }
  }

  side (key, at) {
    const minute = Math.floor(at / 60000)
    let side = this.sides.get(key)
    if (!side) {
      side = { seq: undefined, lost: 0, term: undefined, termAt: 0, basis: null, measuredRtt: undefined, minute }
      this.sides.set(key, side)
    } else if (side.minute !== minute) {
      side.minute = minute
      this.sides.refresh(key, side)
    }
    return side
  }

  stats () {
    return { invalid: { ...this.invalid }, unscored: { ...this.unscoredCounts }, windowsCoarse: this.windowsCoarse, sdp: { ...this.clocks.sdp } }
  }

  /**
   * What this worker remembers of its calls, per map: keys held and keys
   * forgotten over the bound (`ssrcs`: SRs and clock rates, `reportSides`:
   * each side's previous report and delay, `calls`: each call's streams as
   * its SDP gave them, over HEP).
   */
  memory () {
    const maps = { ssrcs: this.clocks.sources, reportSides: this.sides, calls: this.clocks.calls }
    const held = {}
    const evicted = {}
    for (const [name, map] of Object.entries(maps)) {
      held[name] = map.size
      evicted[name] = map.evicted
    }
    return { held, evicted }
  }
}

// The side's last report again, within REPEAT_MS: a datagram the network sent twice. Remembers this one.
function repeated (side, block, at) {
  const seen = `${block.highestSeq} ${block.cumulativeLost} ${block.fractionLost} ${block.jitter} ${block.lsr} ${block.dlsr}`
  if (seen === side.seen && at - side.seenAt < REPEAT_MS) return true
  side.seen = seen
  side.seenAt = at
  return false
}

// A scored report's last values.
function scoredFields (fields, figures, jitterMs, packet) {
  fields.lossRate = figures.loss
  fields.jitterMs = jitterMs
  fields.rttMs = figures.rttMs
  fields.rttBasis = figures.rttBasis
  fields.delayMs = figures.delayMs
  fields.delayBasis = figures.delayBasis
  fields.rFactor = figures.rFactor
  fields.mos = figures.mos
  fields.packetMs = packet.ms
  fields.packetSource = packet.source
}

// A side's last clock rate and codec, where each came from, the MOS's model and its Ie/Bpl's source.
function mediaFields (fields, media) {
  fields.clockRate = media.clockRate
  fields.clockRateSource = media.clockRateSource
  fields.codec = media.codecName
  fields.codecSource = media.codecSource
  fields.model = MODEL
  fields.ieSource = media.codec.source
  if (media.format) fields.format = media.format
}

/**
 * The one key of a reporter's view of one reported SSRC (a stream side) in
 * the workers' memory: the sides, their previous reports, XR blocks.
 */
function reportKey (reporter, reported) {
  return `${reporter}>${reported}`
}

module.exports = { reportKey, CallQuality, INVALID_REASONS, UNSCORED_REASONS, BANDS, WINDOW_MS, bandOf, minuteKey }
