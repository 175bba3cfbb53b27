'use strict'

const { hash } = require('node:crypto')
const DecodeError = require('../../exceptions/decode-error')
const { decodeHep, payloadOf, captureTime, PROTOCOL_TYPES } = require('./hep-decoder')
const { rtcpOfHep } = require('./rtcp-json')
const { parseSip, sipMessagesOf, messageAfterTail, TOO_LONG, NOT_TEXT } = require('./sip')
const { callUpdateOf } = require('./calls')
const { sdpOfSip } = require('./sdp')
const { sipMessageOf, endpoint } = require('./sip-messages')
const { callLogOf, KINDS: LOG_KINDS } = require('./call-logs')
const { readAuthKey, authKeyCheck } = require('./auth-key')

const IP_TCP = 6 // the IP protocol of a HEP packet's capture (chunk 0x02)
// A capture time further ahead of the packet's arrival than this is an
// agent's clock set wrong (an agent sends what it captured, never before
// it captured it): the arrival stands for it (`clockAhead`).
const CLOCK_AHEAD_MS = 2000
const IP_UDP = 17
const refusals = new Map()

// One DecodeError per reason, made once (a refusal costs no stack capture).
function refusal (reason) {
  let error = refusals.get(reason)
  if (!error) refusals.set(reason, (error = new DecodeError(reason, `HEP packet refused (${reason})`)))
  return error
}

const authChecks = new WeakMap() // settings → the check of the auth key agents must send, read once

/**
 * A HEP3 packet (hep-decoder.js) as a record, pure: RTCP (protocol type 5,
 * JSON or raw) `{ type: 'rtcp', rtcp, at, arrivedAt (`receivedAt`, ms), srcIp, callId, copy }`, SIP
 * (type 1) `{ type: 'sip', call, message, at, copy }` (calls.js: the update
 * of its call; sip-messages.js: the message's document; an array of them,
 * each `coalesced`, when the payload held several messages: a TCP segment
 * an agent copied whole, sip.js sipMessagesOf), `at` the capture
 * time, else `receivedAt`; `copy`, what copies of one capture share (its
 * protocol type, addresses and ports, and a SHA-1 of its payload:
 * call-memory.js's CopyWindow); a log line (type 100) or a vq-rtcpxr
 * report (type 35) `{ type, log, at, copy }` (call-logs.js), refused
 * (`hep-no-call`) when it names no call; each `clockAhead` when its capture
 * time was more than CLOCK_AHEAD_MS ahead of its arrival, `at` the arrival
 * then (a call stamped an hour ahead would be listed an hour late). Refused, by reason, what carries no
 * call data: a packet that is not well-formed HEP3 (its structural reason:
 * its key cannot be read), then a packet without the auth key of
 * `settings.hepPasswordFile` or COLLECTOR_HEP_PASSWORD (`hep-auth`,
 * whatever else it holds), a keepalive or ping (`hep-keepalive`), another
 * protocol type (`hep-type-<n>`), a correlation id (chunk 0x11) that is not
 * UTF-8 (`hep-correlation-id`), no payload, a SIP or RTCP payload that
 * does not parse (`hep-sip`, `hep-rtcp-*` and the RTCP decoder's reasons,
 * `too-many-sources` among them), a SIP Call-ID, user, host or tag too long
 * to keep (`hep-sip-too-long`), a Call-ID that is not UTF-8 (`hep-sip-call-id`). The order is the point: nothing a sender chooses to make
 * costly (inflating, JSON, SIP) is done before its key and its type pass.
 */
function hepRecordOf (data, settings, receivedAt) {
  const packet = decodeHep(data)
  if (packet instanceof DecodeError) return packet
  if (!authCheckOf(settings)(packet.authKey)) return refusal('hep-auth')
  const type = packet.protocolType
  if (type === undefined && (packet.payload !== undefined || packet.compressedPayload !== undefined) && packet.keepAlive === undefined) return refusal('hep-missing-type')
  if (type === undefined || type === 0 || packet.keepAlive !== undefined) return refusal('hep-keepalive')
  if (type !== 1 && type !== 5 && LOG_KINDS[type] === undefined) return refusal(`hep-type-${type}`)
  // The correlation id names a call (RTCP, a log line) or a bridged leg (SIP): as the Call-ID's, its bytes must be text.
  if (packet.notUtf8 && packet.notUtf8.includes('correlationId')) return refusal('hep-correlation-id')
  const payload = payloadOf(packet)
  if (payload instanceof DecodeError) return payload
  if (payload === undefined || payload.length === 0) return refusal('hep-missing-payload')
  const arrived = receivedAt.getTime()
  const captured = captureTime(packet)
  const ahead = captured !== undefined && captured - arrived > CLOCK_AHEAD_MS
  const record = recordOf(packet, type, payload, captured === undefined || ahead ? arrived : captured, arrived, settings)
  return ahead ? clockAhead(record) : record
}

function recordOf (packet, type, payload, at, arrived, settings) {
  if (type === 1) return sipRecordsOf(packet, payload, at, correlationHeadersOf(settings))
  if (type !== 5) {
    const { log, reason } = callLogOf(packet, payload, at, endpoint)
    return reason ? refusal(reason) : { type: PROTOCOL_TYPES[type], log, at, copy: copyKey(packet, payload) }
  }
  const rtcp = rtcpOfHep(payload)
  if (rtcp.reason) return refusal(rtcp.reason)
  return { type: PROTOCOL_TYPES[type], rtcp, at, arrivedAt: arrived, srcIp: packet.srcIp, srcPort: packet.srcPort, dstIp: packet.dstIp, dstPort: packet.dstPort, callId: packet.correlationId, copy: copyKey(packet, payload) }
}

// The record(s) of a packet stamped with its arrival for a clock ahead.
function clockAhead (record) {
  if (record instanceof DecodeError) return record
  for (const one of Array.isArray(record) ? record : [record]) one.clockAhead = true
  return record
}

// A SIP payload's record, or one per message when it held several (sip.js
// sipMessagesOf). A TCP segment may begin inside a message whose start the
// segment before carried: the whole messages after that tail are read.
function sipRecordsOf (packet, payload, at, headers) {
  let sip = parseSip(payload, headers)
  if (sip === TOO_LONG) return refusal('hep-sip-too-long')
  if (sip === NOT_TEXT) return refusal('hep-sip-call-id')
  let whole = payload
  if (!sip && packet.ipProtocol === IP_TCP) {
    const after = messageAfterTail(payload, headers)
    if (after !== null) {
      sip = after.sip
      whole = payload.subarray(after.start)
    }
  }
  if (!sip) return refusal('hep-sip')
  // A UDP datagram is one message: bytes past its body are discarded (RFC 3261 §18.3), never read as another.
  const messages = sip.length === whole.length || packet.ipProtocol === IP_UDP ? null : sipMessagesOf(whole, sip, headers)
  if (messages === null || messages.length === 1) return sipRecordOf(packet, sip, whole, at)
  // The agent's correlation id is the packet's: of the call it read, its first message's, not another call's in the segment.
  return messages.map((m) => sipRecordOf(packet, m.sip, whole.subarray(m.start, m.end), at, true, m.sip.callId === sip.callId))
}

// One SIP message's record, `payload` its bytes; `coalesced` when the HEP packet held several;
// `correlated` when the packet's correlation id is of the message's call.
function sipRecordOf (packet, sip, payload, at, coalesced = false, correlated = true) {
  // The agent's correlation id on SIP names the bridged leg when no header does.
  if (!sip.linkedId && correlated && packet.correlationId && packet.correlationId !== sip.callId && packet.correlationId.length <= 1024) sip.linkedId = packet.correlationId
  const record = { type: PROTOCOL_TYPES[1], call: callUpdateOf(sip, at), message: sipMessageOf(packet, sip, payload, at), at, copy: copyKey(packet, payload) }
  if (coalesced) record.coalesced = true
  // The media of the call, for its RTCP's clock and codec (media-clocks.js announce).
  const media = sdpOfSip(payload)
  if (media) record.sdp = { callId: sip.callId, role: sdpRole(sip), media, at }
  return record
}

// The part a SIP message's SDP plays (media-clocks.js announce): a
// response's is the answer, an ACK's the answer to the offer its 2xx made
// (an INVITE without SDP, RFC 3261 §13.2.1: a delayed offer, common on
// PBXs and trunks), any other request's an offer. Taking every request's
// as the offer bound a delayed offer's call to the 2xx's first codec
// (opus/48000 for the PCMA/8000 agreed: jitter read 6× low).
function sdpRole (sip) {
  if (sip.method === undefined) return 'answer'
  return sip.method === 'ACK' ? 'ack' : 'offer'
}

function copyKey (packet, payload) {
  return `${packet.protocolType} ${endpoint(packet.srcIp, packet.srcPort)} ${endpoint(packet.dstIp, packet.dstPort)} ${hash('sha1', payload, 'base64')}`
}

/**
 * The copy key of a SIP message as sip-messages.js stored it (its `src`,
 * `dst` and `raw`, made by the same `endpoint`), or null when its raw text
 * was cut (`truncated`): what its copies share, read back (warm-up).
 */
function storedCopyKey (doc) {
  if (doc.truncated || !doc.raw || typeof doc.src !== 'string' || typeof doc.dst !== 'string') return null
  const raw = typeof doc.raw === 'string' ? Buffer.from(doc.raw, 'utf8') : Buffer.from(doc.raw.buffer || doc.raw)
  return `1 ${doc.src} ${doc.dst} ${hash('sha1', raw, 'base64')}`
}

const correlationHeaders = new WeakMap() // settings → the correlation headers' names, lower-cased, read once

function correlationHeadersOf (settings) {
  let names = correlationHeaders.get(settings)
  if (!names) correlationHeaders.set(settings, (names = (settings.hepCorrelationHeaders || []).map((name) => name.trim().toLowerCase()).filter(Boolean)))
  return names
}

function authCheckOf (settings) {
  let check = authChecks.get(settings)
  if (!check) authChecks.set(settings, (check = authKeyCheck(readAuthKey(settings.hepPasswordFile))))
  return check
}

module.exports = { CLOCK_AHEAD_MS, hepRecordOf, storedCopyKey }
