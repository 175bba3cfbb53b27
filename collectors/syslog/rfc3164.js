'use strict'

// The BSD syslog (RFC 3164) reader: timestamp, HOSTNAME, TAG[PID] and MSG
// from the bytes of ctx.buf (the parse state parser.js makes), with the
// deviations real senders produce, each taken only when ctx.allowed has it.

const { BIT, SP, COLON, OPEN, CLOSE, isDigit, deviate } = require('./syntax')
const { DAY_MS, isIsoStart, readRfc3339, digits, fractionMs, validTime, localDate } = require('./syslog-time')
const { utf8TextKept } = require('./utf8-text')

const NO_HOSTNAME = BIT['no-hostname']
const DAY_ZERO = BIT['bsd-day-zero-padded']
const DAY_UNPADDED = BIT['bsd-day-unpadded']
const MONTH_CASE = BIT['bsd-month-case']
const BSD_YEAR = BIT['bsd-year']
const BSD_FRACTION = BIT['bsd-fraction']
const ISO = BIT['iso-timestamp']
const CISCO = BIT.cisco
const STAR = 0x2a
const DOT = 0x2e
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec']

/**
 * Reads an RFC 3164 message from buf[at] (just after PRI) to `end`.
 * [TIMESTAMP SP HOSTNAME SP] [TAG[PID]: ] MSG. No timestamp: the whole text
 * is CONTENT (§4.3.3), host unknown.
 * @returns {object|string} the record's fields, or the reason it is refused
 */
function parse3164 (ctx, at, end) {
  const fields = { format: '3164', timestamp: null, timestampText: null, host: null, app: null, procid: null, msgid: null, structuredData: null, sdElements: null, message: '', messageRaw: undefined }
  const at0 = at
  const deviations = ctx.deviations
  const start = readCiscoPrefix(ctx, fields, at, end)
  if (typeof start === 'string') return start
  at = start
  let stamp = readStamp3164(ctx, at, end)
  if (typeof stamp === 'string' && start !== at0) {
    // A Cisco header followed by no timestamp that reads ('<13>.Mar 3 x'): the line as it was sent, read as any other.
    ctx.deviations = deviations
    fields.msgid = fields.host = null
    at = at0
    stamp = readStamp3164(ctx, at, end)
  }
  if (typeof stamp === 'string') return stamp
  let body = at
  if (stamp !== null) {
    fields.timestamp = stamp.date
    fields.timestampText = ctx.text.slice(at, stamp.end)
    const zoneEnd = ciscoZoneEnd(ctx, stamp.end, end, start !== at0)
    if (zoneEnd > 0) {
      // Cisco's `show-timezone`: 'hh:mm:ss.mmm UTC: '; UTC and GMT read as such, other zones as local time.
      const zone = ctx.text.slice(stamp.end + 1, zoneEnd)
      if (zone === 'UTC' || zone === 'GMT') fields.timestamp = asUtc(stamp.date)
      fields.timestampText = ctx.text.slice(at, zoneEnd)
      body = Math.min(zoneEnd + 2, end)
    } else if (ctx.buf[stamp.end] === COLON) {
      // Cisco's 'hh:mm:ss.mmm: ' (readBsdTime let the colon by): no HOSTNAME follows.
      body = Math.min(stamp.end + (ctx.buf[stamp.end + 1] === SP ? 2 : 1), end)
    } else {
      // A line that ends with its timestamp (a TCP frame or a datagram without its LF) has no SP after it.
      body = readHost(ctx, fields, Math.min(stamp.end + 1, end), end)
      if (typeof body === 'string') return body
    }
  }
  readTag(ctx, fields, body, end)
  return fields
}

// Cisco IOS's header before its timestamp: the message counter ('52: ',
// `service sequence-numbers`, kept as MSGID), the device's name when
// `logging origin-id` adds it ('52: router1: '), and '*' (clock never set)
// or '.' (clock not synchronized) right before the timestamp. Returns where
// the timestamp (or the content) starts, or the reason when not allowed.
function readCiscoPrefix (ctx, fields, at, end) {
  const buf = ctx.buf
  let next = at
  const counterEnd = ciscoCounterEnd(buf, at, end)
  if (counterEnd > 0) next = counterEnd + 2
  let origin = -1
  if (counterEnd > 0) {
    let i = next
    while (i < end && buf[i] > SP && buf[i] < 0x7f && buf[i] !== COLON) i++
    if (i > next && buf[i] === COLON && buf[i + 1] === SP && stampStarts(ctx, i + 2, end)) origin = i
  }
  const marked = (origin > 0 ? origin + 2 : next)
  const marker = (buf[marked] === STAR || buf[marked] === DOT) && monthAt(ctx, marked + 1, end) > 0
  if (counterEnd < 0 && !marker) return at
  if (!deviate(ctx, CISCO)) return 'cisco'
  if (counterEnd > 0) fields.msgid = ctx.text.slice(at, counterEnd)
  if (origin > 0) fields.host = ctx.text.slice(next, origin)
  return marked + (marker ? 1 : 0)
}

/** After PRI, a Cisco message counter: the offset of its colon (digits, then ': '), else -1. */
function ciscoCounterEnd (buf, at, end) {
  let i = at
  while (i < end && i - at <= 10 && isDigit(buf[i])) i++
  return i > at && i - at <= 10 && i + 1 < end && buf[i] === COLON && buf[i + 1] === SP ? i : -1
}

// After a timestamp, Cisco's time zone: SP, 2-5 capital letters, ': '; the
// offset of its colon, else -1. Only after Cisco's counter or marker
// (`cisco`), or for UTC and GMT: else 'SSHD: msg' is a TAG, not a zone.
function ciscoZoneEnd (ctx, at, end, cisco) {
  const buf = ctx.buf
  if (buf[at] !== SP) return -1
  let i = at + 1
  while (i < end && i - at <= 6 && buf[i] >= 0x41 && buf[i] <= 0x5a) i++
  if (i - at - 1 < 2 || i - at - 1 > 5 || buf[i] !== COLON || buf[i + 1] !== SP) return -1
  const zone = ctx.text.slice(at + 1, i)
  if (!cisco && zone !== 'UTC' && zone !== 'GMT') return -1
  return deviate(ctx, CISCO) ? i : -1
}

function asUtc (local) {
  return new Date(Date.UTC(local.getFullYear(), local.getMonth(), local.getDate(), local.getHours(), local.getMinutes(), local.getSeconds(), local.getMilliseconds()))
}

function stampStarts (ctx, at, end) {
  const buf = ctx.buf
  return buf[at] === STAR || buf[at] === DOT || monthAt(ctx, at, end) > 0
}

// { date, end } (end after the timestamp), null when there is none, or a reason.
function readStamp3164 (ctx, at, end) {
  const buf = ctx.buf
  const month = monthAt(ctx, at, end)
  if (month === -2) return 'bsd-month-case'
  if (month > 0) return readBsdStamp(ctx, month, at + 3, end)
  if (!isDigit(buf[at]) || !isIsoStart(buf, at, end)) return null
  let stop = at
  while (stop < end && buf[stop] !== SP) stop++
  const date = readRfc3339(buf, at, stop, false)
  if (date === null) return 'bad-timestamp'
  return deviate(ctx, ISO) ? { date, end: stop } : 'iso-timestamp'
}

// 1-12 for a month abbreviation followed by SP, 0 for none, -2 when only its case is wrong and not allowed.
function monthAt (ctx, at, end) {
  const buf = ctx.buf
  if (at + 3 >= end || buf[at + 3] !== SP) return 0
  for (let m = 0; m < 12; m++) {
    const name = MONTHS[m]
    if (buf[at] === name.charCodeAt(0) && buf[at + 1] === name.charCodeAt(1) && buf[at + 2] === name.charCodeAt(2)) return m + 1
  }
  const lower = ctx.text.slice(at, at + 3).toLowerCase()
  for (let m = 0; m < 12; m++) {
    if (MONTHS[m].toLowerCase() === lower) return deviate(ctx, MONTH_CASE) ? m + 1 : -2
  }
  return 0
}

// After 'Mmm': SP day SP [YYYY SP] hh:mm:ss [.frac], then SP or end.
function readBsdStamp (ctx, month, at, end) {
  const buf = ctx.buf
  let i = at + 1
  let day
  if (buf[i] === SP && isDigit(buf[i + 1])) {
    day = buf[i + 1] - 0x30
    i += 2
  } else if (isDigit(buf[i]) && isDigit(buf[i + 1])) {
    day = digits(buf, i, 2)
    if (buf[i] === 0x30 && !deviate(ctx, DAY_ZERO)) return 'bsd-day-zero-padded'
    i += 2
  } else if (isDigit(buf[i]) && buf[i + 1] === SP) {
    if (!deviate(ctx, DAY_UNPADDED)) return 'bsd-day-unpadded'
    day = buf[i] - 0x30
    i += 1
  } else return null // no day: a month's name that begins the content ('May I …'), no timestamp (§4.3.3)
  if (buf[i] !== SP) return 'bad-timestamp'
  return readBsdTime(ctx, month, day, i + 1, end)
}

// [YYYY SP] hh:mm:ss [.frac], then SP or end: { date, end } (end after it), or a reason.
function readBsdTime (ctx, month, day, at, end) {
  const buf = ctx.buf
  let i = at
  let year = -1
  if (at + 4 < end && buf[at + 4] === SP && buf[at + 2] !== COLON) {
    year = digits(buf, at, 4)
    if (year < 0) return 'bad-timestamp'
    if (!deviate(ctx, BSD_YEAR)) return 'bsd-year'
    i += 5
  }
  if (i + 8 > end || buf[i + 2] !== COLON || buf[i + 5] !== COLON) return 'bad-timestamp'
  const hour = digits(buf, i, 2)
  const minute = digits(buf, i + 3, 2)
  const second = digits(buf, i + 6, 2)
  if ((hour | minute | second) < 0) return 'bad-timestamp'
  i += 8
  let ms = 0
  if (buf[i] === 0x2e && i < end) {
    const start = ++i
    while (i < end && isDigit(buf[i])) i++
    if (i === start || i - start > 6) return 'bad-timestamp'
    if (!deviate(ctx, BSD_FRACTION)) return 'bsd-fraction'
    ms = fractionMs(buf, start, i)
  }
  if (i < end && buf[i] !== SP && !(buf[i] === COLON && deviate(ctx, CISCO))) return 'bad-timestamp'
  const date = bsdDate(ctx, [year, month, day, hour, minute, second, ms])
  return date === null ? 'bad-timestamp' : { date, end: i }
}

// BSD timestamps are the sender's local time without a year; we read them
// as local time here (as rsyslog does) in `defaultYear`, else in the latest
// year that does not put them more than a day after receivedAt: a December
// line read on January 1st is last year's, a sender a few seconds ahead on
// New Year's Eve is next year's. Feb 29 may lie up to four years back.
function bsdDate (ctx, [year, month, day, hour, minute, second, ms]) {
  const valid = (y) => validTime(y, month, day, hour, minute, second) ? localDate(y, month, day, hour, minute, second, ms) : null
  if (year >= 0) return valid(year)
  const defaultYear = ctx.options && ctx.options.defaultYear
  if (defaultYear) return valid(defaultYear)
  const now = ctx.receivedAt instanceof Date && !Number.isNaN(ctx.receivedAt.getTime()) ? ctx.receivedAt : new Date()
  const limit = now.getTime() + DAY_MS
  for (let y = now.getFullYear() + 1; y >= now.getFullYear() - 4; y--) {
    const date = valid(y)
    if (date !== null && date.getTime() <= limit) return date
  }
  return null
}

// HOSTNAME SP after the timestamp. A word that is a TAG ('app:' or 'app[1]')
// means the sender left HOSTNAME out. Returns the offset of what follows, or a reason.
function readHost (ctx, fields, at, end) {
  const buf = ctx.buf
  let i = at
  let tagLike = false
  while (i < end && buf[i] !== SP) {
    const c = buf[i]
    if (c < SP || c >= 0x7f) return 'bad-hostname'
    if (c === OPEN || c === CLOSE || (c === COLON && (i + 1 === end || buf[i + 1] === SP))) tagLike = true
    i++
  }
  if (tagLike || i === at || at >= end) return deviate(ctx, NO_HOSTNAME) ? at : 'no-hostname'
  fields.host = ctx.text.slice(at, i)
  return i < end ? i + 1 : end
}

// TAG[PID]: — a TAG (1-48 PRINTUSASCII but '[', ']', ':') counts only when
// followed by a colon or a [PID]; the rest is MSG.
function readTag (ctx, fields, at, end) {
  const buf = ctx.buf
  let i = at
  while (i < end && i - at <= 48 && buf[i] > SP && buf[i] < 0x7f && buf[i] !== OPEN && buf[i] !== CLOSE && buf[i] !== COLON) i++
  const tagEnd = i
  let pidStart = -1
  let pidEnd = -1
  if (i > at && i - at <= 48 && buf[i] === OPEN && i < end) {
    pidStart = ++i
    while (i < end && i - pidStart <= 128 && buf[i] > SP && buf[i] < 0x7f && buf[i] !== CLOSE) i++
    pidEnd = i
    if (buf[i] !== CLOSE || i >= end || i - pidStart > 128) pidStart = -1
    else i++
  }
  const colon = i < end && buf[i] === COLON
  if (colon) i++
  const tagged = tagEnd > at && tagEnd - at <= 48 && (pidStart >= 0 || colon) && (i === end || buf[i] === SP)
  if (tagged) {
    fields.app = ctx.text.slice(at, tagEnd)
    fields.procid = pidStart >= 0 && pidEnd > pidStart ? ctx.text.slice(pidStart, pidEnd) : null
    at = i < end ? i + 1 : end
  }
  fields.message = utf8TextKept(ctx, at, end)
  fields.messageRaw = ctx.rawBytes
}

module.exports = { parse3164, ciscoCounterEnd }
