'use strict'

// Every SIP message the hep collector takes, stored once (collection
// `sip_messages`, by default): the SIP ladder of a call, read by `collector
// calls --call-id` and the web view's call page. A document:
// `{ callId, at (capture time), atMicros (its microseconds past at's
// millisecond, when the agent gave them: capture order within one), src, dst ('address:port', IPv6 in
// brackets), transport ('udp', 'tcp', 'sctp' or the IP protocol number),
// method or status (and reason), cseq ('1 INVITE'), firstLine, bytes (the
// message's size), raw (its bytes as sent, BSON binary, at most
// MAX_RAW_BYTES; `truncated: true` past that), captureId, node (the
// agent's), receivedAt }`. The raw message is kept as bytes, not text: no
// UTF-8 decoding in the worker nor encoding into BSON, half the worker's
// and the database's cost of the text (benchmarks/hep-sip.js), and what
// the agent sent, byte for byte (the pcap export writes it back). Its `_id` is
// the HEP message's key (the documents sink's), so that a redelivered
// message lands where it landed.

const { utf8Boundary } = require('../../lib/shared/utf8-boundary')

const SIP_MESSAGES = 'sip_messages'
// The raw text kept of one message: a SIP message over UDP is under 1,300
// bytes by RFC 3261 §18.1.1 unless it must grow, and a sender's 64 KB one
// is not worth 64 KB a message.
const MAX_RAW_BYTES = 8192
const TRANSPORTS = { 6: 'tcp', 17: 'udp', 132: 'sctp' }

/**
 * The document of one SIP message (sip.js's reading of `payload`) from a
 * decoded HEP packet (hep-decoder.js) captured at `at` (ms).
 */
function sipMessageOf (packet, sip, payload, at) {
  const firstLine = payload.toString('utf8', 0, firstLineEnd(payload))
  const raw = payload.length > MAX_RAW_BYTES ? payload.subarray(0, MAX_RAW_BYTES) : payload
  // Built a field at a time: an object literal with spreads past its first
  // field takes V8's slow path (sip.js parseSip says how slow).
  const doc = { callId: sip.callId, at: new Date(at) }
  if (packet.timeSec !== undefined) doc.atMicros = (packet.timeUsec || 0) % 1000
  doc.src = endpoint(packet.srcIp, packet.srcPort)
  doc.dst = endpoint(packet.dstIp, packet.dstPort)
  doc.transport = TRANSPORTS[packet.ipProtocol] || (packet.ipProtocol === undefined ? null : String(packet.ipProtocol))
  if (sip.method) doc.method = sip.method
  else {
    doc.status = sip.status
    doc.reason = sip.reason
  }
  doc.cseq = `${sip.cseq.seq} ${sip.cseq.method}`
  doc.firstLine = firstLine
  doc.bytes = payload.length
  doc.raw = Buffer.from(raw) // a copy: the payload is a view of the batch's bytes
  if (raw !== payload) doc.truncated = true
  if (packet.captureId !== undefined) doc.captureId = packet.captureId
  if (packet.nodeName !== undefined) doc.node = packet.nodeName
  return doc
}

function firstLineEnd (payload) {
  const end = payload.indexOf(0x0a)
  const limit = end !== -1 && end <= 1024 ? end : utf8Boundary(payload, 1024)
  return limit > 0 && payload[limit - 1] === 0x0d ? limit - 1 : limit
}

function endpoint (ip, port) {
  if (ip === undefined) return null
  const host = ip.includes(':') ? `[${ip}]` : ip
  return port === undefined ? host : `${host}:${port}`
}

/** A stored message's raw text (a BSON Binary as read back, or a string). */
function rawText (raw) {
  if (typeof raw === 'string') return raw
  return raw ? Buffer.from(raw.buffer || raw).toString('utf8') : ''
}

module.exports = { sipMessageOf, rawText, endpoint, SIP_MESSAGES, MAX_RAW_BYTES }
