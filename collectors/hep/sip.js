'use strict'

// Just enough of SIP (RFC 3261) to know a call from the messages a capture
// agent copies: the start line, Call-ID, From, To and CSeq. Header names
// are matched without case and in their compact forms (i, f, t); the body
// is never read.

const COMPACT = { i: 'call-id', f: 'from', t: 'to' }
const WANTED = new Set(['call-id', 'from', 'to', 'cseq'])
// What is read of a message (its start line and headers), and how long a
// value we keep may be: a Call-ID is unbounded in RFC 3261 but tens of
// bytes in practice (Asterisk, Kamailio, FreeSWITCH), a user, host or tag
// a few; a sender's 60 KB Call-ID must not become an index key.
const MAX_HEADER_BYTES = 16384
const MAX_CALL_ID = 1024
const MAX_PART = 256

/**
 * One SIP message: `{ method, uri }` for a request or `{ status, reason }`
 * for a response, and `callId`, `from` and `to` (`{ user, host, tag }`),
 * `cseq` (`{ seq, method }`), and `linkedId`: the value of the first of
 * `correlationHeaders` (lower-case names: X-CID and the like, which a
 * B2BUA sets on a leg to the Call-ID of the leg it bridges) the message
 * carries (absent when none). Returns null when it is not a SIP message with those
 * four headers, and TOO_LONG when one of the values kept is longer than we
 * store (MAX_CALL_ID, MAX_PART).
 *
 * @param {Buffer} payload
 * @param {string[]} [correlationHeaders]
 */
function parseSip (payload, correlationHeaders = []) {
  const end = payload.indexOf('\r\n\r\n')
  const text = payload.toString('utf8', 0, Math.min(end === -1 ? payload.length : end, MAX_HEADER_BYTES))
  const lines = text.split(/\r?\n/)
  const start = startLine(lines[0])
  if (!start) return null
  const headers = {}
  for (let i = 1; i < lines.length; i++) {
    const colon = lines[i].indexOf(':')
    if (colon <= 0) continue
    const raw = lines[i].slice(0, colon).trim().toLowerCase()
    const name = COMPACT[raw] || raw
    if ((WANTED.has(name) || correlationHeaders.includes(name)) && headers[name] === undefined) headers[name] = lines[i].slice(colon + 1).trim()
  }
  const linked = correlationHeaders.find((name) => headers[name])
  const cseq = /^(\d{1,10})\s+([A-Za-z]+)$/.exec(headers.cseq || '')
  if (!headers['call-id'] || !headers.from || !headers.to || !cseq) return null
  const from = nameAddress(headers.from)
  const to = nameAddress(headers.to)
  const linkedId = linked ? headers[linked] : null
  if (headers['call-id'].length > MAX_CALL_ID || (linkedId && linkedId.length > MAX_CALL_ID) || tooLong(from) || tooLong(to)) return TOO_LONG
  return { ...start, callId: headers['call-id'], from, to, cseq: { seq: Number(cseq[1]), method: cseq[2].toUpperCase() }, ...(linkedId ? { linkedId } : {}) }
}

/** parseSip's answer for a message whose Call-ID, user, host or tag is too long to keep. */
const TOO_LONG = Object.freeze({ tooLong: true })

function tooLong ({ user, host, tag }) {
  return user.length > MAX_PART || host.length > MAX_PART || (tag !== null && tag.length > MAX_PART)
}

function startLine (line) {
  const response = /^SIP\/2\.0\s+(\d{3})\s*(.*)$/.exec(line || '')
  if (response) return { status: Number(response[1]), reason: response[2] }
  const request = /^([A-Za-z]+)\s+(\S+)\s+SIP\/2\.0$/.exec(line || '')
  return request ? { method: request[1].toUpperCase(), uri: request[2] } : null
}

/**
 * The user, host and tag of a From or To value: `"Bob" <sip:bob@b.example;
 * transport=udp>;tag=x`, `sip:bob@b.example;tag=x` or a tel: URI.
 */
function nameAddress (value) {
  const bracket = /<([^>]*)>(.*)$/.exec(value)
  const uri = bracket ? bracket[1] : value.split(';')[0]
  const params = bracket ? bracket[2] : value.slice(uri.length)
  const tag = /;\s*tag=([^;\s]+)/i.exec(params)
  const address = /^(?:sips?|tel):(?:([^@;]*)@)?([^;?]*)/i.exec(uri.trim())
  const user = address ? (address[1] !== undefined ? address[1] : /^tel:/i.test(uri.trim()) ? address[2] : '') : ''
  const host = address && address[1] !== undefined ? address[2] : ''
  return { user: decodeURIComponentSafe(user), host: hostOnly(host).toLowerCase(), tag: tag ? tag[1] : null }
}

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

module.exports = { parseSip, TOO_LONG }
