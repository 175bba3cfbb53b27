'use strict'

const { isUtf8 } = require('node:buffer')
const DecodeError = require('../../exceptions/decode-error')

/**
 * One StatsD line (the master splits datagrams into lines):
 * `name:value|type[|@rate]`, type `c` (counter), `ms` (timer) or `g`
 * (gauge); the rate, in (0, 1], says the sender sent one in 1/rate. A
 * gauge value with a sign (`+3`, `-3`) is a change to the gauge in StatsD,
 * which depends on every earlier line having been applied in order: refused
 * (`gaugeDelta`) rather than stored as a value it is not. A number beyond
 * the bounds below is refused (`valueRange`). As in etsy statsd, a counter
 * line adds value / rate to its sum; a timer line adds its value (what was
 * measured) to its sum, min and max, and 1 / rate to its count (the lines
 * the sender sampled it from). Refusals name their reason:
 * badLine, badValue, badRate, unsupportedType, gaugeDelta, valueRange.
 */
// A name holds no white space, `:`, `|`, `@`, nor a control character (a
// NUL, an ESC: two names apart only by one, or one that writes to an
// operator's terminal).
const LINE = /^([^\s:|@\p{Cc}]{1,255}):([^|]*)\|([a-z]+)(?:\|@([^|]*))?$/u
const TYPES = Object.freeze(['c', 'ms', 'g'])
const NUMBER = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/

// A sender writes any number (1e400 is Infinity, and Infinity - Infinity a
// NaN that a sum never leaves), so what is stored is bounded. A gauge's value
// is stored as it came ($min, $max, last): any integer up to 2^53 - 1 is
// exact. What one counter or timer line adds to its minute's `sum` (a
// counter's value / rate, a timer's value) or a timer's `count` (1 / rate)
// is at most 2^32, a 32-bit counter's range (4 GiB of bytes, 49 days in
// ms): a minute's sum of 2^21 lines of one metric at the bound (35,000 a
// second, each of 4 GiB), far beyond a real minute, stays within 2^53 and
// is always finite. It is exact while every line adds an integer; a
// fraction (`.5|c`, `1|c|@0.3`, a timer's 1 / 0.3) is added as a double,
// rounded as doubles are. A value too small for a double (`1e-400`) is 0.
const MAX_VALUE = Number.MAX_SAFE_INTEGER
const MAX_SUMMED = 2 ** 32

/**
 * A line's bytes: refused whole (badLine) when they are not UTF-8, which
 * decoding would replace with U+FFFD, making names whose bytes differ one.
 */
function decodeStatsdBytes (data) {
  if (!isUtf8(data)) throw new DecodeError('badLine', `not UTF-8: ${JSON.stringify(data.latin1Slice(0, Math.min(data.length, 80)))}`)
  return decodeStatsdLine(data.toString('utf8'))
}

/** @returns {{ name: string, type: 'c'|'ms'|'g', value: number, rate: number }} */
function decodeStatsdLine (text) {
  const m = LINE.exec(text)
  if (!m) throw new DecodeError('badLine', `not a StatsD line (name:value|type[|@rate]): ${JSON.stringify(text.slice(0, 80))}`)
  const [, name, raw, type, rawRate] = m
  if (!TYPES.includes(type)) throw new DecodeError('unsupportedType', `StatsD type ${type} of ${name} is not taken (c, ms, g)`)
  if (!NUMBER.test(raw)) throw new DecodeError('badValue', `${name}: ${JSON.stringify(raw)} is not a number`)
  if (type === 'g' && (raw[0] === '+' || raw[0] === '-')) throw new DecodeError('gaugeDelta', `${name}: a signed gauge (${raw}) is a change, not a value: not stored`)
  const rate = rawRate === undefined ? 1 : Number(rawRate)
  if (rawRate !== undefined && (!NUMBER.test(rawRate) || !(rate > 0 && rate <= 1))) throw new DecodeError('badRate', `${name}: sample rate ${JSON.stringify(rawRate)} is not in (0, 1]`)
  const value = Number(raw)
  if (!(Math.abs(value) <= MAX_VALUE)) throw new DecodeError('valueRange', `${name}: ${raw} is beyond ±2^53 - 1: not stored`)
  // What the line adds: a counter's value / rate to its sum; a timer's value to its sum and 1 / rate to its count (etsy statsd's).
  const added = type === 'c' ? value / rate : type === 'ms' ? value : 0
  if (!(Math.abs(added) <= MAX_SUMMED)) {
    throw new DecodeError('valueRange', `${name}: ${raw}${type === 'c' && rawRate !== undefined ? ` at rate ${rawRate}` : ''} adds ${added} to the sum, beyond ±2^32 a line: not stored`)
  }
  if (type === 'ms' && !(1 / rate <= MAX_SUMMED)) throw new DecodeError('valueRange', `${name}: a timer at rate ${rawRate} counts ${1 / rate} lines, beyond 2^32 a line: not stored`)
  return { name, type, value, rate }
}

/** The metric name of a line's bytes, for affinity in the master (no decode). */
function statsdName (data) {
  const colon = data.indexOf(0x3a)
  return data.latin1Slice(0, colon < 0 ? data.length : colon)
}

module.exports = { decodeStatsdLine, decodeStatsdBytes, statsdName, TYPES, MAX_VALUE, MAX_SUMMED }
