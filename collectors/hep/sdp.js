'use strict'

// Runs in a HEP worker: what the SDP body of a SIP message (RFC 8866, the
// offer/answer model of RFC 3264) says of each media stream of its call —
// where its RTP and RTCP arrive and which payload format carries it, with
// its RTP clock rate. call-quality.js uses it to know a stream's clock and
// codec instead of assuming them. Only what that needs is read: c=, m=,
// a=rtpmap, a=rtcp, a=rtcp-mux, a=ptime.

// RFC 3551 Table 4: static audio payload types (encoding, RTP clock rate).
// G722's RTP clock is 8000 though it samples at 16 kHz (RFC 3551 §4.5.2).
const STATIC_TYPES = Object.freeze({
  0: ['PCMU', 8000],
  3: ['GSM', 8000],
  4: ['G723', 8000],
  8: ['PCMA', 8000],
  9: ['G722', 8000],
  18: ['G729', 8000]
})
// Formats that do not carry the conversation: the codec is the first other one.
const NOT_SPEECH = new Set(['telephone-event', 'cn', 'red', 'ulpfec', 'flexfec', 'rtx'])
const MAX_MEDIA = 16 // m= lines kept per body
const MAX_FORMATS = 64 // payload types read per m= line
const MAX_BODY = 16384

/**
 * The media streams of an SDP body: `[{ kind, ip, rtpPort, rtcpPort, format:
 * { payloadType, encoding, clockRate, ptimeMs } | null }]` in m= order (the
 * offer's and the answer's m= lines pair by index, RFC 3264 §6), or null
 * when `text` is not SDP. `format` is the first speech format listed (the
 * one preferred, and in an answer the one agreed). A port of 0 (a stream
 * refused) is kept, so that the indexes still pair.
 *
 * @param {string} text
 */
function parseSdp (text) {
  if (typeof text !== 'string' || !text.startsWith('v=0')) return null
  const lines = text.slice(0, MAX_BODY).split(/\r?\n/)
  let sessionIp = null
  const media = []
  let current = null
  for (const line of lines) {
    const kind = line[0]
    const value = line.slice(2).trim()
    if (line[1] !== '=') continue
    if (kind === 'm') {
      current = mediaLine(value)
      if (current && media.length < MAX_MEDIA) media.push(current)
      else current = null
    } else if (kind === 'c') {
      const ip = connectionAddress(value)
      if (current) current.ip = ip
      else sessionIp = ip
    } else if (kind === 'a' && current) attribute(current, value)
  }
  if (media.length === 0) return null
  return media.map((m) => ({
    kind: m.kind,
    ip: m.ip || sessionIp,
    rtpPort: m.port,
    rtcpPort: m.rtcpMux ? m.port : m.rtcpPort || (m.port > 0 && m.port < 65535 ? m.port + 1 : 0), // RFC 3550 §11: RTP port + 1 by default
    rtcpIp: m.rtcpIp || null,
    format: firstSpeechFormat(m)
  }))
}

// "audio 49170 RTP/AVP 0 8 101"
function mediaLine (value) {
  const parts = value.split(/\s+/)
  const port = Number.parseInt(parts[1], 10)
  if (parts.length < 3 || !(port >= 0 && port <= 65535)) return null
  const payloadTypes = parts.slice(3, 3 + MAX_FORMATS).map((p) => Number.parseInt(p, 10)).filter((p) => p >= 0 && p <= 127)
  return { kind: parts[0].toLowerCase(), port, payloadTypes, rtpmap: new Map(), ip: null, rtcpPort: 0, rtcpIp: null, rtcpMux: false, ptimeMs: null }
}

// "IN IP4 192.0.2.1" or "IN IP6 2001:db8::1" (a multicast /ttl dropped)
function connectionAddress (value) {
  const parts = value.split(/\s+/)
  return parts.length >= 3 ? parts[2].split('/')[0] : null
}

function attribute (m, value) {
  const colon = value.indexOf(':')
  const name = (colon === -1 ? value : value.slice(0, colon)).toLowerCase()
  const rest = colon === -1 ? '' : value.slice(colon + 1).trim()
  if (name === 'rtpmap') {
    // "111 opus/48000/2"
    const match = /^(\d{1,3})\s+([^/\s]+)\/(\d{1,7})/.exec(rest)
    if (match && m.rtpmap.size < MAX_FORMATS) m.rtpmap.set(Number(match[1]), { encoding: match[2], clockRate: Number(match[3]) })
  } else if (name === 'rtcp') {
    // RFC 3605: "53020" or "53020 IN IP4 126.16.64.4"
    const parts = rest.split(/\s+/)
    const port = Number.parseInt(parts[0], 10)
    if (port > 0 && port <= 65535) m.rtcpPort = port
    if (parts.length >= 4) m.rtcpIp = parts[3]
  } else if (name === 'rtcp-mux') m.rtcpMux = true
  else if (name === 'ptime') {
    const ptime = Number.parseFloat(rest)
    if (ptime > 0 && ptime <= 1000) m.ptimeMs = ptime
  }
}

// G.722's RTP clock is 8000 whatever an a=rtpmap says: RFC 3551 §4.5.2 fixes
// it at 8000 for the payload format (senders tick at 8000), and an SDP
// that writes "G722/16000" gives the sampling rate, not the timestamps'.
const G722_CLOCK = 8000

function firstSpeechFormat (m) {
  for (const payloadType of m.payloadTypes) {
    const mapped = m.rtpmap.get(payloadType)
    const known = mapped || (STATIC_TYPES[payloadType] && { encoding: STATIC_TYPES[payloadType][0], clockRate: STATIC_TYPES[payloadType][1] })
    if (!known || NOT_SPEECH.has(known.encoding.toLowerCase())) continue
    const clockRate = known.encoding.toLowerCase() === 'g722' ? G722_CLOCK : known.clockRate
    return { payloadType, encoding: known.encoding, clockRate, ptimeMs: m.ptimeMs }
  }
  return null
}

/** The SDP body of a SIP message `payload` (after its blank line), or null. */
function sdpOfSip (payload) {
  const end = payload.indexOf('\r\n\r\n')
  if (end === -1) return null
  const body = payload.toString('utf8', end + 4, Math.min(payload.length, end + 4 + MAX_BODY))
  return parseSdp(body)
}

module.exports = { parseSdp, sdpOfSip, STATIC_TYPES }
