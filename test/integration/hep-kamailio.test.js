'use strict'

// Real SIP through a real HEP agent: SIPp (Debian sip-tester) places calls
// through Kamailio (its siptrace module in HEP mode, the configuration the
// docs/hep.md gives) to a SIPp UAS; Kamailio copies every SIP message it receives
// and sends to the HEP collector. The calls stored are checked against
// SIPp's own message trace (the Call-IDs it used, the final status it got).

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawn } = require('node:child_process')
const { once } = require('node:events')
const hep = require('../../collectors/hep')
const { byeTagOf, callOutcome } = require('../../collectors/hep/calls')
const { startTestCollector } = require('../helpers/collector')
const { requireBinary } = require('../helpers/rtp-peers')
const { freePortPair } = require('../helpers/ports')
const { waitFor } = require('../helpers/streams')
const { removeDir } = require('../helpers/temp-dir')

const HOST = '127.0.0.1'
const CALLS = 3
const MODULES = ['/usr/lib/x86_64-linux-gnu/kamailio/modules', '/usr/lib/aarch64-linux-gnu/kamailio/modules', '/usr/lib/kamailio/modules'].find((dir) => fs.existsSync(dir))

// A proxy that sends every request on to the UAS, and siptrace as docs/hep.md shows it.
function kamailioConfig ({ port, uasPort, hepPort }) {
  return [
    '#!KAMAILIO',
    'debug=2', 'log_stderror=yes', 'children=1', `listen=udp:${HOST}:${port}`, `mpath="${MODULES}/"`,
    ...['tm', 'sl', 'pv', 'siptrace'].map((m) => `loadmodule "${m}.so"`),
    `modparam("siptrace", "duplicate_uri", "sip:${HOST}:${hepPort}")`,
    'modparam("siptrace", "hep_mode_on", 1)',
    'modparam("siptrace", "hep_version", 3)',
    'modparam("siptrace", "hep_capture_id", 2001)',
    'modparam("siptrace", "trace_to_database", 0)',
    'modparam("siptrace", "trace_on", 1)',
    'modparam("siptrace", "trace_mode", 1)',
    'request_route {', `  $du = "sip:${HOST}:${uasPort}";`, '  t_relay();', '}', ''
  ].join('\n')
}

// In a process group of its own: kamailio forks workers, and all of them go with it.
function startProcess (t, command, args, options = {}) {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true, ...options })
  let output = ''
  for (const stream of [child.stdout, child.stderr]) stream.setEncoding('utf8').on('data', (chunk) => { output = (output + chunk).slice(-20000) })
  t.after(() => {
    try {
      process.kill(-child.pid, 'SIGKILL')
    } catch {} // the group is gone already
    child.stdout.destroy()
    child.stderr.destroy()
  })
  return { child, output: () => output }
}

test('SIPp calls through Kamailio (siptrace in HEP mode) become one call document each, as SIPp saw them', { timeout: 90000 }, async (t) => {
  requireBinary('kamailio', 'kamailio')
  requireBinary('sipp', 'sip-tester')
  assert.ok(MODULES, 'kamailio modules directory')
  const { collector, db, port: hepPort } = await startTestCollector(t, hep)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hep-kamailio-'))
  t.after(() => removeDir(dir))
  const [proxyPort, uasPort, uacPort] = [await freePortPair(), await freePortPair(), await freePortPair()]
  fs.writeFileSync(path.join(dir, 'kamailio.cfg'), kamailioConfig({ port: proxyPort, uasPort, hepPort }))
  const kamailio = startProcess(t, 'kamailio', ['-f', path.join(dir, 'kamailio.cfg'), '-DD', '-E', '-P', path.join(dir, 'kamailio.pid'), '-w', dir])
  startProcess(t, 'sipp', ['-sn', 'uas', '-i', HOST, '-p', String(uasPort), '-nostdin'], { cwd: dir })
  await new Promise((resolve) => setTimeout(resolve, 1500)) // both bind their ports
  assert.equal(kamailio.child.exitCode, null, `kamailio is running: ${kamailio.output()}`)
  const uac = startProcess(t, 'sipp', ['-sn', 'uac', '-i', HOST, '-p', String(uacPort), '-s', '+4930123', '-m', String(CALLS), '-l', '1',
    '-nostdin', '-timeout', '30', '-trace_msg', '-message_file', path.join(dir, 'uac-messages.log'), `${HOST}:${proxyPort}`], { cwd: dir })
  const [code] = await once(uac.child, 'exit')
  assert.equal(code, 0, `SIPp's calls all succeeded: ${uac.output().slice(-2000)}`)
  // SIPp's own record: the Call-IDs of the INVITEs it sent.
  const trace = fs.readFileSync(path.join(dir, 'uac-messages.log'), 'utf8')
  const callIds = [...new Set([...trace.matchAll(/^INVITE [\s\S]*?^Call-ID:\s*(\S+)/gmi)].map((m) => m[1]))]
  assert.equal(callIds.length, CALLS, 'SIPp placed the calls')
  await waitFor(async () => (await db.collection('calls').countDocuments({ byes: { $exists: true } })) === CALLS, { what: 'every call ended in the database', timeout: 20000 })
  await waitFor(() => { const s = collector.summary(); return s.inFlight === 0 && s.received === s.processed + s.dropped.total })
  await collector.stop()
  const docs = await db.collection('calls').find().toArray()
  assert.deepEqual(docs.map((d) => d.callId).sort(), [...callIds].sort(), 'one document per call SIPp placed, by its Call-ID')
  for (const doc of docs) {
    assert.equal(doc.callee.user, '+4930123')
    assert.equal(doc.caller.user, 'sipp')
    assert.equal(doc.final % 1000, 200, 'answered')
    assert.ok(doc.invitedAt <= doc.answeredAt && doc.answeredAt <= callOutcome(doc).endedAt, 'invited, answered, ended in that order')
    assert.equal(byeTagOf(doc), doc.callerTag, 'the caller (SIPp\'s UAC) hung up')
  }
  assert.equal(collector.summary().dropped.total, 0, JSON.stringify(collector.summary().dropped))
  // Every message Kamailio traced, in and out, stored once: on each side of
  // the proxy, the UAC's exchange as SIPp logged it.
  const messages = await db.collection('sip_messages').find().sort({ at: 1, _id: 1 }).toArray()
  const proxy = `${HOST}:${proxyPort}`
  for (const callId of callIds) {
    const mine = messages.filter((m) => m.callId === callId)
    const uacSide = mine.filter((m) => m.src === proxy ? m.dst === `${HOST}:${uacPort}` : m.src === `${HOST}:${uacPort}`)
    const uasSide = mine.filter((m) => m.src === proxy ? m.dst === `${HOST}:${uasPort}` : m.src === `${HOST}:${uasPort}`)
    assert.equal(uacSide.length + uasSide.length, mine.length, `${callId}: every message between the proxy and an end`)
    const sipp = [...trace.matchAll(/^(?:INVITE|ACK|BYE|SIP\/2\.0 \d{3})[^\r\n]*[\s\S]*?^Call-ID:\s*(\S+)/gmi)].filter((m) => m[1] === callId)
    assert.equal(uacSide.length, sipp.length, `${callId}: the UAC's side as SIPp logged it, each message once (${uacSide.map((m) => m.firstLine).join(' | ')})`)
    assert.deepEqual([...new Set(uasSide.map((m) => m.cseq))].sort(), ['1 ACK', '1 INVITE', '2 BYE'], 'the UAS side: the dialog relayed')
  }
})
