'use strict'

// A real capture, a real HEP agent, an independent reading: SIPp (Debian
// sip-tester) places a call the callee rejects (486), one the caller
// cancels while it rings, and one answered and hung up, captured on
// loopback by tcpdump; every frame of the capture is doubled (mergecap of
// the file with itself: a duplicating interface, as heplify on `lo`), and
// sngrep's HEP sender replays it to the collector (SIP only, no RTCP).
// What is stored is checked against tshark's reading of the undoubled
// capture: every SIP message once, in capture order, with its addresses,
// CSeq, method or status and size; every copy counted in `duplicates`; the
// calls found by outcome and number, with their ladder.

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const dgram = require('node:dgram')
const path = require('node:path')
const { execFileSync } = require('node:child_process')
const hep = require('../../collectors/hep')
const callsCommand = require('../../app/commands/calls')
const { startTestCollector } = require('../helpers/collector')
const { getTestMongo } = require('../helpers/mongo')
const { requireBinary } = require('../helpers/rtp-peers')
const { freePortPair } = require('../helpers/ports')
const { waitFor } = require('../helpers/streams')
const { SCENARIOS } = require('../fixtures/sipp-scenarios')
const { removeDir } = require('../helpers/temp-dir')
const { runPeer: run, exitCode } = require('../helpers/peer-process')

const HOST = '127.0.0.1'

// One SIPp call: the callee (scenario or built-in) waits, the caller calls it.
async function sippCall (t, dir, { uas, uac, user, uacPort, uasPort }) {
  const scenario = (name) => name.endsWith('.xml') ? ['-sf', path.join(dir, name)] : ['-sn', name]
  const callee = run(t, 'sipp', [...scenario(uas), '-i', HOST, '-p', String(uasPort), '-m', '1', '-nostdin', '-timeout', '20'], { cwd: dir })
  await new Promise((resolve) => setTimeout(resolve, 300)) // it binds its port
  const caller = run(t, 'sipp', [...scenario(uac), '-i', HOST, '-p', String(uacPort), '-s', user, '-m', '1', '-nostdin', '-timeout', '20', `${HOST}:${uasPort}`], { cwd: dir })
  assert.equal(await exitCode(caller), 0, `SIPp ${uac}: ${caller.output().slice(-1500)}`)
  assert.equal(await exitCode(callee), 0, `SIPp ${uas}: ${callee.output().slice(-1500)}`)
}

// tshark's reading of the SIP frames: capture time (ms), addresses, Call-ID, CSeq, method or status, size.
// Every port is decoded as SIP by name: SIPp's random ports can be ones
// tshark gives to another protocol (20000 dnp3, 22222 rtpproxy, ...), where
// its SIP heuristic never runs and a call would be missing from the oracle.
function tsharkSip (file, ports) {
  const fields = ['frame.time_epoch', 'ip.src', 'udp.srcport', 'ip.dst', 'udp.dstport', 'sip.Call-ID', 'sip.CSeq', 'sip.Method', 'sip.Status-Code', 'udp.length']
  const text = execFileSync('tshark', ['-r', file, ...ports.flatMap((p) => ['-d', `udp.port==${p},sip`]), '-Y', 'sip', '-T', 'fields', '-E', 'separator=|', ...fields.flatMap((f) => ['-e', f])], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
  return text.trim().split('\n').map((line) => {
    const [epoch, srcIp, srcPort, dstIp, dstPort, callId, cseq, method, status, udpLength] = line.split('|')
    const [sec, frac = ''] = epoch.split('.')
    return {
      at: Number(sec) * 1000 + Number((frac + '000').slice(0, 3)),
      src: `${srcIp}:${srcPort}`,
      dst: `${dstIp}:${dstPort}`,
      callId,
      cseq,
      what: method || Number(status),
      bytes: Number(udpLength) - 8
    }
  })
}

test('sngrep replaying a doubled capture of SIPp calls (rejected, cancelled, answered): each SIP message stored once as tshark reads it, copies counted, calls found', { timeout: 120000 }, async (t) => {
  for (const [binary, pkg] of [['sipp', 'sip-tester'], ['sngrep', 'sngrep'], ['tcpdump', 'tcpdump'], ['mergecap', 'wireshark-common'], ['tshark', 'tshark']]) requireBinary(binary, pkg)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hep-sngrep-'))
  t.after(() => removeDir(dir))
  for (const [name, text] of Object.entries(SCENARIOS)) fs.writeFileSync(path.join(dir, name), text)
  const calls = [
    { uas: 'uas-reject.xml', uac: 'uac-reject.xml', user: '4930555' },
    { uas: 'uas-cancel.xml', uac: 'uac-cancel.xml', user: '4930666' },
    { uas: 'uas', uac: 'uac', user: '4930123' }
  ]
  for (const call of calls) [call.uacPort, call.uasPort] = [await freePortPair(), await freePortPair()]
  const ports = calls.flatMap((c) => [c.uacPort, c.uasPort])
  const capture = path.join(dir, 'calls.pcap')
  // tcpdump -U writes each frame as it comes: a probe datagram (not SIP)
  // seen in the file says the capture is live, before the calls and after them.
  const tcpdump = run(t, 'tcpdump', ['-U', '-n', '-i', 'lo', '-w', capture, `udp and (${ports.map((p) => `port ${p}`).join(' or ')})`])
  const probe = dgram.createSocket('udp4')
  t.after(() => probe.close())
  const captured = async () => {
    const before = fs.existsSync(capture) ? fs.statSync(capture).size : 0
    await waitFor(async () => {
      await new Promise((resolve) => probe.send('probe', ports[0], HOST, resolve))
      return fs.existsSync(capture) && fs.statSync(capture).size > Math.max(before, 24)
    }, { what: 'the probe in the capture', timeout: 20000 })
  }
  await captured()
  for (const call of calls) await sippCall(t, dir, call)
  await captured()
  tcpdump.child.kill('SIGINT')
  assert.equal(await exitCode(tcpdump), 0, tcpdump.output())
  const doubled = path.join(dir, 'doubled.pcap')
  execFileSync('mergecap', ['-F', 'pcap', '-w', doubled, capture, capture])

  const oracle = tsharkSip(capture, ports)
  const callIds = [...new Set(oracle.map((m) => m.callId))]
  assert.equal(callIds.length, 3, 'SIPp placed three calls')
  const { collector, db, port } = await startTestCollector(t, hep)
  const sngrep = run(t, 'sngrep', ['-N', '-q', '-I', doubled, '-H', `udp:${HOST}:${port}`])
  assert.equal(await exitCode(sngrep), 0, sngrep.output())
  await waitFor(() => collector.summary().processed === 2 * oracle.length, { what: 'every packet sngrep sent processed', timeout: 20000 })
  await collector.stop()
  const summary = collector.summary()
  assert.equal(summary.received, 2 * oracle.length, 'sngrep sent each frame of the doubled capture')
  assert.equal(summary.dropped.total, 0, JSON.stringify(summary.dropped))

  const stored = await db.collection('sip_messages').find().sort({ at: 1, _id: 1 }).toArray()
  const read = (m) => ({ at: +m.at, src: m.src, dst: m.dst, callId: m.callId, cseq: m.cseq, what: m.method || m.status, bytes: m.bytes })
  const byCall = (list, callId) => list.filter((m) => m.callId === callId)
  for (const callId of callIds) assert.deepEqual(byCall(stored, callId).map(read), byCall(oracle, callId), `${callId}: its messages once, as tshark reads them`)
  assert.equal(stored.length, oracle.length)
  assert.ok(stored.every((m) => m.transport === 'udp' && m.raw.buffer.length === m.bytes && m.raw.toString().startsWith(m.firstLine)))

  const docs = new Map((await db.collection('calls').find().toArray()).map((doc) => [doc.callee.user, doc]))
  for (const doc of docs.values()) assert.equal(doc.duplicates, byCall(oracle, doc.callId).length, `${doc.callId}: every copy counted once`)
  const [rejected, cancelled, answered] = calls.map((c) => docs.get(c.user))
  const timeOf = (callId, what) => oracle.find((m) => m.callId === callId && m.what === what).at

  const { uri } = await getTestMongo()
  const callsOf = async (...argv) => {
    let out = ''
    const code = await callsCommand.run([...argv, ...(argv.includes('--call-id') ? [] : ['--since', '1d']), '--json', '--database', db.databaseName], { env: { MONGODB_URI: uri }, out: { write: (text) => { out += text } }, err: { write: () => {} } })
    assert.equal(code, 0)
    return out.trim() === '' ? [] : out.trim().split('\n').map((line) => JSON.parse(line))
  }
  const outcomes = Object.fromEntries((await callsOf()).map((line) => [line.callId, [line.sip.outcome, line.sip.status]]))
  assert.deepEqual(outcomes, { [rejected.callId]: ['failed', 486], [cancelled.callId]: ['cancelled', 487], [answered.callId]: ['answered', 200] }, 'every SIP call listed, without RTCP')
  assert.deepEqual((await callsOf('--outcome', 'failed')).map((l) => l.callId), [rejected.callId])
  assert.deepEqual((await callsOf('--number', '30555')).map((l) => l.callId), [rejected.callId], 'by the digits the callee ends with')
  const [one] = await callsOf('--call-id', answered.callId)
  assert.equal(one.sip.endedBy, 'caller', 'SIPp\'s uac hangs up')
  assert.equal(one.sip.durationMs, timeOf(answered.callId, 'BYE') - timeOf(answered.callId, 200), 'answer to BYE, from SIP')
  assert.equal(one.sip.ringingMs, timeOf(answered.callId, 180) - timeOf(answered.callId, 'INVITE'))
  assert.deepEqual(one.messages.map((m) => [+new Date(m.at), m.src, m.dst]), byCall(oracle, answered.callId).map((m) => [m.at, m.src, m.dst]), '--json carries the ladder in capture order')
})
