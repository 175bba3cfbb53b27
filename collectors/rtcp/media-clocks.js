'use strict'

const { codecOfEncoding, CODECS } = require('./codecs')
const { PACKET_RANK, fromSenderReports } = require('./packet-time')
const { BoundedMap } = require('../../lib/shared/bounded-map')

const REFS_KEPT = 8 // SRs (and XR RRTRs) kept per source for LSR look-ups
const MIN_RATE_SPAN_S = 1 // two SRs at least this far apart infer a clock rate
const RATE_TOLERANCE = 0.02
const KNOWN_RATES = [8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000, 90000]
const MAX_CALLS_MEDIA = 16 // media streams (m= lines) kept per call
const MAX_ENDPOINTS = 8 // addresses kept per media stream (offer, answer, re-INVITEs)
// Where a stream's clock rate and codec came from, by precedence: what the
// call's SDP says beats what two SRs show beats the collector's settings
// (a side's statistics keep the surest seen, $max by rank).
const CLOCK_RANK = Object.freeze({ default: 0, configured: 1, 'sender-reports': 2, sdp: 3 })
const CODEC_RANK = Object.freeze({ default: 0, sdp: 1 })
// The parts an SDP body plays (announce).
const ROLES = Object.freeze(['offer', 'answer', 'ack'])

/**
 * What a worker knows of each stream's clock and codec (CallQuality's):
 * the sources (SSRCs) with their clock references (SRs, XR RRTRs) and the
 * rate two SRs show, and each call's media streams as its SDP announced
 * them (over HEP), which bind the call's SSRCs to a format. Bounded at
 * `maxSources` sources and as many calls, the one not heard from longest
 * forgotten.
 */
class MediaClocks {
  /**
   * @param {{ codec: object, codecName: string, clockRate: number, clockRateSource: string, maxSources: number }} defaults
   *   what stands where nothing says: the collector's codec and clock
   */
  constructor ({ codec, codecName, clockRate, clockRateSource, maxSources }) {
    this.codec = codec
    this.codecName = codecName
    this.clockRate = clockRate
    this.clockRateSource = clockRateSource
    this.sources = new BoundedMap(maxSources) // SSRC → { refs: [{ mid, at, ntp, rtp, packets }], rate, packetMs, format, media, minute }
    this.calls = new BoundedMap(maxSources) // Call-ID → { media: [{ kind, endpoints, offer, answer }], minute }: its SDP
    // SDP bodies read (announce), and RTCP datagrams of a call with SDP bound to
    // one of its streams or not (addresses naming none, several streams in use).
    this.sdp = { bodies: 0, bound: 0, unbound: 0 }
    this.defaultMedia = null
  }

  /**
   * A clock reference of `ssrc` seen at `at` (ms): its SR (with the RTP
   * timestamp of the same instant and the packets sent by then) or its XR
   * RRTR (RFC 3611 §4.4, neither).
   */
  reference (ssrc, ntpSec, ntpFrac, rtp, at, packets) {
    const source = this.source(ssrc, at)
    const mid = (((ntpSec & 0xffff) << 16) | (ntpFrac >>> 16)) >>> 0
    const refs = source.refs
    if (refs.length > 0 && refs[refs.length - 1].mid === mid) return // the same SR again
    const ref = { mid, at, ntp: ntpSec + ntpFrac / 0x100000000, rtp, packets }
    if (rtp !== undefined) inferRate(source, ref)
    if (packets !== undefined) {
      const first = refs.find((r) => r.packets !== undefined)
      if (first) source.packetMs = fromSenderReports(source.packetMs, first, ref, source.format ? source.format.clockRate : source.rate)
    }
    refs.push(ref)
    if (refs.length > REFS_KEPT) refs.shift()
  }

  /**
   * What the stream `ssrc` sends is known to be: its clock rate and codec
   * with where each came from (CLOCK_RANK, CODEC_RANK). The call's SDP
   * (bindCall) names both; else two SRs show the clock; else the
   * collector's settings stand, said as `default` (or `configured` for an
   * explicit `--clock-rate`).
   */
  mediaOf (ssrc) {
    const source = this.sources.get(ssrc)
    if (!source) return this.defaultMedia || (this.defaultMedia = this.mediaFor(null))
    // Made once per change of what the source is known to be: this runs per report.
    const known = source.media
    if (known && known.of === source.format && known.rate === source.rate && known.packetMs === source.packetMs) return known
    source.media = this.mediaFor(source)
    return source.media
  }

  mediaFor (source) {
    const format = source ? source.format : null
    let clockRate = this.clockRate
    let clockRateSource = this.clockRateSource
    if (format) {
      clockRate = format.clockRate
      clockRateSource = 'sdp'
    } else if (source && source.rate) {
      clockRate = source.rate
      clockRateSource = 'sender-reports'
    }
    const planned = format ? codecOfEncoding(format.encoding) : null
    const codecSource = planned ? 'sdp' : 'default'
    const codec = planned ? CODECS[planned] : this.codec
    const media = {
      of: format,
      rate: source ? source.rate : 0,
      packetMs: source ? source.packetMs : 0,
      clockRate,
      clockRateSource,
      packet: packetOfSource(source, codec),
      codec,
      codecName: planned || this.codecName,
      codecSource,
      format: format ? `${format.encoding}/${format.clockRate}` : null
    }
    // What the side's statistics keep of it (QualityStats#setMedia), shared, never changed.
    media.clockDoc = Object.freeze({ rank: CLOCK_RANK[clockRateSource], rate: clockRate, source: clockRateSource })
    media.codecDoc = Object.freeze({ rank: CODEC_RANK[codecSource], name: media.codecName, source: codecSource, format: media.format })
    return Object.freeze(media)
  }

  /**
   * What the SDP of a SIP message of call `callId` says of its media
   * streams (hep/sdp.js parseSdp), by `role`: 'offer' (a request's but an
   * ACK's), 'answer' (a response's) or 'ack' (an ACK's: the answer to an
   * offer its 2xx made when the INVITE had no SDP, RFC 3261 §13.2.1). An
   * offer's and an answer's m= lines pair by index (RFC 3264 §6), and the
   * answer's first speech format is the one agreed: an ACK's over a
   * response's, which was then the offer, whichever is captured first.
   */
  announce (callId, media, role, at) {
    this.sdp.bodies++
    const minute = Math.floor(at / 60000)
    let call = this.calls.get(callId)
    if (!call) this.calls.set(callId, (call = { media: [], minute }))
    else if (call.minute !== minute) {
      call.minute = minute
      this.calls.refresh(callId, call)
    }
    for (let i = 0; i < media.length && i < MAX_CALLS_MEDIA; i++) {
      const m = media[i]
      const stream = call.media[i] || (call.media[i] = { kind: m.kind, endpoints: [], offer: null, answer: null, ack: null, ackAt: 0 })
      if (m.rtpPort > 0 && stream.endpoints.length < MAX_ENDPOINTS) stream.endpoints.push({ ip: m.rtcpIp || m.ip, rtcpPort: m.rtcpPort, rtpPort: m.rtpPort })
      if (!m.format || !ROLES.includes(role)) continue
      stream[role] = m.format
      if (role === 'ack') stream.ackAt = at
      // A later offer (a re-INVITE or UPDATE with SDP) starts a new exchange: its answer, not the old ACK's, is the codec now.
      else if (role === 'offer' && at >= stream.ackAt) stream.ack = null
    }
  }

  /**
   * The SSRCs of an RTCP datagram of call `callId` sent from `src` to
   * `dst` (`{ ip, port }`) belong to the media stream whose SDP names one
   * of those addresses as its RTCP (or RTP, with rtcp-mux) port, or to the
   * call's only stream in use when none does (a relay's addresses): they
   * take its format. Returns whether one was found.
   */
  bindCall (callId, src, dst, ssrcs, at) {
    const call = callId ? this.calls.get(callId) : undefined
    if (!call) return false
    const stream = streamAt(call.media, src, dst)
    const format = stream && (stream.ack || stream.answer || stream.offer)
    if (!format) {
      this.sdp.unbound++
      return false
    }
    this.sdp.bound++
    for (const ssrc of ssrcs) this.source(ssrc, at).format = format
    return true
  }

  // A source and a side in use move to the newest end of their map once a
  // minute: the bound forgets those not heard
  // from longest, at the cost of one re-insertion per entry and minute.
  source (ssrc, at) {
    const minute = Math.floor(at / 60000)
    let source = this.sources.get(ssrc)
    if (!source) {
      source = { refs: [], rate: 0, packetMs: 0, format: null, media: null, minute }
      this.sources.set(ssrc, source)
    } else if (source.minute !== minute) {
      source.minute = minute
      this.sources.refresh(ssrc, source)
    }
    return source
  }
}

/**
 * The RTP clock rate from two SRs of one sender: RTP timestamp units per
 * NTP second (RFC 3550 §6.4.1 ties both to the same instant), taken when
 * within RATE_TOLERANCE of a usual rate.
 */
function inferRate (source, ref) {
  const first = source.refs.find((r) => r.rtp !== undefined && ref.ntp - r.ntp >= MIN_RATE_SPAN_S)
  if (!first) return
  const ticks = (ref.rtp - first.rtp) >>> 0
  const measured = ticks / (ref.ntp - first.ntp)
  const rate = KNOWN_RATES.find((known) => Math.abs(measured - known) <= known * RATE_TOLERANCE)
  if (rate) source.rate = rate
}

// A source's packet interval, `{ rank, ms, source }` as a side keeps it:
// its SDP's a=ptime, else what its SRs show, else its codec's usual one.
// The window's span follows it (packet-time.js).
function packetOfSource (source, codec) {
  const ptime = source && source.format && source.format.ptimeMs
  if (ptime > 0) return Object.freeze({ rank: PACKET_RANK.sdp, ms: ptime, source: 'sdp' })
  if (source && source.packetMs > 0) return Object.freeze({ rank: PACKET_RANK['sender-reports'], ms: source.packetMs, source: 'sender-reports' })
  return Object.freeze({ rank: PACKET_RANK.codec, ms: codec.packetMs, source: 'codec' })
}

// The media stream of a call's SDP the addresses of an RTCP datagram name,
// else its only stream in use (a port not 0): with audio and video behind
// a relay's addresses, neither is guessed.
function streamAt (media, src, dst) {
  const names = (e, end) => end && e.ip === end.ip && (e.rtcpPort === end.port || e.rtpPort === end.port)
  for (const stream of media) {
    if (stream && stream.endpoints.some((e) => names(e, src) || names(e, dst))) return stream
  }
  const used = media.filter((stream) => stream && stream.endpoints.length > 0)
  return used.length === 1 ? used[0] : null
}

module.exports = { MediaClocks }
