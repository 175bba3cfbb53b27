'use strict'

// The delivery contract under worker SIGKILLs: a message counts as
// processed only once stored, what a killed worker held goes to its
// replacement, and redelivery stores nothing twice. Real forked workers,
// the real MongoDB-compatible server, numbered messages checked one by one.

const test = require('node:test')
const assert = require('node:assert/strict')
const dgram = require('node:dgram')
const net = require('node:net')
const { once } = require('node:events')
const syslog = require('../../collectors/syslog')
const rtcp = require('../../collectors/rtcp')
const RtcpSimulator = require('../../collectors/rtcp/simulator')
const { startTestCollector } = require('../helpers/collector')
const { waitFor } = require('../helpers/streams')
const { accountedFor } = require('../../lib/master/counters')
const { killLoop } = require('../helpers/kill-loop')
const { sideQuality } = require('../../collectors/rtcp/quality-analytics')

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** Sends `total` payloads at about `rate`/s in 10 ms ticks through `send(payload)`. */
async function pace (total, rate, make, send) {
  const perTick = Math.max(1, Math.round(rate / 100))
  for (let i = 0; i < total;) {
    const tickEnd = Date.now() + 10
    for (let k = 0; k < perTick && i < total; k++, i++) await send(make(i))
    const wait = tickEnd - Date.now()
    if (wait > 0) await sleep(wait)
  }
}

function syslogLine (i) {
  return `<14>1 2026-11-23T10:00:00.000Z host${i % 7} app - - - msg ${i}`
}

async function settledSummary (collector, sent) {
  await waitFor(() => {
    const s = collector.summary()
    return s.received === sent && accountedFor(s)
  }, { timeout: 60000 })
  await collector.stop()
  return collector.summary()
}

async function checkSyslog (db, s, sent, killed) {
  const docs = await db.collection('syslog').find({}, { projection: { message: 1 } }).toArray()
  const numbers = docs.map((d) => Number(d.message.slice(4)))
  const distinct = new Set(numbers)
  assert.ok(killed >= 3, `workers were killed during the run (${killed})`)
  assert.equal(numbers.length, distinct.size, 'no message stored twice')
  assert.equal(s.received, sent, `every datagram reached the master: ${JSON.stringify(s.dropped)}`)
  assert.equal(s.dropped.total, 0, `nothing dropped: ${JSON.stringify(s.dropped)}`)
  assert.equal(s.processed, sent, `every message processed (acknowledged once stored): ${JSON.stringify(s)}`)
  for (let i = 0; i < sent; i++) assert.ok(distinct.has(i), `message ${i} is stored`)
  const counters = await db.collection('counters').find().toArray()
  assert.equal(counters.reduce((sum, c) => sum + c.daily, 0), sent, 'the per-minute counters count every message once')
}

test('syslog over UDP: a worker SIGKILLed every 2 s for 12 s under 10,000 messages/s; every message stored exactly once, counters exact', { timeout: 180000 }, async (t) => {
  const { collector, db, port } = await startTestCollector(t, syslog)
  const socket = dgram.createSocket('udp4')
  t.after(() => socket.close())
  const sent = 120000
  const kills = killLoop(collector, 2000)
  await pace(sent, 10000, syslogLine, (line) => new Promise((resolve, reject) => socket.send(line, port, '127.0.0.1', (err) => err ? reject(err) : resolve())))
  const killed = await kills.stop(3)
  const s = await settledSummary(collector, sent)
  await checkSyslog(db, s, sent, killed)
})

test('syslog over TCP: a worker SIGKILLed every 700 ms; every framed message stored exactly once', { timeout: 120000 }, async (t) => {
  const { collector, db, port } = await startTestCollector(t, syslog, ['--protocol', 'tcp_server'])
  const client = net.connect(port, '127.0.0.1')
  await once(client, 'connect')
  t.after(() => client.destroy())
  const sent = 16000
  const kills = killLoop(collector, 700)
  await pace(sent, 4000, (i) => syslogLine(i) + '\n', (line) => { if (!client.write(line)) return once(client, 'drain') })
  const killed = await kills.stop(3)
  const s = await settledSummary(collector, sent)
  await checkSyslog(db, s, sent, killed)
})

test('RTCP: a worker SIGKILLed every 700 ms; one stream per call, every side\'s highestPacketNum, packet count and call quality exact', { timeout: 120000 }, async (t) => {
  const { collector, db, port } = await startTestCollector(t, rtcp)
  const socket = dgram.createSocket('udp4')
  t.after(() => socket.close())
  const calls = 200
  const simulator = new RtcpSimulator({ streams: calls })
  const sent = 12000
  const kills = killLoop(collector, 700)
  await pace(sent, 3000, () => simulator.next(), (packet) => new Promise((resolve, reject) => socket.send(packet, port, '127.0.0.1', (err) => err ? reject(err) : resolve())))
  const killed = await kills.stop(3)
  const s = await settledSummary(collector, sent)
  assert.ok(killed >= 3, `workers were killed during the run (${killed})`)
  assert.equal(s.dropped.total, 0, `nothing dropped: ${JSON.stringify(s.dropped)}`)
  assert.equal(s.processed, sent)
  const docs = await db.collection('streams').find().toArray()
  assert.equal(docs.length, calls, 'one stream per call, no duplicate')
  const bySide = new Map()
  for (const d of docs) for (const side of [d.from, d.to]) bySide.set(side.ID, side)
  const wrong = simulator.expected().filter((e) => {
    const side = bySide.get(e.fromID)
    return !side || side.highestPacketNum !== e.highestPacketNum || side.packets !== e.reports
  })
  assert.deepEqual(wrong.slice(0, 3), [], `${wrong.length} sides differ from what was sent`)
  // Each report's figures are summed once, whatever the redelivery: one loss
  // per stored report, and one MOS, with a measured round trip or (a
  // replacement worker knows no SR until the next) on the endpoints' delay;
  // the stream loss is first to last, exact.
  const scored = (q) => (q.mos ? q.mos.count : 0) + (q.mosEndpoints ? q.mosEndpoints.count : 0)
  const wrongQuality = simulator.expected().filter((e) => {
    const side = bySide.get(e.fromID)
    const q = sideQuality(side)
    return q.loss.count !== e.reports || scored(q) !== e.reports || q.lossRate !== e.lossRate || q.jitterMs.max !== e.jitter / 8
  }).map((e) => ({ expected: e, stored: sideQuality(bySide.get(e.fromID)) }))
  assert.deepEqual(wrongQuality.slice(0, 2), [], `${wrongQuality.length} sides' quality differs from what was sent`)
  const mosCount = docs.reduce((sum, d) => sum + [d.from, d.to].reduce((n, side) => n + ((side.quality.mos && side.quality.mos.count) || 0), 0), 0)
  const minuteReports = docs.reduce((sum, d) => sum + [d.from, d.to].reduce((n, side) => n + Object.values(side.quality.minutes).reduce((k, m) => k + (m.reports || 0), 0), 0), 0)
  assert.ok(mosCount > sent / 2, `most reports scored (${mosCount} of ${sent})`)
  assert.equal(minuteReports, mosCount, 'the per-minute buckets hold every scored report once')
  assert.equal(docs.reduce((sum, d) => sum + d.metadata.packets, 0), sent, 'metadata.packets sums to what was sent')
  const counters = await db.collection('counters').find().toArray()
  assert.equal(counters.reduce((sum, c) => sum + c.daily, 0), sent, 'the packet counter counts every report once')
})
