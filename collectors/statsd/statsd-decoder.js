'use strict'

const DecodeError = require('../../exceptions/decode-error')

/**
 * One StatsD line (the master splits datagrams into lines):
 * `name:value|type[|@rate]`, type `c` (counter), `ms` (timer) or `g`
 * (gauge); the rate, in (0, 1], says the sender sent one in 1/rate. A
 * gauge value with a sign (`+3`, `-3`) is a change to the gauge in StatsD,
 * which depends on every earlier line having been applied in order: refused
 * (`gaugeDelta`) rather than stored as a value it is not. Refusals name
 * their reason: badLine, badValue, badRate, unsupportedType, gaugeDelta.
 */
const LINE = /^([^\s:|@]{1,255}):([^|]*)\|([a-z]+)(?:\|@([^|]*))?$/
const TYPES = Object.freeze(['c', 'ms', 'g'])
const NUMBER = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/

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
  return { name, type, value: Number(raw), rate }
}

/** The metric name of a line's bytes, for affinity in the master (no decode). */
function statsdName (data) {
  const colon = data.indexOf(0x3a)
  return data.latin1Slice(0, colon < 0 ? data.length : colon)
}

module.exports = { decodeStatsdLine, statsdName, TYPES }
