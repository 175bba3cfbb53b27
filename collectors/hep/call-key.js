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
const TYPE_IP_PROTOCOL = 0x02
// Header names at a line start, lower-cased, with their compact forms:
// Call-ID (i) and Content-Length (l).
const CALL_ID_NAMES = [Buffer.from('\ncall-id:'), Buffer.from('\ni:')]
const LENGTH_NAMES = [Buffer.from('\ncontent-length:'), Buffer.from('\nl:')]
const BLANK_LINE = Buffer.from('\r\n\r\n')
const MAX_HEADER_BYTES = 16384 // what sip.js parseSip reads of a message

/**
 * Where the chunks the master reads lie in the HEP3 packet `buf[start,
 * end)`, written into the one `chunks` object (no allocation per packet;
 * read it before the next call): the protocol type (1 SIP), the IP
 * protocol of the capture (6 TCP), the (last) payload, how many payload
 * chunks, the correlation id. False when it is not a well-formed HEP3 packet
 * (the worker refuses it whole).
 */
const chunks = { protocol: -1, ipProtocol: -1, payloadAt: -1, payloadEnd: -1, payloads: 0, correlationAt: -1, correlationEnd: -1 }

function readChunks (buf, start, end) {
  // As hep-decoder.js: the header's length is the packet's (hep-bad-length), its chunks fill it (hep-truncated-chunk).
  if (end - start < CHUNK_HEADER || buf.readUInt32BE(start) !== MAGIC || buf.readUInt16BE(start + 4) !== end - start) return false
  chunks.protocol = chunks.ipProtocol = chunks.payloadAt = chunks.payloadEnd = chunks.correlationAt = chunks.correlationEnd = -1
  chunks.payloads = 0
  let at = start + CHUNK_HEADER
  while (at + CHUNK_HEADER <= end) {
    const length = buf.readUInt16BE(at + 4)
    if (length < CHUNK_HEADER || at + length > end) return false
    if (buf.readUInt16BE(at) === 0) {
      const type = buf.readUInt16BE(at + 2)
      if (type === TYPE_CORRELATION) {
        chunks.correlationAt = at + CHUNK_HEADER
        chunks.correlationEnd = at + length
      } else if (type === TYPE_PROTOCOL && length === CHUNK_HEADER + 1) chunks.protocol = buf[at + CHUNK_HEADER]
      else if (type === TYPE_IP_PROTOCOL && length === CHUNK_HEADER + 1) chunks.ipProtocol = buf[at + CHUNK_HEADER]
      else if (type === TYPE_PAYLOAD) {
        chunks.payloadAt = at + CHUNK_HEADER
        chunks.payloadEnd = at + length
        chunks.payloads++
      }
    }
    at += length
  }
  return at === end
}

/** The call key of the HEP3 packet in `buf[start, end)`, or -1. */
function callKeyOf (buf, start, end) {
  if (!readChunks(buf, start, end)) return -1
  const { correlationAt } = chunks
  let correlationEnd = chunks.correlationEnd
  const sip = chunks.protocol === SIP && chunks.payloadAt >= 0 ? sipHeaders(buf, chunks.payloadAt, chunks.payloadEnd).key : -1
  if (sip >= 0) return sip
  while (correlationEnd > correlationAt && buf[correlationEnd - 1] === 0) correlationEnd--
  return correlationEnd > correlationAt ? hashBytes(buf, correlationAt, correlationEnd) : -1
}

/**
 * Of the SIP message at `buf[start, end)`: the key of its first Call-ID
 * header (either form, any case, trimmed; -1 when none or empty) and, with
 * `withEnd`, where it ends by its Content-Length (RFC 3261 §18.3; `end`
 * when its headers do not end or it gives none, as the worker's sip.js
 * reads a message's length) and whether its headers end, written into the
 * one `headers` object.
 */
const headers = { key: -1, end: -1, ended: false }

function sipHeaders (buf, start, end, withEnd = false) {
  const headersEnd = blankLineAt(buf, start, end)
  const limit = headersEnd === -1 ? end : headersEnd
  let callId = false
  let length = withEnd ? -1 : 0
  headers.key = -1
  for (let at = buf.indexOf(0x0a, start); at !== -1 && at < limit && (!callId || length === -1); at = buf.indexOf(0x0a, at + 1)) {
    const nameLength = callId ? 0 : headerMatch(buf, at, limit, CALL_ID_NAMES)
    if (nameLength !== 0) {
      callId = true
      headers.key = valueKey(buf, at + nameLength, limit, Math.min(limit, start + MAX_HEADER_BYTES))
    } else if (length === -1) {
      const lengthName = headerMatch(buf, at, limit, LENGTH_NAMES)
      // The first Content-Length counts; one that is no number gives none (-2: no further look).
      if (lengthName !== 0) length = lineNumber(buf, at + lengthName, limit)
      if (lengthName !== 0 && length === -1) length = -2
    }
  }
  headers.end = withEnd && headersEnd !== -1 && length >= 0 ? Math.min(headersEnd + 4 + length, end) : end
  headers.ended = headersEnd !== -1
  return headers
}

// The decimal number (up to 10 digits) that is the header's whole value,
// trimmed, with its continuation lines (RFC 3261 §7.3.1) joined as the
// worker's parser joins them: one of them the number, the others blank; -1
// when it is not one. Read from the line alone, a Content-Length folded
// onto the next line was none: the messages after it went with its call.
function lineNumber (buf, from, limit) {
  let n = -1
  for (let line = from; ;) {
    let to = buf.indexOf(0x0a, line)
    if (to === -1 || to > limit) to = limit
    const value = numberIn(buf, line, to)
    if (value === -1 || (value >= 0 && n >= 0)) return -1
    if (value >= 0) n = value
    line = to + 1
    if (line >= limit || (buf[line] !== 0x20 && buf[line] !== 0x09)) return n
  }
}

// The number buf[from, to) holds, trimmed: -1 when it is not one, -2 when blank.
function numberIn (buf, from, to) {
  while (from < to && (buf[from] === 0x20 || buf[from] === 0x09)) from++
  while (to > from && (buf[to - 1] === 0x0d || buf[to - 1] === 0x20 || buf[to - 1] === 0x09)) to--
  if (to === from) return -2
  if (to - from > 10) return -1
  let n = 0
  for (let i = from; i < to; i++) {
    if (buf[i] < 0x30 || buf[i] > 0x39) return -1
    n = n * 10 + buf[i] - 0x30
  }
  return n
}

// The hash of a header's value from `from`, trimmed; -1 when empty. A
// value folded onto continuation lines (RFC 3261 §7.3.1, rare) is hashed
// as the worker's sip.js unfold joins it (lws(first + ' ' + lws(next) …)),
// streamed: keyed by its first line alone, a Call-ID on two lines sent its
// message to another worker than its call's. Continuation lines are read
// within `foldLimit`: the worker reads a message's first MAX_HEADER_BYTES.
function valueKey (buf, from, limit, foldLimit) {
  let lf = lineFeed(buf, from, limit)
  if (lf + 1 >= foldLimit || !isLws(buf[lf + 1])) return lineKey(buf, from, limit)
  let text = lineText(buf, from, lf)
  while (from < text && isLws(buf[from])) from++
  let valueEnd = text
  while (valueEnd > from && isLws(buf[valueEnd - 1])) valueEnd--
  let h = fnv(0x811c9dc5, buf, from, valueEnd)
  let any = valueEnd > from
  let spaces = 0 // held back (trailing until more text follows): buf[valueEnd, text), then `spaces` spaces
  for (let line = lf + 1; line < foldLimit && isLws(buf[line]); line = lf + 1) {
    lf = lineFeed(buf, line, foldLimit)
    let at = line
    let to = lineText(buf, line, lf)
    while (at < to && isLws(buf[at])) at++
    while (to > at && isLws(buf[to - 1])) to--
    spaces++
    if (to === at) continue
    if (any) {
      h = fnv(h, buf, valueEnd, text)
      for (; spaces > 0; spaces--) h = Math.imul(h ^ 0x20, 0x01000193)
    }
    h = fnv(h, buf, at, to)
    any = true
    valueEnd = text = spaces = 0
  }
  return any ? h >>> 0 : -1
}

function isLws (byte) {
  return byte === 0x20 || byte === 0x09
}

// FNV-1a of `h` continued over buf[from, to).
function fnv (h, buf, from, to) {
  for (let i = from; i < to; i++) h = Math.imul(h ^ buf[i], 0x01000193)
  return h
}

// Where the line at `from` ends (its LF, or `limit`).
function lineFeed (buf, from, limit) {
  const lf = buf.indexOf(0x0a, from)
  return lf === -1 || lf > limit ? limit : lf
}

// Where the line's text ends: before one CR before its LF, as sip.js splits lines.
function lineText (buf, from, lf) {
  return lf > from && buf[lf - 1] === 0x0d ? lf - 1 : lf
}

// The hash of the text from `from` to the line's end, trimmed; -1 when empty.
function lineKey (buf, from, limit) {
  let to = buf.indexOf(0x0a, from)
  if (to === -1 || to > limit) to = limit
  while (from < to && (buf[from] === 0x20 || buf[from] === 0x09)) from++
  while (to > from && (buf[to - 1] === 0x0d || buf[to - 1] === 0x20 || buf[to - 1] === 0x09)) to--
  return to > from ? hashBytes(buf, from, to) : -1
}

// The length of "\n<name>:" (one of `names`, any case, spaces before the colon) at `at`, else 0.
function headerMatch (buf, at, limit, names) {
  for (const name of names) {
    let i = 1
    while (i < name.length - 1 && at + i < limit && (buf[at + i] | 0x20) === name[i]) i++
    if (i < name.length - 1) continue
    let colon = at + i
    while (colon < limit && (buf[colon] === 0x20 || buf[colon] === 0x09)) colon++
    if (buf[colon] === 0x3a) return colon + 1 - at
  }
  return 0
}

// Where the blank line that ends a message's headers starts in
// buf[start, end), or -1: searched within those bytes only (on the native
// path `buf` is a whole batch of datagrams).
function blankLineAt (buf, start, end) {
  const at = buf.subarray(start, end).indexOf(BLANK_LINE)
  return at === -1 ? -1 : start + at
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

module.exports = { callKeyOf, readChunks, chunks, sipHeaders, blankLineAt }
