'use strict'

// The maps keyed by what senders choose hold at most their bound and count
// what they forget (lib/shared/bounded-map.js), in the master's call
// affinity, the workers' call quality and the stream writer's side beliefs.

const test = require('node:test')
const assert = require('node:assert/strict')
const { BoundedMap } = require('../../lib/shared/bounded-map')
const { CallQuality } = require('../../collectors/rtcp/call-quality')
const { CallAffinity } = require('../../collectors/rtcp/call-affinity')
const { encodeReport } = require('../../collectors/rtcp/encoder')
const StreamWriter = require('../../workers/storage/stream-writer')
const { Collector: RtcpCollector, Config: RtcpConfig } = require('../../collectors/rtcp')
const { InvalidOptionError, InvalidConfigError } = require('../../exceptions')

const block = (fields) => ({ ssrc: 2, fractionLost: 0, cumulativeLost: 0, highestSeq: 1000, jitter: 80, lsr: 0, dlsr: 0, ...fields })
const MINUTE = 60000

test('a BoundedMap forgets its oldest key for each new one past the bound, and counts it', () => {
  const forgotten = []
  const map = new BoundedMap(3, (key) => forgotten.push(key))
  for (const key of ['a', 'b', 'c']) map.set(key, 1)
  map.set('b', 2) // held: no eviction
  assert.deepEqual([map.size, map.evicted], [3, 0])
  map.set('d', 1)
  map.set('e', 1)
  assert.deepEqual([...map.keys()], ['c', 'd', 'e'])
  assert.deepEqual(forgotten, ['a', 'b'])
  assert.equal(map.evicted, 2)
  map.refresh('c', 3) // now the newest: 'd' goes next
  map.set('f', 1)
  assert.deepEqual([...map.keys()], ['e', 'c', 'f'])
  map.refresh('g', 1) // a key not held is set, within the bound
  assert.deepEqual([map.size, map.evicted, map.has('e')], [3, 4, false])
  for (const limit of [0, -1, 1.5, NaN, '10']) assert.throws(() => new BoundedMap(limit), RangeError)
})

test('call quality: each map keyed by SSRCs holds maxSources; a call still reporting outlives newer idle ones', () => {
  const quality = new CallQuality({ maxSources: 2 })
  const at = 10 * MINUTE
  quality.report(1, block({ ssrc: 100 }), at)
  quality.report(2, block({ ssrc: 200 }), at + 1)
  // The first call reports again a minute later: it moves to the newest end.
  quality.report(1, block({ ssrc: 100, highestSeq: 1250, cumulativeLost: 25 }), at + MINUTE)
  quality.report(3, block({ ssrc: 300 }), at + MINUTE + 1)
  const { held, evicted } = quality.memory()
  // No SDP said anything of these calls: no call's streams are held.
  assert.deepEqual(held, { ssrcs: 0, reportSides: 2, calls: 0 })
  assert.deepEqual(evicted, { ssrcs: 0, reportSides: 1, calls: 0 })
  assert.ok(quality.sides.has('1>100') && !quality.sides.has('2>200'), 'the side not heard from longest went')
  // Its interval loss still comes from the previous report: 25 of 250.
  const { fields } = quality.report(1, block({ ssrc: 100, highestSeq: 1500, cumulativeLost: 50, fractionLost: 0 }), at + MINUTE + 2)
  assert.equal(fields.lossRate, 0.1)
  for (let ssrc = 10; ssrc < 15; ssrc++) quality.clocks.reference(ssrc, 3900000000, 0, 0, at)
  assert.deepEqual([quality.memory().held.ssrcs, quality.memory().evicted.ssrcs], [2, 3])
})

test('call affinity: at most maxSenders reported SSRCs, each forgotten one heard of', () => {
  let forgotten = 0
  const affinity = new CallAffinity({ maxSenders: 10, onEvict: () => forgotten++ })
  for (let i = 0; i < 25; i++) {
    const report = encodeReport({ ssrc: 1000 + i, reports: [block({ ssrc: 5000 + i })], cname: 'x' })
    affinity.keyOf(report, 0, report.length)
  }
  assert.deepEqual([affinity.pairOfSender.size, affinity.pairOfSender.evicted, forgotten], [10, 15, 15])
})

test('the RTCP collector counts the call affinity\'s evictions as events.stateEvicted, reason callAffinity', () => {
  const collector = new RtcpCollector({ port: 0, instances: 1, maxSources: 2 })
  for (let i = 0; i < 5; i++) {
    const report = encodeReport({ ssrc: 1000 + i, reports: [block({ ssrc: 5000 + i })], cname: 'x' })
    collector.key({ data: report, rinfo: { address: '127.0.0.1', port: 4000 + i } })
  }
  const summary = collector.summary()
  assert.equal(summary.events.stateEvicted, 3)
  assert.deepEqual(summary.eventReasons.stateEvicted, { callAffinity: 3 })
})

test('maxSources: a bad value is refused with its name, by the collector and by the config', () => {
  for (const value of [0, -5, 1.5, 'many']) {
    assert.throws(() => new RtcpCollector({ port: 0, instances: 1, maxSources: value }), (err) => err instanceof InvalidOptionError && /maxSources/.test(err.message))
  }
  assert.throws(() => RtcpConfig.parse(['--max-sources', '0'], {}), (err) => err instanceof InvalidConfigError && /max-sources/.test(err.message))
  assert.equal(RtcpConfig.parse(['--max-sources', '5000'], {}).maxSources, 5000)
  assert.ok(RtcpCollector.workerOptionKeys.includes('maxSources'), 'the workers get it too')
})

test('stream writer: the senders whose side it remembers are bounded, the forgotten counted', () => {
  const writer = new StreamWriter(null, { maxSides: 3 })
  for (let i = 0; i < 8; i++) writer.flip({ key: `p\0${i}\0peer` }) // each learned to be 'to'
  assert.deepEqual([writer.sides.size, writer.sides.evicted], [3, 5])
  assert.equal(writer.sideOf({ key: 'p\x007\x00peer' }), 'to')
  assert.equal(writer.sideOf({ key: 'p\x000\x00peer' }), 'from', 'a forgotten sender is tried as from again (one E11000 round)')
})
