'use strict'

// Two capture agents copying one path (each packet twice, the second
// agent's copy 150 ms behind), with a worker SIGKILLed while calls go on:
// every SIP message stored once, every RTCP report counted once in its
// stream, and every copy counted, where the copy and its original meet in
// no one worker's memory (docs/hep.md, Duplicates).

const test = require('node:test')
const assert = require('node:assert/strict')
const dgram = require('node:dgram')
const HEPjs = require('hep-js')
const hep = require('../../collectors/hep')
const { startTestCollector } = require('../helpers/collector')
const { waitFor } = require('../helpers/streams')
const { accountedFor } = require('../../lib/master/counters')

const HOST = '127.0.0.1'
const T0 = Math.floor(Date.now() / 1000) * 1000 - 600000
const LAG_MS = 150
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

// One SIP message of call `callId` as agent `agent` captured it at `at` (ms), its microseconds `usec`.
function packet (text, { at, usec, agent, back }) {
  return HEPjs.encapsulate(text, {
    protocolFamily: 2, protocol: 17, srcIp: back ? '10.0.0.2' : '10.0.0.1', srcPort: 5060, dstIp: back ? '10.0.0.1' : '10.0.0.2', dstPort: 5060,
    timeSeconds: Math.floor(at / 1000), timeUseconds: (at % 1000) * 1000 + usec, payloadType: 1, captureId: agent, hepNodeName: `agent-${agent}`
  })
}

// One RTCP report (rtpengine's JSON, HEP type 5) of call `callId`: `ssrc` on the source `source`, as agent `agent` captured it.
function report ({ callId, ssrc, source, seq, at, usec, agent, back }) {
  const json = { ssrc, type: 201, report_count: 1, report_blocks: [{ source_ssrc: source, highest_seq_no: seq, fraction_lost: 0, ia_jitter: 40, packets_lost: 3, lsr: 0, dlsr: 0 }] }
  return HEPjs.encapsulate(JSON.stringify(json), {
    protocolFamily: 2, protocol: 17, srcIp: back ? '10.0.0.2' : '10.0.0.1', srcPort: back ? 40001 : 30001, dstIp: back ? '10.0.0.1' : '10.0.0.2', dstPort: back ? 30001 : 40001,
    timeSeconds: Math.floor(at / 1000), timeUseconds: (at % 1000) * 1000 + usec, payloadType: 5, captureId: agent, hepNodeName: `agent-${agent}`, correlation_id: callId
  })
}

// Sends `packets` ([first agent's, second agent's]) with the second agent's
// copies LAG_MS behind, 10 ms between rounds; `killAt(round)` SIGKILLs a
// ready worker (each slot in turn) before that round's packets go.
async function sendCopied (t, collector, port, rounds, packetsOf) {
  const socket = dgram.createSocket('udp4')
  t.after(() => socket.close())
  const send = (p) => new Promise((resolve, reject) => socket.send(p, port, HOST, (err) => err ? reject(err) : resolve()))
  const later = []
  let killed = 0
  let sent = 0
  for (let n = 0; n < rounds; n++) {
    for (const [first, second] of packetsOf(n)) {
      await send(first)
      later.push([Date.now() + LAG_MS, second])
      sent += 2
    }
    while (later.length > 0 && later[0][0] <= Date.now()) await send(later.shift()[1])
    // A worker killed a third and two thirds of the way through, each slot once.
    if (n === Math.floor(rounds / 3) || n === Math.floor(2 * rounds / 3)) {
      const ready = (await collector.stats()).workers.filter((w) => w.state === 'ready')
      process.kill(ready[killed % ready.length].pid, 'SIGKILL')
      killed++
    }
    await sleep(10)
  }
  for (const [due, p] of later) {
    await sleep(Math.max(0, due - Date.now()))
    await send(p)
  }
  const s = await waitFor(async () => { const s = await collector.stats(); return s.received === sent && accountedFor(s) ? s : null }, { timeout: 60000, what: 'every copy processed' })
  t.diagnostic(`${sent} packets; killed ${killed}; processed ${s.processed}, dropped ${JSON.stringify(s.dropped)}`)
  assert.equal(s.processed, sent, JSON.stringify(s.dropped))
  return s
}

// The five messages of an answered call, in order: [text, captured at, callee to caller].
function callMessages (n) {
  const callId = `copy-${n}@kill`
  const at = T0 + n * 40
  const line = (first, cseq, tagged, from = '<sip:alice@a.example>;tag=a1', to = `<sip:bob@b.example>${tagged ? ';tag=b1' : ''}`) =>
    [first, 'Via: SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bK' + n, `From: ${from}`, `To: ${to}`, `Call-ID: ${callId}`, `CSeq: ${cseq}`, 'Content-Length: 0', '', ''].join('\r\n')
  return [
    [line('INVITE sip:bob@b.example SIP/2.0', '1 INVITE', false), at, false],
    [line('SIP/2.0 180 Ringing', '1 INVITE', true), at + 5, true],
    [line('SIP/2.0 200 OK', '1 INVITE', true), at + 10, true],
    [line('ACK sip:bob@b.example SIP/2.0', '1 ACK', true), at + 15, false],
    [line('BYE sip:alice@a.example SIP/2.0', '2 BYE', true, '<sip:bob@b.example>;tag=b1', '<sip:alice@a.example>;tag=a1'), at + 20, true]
  ]
}

test('two agents copying one path, a worker SIGKILLed mid-stream: every SIP message stored once, every copy counted', { timeout: 120000 }, async (t) => {
  const { collector, db, port } = await startTestCollector(t, hep)
  const calls = 400
  const packet2 = (text, at, back) => [packet(text, { at, usec: 200, agent: 1, back }), packet(text, { at, usec: 700, agent: 2, back })]
  await sendCopied(t, collector, port, calls, (n) => callMessages(n).map(([text, at, back]) => packet2(text, at, back)))
  const perCall = new Map()
  for (const m of await db.collection('sip_messages').find({}, { projection: { callId: 1 } }).toArray()) perCall.set(m.callId, (perCall.get(m.callId) || 0) + 1)
  const twice = [...perCall].filter(([, n]) => n !== 5)
  assert.deepEqual({ calls: perCall.size, notFive: twice.length }, { calls, notFive: 0 }, `stored other than once: ${twice.slice(0, 5).map(([id, n]) => `${id} ${n}`).join(', ')}`)
  const duplicates = (await db.collection('calls').find().toArray()).reduce((sum, doc) => sum + (doc.duplicates || 0), 0)
  assert.equal(duplicates, calls * 5, 'each copy counted once in its call')
})

// A stream keeps no document per report: its side holds the last report's
// copy key, which a starting worker reads back. Before, a report whose copy
// reached the worker after the one that stored it died counted twice.
async function copiedReports (t, { calls, reports, every }) {
  const { collector, db, port } = await startTestCollector(t, hep)
  const rounds = calls * reports
  await sendCopied(t, collector, port, rounds, (i) => {
    const n = i % calls
    const r = Math.floor(i / calls)
    const callId = `rtcp-${n}@kill`
    const ssrc = 100000 + 2 * n
    const at = T0 + n * 7 + r * every
    const side = (back) => [false, true].map((_, agent) => report({ callId, ssrc: back ? ssrc + 1 : ssrc, source: back ? ssrc : ssrc + 1, seq: 1000 + 250 * r, at: at + (back ? 100 : 0), usec: agent ? 700 : 200, agent: agent + 1, back }))
    return [side(false), side(true)]
  })
  const streams = await db.collection('streams').find({}, { projection: { 'metadata.packets': 1, 'from.ID': 1, 'to.ID': 1, 'from.packets': 1, 'to.packets': 1 } }).toArray()
  const wrong = streams.filter((s) => s.metadata.packets !== 2 * reports)
  assert.deepEqual({ streams: streams.length, wrong: wrong.length }, { streams: calls, wrong: 0 },
    `counted other than once: ${wrong.slice(0, 5).map((s) => `${s.from.ID}/${s.to.ID} ${s.from.packets}+${s.to.packets}`).join(', ')}`)
  const workers = (await collector.stats()).workers.map((w) => w.custom)
  t.diagnostic(`duplicates.rtcp of the running workers: ${workers.map((w) => w && w.duplicates.rtcp).join(', ')}`)
}

test('two agents copying RTCP, a worker SIGKILLed mid-stream: every report counted once in its stream', { timeout: 120000 }, async (t) => {
  await copiedReports(t, { calls: 150, reports: 4, every: 5000 }) // a side's report every 5 s of capture time, 1.5 s apart as sent
})

// A side reporting faster than its copies come (WebRTC's RTCP, every 100 ms
// here, the second agent's copy 150 ms behind): a side's report is not its
// last when its copy comes. Before, a side kept the last report's copy key
// alone, and a report whose copy reached the next worker counted twice.
test('two agents copying RTCP of sides that report faster than the copies lag, a worker SIGKILLed: every report counted once', { timeout: 120000 }, async (t) => {
  await copiedReports(t, { calls: 10, reports: 40, every: 100 })
})
