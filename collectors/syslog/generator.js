'use strict'

const { FACILITIES, SEVERITIES } = require('./parser')

const MONTH_NAMES = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec']

/**
 * One syslog message (RFC 5424 or RFC 3164) for the traffic simulator and
 * tests; `parseSyslog` reads back what it writes. Facility and severity may
 * be numbers or names.
 */
function generateSyslog ({ format = '5424', host = 'host', app = 'app', procid, msgid, severity = 'info', facility = 'user', message = '', structuredData, date = new Date() } = {}) {
  const pri = `<${code(facility, FACILITIES) * 8 + code(severity, SEVERITIES)}>`
  if (format === '3164') return `${pri}${bsdTime(date)} ${host} ${app}${procid ? `[${procid}]` : ''}: ${message}`
  const sd = structuredData ? formatStructuredData(structuredData) : '-'
  return `${pri}1 ${date.toISOString()} ${host || '-'} ${app || '-'} ${procid || '-'} ${msgid || '-'} ${sd}${message ? ' ' + message : ''}`
}

function code (value, names) {
  const index = typeof value === 'number' ? value : names.indexOf(value)
  if (!Number.isInteger(index) || index < 0 || index >= names.length) throw new RangeError(`unknown syslog value ${value}`)
  return index
}

function bsdTime (d) {
  const pad = (n) => String(n).padStart(2, '0')
  return `${MONTH_NAMES[d.getMonth()]} ${String(d.getDate()).padStart(2, ' ')} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`
}

function formatStructuredData (data) {
  return Object.entries(data).map(([id, params]) =>
    `[${id}${Object.entries(params).map(([k, v]) => ` ${k}="${String(v).replace(/["\\\]]/g, '\\$&')}"`).join('')}]`).join('')
}

module.exports = { generateSyslog }
