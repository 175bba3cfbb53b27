'use strict'

// Delay by direction (docs/call-quality.md): what the analytics say of each
// direction's delay, and when they refuse to split a round trip.

const test = require('node:test')
const assert = require('node:assert/strict')
const { callAnalytics } = require('../../collectors/rtcp/quality-analytics')

const figure = (...values) => ({ min: Math.min(...values), max: Math.max(...values), sum: values.reduce((a, b) => a + b, 0), count: values.length })

function side (ID, quality) {
  return { ID, packets: 4, quality: { loss: { first: { seq: 100, lost: 0 }, last: { seq: 1100, lost: 0 } }, ...quality } }
}

test('both directions measured: each its endpoints\' delay and its term of the round trip, split collector-relative, the longer named', () => {
  const doc = {
    from: side('1', { endpointsMs: figure(70, 70), pathMs: figure(201, 203), rttMs: figure(222, 224), delayMs: figure(181, 182) }),
    to: side('2', { endpointsMs: figure(70), pathMs: figure(21), rttMs: figure(223), delayMs: figure(181.5) })
  }
  const d = callAnalytics(doc).delayByDirection
  assert.equal(d.split, 'collector-relative')
  assert.deepEqual(d.directions.map((x) => [x.side, x.from, x.to, x.endpointsMs, x.pathMs, x.mouthToEarMs]), [
    ['from', '2', '1', 70, 202, 272],
    ['to', '1', '2', 70, 21, 91]
  ])
  assert.equal(d.longer, 'from')
  assert.equal(d.longerBasis, 'collector-relative')
  assert.equal(d.roundTripMs, 223)
  assert.equal(callAnalytics(doc).model, 'G.107')
  assert.equal(callAnalytics(doc).from.model, 'G.107')
  assert.match(callAnalytics(doc).from.ieSource, /G\.113.*Table I\.1/)
})

test('one direction\'s term missing: no split is made up; the ends\' own delays may still say which is longer', () => {
  const doc = {
    from: side('1', { endpointsMs: figure(90), pathMs: figure(30), rttMs: figure(60) }),
    to: side('2', { endpointsMs: figure(70), rttEstimatedMs: figure(400) })
  }
  const d = callAnalytics(doc).delayByDirection
  assert.equal(d.split, 'none')
  assert.deepEqual(d.directions.map((x) => x.mouthToEarMs), [120, null])
  assert.deepEqual([d.longer, d.longerBasis], ['from', 'endpoints'])
})

test('directions within the terms\' precision (2 ms) are not told apart', () => {
  const doc = {
    from: side('1', { endpointsMs: figure(70), pathMs: figure(20.1), rttMs: figure(40) }),
    to: side('2', { endpointsMs: figure(70), pathMs: figure(19.9), rttMs: figure(40) })
  }
  const d = callAnalytics(doc).delayByDirection
  assert.deepEqual([d.split, d.longer, d.longerBasis], ['collector-relative', null, null])
})

test('a call with one reporting end: one direction, no split', () => {
  const d = callAnalytics({ from: side('1', { endpointsMs: figure(70) }), to: { ID: '2' } }).delayByDirection
  assert.deepEqual([d.split, d.directions.length, d.longer, d.roundTripMs], ['none', 1, null, null])
})
