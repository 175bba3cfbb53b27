'use strict'

// SIP over TCP as a real capture agent copies it: heplify (built from the
// Go module proxy, run as it ships: no -tcpassembly) sends each TCP
// segment's payload as one HEP packet, so a segment that carries several
// SIP messages (a proxy writing what it has queued back to back, as this
// test's callee does) reaches the collector as one payload holding them
// all. SIPp (Debian sip-tester) places the calls over TCP; tcpdump
// captures them on loopback; heplify replays the capture to the collector.
// Checked against tshark's reading of the same capture: every SIP message
// stored once, each with its own bytes, and every call's outcome (its 180
// and 200 came in one segment with its 100).

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const net = require('node:net')
const path = require('node:path')
const { execFileSync } = require('node:child_process')
const { once } = require('node:events')
const hep = require('../../collectors/hep')
const { startTestCollector } = require('../helpers/collector')
const { requireBinary } = require('../helpers/rtp-peers')
const { heplifyBinary } = require('../helpers/heplify')
const { freePortPair } = require('../helpers/ports')
const { waitFor } = require('../helpers/streams')
const { removeDir } = require('../helpers/temp-dir')
const { runPeer: run, exitCode } = require('../helpers/peer-process')

const HOST = '127.0.0.1'
const CALLS = 4

// The SIP messages of a stream's bytes so far: [messages, the bytes left].
function framed (buffer) {
  const messages = []
  for (;;) {
    const end = buffer.indexOf('\r\n\r\n')
    if (end === -1) return [messages, buffer]
    const length = /\r\n(?:content-length|l)\s*:\s*(\d+)/i.exec(buffer.toString('latin1', 0, end))
    const size = end + 4 + (length ? Number(length[1]) : 0)
    if (buffer.length < size) return [messages, buffer]
    messages.push(buffer.toString('latin1', 0, size))
    buffer = buffer.subarray(size)
  }
}

// A callee over TCP that answers every INVITE (100, 180, 200) and BYE
// (200), writing what it has queued every `flushMs` in one write: the
// responses of one call, and of calls in flight together, share segments.
function batchingCallee (flushMs, { splitFirst = false } = {}) {
  const header = (msg, name) => (new RegExp(`^${name}\\s*:\\s*(.*)$`, 'im').exec(msg) || [])[1]
  const response = (msg, status, reason, tag) => [
    `SIP/2.0 ${status} ${reason}`,
    ...msg.split('\r\n').filter((line) => /^via\s*:/i.test(line)),
    `From: ${header(msg, 'From')}`,
    `To: ${header(msg, 'To')}${tag && !/;tag=/i.test(header(msg, 'To')) ? `;tag=${tag}` : ''}`,
    `Call-ID: ${header(msg, 'Call-ID')}`,
    `CSeq: ${header(msg, 'CSeq')}`,
    `Contact: <sip:callee@${HOST}>`,
    'Content-Length: 0',
    '', ''
  ].join('\r\n')
  const server = net.createServer((socket) => {
    let pending = Buffer.alloc(0)
    let queue = []
    socket.setNoDelay(true)
    const timer = setInterval(() => {
      const data = queue.join('')
      // splitFirst: the flush's first message cut in two writes, 20 ms apart: the second segment begins with its tail.
      const cut = splitFirst && queue.length ? Math.floor(queue[0].length / 2) : data.length
      if (data.length) socket.write(data.slice(0, cut))
      if (cut < data.length) setTimeout(() => socket.write(data.slice(cut)), 20)
      queue = []
    }, flushMs)
    socket.on('close', () => clearInterval(timer)).on('error', () => {})
    socket.on('data', (chunk) => {
      const [messages, rest] = framed(Buffer.concat([pending, chunk]))
      pending = rest
      for (const msg of messages) {
        const tag = `t${header(msg, 'Call-ID').length}${header(msg, 'Call-ID').slice(0, 4)}`
        if (msg.startsWith('INVITE ')) queue.push(response(msg, 100, 'Trying'), response(msg, 180, 'Ringing', tag), response(msg, 200, 'OK', tag))
        else if (msg.startsWith('BYE ')) queue.push(response(msg, 200, 'OK'))
      }
    })
  })
  return server
}

// tshark's reading: one entry per SIP message, in capture order, with its frame.
function tsharkSip (file, port) {
  const text = execFileSync('tshark', ['-r', file, '-d', `tcp.port==${port},sip`, '-Y', 'sip', '-T', 'fields', '-E', 'separator=|', '-E', 'occurrence=a', '-E', 'aggregator=;',
    '-e', 'frame.number', '-e', 'sip.Call-ID', '-e', 'sip.CSeq'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
  return text.trim().split('\n').flatMap((line) => {
    const [frame, callIds, cseqs] = line.split('|')
    const ids = callIds.split(';')
    const seqs = cseqs.split(';')
    assert.equal(ids.length, seqs.length, line)
    return ids.map((callId, i) => ({ frame: Number(frame), callId, cseq: seqs[i] }))
  })
}

// SIPp's calls over TCP to `callee`, captured by tcpdump: the capture's path and the callee's port.
async function capturedCalls (t, callee) {
  for (const [binary, pkg] of [['sipp', 'sip-tester'], ['tcpdump', 'tcpdump'], ['tshark', 'tshark'], ['go', 'golang-go']]) requireBinary(binary, pkg)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hep-heplify-'))
  t.after(() => removeDir(dir))
  callee.listen(0, HOST)
  await once(callee, 'listening')
  t.after(() => callee.close())
  const { port: calleePort } = callee.address()
  const callerPort = await freePortPair()
  const capture = path.join(dir, 'tcp.pcap')
  const tcpdump = run(t, 'tcpdump', ['-U', '-n', '-i', 'lo', '-w', capture, `tcp port ${calleePort}`])
  await waitFor(() => /listening on/.test(tcpdump.output()), { what: 'tcpdump listening', timeout: 20000 })
  // Calls placed 100 ms apart, each lasting 300 ms: a flush carries one call's answers with another's BYE's.
  const sipp = run(t, 'sipp', ['-sn', 'uac', '-t', 't1', '-i', HOST, '-p', String(callerPort), '-s', '4930123', '-m', String(CALLS), '-r', '10', '-d', '300', '-nostdin', '-timeout', '30', `${HOST}:${calleePort}`])
  assert.equal(await exitCode(sipp), 0, `SIPp: ${sipp.output().slice(-1500)}`)
  await new Promise((resolve) => setTimeout(resolve, 500)) // the last frames written
  tcpdump.child.kill('SIGINT')
  assert.equal(await exitCode(tcpdump), 0, tcpdump.output())
  return { capture, calleePort }
}

// heplify (no -tcpassembly) replaying `capture` to a collector: its database, summary and workers' figures once stopped.
async function replayed (t, capture, calleePort, messages) {
  const { collector, db, port } = await startTestCollector(t, hep)
  const agent = run(t, heplifyBinary(), ['-t', 'pcap', '-rf', capture, '-eof-exit', '-hs', `${HOST}:${port}`, '-nt', 'udp', '-m', 'SIP', '-pr', `${calleePort}-${calleePort}`, '-e'])
  assert.equal(await exitCode(agent), 0, `heplify: ${agent.output().slice(-1500)}`)
  await waitFor(() => collector.summary().processed + collector.summary().dropped.total >= messages, { what: `the ${messages} messages of the SIP segments heplify sent taken`, timeout: 30000 })
  const workers = (await collector.stats()).workers.map((w) => w.custom)
  await collector.stop()
  return { db, summary: collector.summary(), workers }
}

test('heplify copying SIP over TCP whole segments: every message of a segment that carries several is stored once, with its own bytes, and every call answered as tshark reads it', { timeout: 120000 }, async (t) => {
  const { capture, calleePort } = await capturedCalls(t, batchingCallee(150))
  const oracle = tsharkSip(capture, calleePort)
  const callIds = [...new Set(oracle.map((m) => m.callId))]
  assert.equal(callIds.length, CALLS, 'SIPp placed every call')
  const frames = new Map()
  for (const m of oracle) frames.set(m.frame, (frames.get(m.frame) || 0) + 1)
  const shared = oracle.filter((m) => frames.get(m.frame) > 1).length
  assert.ok(shared >= 3 * CALLS, `segments carrying several messages (${shared} messages in them)`)
  assert.ok([...frames.keys()].some((frame) => new Set(oracle.filter((m) => m.frame === frame).map((m) => m.callId)).size > 1), 'a segment carrying two calls\' messages')

  // The master makes a packet of each run of one call's messages in a segment (collectors/hep/call-parts.js).
  const runs = []
  oracle.forEach((m, i) => {
    const before = oracle[i - 1]
    if (before && before.frame === m.frame && before.callId === m.callId) runs[runs.length - 1].push(m)
    else runs.push([m])
  })
  assert.ok(runs.length > frames.size, 'segments split by call')
  const { db, summary, workers } = await replayed(t, capture, calleePort, runs.length)
  assert.equal(summary.processed, runs.length, 'one message per run of one call\'s messages in a segment')
  assert.equal(summary.dropped.total, 0, JSON.stringify(summary.dropped))
  const stored = await db.collection('sip_messages').find().sort({ at: 1, atMicros: 1, _id: 1 }).toArray()
  // Each call's ladder in capture order; two calls' messages of one segment share its capture time, so their order is not the capture's.
  const ladders = (list) => callIds.map((callId) => list.filter((m) => m.callId === callId).map((m) => `${m.callId} ${m.cseq}`))
  assert.equal(stored.length, oracle.length, 'every message once')
  assert.deepEqual(ladders(stored), ladders(oracle), 'every call\'s messages once, in capture order, as tshark reads the segments')
  for (const m of stored) {
    const raw = m.raw.buffer.toString('latin1')
    assert.equal(raw.length, m.bytes)
    assert.ok(raw.startsWith(m.firstLine) && raw.indexOf('\r\nCSeq: ') === raw.lastIndexOf('\r\nCSeq: '), `one message's bytes: ${JSON.stringify(raw.slice(0, 200))}`)
  }
  const calls = await db.collection('calls').find().toArray()
  assert.equal(calls.length, CALLS)
  for (const call of calls) {
    assert.equal(call.answerStatus, 200, `${call.callId} answered: its 200 shared a segment with its 100 and 180`)
    assert.ok(call.ringingAt instanceof Date && call.answeredAt instanceof Date && Object.keys(call.byes || {}).length === 1, JSON.stringify(call))
  }
  const coalesced = runs.filter((run) => run.length > 1).reduce((n, run) => n + run.length, 0)
  assert.ok(coalesced >= 2 * CALLS, `runs of several messages of one call (${coalesced} messages in them)`)
  assert.equal(workers.reduce((n, w) => n + w.coalesced, 0), coalesced, 'the workers count the messages that came several to a packet')
})

test('heplify copying a TCP stream cut inside a message: the segment that begins with its tail gives the whole messages after it, and every call is answered', { timeout: 120000 }, async (t) => {
  const { capture, calleePort } = await capturedCalls(t, batchingCallee(150, { splitFirst: true }))
  const segments = Number(execFileSync('tshark', ['-r', capture, '-Y', 'tcp.len > 0 && tcp.srcport == ' + calleePort, '-T', 'fields', '-e', 'frame.number'], { encoding: 'utf8' }).trim().split('\n').length)
  const { db, summary } = await replayed(t, capture, calleePort, segments)
  const calls = await db.collection('calls').find().toArray()
  assert.equal(calls.length, CALLS)
  for (const call of calls) assert.equal(call.answerStatus, 200, `${call.callId} answered: its 180 and 200 followed the tail of its 100 in one segment`)
  const stored = await db.collection('sip_messages').find({ status: { $in: [180, 200] }, cseq: /INVITE$/ }).toArray()
  assert.equal(stored.length, 2 * CALLS, 'each call\'s 180 and 200 once')
  // What is refused is a first half without its Call-ID (hep-sip), nothing else.
  assert.equal(summary.dropped.total, summary.dropped['hep-sip'] || 0, JSON.stringify(summary.dropped))
})
