'use strict'

// The StatsD decoder against numbers a sender chooses: nothing it takes can
// make a stored sum, minimum or maximum non-finite or an inexact integer.

const test = require('node:test')
const assert = require('node:assert/strict')
const { decodeStatsdLine, MAX_VALUE, MAX_SUMMED } = require('../../collectors/statsd/statsd-decoder')

const reasonOf = (line) => {
  try {
    decodeStatsdLine(line)
    return null
  } catch (err) {
    return err.reason
  }
}

test('statsd decoder: a value or rate that would store Infinity or NaN is refused as valueRange, by name', () => {
  assert.equal(reasonOf('x:1e400|c'), 'valueRange', 'a counter of 1e400 (Infinity)')
  assert.equal(reasonOf('x:-1e400|c'), 'valueRange')
  assert.equal(reasonOf('x:1|c|@1e-320'), 'valueRange', 'a rate so small that value / rate is Infinity')
  assert.equal(reasonOf('x:1e400|ms'), 'valueRange')
  assert.equal(reasonOf('x:1e400|g'), 'valueRange', 'a gauge of 1e400')
  assert.equal(reasonOf('x:-1e400|g'), 'gaugeDelta', 'a signed gauge is a change, whatever its size')
})

test('statsd decoder: the bounds are ±2^53 - 1 for a value and ±2^32 for what one line adds to a sum (value / rate)', () => {
  assert.equal(MAX_VALUE, Number.MAX_SAFE_INTEGER)
  assert.equal(MAX_SUMMED, 2 ** 32)
  assert.equal(decodeStatsdLine(`disk.free:${MAX_VALUE}|g`).value, MAX_VALUE, 'a gauge up to 2^53 - 1, exact')
  assert.equal(reasonOf(`disk.free:${MAX_VALUE + 2}|g`), 'valueRange')
  assert.equal(decodeStatsdLine(`bytes:${MAX_SUMMED}|c`).value, MAX_SUMMED)
  assert.equal(reasonOf(`bytes:${MAX_SUMMED + 1}|c`), 'valueRange')
  assert.equal(reasonOf(`bytes:-${MAX_SUMMED + 1}|c`), 'valueRange')
  assert.equal(reasonOf(`took:${MAX_SUMMED + 1}|ms`), 'valueRange', 'a timer value is summed too')
  // A timer adds its value to the sum and 1 / rate to its count (etsy statsd), not value / rate (QA: 500000000|ms|@0.1 was refused).
  assert.equal(decodeStatsdLine(`took:${MAX_SUMMED}|ms|@0.1`).value, MAX_SUMMED, 'a sampled timer at the bound of its value')
  assert.equal(decodeStatsdLine(`took:1|ms|@${1 / MAX_SUMMED}`).rate, 1 / MAX_SUMMED, 'counting 2^32 lines, at the bound')
  assert.equal(reasonOf(`took:1|ms|@${0.5 / MAX_SUMMED}`), 'valueRange', 'counting 2^33 lines, beyond it')
  assert.equal(reasonOf('took:1|ms|@1e-320'), 'valueRange', 'a count of Infinity')
  assert.equal(decodeStatsdLine(`bytes:${MAX_SUMMED / 1000}|c|@0.001`).rate, 0.001, 'value / rate at the bound')
  assert.equal(reasonOf(`bytes:${MAX_SUMMED / 1000 + 1}|c|@0.001`), 'valueRange', 'value / rate beyond it')
  assert.equal(decodeStatsdLine('x:0|c|@1e-320').value, 0, 'nothing added, whatever the rate')
  assert.equal(decodeStatsdLine('x:1e-400|c').value, 0, 'an underflow is 0, finite')
})

test('statsd decoder: a refusal says which number and which bound', () => {
  assert.throws(() => decodeStatsdLine('x:1|c|@1e-320'), (err) => err.reason === 'valueRange' && /x: 1 at rate 1e-320 adds Infinity/.test(err.message) && /2\^32/.test(err.message))
  assert.throws(() => decodeStatsdLine('t:1|ms|@1e-12'), (err) => err.reason === 'valueRange' && /t: a timer at rate 1e-12 counts 1000000000000 lines, beyond 2\^32/.test(err.message))
  assert.throws(() => decodeStatsdLine('g:1e400|g'), (err) => err.reason === 'valueRange' && /g: 1e400 is beyond ±2\^53 - 1/.test(err.message))
})

// Bytes that are not UTF-8 were decoded with U+FFFD in their place, so
// names whose bytes differ became one metric; a NUL or an ESC was taken in
// a name (QA).
test('statsd decoder: a line that is not UTF-8 is refused as badLine, not stored under U+FFFD; a name with a control character too; other UTF-8 names are taken', () => {
  const { decodeStatsdBytes } = require('../../collectors/statsd/statsd-decoder')
  const reason = (bytes) => { try { decodeStatsdBytes(bytes); return null } catch (err) { return err.reason } }
  assert.equal(reason(Buffer.from('b.bad\xff:1|c', 'latin1')), 'badLine')
  assert.equal(reason(Buffer.from('b.bad\xfe:1|c', 'latin1')), 'badLine', 'another byte: not the same metric, not stored either')
  assert.equal(reason(Buffer.from('b.\u0000nul:1|c')), 'badLine')
  assert.equal(reason(Buffer.from('a\u001b[2J:1|c')), 'badLine')
  assert.equal(reason(Buffer.from('a\u009b31m:1|c')), 'badLine', 'a C1 control')
  assert.deepEqual(decodeStatsdBytes(Buffer.from('café.hits:2|c')), { name: 'café.hits', type: 'c', value: 2, rate: 1 })
  assert.equal(decodeStatsdBytes(Buffer.from('b.\ufffd:1|g')).name, 'b.\ufffd', 'U+FFFD sent as UTF-8 is a character like any')
})
