'use strict'

// Syslog message parser: RFC 5424 (strict grammar) and RFC 3164 (BSD syslog,
// with the deviations real senders produce, each named and flagged). Pure
// and total: it never throws on input; what the grammar refuses comes back
// as a 'raw' record with a reason token, for the collector to store and
// count. It works on the bytes: header fields are sliced as ASCII, only MSG
// and PARAM-VALUEs are decoded as UTF-8, and bytes that are not valid UTF-8
// are kept beside the decoded text, never replaced silently.
//
// This file is the entry: options, PRI, which reader, the record. The
// readers are rfc5424.js and rfc3164.js; timestamps and calendar arithmetic
// are in syslog-time.js, UTF-8 decoding in utf8-text.js, the byte values
// and deviation bits they share in syntax.js.

const { isUtf8 } = require('node:buffer')
const { InvalidOptionError } = require('../../exceptions')
const { DEVIATIONS, BIT, LT, GT } = require('./syntax')
const { isIsoStart } = require('./syslog-time')
const { utf8Text } = require('./utf8-text')
const { parse5424 } = require('./rfc5424')
const { parse3164, ciscoCounterEnd } = require('./rfc3164')

/** Facility names by code (RFC 5424 §6.2.1; names as rsyslog spells them). */
const FACILITIES = Object.freeze(['kern', 'user', 'mail', 'daemon', 'auth', 'syslog', 'lpr', 'news', 'uucp', 'cron',
  'authpriv', 'ftp', 'ntp', 'security', 'console', 'solaris-cron',
  'local0', 'local1', 'local2', 'local3', 'local4', 'local5', 'local6', 'local7'])

/** Severity names by code (RFC 5424 §6.2.1; names as `logger -p` takes them). */
const SEVERITIES = Object.freeze(['emerg', 'alert', 'crit', 'err', 'warning', 'notice', 'info', 'debug'])

/** The deviations allowed unless `strict` or `lenient` says otherwise: RFC 3164's. */
const DEFAULT_LENIENT = Object.freeze(DEVIATIONS.filter((name) => name !== 'duplicate-sd-id'))

/** Every `error` token a raw record can carry, to preset counters. */
const REASONS = Object.freeze(['bad-input', 'empty', 'no-pri', 'bad-pri', 'pri-leading-zero', 'bad-version',
  'unsupported-version', 'truncated-header', 'bad-timestamp', 'bad-hostname', 'bad-app-name', 'bad-procid',
  'bad-msgid', 'bad-structured-data', 'unescaped-bracket', ...DEVIATIONS])

const DEFAULT_MASK = DEFAULT_LENIENT.reduce((mask, name) => mask | BIT[name], 0)

/**
 * Parses one syslog message.
 * @param {Buffer|Uint8Array|string} input one message (a datagram or a TCP frame);
 *   a trailing CR/LF/NUL run is stripped
 * @param {object} [options]
 * @param {Date} [options.receivedAt=new Date()] copied into the record; also
 *   picks the year of RFC 3164 timestamps (the latest not a day past it)
 * @param {number} [options.defaultYear] year for RFC 3164 timestamps instead
 * @param {boolean} [options.keepRaw=false] add `raw`, the text as received
 *   (and `rawBytes` when it is not valid UTF-8)
 * @param {boolean} [options.strict=false] allow no deviation at all
 * @param {Iterable<string>} [options.lenient=DEFAULT_LENIENT] the DEVIATIONS to accept
 * @returns {object} see index.d.ts SyslogRecord
 * @throws {InvalidOptionError} only for an unknown name in `lenient`
 */
function parseSyslog (input, options) {
  const receivedAt = (options && options.receivedAt) || new Date()
  const buf = toBuffer(input)
  // The parse state the readers share: the bytes and their latin1 `text`, the
  // deviations `allowed` and taken, what decoding found, a refusal's reason.
  const ctx = { buf, receivedAt, options, allowed: allowedMask(options), deviations: 0, invalidUtf8: false, rawBytes: undefined, sdOrdered: false, sdMap: null, lastParam: '', nameEncoded: false, reason: '', text: '' }
  const record = buf === null ? rawRecord(ctx, 0, 0, 'bad-input') : parseBytes(ctx, trimmedEnd(buf))
  if (options && options.keepRaw) keepRaw(record, input, buf)
  return record
}

// A worker passes the same `lenient` list with every message: its mask is
// worked out once per list.
const masks = new WeakMap()

function allowedMask (options) {
  if (!options) return DEFAULT_MASK
  if (options.strict) return 0
  const lenient = options.lenient
  if (lenient === undefined) return DEFAULT_MASK
  const known = typeof lenient === 'object' && lenient !== null ? masks.get(lenient) : undefined
  if (known !== undefined) return known
  let mask = 0
  for (const name of lenient) {
    if (!BIT[name]) throw new InvalidOptionError('lenient', name, `must list only ${DEVIATIONS.join(', ')}`)
    mask |= BIT[name]
  }
  if (typeof lenient === 'object' && lenient !== null) masks.set(lenient, mask)
  return mask
}

function toBuffer (input) {
  if (Buffer.isBuffer(input)) return input
  if (typeof input === 'string') return Buffer.from(input, 'utf8')
  if (input instanceof Uint8Array) return Buffer.from(input.buffer, input.byteOffset, input.byteLength)
  return null
}

function trimmedEnd (buf) {
  let end = buf.length
  while (end > 0 && (buf[end - 1] === 0x0a || buf[end - 1] === 0x0d || buf[end - 1] === 0)) end--
  return end
}

function keepRaw (record, input, buf) {
  if (buf === null) record.raw = ''
  else if (typeof input === 'string') record.raw = input
  else {
    record.raw = buf.toString('utf8')
    if (!isUtf8(buf)) record.rawBytes = Buffer.from(buf)
  }
}

// PRI, then RFC 5424 when a VERSION digit follows (not the 'YYYY-' of an
// RFC 3339 timestamp, nor Cisco's message counter '52: '), else RFC 3164.
function parseBytes (ctx, end) {
  const buf = ctx.buf
  if (end === 0) return rawRecord(ctx, 0, end, 'empty')
  if (buf[0] !== LT) return rawRecord(ctx, 0, end, 'no-pri')
  const pri = readPri(buf, end)
  if (pri < 0) return rawRecord(ctx, 0, end, pri === -2 ? 'pri-leading-zero' : 'bad-pri')
  const at = pri >> 16
  const value = pri & 0xff
  ctx.text = buf.latin1Slice(0, end)
  const c = buf[at]
  const looks5424 = c >= 0x31 && c <= 0x39 && !isIsoStart(buf, at, end) && ciscoCounterEnd(buf, at, end) < 0
  const reason = looks5424 ? parse5424(ctx, at, end) : parse3164(ctx, at, end)
  if (typeof reason === 'string') return rawRecord(ctx, 0, end, reason)
  return finish(ctx, value, reason)
}

// `(offset after '>') << 16 | PRIVAL`, -1 when malformed, -2 for a leading zero.
function readPri (buf, end) {
  let value = 0
  let i = 1
  for (; i < end && i <= 4 && buf[i] !== GT; i++) {
    const d = buf[i] - 0x30
    if (d < 0 || d > 9) return -1
    value = value * 10 + d
  }
  if (i === 1 || i > 4 || i >= end || value > 191) return -1
  if (buf[1] === 0x30 && i > 2) return -2
  return ((i + 1) << 16) | value
}

function finish (ctx, pri, fields) {
  const facility = pri >> 3
  const severity = pri & 7
  const record = {
    format: fields.format,
    facility,
    severity,
    facilityName: FACILITIES[facility],
    severityName: SEVERITIES[severity],
    timestamp: fields.timestamp,
    host: fields.host,
    app: fields.app,
    procid: fields.procid,
    msgid: fields.msgid,
    structuredData: fields.structuredData,
    message: fields.message,
    receivedAt: ctx.receivedAt
  }
  // Only where they say more than timestamp and structuredData: every stored
  // document carried both before, 60 % larger, and the database's CPU per
  // message rose by half (benchmarks/syslog-e2e.js).
  if (fields.timestampText !== null) record.timestampText = fields.timestampText
  if (fields.sdElements !== null) record.sdElements = fields.sdElements
  if (fields.messageRaw !== undefined) record.messageRaw = fields.messageRaw
  if (ctx.invalidUtf8) record.invalidUtf8 = true
  if (ctx.deviations !== 0) record.deviations = DEVIATIONS.filter((name) => ctx.deviations & BIT[name])
  return record
}

function rawRecord (ctx, start, end, error) {
  const record = { format: 'raw', message: '', receivedAt: ctx.receivedAt, error }
  if (ctx.buf === null) return record
  const text = utf8Text(ctx.buf, start, end)
  record.message = text
  if (text.indexOf('\uFFFD') !== -1 && !isUtf8(ctx.buf.subarray(start, end))) {
    record.messageRaw = Buffer.from(ctx.buf.subarray(start, end))
    record.invalidUtf8 = true
  }
  return record
}

module.exports = { parseSyslog, FACILITIES, SEVERITIES, REASONS, DEVIATIONS, DEFAULT_LENIENT }
