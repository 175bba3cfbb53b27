'use strict'

// Timestamps in syslog messages: RFC 3339 read from the bytes (strictly as
// RFC 5424 §6.2.3 wants, or in the forms RFC 3164 senders write), and the
// calendar arithmetic both formats need: digit runs, fractions, valid dates,
// UTC and local times for any year.

const { DASH, COLON, isDigit } = require('./syntax')

const DAY_MS = 86400000
const MONTH_DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]

// 'YYYY-' at buf[at]: an RFC 3339 timestamp in an RFC 3164 message, not a VERSION.
function isIsoStart (buf, at, end) {
  return at + 4 < end && isDigit(buf[at + 1]) && isDigit(buf[at + 2]) && isDigit(buf[at + 3]) && buf[at + 4] === DASH
}

/**
 * A Date for FULL-DATE "T" FULL-TIME in buf[at, end), or null. `strict`:
 * RFC 5424 §6.2.3 (1-6 fraction digits, offset required, upper-case T and Z);
 * otherwise the RFC 3339 forms 3164 senders write (9 digits, no offset: local).
 */
function readRfc3339 (buf, at, end, strict) {
  if (end - at < 19 || buf[at + 4] !== DASH || buf[at + 7] !== DASH || buf[at + 13] !== COLON || buf[at + 16] !== COLON) return null
  if (buf[at + 10] !== 0x54 && (strict || buf[at + 10] !== 0x74)) return null
  const year = digits(buf, at, 4)
  const month = digits(buf, at + 5, 2)
  const day = digits(buf, at + 8, 2)
  const hour = digits(buf, at + 11, 2)
  const minute = digits(buf, at + 14, 2)
  const second = digits(buf, at + 17, 2)
  if ((year | month | day | hour | minute | second) < 0 || !validTime(year, month, day, hour, minute, second)) return null
  let i = at + 19
  let ms = 0
  if (buf[i] === 0x2e) {
    const start = ++i
    while (i < end && isDigit(buf[i])) i++
    if (i === start || i - start > (strict ? 6 : 9)) return null
    ms = fractionMs(buf, start, i)
  }
  if (i === end && !strict) return localDate(year, month, day, hour, minute, second, ms)
  const offset = readOffset(buf, i, end, strict)
  if (offset === null) return null
  return new Date(utcMs(year, month, day, hour, minute, second, ms) - offset * 60000)
}

// The value of `count` decimal digits at buf[at], or -1 when one is not a digit.
function digits (buf, at, count) {
  let value = 0
  for (let i = at; i < at + count; i++) {
    const d = buf[i] - 0x30
    if (d < 0 || d > 9) return -1
    value = value * 10 + d
  }
  return value
}

// Milliseconds of the fraction digits in buf[start, end): the first three, zero-filled.
function fractionMs (buf, start, end) {
  let ms = 0
  for (let i = start; i < start + 3; i++) ms = ms * 10 + (i < end ? buf[i] - 0x30 : 0)
  return ms
}

// 'Z' or ±hh:mm to the end (3164 also 'z' and ±hhmm), in minutes east, or null.
function readOffset (buf, i, end, strict) {
  const c = buf[i]
  if (c === 0x5a || (!strict && c === 0x7a)) return i + 1 === end ? 0 : null
  if (c !== 0x2b && c !== DASH) return null
  const colon = end - i === 6 && buf[i + 3] === COLON
  if (!colon && (strict || end - i !== 5)) return null
  const hours = digits(buf, i + 1, 2)
  const minutes = digits(buf, colon ? i + 4 : i + 3, 2)
  if (hours < 0 || minutes < 0 || hours > 23 || minutes > 59) return null
  return (c === DASH ? -1 : 1) * (hours * 60 + minutes)
}

function validTime (year, month, day, hour, minute, second) {
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return false
  return day <= MONTH_DAYS[month - 1] || (month === 2 && day === 29 && isLeap(year))
}

function isLeap (year) {
  return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0)
}

// Milliseconds since the epoch for a proleptic Gregorian UTC time, any year
// (Date.UTC would read years 0-99 as 1900-1999).
function utcMs (year, month, day, hour, minute, second, ms) {
  const y = month <= 2 ? year - 1 : year
  const era = Math.floor(y / 400)
  const yoe = y - era * 400
  const doy = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1
  const days = era * 146097 + yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy - 719468
  return days * DAY_MS + hour * 3600000 + minute * 60000 + second * 1000 + ms
}

// A Date for a local time, any year (new Date would read years 0-99 as 1900-1999).
function localDate (year, month, day, hour, minute, second, ms) {
  const date = new Date(year, month - 1, day, hour, minute, second, ms)
  if (year < 100) date.setFullYear(year)
  return date
}

module.exports = { DAY_MS, isIsoStart, readRfc3339, digits, fractionMs, validTime, localDate }
