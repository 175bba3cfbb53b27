'use strict'

// Syslog message parser: RFC 5424 (the "1" version after PRI) and RFC 3164
// (BSD syslog) with the variants real senders produce. Pure and total: it
// never throws; input it cannot make sense of comes back as a 'raw' record
// with a reason token, for the collector to store and count.

/** Facility names by code (RFC 5424 §6.2.1; names as rsyslog spells them). */
const FACILITIES = Object.freeze(['kern', 'user', 'mail', 'daemon', 'auth', 'syslog', 'lpr', 'news', 'uucp', 'cron',
  'authpriv', 'ftp', 'ntp', 'security', 'console', 'solaris-cron',
  'local0', 'local1', 'local2', 'local3', 'local4', 'local5', 'local6', 'local7'])

/** Severity names by code (RFC 5424 §6.2.1; names as `logger -p` takes them). */
const SEVERITIES = Object.freeze(['emerg', 'alert', 'crit', 'err', 'warning', 'notice', 'info', 'debug'])

/** Every `error` token a raw record can carry, to preset counters. */
const REASONS = Object.freeze(['bad-input', 'empty', 'no-pri', 'bad-pri', 'bad-version', 'truncated-header',
  'bad-timestamp', 'bad-structured-data'])

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec']
const PRI = /^<(\d{1,3})>/
const VERSION = /^(\d{1,3}) /
// RFC 5424 §6.2.3: FULL-DATE "T" FULL-TIME, 1-6 fraction digits, offset required.
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?(Z|[+-]\d{2}:\d{2})$/
// 3164 variant (rsyslog's RFC3339 template and others): ISO time, offset optional.
const ISO_PREFIX = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:?\d{2})?(?= |$)/i
// RFC 3164 §4.1.2 "Mmm dd hh:mm:ss" (day space-padded); tolerated: one space
// before the day, a year before the time, a fraction after it.
const BSD_PREFIX = /^([A-Za-z]{3}) {1,2}(\d{1,2}) (?:(\d{4}) )?(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?(?= |$)/
// TAG[PID]: — a TAG counts only when followed by a colon or a [PID].
const TAG = /^([^\s[\]:]{1,48})(?:\[([^\s\]]{0,128})\])?(:)?(?: |$)/
const DAY = 86400000
const SD_NAME = /^[!#-<>-\\^-~]{1,32}$/ // PRINTUSASCII except '=', SP, ']', '"'

/**
 * Parses one syslog message.
 * @param {Buffer|Uint8Array|string} input one message (a datagram or a TCP frame);
 *   a trailing CR/LF/NUL run is stripped; invalid UTF-8 becomes U+FFFD
 * @param {object} [options]
 * @param {Date} [options.receivedAt=new Date()] copied into the record; also
 *   picks the year of RFC 3164 timestamps (the latest not a day past it)
 * @param {number} [options.defaultYear] year for RFC 3164 timestamps instead
 * @param {boolean} [options.keepRaw=false] add `raw`, the text as received
 * @returns {object} `{ format: '5424'|'3164', facility, severity, facilityName,
 *   severityName, timestamp, host, app, procid, msgid, structuredData, message,
 *   receivedAt }` or `{ format: 'raw', message, receivedAt, error }`
 */
function parseSyslog (input, { receivedAt = new Date(), defaultYear, keepRaw = false } = {}) {
  const text = toText(input)
  const record = text === null
    ? raw('', receivedAt, 'bad-input')
    : parseText(stripTrailer(text), { receivedAt, defaultYear })
  if (keepRaw) record.raw = text === null ? '' : text
  return record
}

function parseText (text, ctx) {
  if (text.length === 0) return raw(text, ctx.receivedAt, 'empty')
  if (text[0] !== '<') return raw(text, ctx.receivedAt, 'no-pri')
  const pri = PRI.exec(text)
  if (!pri || Number(pri[1]) > 191) return raw(text, ctx.receivedAt, 'bad-pri')
  const head = priFields(Number(pri[1]))
  const rest = text.slice(pri[0].length)
  const result = VERSION.test(rest) ? parse5424(rest, ctx) : parse3164(rest, ctx)
  if (typeof result === 'string') return raw(text, ctx.receivedAt, result)
  return { format: result.format, ...head, ...result.fields, receivedAt: ctx.receivedAt }
}

function toText (input) {
  if (typeof input === 'string') return input
  if (Buffer.isBuffer(input)) return input.toString('utf8')
  if (input instanceof Uint8Array) return Buffer.from(input.buffer, input.byteOffset, input.byteLength).toString('utf8')
  return null
}

function stripTrailer (text) {
  let end = text.length
  while (end > 0 && (text[end - 1] === '\n' || text[end - 1] === '\r' || text[end - 1] === '\0')) end--
  return end === text.length ? text : text.slice(0, end)
}

function raw (message, receivedAt, error) {
  return { format: 'raw', message, receivedAt, error }
}

function priFields (pri) {
  const facility = pri >> 3
  const severity = pri & 7
  return { facility, severity, facilityName: FACILITIES[facility], severityName: SEVERITIES[severity] }
}

// ------------------------------------------------------------ RFC 5424

// VERSION SP TIMESTAMP SP HOSTNAME SP APP-NAME SP PROCID SP MSGID SP SD [SP MSG]
function parse5424 (rest, ctx) {
  const header = splitFields(rest, 6)
  if (!header) return 'truncated-header'
  const [version, stamp, host, app, procid, msgid] = header.fields
  if (version !== '1') return 'bad-version'
  const timestamp = stamp === '-' ? null : parseRfc3339(stamp)
  if (timestamp === undefined) return 'bad-timestamp'
  const sd = parseStructuredData(rest, header.end)
  if (!sd) return 'bad-structured-data'
  const fields = {
    timestamp,
    host: nil(host),
    app: nil(app),
    procid: nil(procid),
    msgid: nil(msgid),
    structuredData: sd.data,
    message: stripBom(rest.slice(sd.end + 1))
  }
  return { format: '5424', fields }
}

// The first `count` space-separated fields; empty ones (two spaces) are malformed.
function splitFields (text, count) {
  const fields = []
  let offset = 0
  for (let i = 0; i < count; i++) {
    const space = text.indexOf(' ', offset)
    if (space <= offset) return null
    fields.push(text.slice(offset, space))
    offset = space + 1
  }
  return { fields, end: offset }
}

function nil (value) {
  return value === '-' ? null : value
}

// RFC 5424 §6.4: a BOM announces UTF-8 text; it is not part of the message.
function stripBom (message) {
  return message.charCodeAt(0) === 0xfeff ? message.slice(1) : message
}

/** A Date, or undefined when `stamp` is not a valid RFC 5424 TIMESTAMP. */
function parseRfc3339 (stamp) {
  const m = RFC3339.exec(stamp)
  if (!m) return undefined
  return makeDate(m, m[8])
}

// Fields y, mo, d, h, mi, s, frac at m[1..7]; `offset` 'Z', '+hh:mm', '+hhmm' or absent (local time).
function makeDate (m, offset) {
  const [y, mo, d, h, mi, s] = [1, 2, 3, 4, 5, 6].map((i) => Number(m[i]))
  if (!validDay(y, mo, d) || h > 23 || mi > 59 || s > 59) return undefined
  const ms = m[7] ? Number(m[7].slice(0, 3).padEnd(3, '0')) : 0
  if (!offset) return new Date(y, mo - 1, d, h, mi, s, ms)
  const shift = offsetMinutes(offset)
  if (shift === undefined) return undefined
  return new Date(Date.UTC(y, mo - 1, d, h, mi, s, ms) - shift * 60000)
}

function offsetMinutes (offset) {
  if (offset === 'Z' || offset === 'z') return 0
  const digits = offset.slice(1).replace(':', '')
  const hours = Number(digits.slice(0, 2))
  const minutes = Number(digits.slice(2))
  if (hours > 23 || minutes > 59) return undefined
  return (offset[0] === '-' ? -1 : 1) * (hours * 60 + minutes)
}

function validDay (year, month, day) {
  if (month < 1 || month > 12 || day < 1) return false
  return day <= new Date(Date.UTC(year, month, 0)).getUTCDate()
}

// STRUCTURED-DATA = NILVALUE / 1*SD-ELEMENT, then end of text or SP MSG.
// Returns { data, end } with `end` at the char after the SD, or null.
function parseStructuredData (text, offset) {
  if (text[offset] === '-') return sdEnd(text, null, offset + 1)
  if (text[offset] !== '[') return null
  const data = {}
  while (text[offset] === '[') {
    const element = parseElement(text, offset + 1)
    if (!element) return null
    mergeParams(data, element.id, element.params)
    offset = element.end
  }
  return sdEnd(text, data, offset)
}

function sdEnd (text, data, end) {
  if (end < text.length && text[end] !== ' ') return null
  return { data, end }
}

// SD-ID *(SP PARAM-NAME "=" DQUOTE PARAM-VALUE DQUOTE) "]", from after the "[".
function parseElement (text, offset) {
  const id = readName(text, offset)
  if (!id) return null
  const params = []
  offset += id.length
  while (text[offset] === ' ') {
    const name = readName(text, offset + 1)
    if (!name || text[offset + 1 + name.length] !== '=' || text[offset + 2 + name.length] !== '"') return null
    const value = readValue(text, offset + 3 + name.length)
    if (!value) return null
    params.push([name, value.value])
    offset = value.end
  }
  return text[offset] === ']' ? { id, params, end: offset + 1 } : null
}

function readName (text, offset) {
  let end = offset
  while (end < text.length && end - offset <= 32 && !' =]"'.includes(text[end])) end++
  const name = text.slice(offset, end)
  return SD_NAME.test(name) ? name : null
}

// PARAM-VALUE up to the closing unescaped quote. §6.3.3: `\"`, `\\`, `\]`
// are escapes; a backslash before anything else is kept as it is.
function readValue (text, offset) {
  let value = ''
  let start = offset
  for (let i = offset; i < text.length; i++) {
    const c = text[i]
    if (c === '"') return { value: value + text.slice(start, i), end: i + 1 }
    if (c === '\\' && (text[i + 1] === '"' || text[i + 1] === '\\' || text[i + 1] === ']')) {
      value += text.slice(start, i) + text[i + 1]
      start = ++i + 1
    }
  }
  return null
}

// An SD-ID should appear once and a param may repeat (§6.3.2, §6.3.3):
// repeats become arrays so nothing is lost. Own properties even for
// names like "__proto__".
function mergeParams (data, id, params) {
  const element = Object.prototype.hasOwnProperty.call(data, id) ? data[id] : define(data, id, {})
  for (const [name, value] of params) {
    if (!Object.prototype.hasOwnProperty.call(element, name)) define(element, name, value)
    else element[name] = [].concat(element[name], value)
  }
}

function define (target, key, value) {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
  return value
}

// ------------------------------------------------------------ RFC 3164

// [TIMESTAMP SP [HOSTNAME SP]] [TAG[PID]: ] MSG. No timestamp: the whole
// text is CONTENT (§4.3.3), host unknown.
function parse3164 (rest, ctx) {
  const stamp = readBsdOrIso(rest, ctx)
  if (stamp === undefined) return 'bad-timestamp'
  let body = stamp ? rest.slice(stamp.length + 1) : rest
  let host = null
  if (stamp && !isTagged(TAG.exec(body))) {
    const space = body.indexOf(' ')
    host = space === -1 ? body : body.slice(0, space)
    body = space === -1 ? '' : body.slice(space + 1)
  }
  return { format: '3164', fields: { timestamp: stamp ? stamp.date : null, host: host || null, ...readTag(body) } }
}

// { date, length } for a leading timestamp, null if there is none,
// undefined if one is there but impossible (Feb 30, 25:00).
function readBsdOrIso (text, ctx) {
  const bsd = BSD_PREFIX.exec(text)
  if (bsd) return stampResult(bsdDate(bsd, ctx), bsd[0].length)
  const iso = ISO_PREFIX.exec(text)
  if (iso) return stampResult(makeDate(iso, iso[8]), iso[0].length)
  return null
}

function stampResult (date, length) {
  return date ? { date, length } : undefined
}

function isTagged (tag) {
  return tag !== null && (tag[2] !== undefined || tag[3] !== undefined)
}

function readTag (body) {
  const tag = TAG.exec(body)
  if (!isTagged(tag)) return { app: null, procid: null, msgid: null, structuredData: null, message: body }
  const procid = tag[2] === undefined || tag[2] === '' ? null : tag[2]
  return { app: tag[1], procid, msgid: null, structuredData: null, message: body.slice(tag[0].length) }
}

// BSD timestamps are the sender's local time without a year; we read them
// as local time here (as rsyslog does) in `defaultYear`, else in the latest
// year that does not put them more than a day after receivedAt: a December
// line read on January 1st is last year's, a sender a few seconds ahead on
// New Year's Eve is next year's.
function bsdDate (m, { receivedAt, defaultYear }) {
  const month = MONTHS.indexOf(m[1].toLowerCase()) + 1
  const fields = (year) => [null, year, month, m[2], m[4], m[5], m[6], m[7]]
  if (month === 0) return undefined
  if (m[3]) return makeDate(fields(m[3]))
  if (defaultYear) return makeDate(fields(defaultYear))
  const now = receivedAt instanceof Date && !Number.isNaN(receivedAt.getTime()) ? receivedAt : new Date()
  const year = now.getFullYear()
  // Feb 29 may lie up to four years back.
  const candidates = [year + 1, year, year - 1, year - 2, year - 3, year - 4].map((y) => makeDate(fields(y)))
  return candidates.find((date) => date && date.getTime() <= now.getTime() + DAY)
}

module.exports = { parseSyslog, FACILITIES, SEVERITIES, REASONS }
