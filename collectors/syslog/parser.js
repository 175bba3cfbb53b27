'use strict'

const FACILITIES = ['kern', 'user', 'mail', 'daemon', 'auth', 'syslog', 'lpr', 'news', 'uucp', 'cron', 'authpriv', 'ftp',
  'ntp', 'security', 'console', 'solaris-cron', 'local0', 'local1', 'local2', 'local3', 'local4', 'local5', 'local6', 'local7']
const SEVERITIES = ['emerg', 'alert', 'crit', 'err', 'warning', 'notice', 'info', 'debug']
const MONTHS = { Jan: 0, Feb: 1, Mar: 2, Apr: 3, May: 4, Jun: 5, Jul: 6, Aug: 7, Sep: 8, Oct: 9, Nov: 10, Dec: 11 }
const BSD_TIME = /^([A-Z][a-z]{2}) {1,2}(\d{1,2}) (\d{2}):(\d{2}):(\d{2})(?: |$)/
const ISO_TIME = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?)(?: |$)/
const TAG = /^([^\s[\]:]{1,64})(?:\[([^\]]*)\])?:(?: |$)/

/**
 * Parses one syslog message (RFC 5424, or RFC 3164 and its common
 * variants). Never throws: what it cannot parse comes back as
 * `{ format: 'raw', message, receivedAt, error }` to be kept and counted.
 */
function parseSyslog (input, { receivedAt = new Date(), defaultYear } = {}) {
  const text = (Buffer.isBuffer(input) ? input.toString('utf8') : String(input)).replace(/[\r\n\0]+$/, '')
  const pri = /^<(\d{1,3})>/.exec(text)
  if (!pri) return raw(text, receivedAt, 'no-pri')
  const value = Number(pri[1])
  if (value > 191) return raw(text, receivedAt, 'bad-pri')
  const base = {
    facility: value >> 3,
    severity: value & 7,
    facilityName: FACILITIES[value >> 3],
    severityName: SEVERITIES[value & 7],
    receivedAt
  }
  const rest = text.slice(pri[0].length)
  if (/^[1-9]\d? /.test(rest)) return parse5424(rest, base, text)
  return parse3164(rest, base, receivedAt, defaultYear)
}

function raw (text, receivedAt, error) {
  return { format: 'raw', message: text, receivedAt, error }
}

// VERSION TIMESTAMP HOSTNAME APP-NAME PROCID MSGID STRUCTURED-DATA [MSG]
function parse5424 (rest, base, text) {
  const fields = []
  let offset = 0
  for (let i = 0; i < 6; i++) {
    const space = rest.indexOf(' ', offset)
    if (space === -1) return raw(text, base.receivedAt, 'truncated-header')
    fields.push(rest.slice(offset, space))
    offset = space + 1
  }
  const [, stamp, host, app, procid, msgid] = fields
  const timestamp = stamp === '-' ? null : new Date(stamp)
  if (timestamp && Number.isNaN(timestamp.getTime())) return raw(text, base.receivedAt, 'bad-timestamp')
  const sd = parseStructuredData(rest, offset)
  if (!sd) return raw(text, base.receivedAt, 'bad-structured-data')
  let message = rest.slice(sd.end).replace(/^ /, '')
  if (message.charCodeAt(0) === 0xfeff) message = message.slice(1)
  return { format: '5424', ...base, timestamp, host: nil(host), app: nil(app), procid: nil(procid), msgid: nil(msgid), structuredData: sd.data, message }
}

function nil (value) {
  return value === '-' ? null : value
}

/** `-` or one or more `[id name="value" …]`; returns `{ data, end }` or null. */
function parseStructuredData (text, offset) {
  if (text[offset] === '-') return { data: null, end: offset + 1 }
  const data = {}
  while (text[offset] === '[') {
    const element = parseElement(text, offset + 1)
    if (!element) return null
    data[element.id] = element.params
    offset = element.end
  }
  return Object.keys(data).length > 0 ? { data, end: offset } : null
}

function parseElement (text, offset) {
  const idEnd = text.slice(offset).search(/[ \]]/)
  if (idEnd <= 0) return null
  const id = text.slice(offset, offset + idEnd)
  const params = {}
  offset += idEnd
  while (text[offset] === ' ') {
    const param = /^ ([^= \]"]{1,32})="/.exec(text.slice(offset, offset + 40))
    if (!param) return null
    const value = readQuoted(text, offset + param[0].length)
    if (!value) return null
    params[param[1]] = value.value
    offset = value.end
  }
  return text[offset] === ']' ? { id, params, end: offset + 1 } : null
}

// A PARAM-VALUE: `\"`, `\\` and `\]` are escapes; ends at an unescaped quote.
function readQuoted (text, offset) {
  let value = ''
  for (let i = offset; i < text.length; i++) {
    const c = text[i]
    if (c === '"') return { value, end: i + 1 }
    if (c === '\\' && (text[i + 1] === '"' || text[i + 1] === '\\' || text[i + 1] === ']')) {
      value += text[++i]
      continue
    }
    value += c
  }
  return null
}

// TIMESTAMP HOSTNAME TAG[PID]: MSG, where the host may be missing and the
// timestamp may be ISO 8601 (a common variant).
function parse3164 (rest, base, receivedAt, defaultYear) {
  let timestamp = null
  const bsd = BSD_TIME.exec(rest)
  const iso = bsd ? null : ISO_TIME.exec(rest)
  if (bsd) timestamp = bsdDate(bsd, receivedAt, defaultYear)
  else if (iso) timestamp = new Date(iso[1])
  if (timestamp && Number.isNaN(timestamp.getTime())) timestamp = null
  let body = bsd ? rest.slice(bsd[0].length) : iso ? rest.slice(iso[0].length) : rest
  let host = null
  if ((bsd || iso) && !TAG.test(body)) {
    const space = body.indexOf(' ')
    host = space === -1 ? body : body.slice(0, space)
    body = space === -1 ? '' : body.slice(space + 1)
  }
  const tag = TAG.exec(body)
  return {
    format: '3164',
    ...base,
    timestamp,
    host: host || null,
    app: tag ? tag[1] : null,
    procid: tag && tag[2] !== undefined ? tag[2] : null,
    msgid: null,
    structuredData: null,
    message: tag ? body.slice(tag[0].length) : body
  }
}

// BSD timestamps have no year: this year, or last year for a date that
// would otherwise lie more than a day in the future (December logs in January).
function bsdDate (m, receivedAt, defaultYear) {
  const month = MONTHS[m[1]]
  if (month === undefined) return null
  let year = defaultYear || receivedAt.getFullYear()
  const make = (y) => new Date(y, month, Number(m[2]), Number(m[3]), Number(m[4]), Number(m[5]))
  let date = make(year)
  if (!defaultYear && date - receivedAt > 86400000) date = make(--year)
  return date
}

module.exports = { parseSyslog, FACILITIES, SEVERITIES }
