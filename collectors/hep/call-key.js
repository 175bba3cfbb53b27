'use strict'

// Runs in the master, once per HEP packet: which call it belongs to, as a
// number for `hash` distribution, so that a call's SIP and its RTCP meet in
// one worker. For SIP (protocol type 1) the call is the Call-ID header of
// the payload, as the worker reads it: an agent's correlation id on SIP may
// be anything (Kamailio's `sip_trace(uri, "$ci-abc")`, a B2BUA's other
// leg), and keying SIP by it put a call's SIP and its RTCP in different
// workers. For the rest (RTCP, logs, reports), and SIP whose payload is
// compressed, the correlation id chunk (0x11: the SIP Call-ID an agent puts
// on RTCP), less trailing NULs as the worker reads it. Read from the bytes
// without decoding the packet; -1 when the packet names no call (the master
// then keys it by its source).

const MAGIC = 0x48455033
const CHUNK_HEADER = 6
const TYPE_PROTOCOL = 0x0b
const TYPE_PAYLOAD = 0x0f
const TYPE_CORRELATION = 0x11
const SIP = 1
// "call-id:" and the compact "i:" at a line start, lower-cased.
const CALL_ID = Buffer.from('\ncall-id:')
const COMPACT = Buffer.from('\ni:')

/** The call key of the HEP3 packet in `buf[start, end)`, or -1. */
function callKeyOf (buf, start, end) {
  if (end - start < CHUNK_HEADER || buf.readUInt32BE(start) !== MAGIC) return -1
  let protocol = -1
  let payloadAt = -1
  let payloadEnd = -1
  let correlationAt = -1
  let correlationEnd = -1
  for (let at = start + CHUNK_HEADER; at + CHUNK_HEADER <= end;) {
    const length = buf.readUInt16BE(at + 4)
    if (length < CHUNK_HEADER || at + length > end) return -1
    if (buf.readUInt16BE(at) === 0) {
      const type = buf.readUInt16BE(at + 2)
      if (type === TYPE_CORRELATION) {
        correlationAt = at + CHUNK_HEADER
        correlationEnd = at + length
      } else if (type === TYPE_PROTOCOL && length === CHUNK_HEADER + 1) protocol = buf[at + CHUNK_HEADER]
      else if (type === TYPE_PAYLOAD) {
        payloadAt = at + CHUNK_HEADER
        payloadEnd = at + length
      }
    }
    at += length
  }
  const sip = protocol === SIP && payloadAt >= 0 ? sipCallKey(buf, payloadAt, payloadEnd) : -1
  if (sip >= 0) return sip
  while (correlationEnd > correlationAt && buf[correlationEnd - 1] === 0) correlationEnd--
  return correlationEnd > correlationAt ? hashBytes(buf, correlationAt, correlationEnd) : -1
}

// The value of the first Call-ID header (either form, any case), trimmed.
function sipCallKey (buf, start, end) {
  const headersEnd = indexOfText(buf, '\r\n\r\n', start, end)
  const limit = headersEnd === -1 ? end : headersEnd
  for (let at = buf.indexOf(0x0a, start); at !== -1 && at < limit; at = buf.indexOf(0x0a, at + 1)) {
    const nameLength = headerMatch(buf, at, limit)
    if (nameLength === 0) continue
    let key = lineKey(buf, at + nameLength, limit)
    // A value folded onto the next line (RFC 3261 §7.3.1), as the worker's parser joins it.
    const next = buf.indexOf(0x0a, at + 1)
    if (key === -1 && next !== -1 && next + 1 < limit && (buf[next + 1] === 0x20 || buf[next + 1] === 0x09)) key = lineKey(buf, next + 1, limit)
    return key
  }
  return -1
}

// The hash of the text from `from` to the line's end, trimmed; -1 when empty.
function lineKey (buf, from, limit) {
  let to = buf.indexOf(0x0a, from)
  if (to === -1 || to > limit) to = limit
  while (from < to && (buf[from] === 0x20 || buf[from] === 0x09)) from++
  while (to > from && (buf[to - 1] === 0x0d || buf[to - 1] === 0x20 || buf[to - 1] === 0x09)) to--
  return to > from ? hashBytes(buf, from, to) : -1
}

// The length of "\ncall-id:" or "\ni:" (any case, spaces before the colon) at `at`, else 0.
function headerMatch (buf, at, limit) {
  for (const name of [CALL_ID, COMPACT]) {
    let i = 1
    while (i < name.length - 1 && at + i < limit && (buf[at + i] | 0x20) === name[i]) i++
    if (i < name.length - 1) continue
    let colon = at + i
    while (colon < limit && (buf[colon] === 0x20 || buf[colon] === 0x09)) colon++
    if (buf[colon] === 0x3a) return colon + 1 - at
  }
  return 0
}

function indexOfText (buf, text, start, end) {
  const at = buf.indexOf(text, start, 'latin1')
  return at === -1 || at >= end ? -1 : at
}

// FNV-1a over the bytes, as lib/master/distribution.js's fnv1a over a string.
function hashBytes (buf, start, end) {
  let h = 0x811c9dc5
  for (let i = start; i < end; i++) {
    h ^= buf[i]
    h = Math.imul(h, 0x01000193)
  }
  return h >>> 0
}

module.exports = { callKeyOf }
