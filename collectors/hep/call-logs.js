'use strict'

// What agents say about a call besides its SIP and RTCP, stored with it
// (collection `call_logs`, by default): HEP protocol type 100, log lines
// (Kamailio's `hlog()`, heplify's and captagent's logs), and type 35, RFC
// 6035 `vq-rtcpxr` voice quality reports (the body of a SIP PUBLISH an
// endpoint sends, copied by agents). A document: `{ callId, at (capture
// time), kind ('log' or 'vq-rtcpxr'), src, dst, captureId, node, text (at
// most MAX_TEXT_BYTES; `truncated: true` past that), bytes, receivedAt }`.
// The call is the packet's correlation id (chunk 0x11: the Call-ID, as
// heplify and Kamailio send it) or, for a vq-rtcpxr report without one, the
// report's own `CallID:` line; a packet naming no call is refused
// (`hep-no-call`): what cannot be found with a call is not kept.

const { callIdTooLong } = require('./sip')
const { utf8Boundary } = require('../../lib/shared/utf8-boundary')

const CALL_LOGS = 'call_logs'
const MAX_TEXT_BYTES = 8192
const KINDS = Object.freeze({ 100: 'log', 35: 'vq-rtcpxr' })

/**
 * The document of a type 100 or 35 packet, `{ log }`, or `{ reason }`:
 * 'hep-no-call' (no call named) or 'hep-sip-too-long' (a Call-ID longer
 * than a call's may be).
 */
function callLogOf (packet, payload, at, endpoint) {
  const kind = KINDS[packet.protocolType]
  const callId = (packet.correlationId || (kind === 'vq-rtcpxr' ? reportCallId(payload) : '') || '').trim()
  if (callId === '') return { reason: 'hep-no-call' }
  if (callIdTooLong(callId)) return { reason: 'hep-sip-too-long' }
  const kept = payload.length > MAX_TEXT_BYTES ? payload.subarray(0, utf8Boundary(payload, MAX_TEXT_BYTES)) : payload
  const log = {
    callId,
    at: new Date(at),
    kind,
    src: endpoint(packet.srcIp, packet.srcPort),
    dst: endpoint(packet.dstIp, packet.dstPort),
    text: kept.toString('utf8'),
    bytes: payload.length
  }
  if (kept !== payload) log.truncated = true
  if (packet.captureId !== undefined) log.captureId = packet.captureId
  if (packet.nodeName !== undefined) log.node = packet.nodeName
  return { log }
}

// RFC 6035 §4.2: `CallID:` names the call the report is about.
function reportCallId (payload) {
  const text = payload.toString('utf8', 0, utf8Boundary(payload, MAX_TEXT_BYTES))
  const m = /^CallID:[ \t]*(\S+)/mi.exec(text)
  return m ? m[1] : ''
}

module.exports = { callLogOf, CALL_LOGS, KINDS }
