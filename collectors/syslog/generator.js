'use strict'

// Builds syslog messages for the traffic simulator and tests. What it writes,
// parseSyslog reads back field for field (RFC 3164 keeps whole seconds, and
// its year only through parseSyslog's `defaultYear` or year rule).

const { InvalidOptionError } = require('../../exceptions')
const { FACILITIES, SEVERITIES } = require('./parser')

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec']
const SD_NAME = /^[!#-<>-\\^-~]{1,32}$/ // PRINTUSASCII except '=', SP, ']', '"'
const PRINTABLE = /^[!-~]+$/
// RFC 5424 §6.2 field lengths; a 3164 TAG has no colon, bracket or space.
const LIMITS = { host: 255, app: 48, procid: 128, msgid: 32 }
const TAG = /^[^\s[\]:]{1,48}$/

/**
 * One syslog message as text, without framing (no trailing newline).
 * @param {object} [options]
 * @param {'5424'|'3164'} [options.format='5424']
 * @param {string} [options.host='host'] HOSTNAME; '' or null writes '-' (5424 only)
 * @param {string} [options.app='app'] APP-NAME, or the 3164 TAG
 * @param {string} [options.procid] PROCID, or the 3164 `[PID]`
 * @param {string} [options.msgid] MSGID (5424 only)
 * @param {number|string} [options.severity='info'] code 0-7 or a name of SEVERITIES
 * @param {number|string} [options.facility='user'] code 0-23 or a name of FACILITIES
 * @param {string} [options.message=''] MSG
 * @param {Object<string, Object<string, string|string[]>>} [options.structuredData]
 *   `{ sdId: { param: value } }` (5424 only); an array value repeats the param.
 *   Names as sent: the parser's map encodes `%` `.` `$` in them (sd-names.js)
 * @param {Date} [options.date=new Date()] 5424: written in UTC with milliseconds;
 *   3164: local time, whole seconds
 * @param {boolean} [options.bom=false] 5424: mark MSG as UTF-8 with a BOM
 * @returns {string}
 * @throws {InvalidOptionError} on a value the format cannot carry
 */
function generateSyslog (options = {}) {
  const { format = '5424', severity = 'info', facility = 'user', date = new Date(), message = '' } = options
  if (!(date instanceof Date) || Number.isNaN(date.getTime())) throw new InvalidOptionError('date', date, 'must be a valid Date')
  if (typeof message !== 'string') throw new InvalidOptionError('message', message, 'must be a string')
  const pri = `<${code('facility', facility, FACILITIES) * 8 + code('severity', severity, SEVERITIES)}>`
  if (format === '5424') return pri + rfc5424(options, date, message)
  if (format === '3164') return pri + rfc3164(options, date, message)
  throw new InvalidOptionError('format', format, "must be '5424' or '3164'")
}

function code (option, value, names) {
  const index = typeof value === 'string' ? names.indexOf(value) : value
  if (!Number.isInteger(index) || index < 0 || index >= names.length) {
    throw new InvalidOptionError(option, value, `must be 0-${names.length - 1} or one of ${names.join(', ')}`)
  }
  return index
}

// VERSION TIMESTAMP HOSTNAME APP-NAME PROCID MSGID SD [SP MSG]
function rfc5424 ({ host = 'host', app = 'app', procid, msgid, structuredData, bom = false }, date, message) {
  const header = [date.toISOString(), headerField('host', host), headerField('app', app),
    headerField('procid', procid), headerField('msgid', msgid)]
  const sd = structuredData == null ? '-' : formatStructuredData(structuredData)
  const msg = message === '' && !bom ? '' : ` ${bom ? '\uFEFF' : ''}${message}`
  return `1 ${header.join(' ')} ${sd}${msg}`
}

function headerField (name, value) {
  if (value === undefined || value === null || value === '') return '-'
  const text = String(value)
  if (!PRINTABLE.test(text) || text.length > LIMITS[name]) {
    throw new InvalidOptionError(name, value, `must be 1-${LIMITS[name]} printable ASCII characters without spaces`)
  }
  return text
}

function formatStructuredData (data) {
  if (typeof data !== 'object' || Array.isArray(data)) throw new InvalidOptionError('structuredData', data, 'must be an object of SD-ID → params')
  const ids = Object.keys(data)
  if (ids.length === 0) return '-'
  return ids.map((id) => `[${sdName(id)}${formatParams(data[id])}]`).join('')
}

function formatParams (params) {
  if (params === null || typeof params !== 'object') throw new InvalidOptionError('structuredData', params, 'params must be an object')
  return Object.entries(params).flatMap(([name, value]) =>
    [].concat(value).map((v) => ` ${sdName(name)}="${escapeValue(String(v))}"`)).join('')
}

function sdName (name) {
  if (!SD_NAME.test(name)) throw new InvalidOptionError('structuredData', name, 'names must be 1-32 printable ASCII characters without = ] " or space')
  return name
}

// RFC 5424 §6.3.3: '"', '\' and ']' are escaped inside PARAM-VALUE.
function escapeValue (value) {
  return value.replace(/["\\\]]/g, '\\$&')
}

// TIMESTAMP SP HOSTNAME SP TAG[PID]: MSG — as util-linux logger --rfc3164 writes it.
function rfc3164 ({ host = 'host', app = 'app', procid, msgid, structuredData }, date, message) {
  if (structuredData != null) throw new InvalidOptionError('structuredData', structuredData, 'cannot be carried by RFC 3164')
  if (msgid != null) throw new InvalidOptionError('msgid', msgid, 'cannot be carried by RFC 3164')
  if (typeof host !== 'string' || !PRINTABLE.test(host)) throw new InvalidOptionError('host', host, 'must be printable ASCII without spaces')
  if (typeof app !== 'string' || !TAG.test(app)) throw new InvalidOptionError('app', app, 'must be 1-48 characters without space, colon or brackets')
  const pid = procid == null || procid === '' ? '' : `[${pid3164(procid)}]`
  return `${bsdTime(date)} ${host} ${app}${pid}: ${message}`
}

function pid3164 (procid) {
  const text = headerField('procid', procid)
  if (text.includes(']')) throw new InvalidOptionError('procid', procid, "must not contain ']' in RFC 3164")
  return text
}

function bsdTime (d) {
  const two = (n) => String(n).padStart(2, '0')
  return `${MONTHS[d.getMonth()]} ${String(d.getDate()).padStart(2, ' ')} ${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`
}

module.exports = { generateSyslog }
