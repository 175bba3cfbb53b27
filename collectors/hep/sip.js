'use strict'

const { isUtf8 } = require('node:buffer')
// Just enough of SIP (RFC 3261) to know a call from the messages a capture
// agent copies: the start line, Call-ID, From, To and CSeq. Header names
// are matched without case and in their compact forms (i, f, t); the body
// is never read.

const COMPACT = { i: 'call-id', f: 'from', t: 'to', l: 'content-length' }
const WANTED = new Set(['call-id', 'from', 'to', 'cseq', 'content-length'])
// What is read of a message (its start line and headers), and how long a
// value we keep may be: a Call-ID is unbounded in RFC 3261 but tens of
// bytes in practice (Asterisk, Kamailio, FreeSWITCH), a user, host or tag
// a few; a sender's 60 KB Call-ID must not become an index key.
const MAX_HEADER_BYTES = 16384
const MAX_CALL_ID = 1024
const MAX_PART = 256
const MAX_TAIL_TRIES = 4

/**
 * One SIP message: `{ method, uri }` for a request or `{ status, reason }`
 * for a response, and `callId`, `from` and `to` (`{ user, host, tag }`),
 * `cseq` (`{ seq, method }`), and `linkedId`: the value of the first of
 * `correlationHeaders` (lower-case names: X-CID and the like, which a
 * B2BUA sets on a leg to the Call-ID of the leg it bridges) the message
 * carries (absent when none), and `length`: the bytes of `payload` the
 * message takes, its headers and the body its Content-Length gives (all
 * of `payload` when it gives none, or more than is there: a datagram's
 * body runs to its end). Returns null when it is not a SIP message with those
 * four headers, TOO_LONG when one of the values kept is longer than we
 * store (MAX_CALL_ID, MAX_PART), and NOT_TEXT when its Call-ID is not UTF-8.
 *
 * @param {Buffer} payload
 * @param {string[]} [correlationHeaders]
 */
function parseSip (payload, correlationHeaders = []) {
  const end = payload.indexOf(HEADERS_END)
  const limit = Math.min(end === -1 ? payload.length : end, MAX_HEADER_BYTES)
  const text = payload.toString('utf8', 0, limit)
  const firstEnd = lineEnd(text, 0)
  const start = startLine(text.slice(0, lineStop(text, 0, firstEnd)))
  if (!start) return null
  const headers = headersOf(text, firstEnd + 1, correlationHeaders)
  const linked = correlationHeaders.find((name) => headers[name])
  const cseq = /^(\d{1,10})\s+([A-Za-z]+)$/.exec(headers.cseq || '')
  if (!headers['call-id'] || !headers.from || !headers.to || !cseq) return null
  // Bytes that are not UTF-8 read as U+FFFD: two such Call-IDs would name one call.
  if (headers['call-id'].includes('\uFFFD') && !isUtf8(Buffer.from(latin1CallId(payload, limit), 'latin1'))) return NOT_TEXT
  const from = nameAddress(headers.from)
  const to = nameAddress(headers.to)
  const linkedId = linked ? headers[linked] : null
  if (callIdTooLong(headers['call-id']) || (linkedId && callIdTooLong(linkedId)) || tooLong(from) || tooLong(to)) return TOO_LONG
  const length = messageLength(end, headers['content-length'], payload.length)
  // Built a field at a time, not spread: an object literal with two spreads
  // took V8's slow path, half of this function's time (10 of 20 µs a message).
  const message = start
  message.callId = headers['call-id']
  message.from = from
  message.to = to
  message.cseq = { seq: Number(cseq[1]), method: cseq[2].toUpperCase() }
  if (linkedId) message.linkedId = linkedId
  message.length = length
  return message
}

const HEADERS_END = Buffer.from('\r\n\r\n')

// The Call-ID of the headers read as latin1 (a character a byte): its bytes as sent.
function latin1CallId (payload, limit) {
  const text = payload.toString('latin1', 0, limit)
  return headersOf(text, lineEnd(text, 0) + 1, [])['call-id']
}

// Where a message whose headers end at `headersEnd` (its blank line's
// first byte, -1 when not found) ends by its Content-Length (RFC 3261
// §18.3, §20.14: mandatory on streams, where several messages follow each
// other); `size` past the end of what is there or when none is given.
function messageLength (headersEnd, contentLength, size) {
  if (headersEnd === -1 || contentLength === undefined || !/^\d{1,10}$/.test(contentLength)) return size
  return Math.min(headersEnd + 4 + Number(contentLength), size)
}

/**
 * The SIP messages one payload holds, each `{ sip, start, end }` (parseSip's
 * reading of payload[start, end)): one, or several when an agent copied a
 * TCP segment that carried several (a proxy's trunk sends back to back).
 * A message ends where its Content-Length says; what follows is another
 * only when it parses as one whole (the CRLFs a stream keeps alive with
 * skipped), else it stays with the message before, as sent. The last
 * message runs to the payload's end. The first's reading is `first`.
 */
function sipMessagesOf (payload, first, correlationHeaders = []) {
  const messages = []
  let sip = first
  let start = 0
  for (;;) {
    const next = start + sip.length < payload.length ? nextMessage(payload, start + sip.length, correlationHeaders) : null
    messages.push({ sip, start, end: next ? start + sip.length : payload.length })
    if (!next) return messages
    ;({ sip, start } = next)
  }
}

function nextMessage (payload, offset, correlationHeaders) {
  while (offset < payload.length && (payload[offset] === 0x0d || payload[offset] === 0x0a)) offset++
  if (offset === payload.length) return null
  const sip = parseSip(payload.subarray(offset), correlationHeaders)
  return sip && sip !== TOO_LONG && sip !== NOT_TEXT ? { sip, start: offset } : null
}

/**
 * The first whole message of a payload that begins inside one (a TCP
 * segment whose first bytes end a message the segment before began, its
 * headers or body): `{ sip, start }`, `start` just past a line break, or
 * null. Only a line that reads as a start line is parsed from, MAX_TAIL_TRIES
 * of them at most: a tail rarely holds one, and a sender's 64 KB of them
 * must not cost a parse each.
 */
function messageAfterTail (payload, correlationHeaders = []) {
  let tries = 0
  for (let at = payload.indexOf(0x0a) + 1; at > 0 && at < payload.length; at = payload.indexOf(0x0a, at) + 1) {
    const letter = payload[at] | 0x20 // a start line begins with its method's letters or SIP/2.0's
    if (letter < 0x61 || letter > 0x7a) continue
    const next = payload.indexOf(0x0a, at)
    const line = payload.toString('latin1', at, Math.min(next === -1 ? payload.length : next, at + 1024))
    if (!startLine(line.endsWith('\r') ? line.slice(0, -1) : line)) continue
    if (++tries > MAX_TAIL_TRIES) return null
    const sip = parseSip(payload.subarray(at), correlationHeaders)
    if (sip && sip !== TOO_LONG && sip !== NOT_TEXT) return { sip, start: at }
  }
  return null
}

// The first value of each header wanted (WANTED, and `correlationHeaders`)
// of the header lines of `text` from `from` (after the start line). Lines
// end at LF, a CR before it left out; a line that begins with a space or a
// tab continues the header above it (RFC 3261 §7.3.1), but for the first
// (nothing but the start line is above it): a continuation was read as a
// header of its own (' to: <sip:x>' under a Subject taken for To) and a
// folded To lost its tag. Read in place: a line is cut out of `text` only
// when its name may be wanted (its first letter), and each character is
// searched once for a colon, however many lines have none.
function headersOf (text, from, correlationHeaders) {
  const headers = {}
  const letters = firstLetters(correlationHeaders)
  let colon = -1 // the first colon at or after the line read (text.length when none)
  for (let at = from; at <= text.length;) {
    const end = lineEnd(text, at)
    if (isContinuation(text, end + 1)) {
      // A header folded over the lines that follow: joined, as RFC 3261 reads it.
      let line = text.slice(at, lineStop(text, at, end))
      let next = end + 1
      while (isContinuation(text, next)) {
        const nextEnd = lineEnd(text, next)
        line += ' ' + lws(text.slice(next, lineStop(text, next, nextEnd)))
        next = nextEnd + 1
      }
      const folded = line.indexOf(':')
      if (folded > 0) takeHeader(headers, line, 0, folded, line.length, letters, correlationHeaders)
      at = next
      continue
    }
    const stop = lineStop(text, at, end)
    if (colon < at) colon = indexOrEnd(text, ':', at)
    if (colon > at && colon < stop) takeHeader(headers, text, at, colon, stop, letters, correlationHeaders)
    at = end + 1
  }
  return headers
}

// The header of text[at, stop), its name ending at `colon`: kept when its name is wanted and not yet taken.
function takeHeader (headers, text, at, colon, stop, letters, correlationHeaders) {
  let first = at
  while (first < colon && (text.charCodeAt(first) === 0x20 || text.charCodeAt(first) === 0x09)) first++
  const letter = text.charCodeAt(first)
  // ASCII lower-cases to ASCII, a letter by 0x20: a name whose first character is no wanted name's is none of them.
  if (letter < 0x80 && !letters.has(letter | 0x20)) return
  const raw = lws(text.slice(at, colon)).toLowerCase()
  const name = COMPACT[raw] || raw
  if ((WANTED.has(name) || correlationHeaders.includes(name)) && headers[name] === undefined) headers[name] = lws(text.slice(colon + 1, stop))
}

const WANTED_LETTERS = [...WANTED, ...Object.keys(COMPACT)].map((name) => name.charCodeAt(0) | 0x20)
const lettersOf = new WeakMap() // correlationHeaders → the first letters of every name wanted

function firstLetters (correlationHeaders) {
  let letters = lettersOf.get(correlationHeaders)
  if (!letters) lettersOf.set(correlationHeaders, (letters = new Set([...WANTED_LETTERS, ...correlationHeaders.map((name) => name.charCodeAt(0) | 0x20)])))
  return letters
}

// Where the line from `at` ends: its LF, or the end of the text.
function lineEnd (text, at) {
  return indexOrEnd(text, '\n', at)
}

function indexOrEnd (text, character, at) {
  const found = text.indexOf(character, at)
  return found === -1 ? text.length : found
}

// The end of a line's text: a CR before its LF is not part of it (one at the text's end, with no LF after, is).
function lineStop (text, at, end) {
  return end < text.length && end > at && text.charCodeAt(end - 1) === 0x0d ? end - 1 : end
}

function isContinuation (text, at) {
  return at < text.length && (text.charCodeAt(at) === 0x20 || text.charCodeAt(at) === 0x09)
}

// Without SIP's linear white space (spaces and tabs) at either end: no other
// character, not a latin1 reading's U+00A0 (parseSip's second reading of a Call-ID).
// Not a regular expression: /[ \t]+$/ tries every space of a run as a start,
// and a sender's 16 KB of them inside a header's name cost 0.3 s a message.
function lws (text) {
  let start = 0
  let end = text.length
  while (start < end && (text[start] === ' ' || text[start] === '\t')) start++
  while (end > start && (text[end - 1] === ' ' || text[end - 1] === '\t')) end--
  return start === 0 && end === text.length ? text : text.slice(start, end)
}

/** parseSip's answer for a message whose Call-ID, user, host or tag is too long to keep. */
const TOO_LONG = Object.freeze({ tooLong: true })

/** parseSip's answer for a message whose Call-ID is not UTF-8 text (it cannot be kept as the text that names its call). */
const NOT_TEXT = Object.freeze({ notText: true })

// The bounds are in bytes (what an index key takes), not characters: 600 € are 1,800 bytes.
function tooLong ({ user, host, tag }) {
  return Buffer.byteLength(user) > MAX_PART || Buffer.byteLength(host) > MAX_PART || (tag !== null && Buffer.byteLength(tag) > MAX_PART)
}

/** Whether a Call-ID (or a correlation id naming a call) is longer than a call's may be. */
function callIdTooLong (callId) {
  return Buffer.byteLength(callId) > MAX_CALL_ID
}

function startLine (line) {
  // The version's letters in any case (RFC 3261 §7.1: 'SIP/2.0' is case-insensitive).
  const response = /^SIP\/2\.0\s+(\d{3})\s*(.*)$/i.exec(line || '')
  if (response) return { status: Number(response[1]), reason: response[2] }
  const request = /^([A-Za-z]+)\s+(\S+)\s+SIP\/2\.0$/i.exec(line || '')
  return request ? { method: request[1].toUpperCase(), uri: request[2] } : null
}

/**
 * The user, host and tag of a From or To value: `"Bob" <sip:bob@b.example;
 * transport=udp>;tag=x`, `sip:bob@b.example;tag=x` or a tel: URI. A quoted
 * display name may hold `<`, `>`, `;` and `@` (`"Doe <Jr>" <sip:…>`); in
 * angle brackets the user may carry parameters (RFC 4694's
 * `+4930123;npdi;rn=+4930999@b.example`), left out of the user kept: the
 * number is what a search looks for. Outside brackets a `;` ends the URI
 * (RFC 3261 20.10: a URI with one must be in brackets).
 */
function nameAddress (value) {
  const unquoted = value.replace(QUOTED_NAME, '')
  const bracket = /^[^<]*<([^>]*)>(.*)$/.exec(unquoted)
  const uri = (bracket ? bracket[1] : unquoted.split(';')[0]).trim()
  const params = bracket ? bracket[2] : unquoted.slice(unquoted.indexOf(uri) + uri.length)
  const tag = /;\s*tag=([^;\s]+)/i.exec(params)
  const address = (bracket ? /^(?:sips?|tel):(?:([^@]*)@)?([^;?]*)/i : /^(?:sips?|tel):(?:([^@;]*)@)?([^;?]*)/i).exec(uri)
  const user = address ? (address[1] !== undefined ? address[1].split(';')[0] : /^tel:/i.test(uri) ? address[2] : '') : ''
  const host = address && address[1] !== undefined ? address[2] : ''
  return { user: decodeURIComponentSafe(user), host: hostOnly(host).toLowerCase(), tag: tag ? tag[1] : null }
}

// A display name in quotes (RFC 3261 25.1 quoted-string: \\ escapes the next character).
const QUOTED_NAME = /^\s*"(?:[^"\\]|\\.)*"\s*/

// The host of `host[:port]`: b.example.com:5060 → b.example.com, [2001:db8::1]:5060 → 2001:db8::1.
function hostOnly (hostport) {
  const v6 = /^\[([^\]]*)\]/.exec(hostport)
  if (v6) return v6[1]
  return hostport.replace(/:\d*$/, '')
}

function decodeURIComponentSafe (text) {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}

module.exports = { parseSip, sipMessagesOf, messageAfterTail, startLine, TOO_LONG, NOT_TEXT, callIdTooLong, MAX_HEADER_BYTES }
