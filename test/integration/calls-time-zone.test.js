'use strict'

// A time range typed as the tables print their times (an operator's trial):
// `collector calls` and its view print every time in UTC, without a zone
// (`START (UTC)`: `2026-11-30 04:18:33`), and an operator copies one into
// --from/--to or the search form. On a host whose TZ is not UTC, such a
// time was read in the host's zone and the window missed the call by the
// zone's offset. A time without a zone is UTC, wherever the CLI runs.

const test = require('node:test')
const assert = require('node:assert/strict')
const dgram = require('node:dgram')
const HEPjs = require('hep-js')
const hep = require('../../collectors/hep')
const { startTestCollector } = require('../helpers/collector')
const { getTestMongo } = require('../helpers/mongo')
const { runCli, serveView } = require('../helpers/cli')
const { waitFor } = require('../helpers/streams')

const AT = Math.floor(Date.now() / 1000) * 1000 - 600000 // ten minutes ago
const CALL_ID = 'zone@calls'

function packet (first, cseq, at, back = false) {
  const text = [first, 'Via: SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bK1', 'From: <sip:alice@a.example>;tag=a1', `To: <sip:bob@b.example>${back ? ';tag=b1' : ''}`,
    `Call-ID: ${CALL_ID}`, `CSeq: ${cseq}`, 'Content-Length: 0', '', ''].join('\r\n')
  return HEPjs.encapsulate(text, {
    protocolFamily: 2, protocol: 17, srcIp: back ? '10.0.0.2' : '10.0.0.1', srcPort: 5060, dstIp: back ? '10.0.0.1' : '10.0.0.2', dstPort: 5060,
    timeSeconds: Math.floor(at / 1000), timeUseconds: (at % 1000) * 1000, payloadType: 1, captureId: 7
  })
}

// The way the table prints a time: UTC, `YYYY-MM-DD HH:MM:SS`, no zone.
const printed = (ms) => new Date(ms).toISOString().slice(0, 19).replace('T', ' ')

test('--from/--to and the search form read a time without a zone as UTC, as the tables print it, whatever the host\'s TZ (an operator\'s trial)', { timeout: 90000 }, async (t) => {
  const { uri } = await getTestMongo()
  const { collector, db, port } = await startTestCollector(t, hep)
  const packets = [packet('INVITE sip:bob@b.example SIP/2.0', '1 INVITE', AT), packet('SIP/2.0 486 Busy Here', '1 INVITE', AT + 100, true)]
  const socket = dgram.createSocket('udp4')
  for (const p of packets) await new Promise((resolve, reject) => socket.send(p, port, '127.0.0.1', (err) => err ? reject(err) : resolve()))
  socket.close()
  await waitFor(() => collector.summary().processed === packets.length, { what: 'both packets processed' })
  await waitFor(async () => (await db.collection('calls').findOne({ callId: CALL_ID, final: 1486 })) !== null, { what: 'the call stored' })

  // New York: 5 hours behind UTC, so a window read there misses the call.
  const env = { ...process.env, MONGODB_URI: uri, TZ: 'America/New_York' }
  const [from, to] = [printed(AT - 5000), printed(AT + 5000)]
  const listed = await runCli(env, 'calls', '--database', db.databaseName, '--from', from, '--to', to, '--json')
  assert.equal(listed.code, 0, listed.stderr)
  assert.deepEqual(listed.stdout.trim().split('\n').filter(Boolean).map((line) => JSON.parse(line).callId), [CALL_ID], listed.stderr)
  assert.match(listed.stderr, new RegExp(`from ${new Date(AT - 5000).toISOString()} to ${new Date(AT + 5000).toISOString()}`), 'the footer names the UTC window')

  const view = await serveView(t, env, ['--database', db.databaseName, '--serve', '0'])
  const page = await (await fetch(`${view.url}sip?from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`)).text()
  assert.match(page, /zone@calls/, 'the search form reads the printed time as UTC too')
  assert.match(page, /<p id="summary">1 call/)
  // A time that says its zone is read in it.
  const zoned = await runCli(env, 'calls', '--database', db.databaseName, '--from', `${from}-05:00`, '--to', `${to}-05:00`, '--json')
  assert.equal(zoned.stdout.trim(), '', 'five hours later: not the call')
  await view.stop()
  // Search flags beside --serve were ignored without a word (QA): it says the search page they ask for; --json is refused.
  const searched = await serveView(t, env, ['--database', db.databaseName, '--serve', '0', '--from', from, '--to', to, '--outcome', 'failed'])
  const search = await waitFor(() => /^the calls your flags ask for: (\S+)$/m.exec(searched.stdout()), { what: 'the search line' })
  assert.equal(search[1], `${searched.url}sip?outcome=failed&from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`)
  assert.match(await (await fetch(search[1])).text(), /<p id="summary">1 call/)
  await searched.stop()
  const json = await runCli(env, 'calls', '--database', db.databaseName, '--serve', '0', '--json')
  assert.deepEqual([json.code, json.stderr], [2, 'collector: --json: is for the terminal; --serve shows the view as HTML (its one-call pages link their exports) (see collector calls --help)\n'])
  // A day its month has not, a bare number, a window that starts after now: one line each, exit 2 (QA).
  for (const [args, message] of [
    [['--from', '2026-02-30T00:00Z'], /^collector: --from: must be a time, e\.g\. 2026-11-27T05:00:00Z/],
    [['--from', '1'], /^collector: --from: must be a time/],
    [['--from', '2099-01-01T00:00Z'], /^collector: --from: 2099-01-01T00:00Z is in the future \(give --to for a window ending later\)/]
  ]) {
    const refused = await runCli(env, 'calls', '--database', db.databaseName, ...args)
    assert.deepEqual([refused.code, refused.stdout, refused.stderr.trim().split('\n').length], [2, '', 1], `${args.join(' ')}: ${refused.stderr}`)
    assert.match(refused.stderr, message)
  }
})
