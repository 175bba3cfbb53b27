'use strict'

// Finding a SIP call the way an operator does, past the view's read bound
// (what a QA pass found): the HEP collector stores calls from real HEP
// packets (hep-js), then the view's search (in this process, a read bound
// of LIMIT calls a page load) must find an old call by number and every
// failed call, page through what it found, take a time range, and say when
// the bound cut its read; the ladder keeps capture order within one
// millisecond (two agents, the later capture arriving first) and so does
// the pcap export (tshark reads it); the CLI finds a call by a number
// dialled with its 00 prefix, prints a tel: caller without an empty host,
// and finds what an agent logged of a call whose SIP it did not capture.

const test = require('node:test')
const assert = require('node:assert/strict')
const dgram = require('node:dgram')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const HEPjs = require('hep-js')
const hep = require('../../collectors/hep')
const { startTestCollector } = require('../helpers/collector')
const { getTestMongo } = require('../helpers/mongo')
const { runCli } = require('../helpers/cli')
const { waitFor } = require('../helpers/streams')
const { run } = require('../helpers/rtp-peers')
const { removeDir } = require('../helpers/temp-dir')
const { CallsViewServer } = require('../../app/commands/calls-view')
const { TABLE } = require('../../app/commands/calls')

const CALLS = 12 // even ones answered, odd ones rejected (486); the oldest first
const LIMIT = 4 // calls a page load reads at most
const WORST = 3 // rows a page
const T0 = Math.floor(Date.now() / 1000) * 1000 - 1800000 // half an hour ago
const COLLECTIONS = { calls: 'calls', streams: 'streams', messages: 'sip_messages', logs: 'call_logs' }

function packet (text, { at, usec = 0, back = false, type = 1, correlation, agent = 7 }) {
  return HEPjs.encapsulate(text, {
    protocolFamily: 2, protocol: 17, srcIp: back ? '10.0.0.2' : '10.0.0.1', srcPort: 5060, dstIp: back ? '10.0.0.1' : '10.0.0.2', dstPort: 5060,
    timeSeconds: Math.floor(at / 1000), timeUseconds: (at % 1000) * 1000 + usec, payloadType: type, captureId: agent, ...(correlation ? { correlation_id: correlation } : {})
  })
}

function sip (first, { callId, caller, cseq, tagged }) {
  return [first, 'Via: SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bK1', `From: <${caller}>;tag=a1`, `To: <sip:bob@b.example>${tagged ? ';tag=b1' : ''}`,
    `Call-ID: ${callId}`, `CSeq: ${cseq}`, 'Content-Length: 0', '', ''].join('\r\n')
}

// Call n: INVITE, then 200 (answered, with a re-INVITE refused 488 on the first) or 486.
function callPackets (n) {
  const at = T0 + n * 10000
  const call = { callId: `c${n}@search`, caller: `sip:+4930100${String(n).padStart(2, '0')}@a.example` }
  const packets = [packet(sip('INVITE sip:bob@b.example SIP/2.0', { ...call, cseq: '1 INVITE' }), { at })]
  if (n % 2 === 1) return [...packets, packet(sip('SIP/2.0 486 Busy Here', { ...call, cseq: '1 INVITE', tagged: true }), { at: at + 100, back: true })]
  packets.push(packet(sip('SIP/2.0 200 OK', { ...call, cseq: '1 INVITE', tagged: true }), { at: at + 2000, back: true }))
  // Every answered call but the oldest hangs up: a search for the one whose BYE never came reads past them.
  if (n > 0) packets.push(packet(sip('BYE sip:bob@b.example SIP/2.0', { ...call, cseq: '2 BYE', tagged: true }), { at: at + 5000 }))
  if (n === 0) {
    packets.push(packet(sip('INVITE sip:bob@b.example SIP/2.0', { ...call, cseq: '2 INVITE', tagged: true }), { at: at + 3000 }))
    packets.push(packet(sip('SIP/2.0 488 Not Acceptable Here', { ...call, cseq: '2 INVITE', tagged: true }), { at: at + 3050, back: true }))
  }
  return packets
}

async function send (port, packets) {
  const socket = dgram.createSocket('udp4')
  try {
    for (const p of packets) await new Promise((resolve, reject) => socket.send(p, port, '127.0.0.1', (err) => err ? reject(err) : resolve()))
  } finally {
    socket.close()
  }
}

// The Call-IDs a search page lists, top to bottom.
const listed = (body) => [...body.matchAll(/<tr><td class="l"><a href="\/sip\/call\?id=([^"]+)">/g)].map((m) => decodeURIComponent(m[1]))

test('the SIP search finds calls past the read bound, pages through them, takes a time range; capture order holds within a millisecond; the CLI finds 00-dialled numbers and logged-only calls', { timeout: 120000 }, async (t) => {
  const { uri } = await getTestMongo()
  const { collector, db, port } = await startTestCollector(t, hep)
  const order = { callId: 'order@search', caller: 'tel:+493010000808' }
  const packets = [
    ...Array.from({ length: CALLS }, (_, n) => callPackets(n)).flat(),
    // Two agents: the 180 (captured 0.9 ms past the millisecond) arrives before the INVITE (0.2 ms).
    packet(sip('SIP/2.0 180 Ringing', { ...order, cseq: '1 INVITE', tagged: true }), { at: T0 + 900000, usec: 900, back: true, agent: 8 }),
    packet(sip('INVITE sip:bob@b.example SIP/2.0', { ...order, cseq: '1 INVITE' }), { at: T0 + 900000, usec: 200 }),
    // A log line naming a call whose SIP was not captured here.
    packet('call routed to trunk 7', { at: T0 + 950000, type: 100, correlation: 'logged-only@search' })
  ]
  await send(port, packets)
  await waitFor(() => collector.summary().processed === packets.length, { what: 'every packet processed' })

  const view = new CallsViewServer(db.collection('streams'), { host: '127.0.0.1', port: 0, since: 3600000, worst: WORST, limit: LIMIT, table: TABLE, db, collections: COLLECTIONS })
  const { port: viewPort } = await view.start()
  t.after(() => view.stop())
  const page = async (query) => (await fetch(`http://127.0.0.1:${viewPort}/sip?${query}`)).text()

  // The oldest call, by number: beyond the LIMIT most recent calls of the window.
  assert.deepEqual(listed(await page('number=%2B493010000')), ['c0@search'])
  assert.deepEqual(listed(await page('number=0030100%2001')), ['c1@search'], 'a number dialled with 00, spaced')
  assert.deepEqual(listed(await page(`number=${encodeURIComponent('<b>1</b>')}`)), [], 'text that is not a number matches only whole')
  // Every failed call, WORST a page; the read bound (LIMIT) counts calls that match.
  const failedFirst = await page('outcome=failed&order=time')
  assert.match(failedFirst, /<p id="summary">4 calls active from .* \(the 4 most recent that match read: narrow the time range for older ones\); SIP calls 4: answered 0, failed 4/)
  const next = /<a id="next" href="\/sip\?(outcome=failed&amp;order=time&amp;to=[^"&]+&amp;page=2)">/.exec(failedFirst)
  assert.ok(next, 'a link to the next page of the same window (to fixed)')
  const failedSecond = await page(next[1].replace(/&amp;/g, '&'))
  assert.doesNotMatch(failedSecond, /id="next"/)
  assert.deepEqual([...listed(failedFirst), ...listed(failedSecond)], ['c11@search', 'c9@search', 'c7@search', 'c5@search'], 'newest first, each once')
  // A time range reaches the older failed calls.
  const older = await page(`outcome=failed&order=time&from=${new Date(T0).toISOString()}&to=${new Date(T0 + 45000).toISOString()}`)
  assert.deepEqual(listed(older), ['c3@search', 'c1@search'])
  assert.match(older, /<p id="summary">2 calls active from [^;]*; SIP calls 2/, 'all of the range read: no bound said')
  const answered = await page('outcome=answered&number=%2B493010000')
  assert.deepEqual(listed(answered), ['c0@search'])
  assert.match(answered, /<td class="l">200<\/td>/, 'an answered call lists its answer')
  assert.doesNotMatch(answered, /488/, 'not a later re-INVITE\'s refusal')
  // Quiet past the view's bounds (`collector calls --bye-unseen-after`): an answered call whose BYE never came, a call that rang 15 minutes ago.
  assert.deepEqual(listed(await page('outcome=no-final-seen')), ['order@search'], 'no final response in 15 minutes: not ringing')
  assert.deepEqual(listed(await page('outcome=no-bye-seen')), [], 'within the default hour')
  const quiet = new CallsViewServer(db.collection('streams'), { host: '127.0.0.1', port: 0, since: 3600000, worst: WORST, limit: LIMIT, table: TABLE, db, collections: COLLECTIONS, bounds: { byeUnseenAfter: 600000 } })
  const { port: quietPort } = await quiet.start()
  t.after(() => quiet.stop())
  const lost = await (await fetch(`http://127.0.0.1:${quietPort}/sip?outcome=no-bye-seen&number=%2B493010000`)).text()
  assert.deepEqual(listed(lost), ['c0@search'])
  // Without a number, five answered calls that hung up are more recent than it, past the read bound (LIMIT 4): asked of the database.
  const lostAny = await (await fetch(`http://127.0.0.1:${quietPort}/sip?outcome=no-bye-seen`)).text()
  assert.deepEqual(listed(lostAny), ['c0@search'], 'the bound counts the calls with no BYE, not every answered one')
  assert.match(lost, /<td class="l">≥1\.1s<\/td><td class="l">200, no BYE seen<\/td>/, 'at least answer to its last message (the 488), no BYE seen')
  assert.match(lost, /SIP calls 1: answered 1 \(no-bye-seen 1\)/)
  const lostPage = await (await fetch(`http://127.0.0.1:${quietPort}/sip/call?id=c0%40search`)).text()
  assert.match(lostPage, /<th class="l">Outcome<\/th><td class="l">200, no BYE seen<\/td>/)
  assert.equal((await fetch(`http://127.0.0.1:${viewPort}/sip?from=yesterday`)).status, 400)
  assert.equal((await fetch(`http://127.0.0.1:${viewPort}/sip?page=0`)).status, 400)
  assert.equal((await fetch(`http://127.0.0.1:${viewPort}/sip?to=-271821-04-20T00:00:00Z`)).status, 400, 'a time a Date cannot step back from')

  // Capture order within one millisecond: the INVITE (0.2 ms) before the 180 (0.9 ms).
  const call = await (await fetch(`http://127.0.0.1:${viewPort}/sip/call?id=order%40search`)).text()
  assert.deepEqual([...call.matchAll(/<h3 id="m\d+">\d+\. [^<]*<\/h3><pre>([^\r\n]+)/g)].map((m) => m[1]), ['INVITE sip:bob@b.example SIP/2.0', 'SIP/2.0 180 Ringing'])
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'calls-sip-search-'))
  t.after(() => removeDir(dir))
  const pcap = path.join(dir, 'order.pcap')
  fs.writeFileSync(pcap, Buffer.from(await (await fetch(`http://127.0.0.1:${viewPort}/sip/call.pcap?id=order%40search`)).arrayBuffer()))
  const read = await run('tshark', ['-r', pcap, '-T', 'fields', '-e', 'frame.time_epoch', '-e', 'sip.CSeq', '-e', 'sip.Status-Code'])
  const base = Math.floor((T0 + 900000) / 1000)
  assert.deepEqual(read.stdout.trim().split('\n').map((line) => line.split('\t')).map(([time, cseq, status]) => [Math.round((Number(time) - base) * 1e6), cseq, status]),
    [[(T0 + 900000) % 1000 * 1000 + 200, '1 INVITE', ''], [(T0 + 900000) % 1000 * 1000 + 900, '1 INVITE', '180']], 'tshark: the capture times to the microsecond, in order')

  // The CLI: a 00-dialled number, a tel: caller, a call only an agent's log names.
  const env = { ...process.env, MONGODB_URI: uri }
  const where = ['--database', db.databaseName]
  const byNumber = await runCli(env, 'calls', ...where, '--number', '0030 10005')
  assert.equal(byNumber.code, 0, byNumber.stderr)
  assert.match(byNumber.stdout, /c5@search/)
  assert.doesNotMatch(byNumber.stdout, /c[0-46-9]@search/)
  const tel = await runCli(env, 'calls', ...where, '--call-id', 'order@search')
  assert.match(tel.stdout, / \+493010000808 /, 'a tel: caller has no host to print')
  assert.doesNotMatch(tel.stdout, /\+493010000808@/)
  const none = await runCli(env, 'calls', ...where, '--number', '+4999')
  assert.match(none.stdout, /^0 calls with SIP or a report in the last 1h, number \+4999, in \S+\.calls and streams/m, 'a number search says it searched the SIP calls, and for what')
  const logged = await runCli(env, 'calls', ...where, '--call-id', 'logged-only@search')
  assert.equal(logged.code, 0, logged.stderr)
  assert.match(logged.stderr, /no call with Call-ID logged-only@search is stored .*; 1 line that agents logged name it \(call_logs\)/)
  assert.match(logged.stdout, /call routed to trunk 7/)
  const json = await runCli(env, 'calls', ...where, '--call-id', 'logged-only@search', '--json')
  assert.deepEqual(JSON.parse(json.stdout.trim()).logs.map((l) => l.text), ['call routed to trunk 7'])
  const missing = await runCli(env, 'calls', ...where, '--call-id', 'nothing@search')
  assert.equal(missing.code, 1)
})

test('the text export of a call is safe to print: a sender\'s ESC, BEL, C1, bidi and lone CR are escape text, its lines stay lines, as on the call\'s page; the pcap keeps the bytes (QA)', { timeout: 60000 }, async (t) => {
  const { collector, db, port } = await startTestCollector(t, hep)
  const hostile = 'Subject: \u001b[2J\u0007 \u009b31m paid \u202egnp.exe\rFAKE LINE \\x1b typed'
  const text = sip('INVITE sip:bob@b.example SIP/2.0', { callId: 'hostile@text', caller: 'sip:eve@a.example', cseq: '1 INVITE' }).replace('Content-Length: 0', `${hostile}\r\nContent-Length: 0`)
  const quoted = sip('INVITE sip:bob@b.example SIP/2.0', { callId: 'quoted@text', caller: 'sip:eve@a.example', cseq: '1 INVITE' }).replace('Content-Length: 0', 'X-Name: "A \\"quoted\\" name"\r\nContent-Length: 0')
  await send(port, [packet(text, { at: T0 }), packet(quoted, { at: T0 })])
  await waitFor(() => collector.summary().processed === 2, { what: 'the packets stored' })
  const view = new CallsViewServer(db.collection('streams'), { host: '127.0.0.1', port: 0, since: 3600000, worst: WORST, limit: LIMIT, table: TABLE, db, collections: COLLECTIONS })
  const { port: viewPort } = await view.start()
  t.after(() => view.stop())

  const response = await fetch(`http://127.0.0.1:${viewPort}/sip/call.txt?id=hostile%40text`)
  assert.equal(response.status, 200)
  assert.equal(response.headers.get('content-type'), 'text/plain; charset=utf-8')
  assert.equal(response.headers.get('x-content-type-options'), 'nosniff')
  const body = await response.text()
  // Nothing a terminal acts on or hides but the lines' own CR LF, LF and tabs.
  // eslint-disable-next-line no-control-regex
  assert.doesNotMatch(body.replace(/\r\n/g, '\n'), /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2066-\u2069]/)
  // The sender's own "\x1b" text: its backslash doubled, told apart from the ESC shown as \x1b.
  assert.ok(body.includes('Subject: \\x1b[2J\\x07 \\x9b31m paid \\u202egnp.exe\\rFAKE LINE \\\\x1b typed\r\n'), body)
  assert.ok(body.includes('\r\nCall-ID: hostile@text\r\nCSeq: 1 INVITE\r\n'), 'the message keeps its lines')
  // The page shows the message as the export does: the lone CR as \r, not a line of the sender's making.
  const page = await (await fetch(`http://127.0.0.1:${viewPort}/sip/call?id=hostile%40text`)).text()
  assert.ok(page.includes('paid \\u202egnp.exe\\rFAKE LINE \\\\x1b typed'), page)
  assert.doesNotMatch(page, /\rFAKE/)
  // A message with nothing to escape keeps its backslashes as sent (a SIP quoted pair), in the export and on the page.
  const plain = await (await fetch(`http://127.0.0.1:${viewPort}/sip/call.txt?id=quoted%40text`)).text()
  assert.ok(plain.includes('\r\nX-Name: "A \\"quoted\\" name"\r\n'), plain)
  const plainPage = await (await fetch(`http://127.0.0.1:${viewPort}/sip/call?id=quoted%40text`)).text()
  assert.ok(plainPage.includes('X-Name: &#34;A \\&#34;quoted\\&#34; name&#34;'), plainPage)
  const pcapReply = await fetch(`http://127.0.0.1:${viewPort}/sip/call.pcap?id=hostile%40text`)
  // A browser saves it as a file named after the call, in characters any file system takes.
  assert.equal(pcapReply.headers.get('content-disposition'), 'attachment; filename="hostile_text.pcap"')
  const pcap = Buffer.from(await pcapReply.arrayBuffer())
  assert.ok(pcap.includes(Buffer.from(hostile, 'utf8')), 'the pcap holds the bytes as captured')
})

test('a call whose INVITE was not captured reads answered and ended, from its first message; a message stored cut says how much is stored; a long first line is cut in the terminal (QA)', { timeout: 60000 }, async (t) => {
  const { collector, db, port } = await startTestCollector(t, hep)
  const { uri } = await getTestMongo()
  const at = Date.now() - 60000
  const mid = { callId: 'mid@capture', caller: 'sip:alice@a.example', tagged: true }
  const big = sip('INVITE sip:bob@b.example SIP/2.0', { callId: 'big@capture', caller: 'sip:carol@a.example', cseq: '1 INVITE' }).replace('Content-Length: 0', `Subject: ${'x'.repeat(20000)}\r\nContent-Length: 0`)
  await send(port, [
    packet(sip('BYE sip:bob@b.example SIP/2.0', { ...mid, cseq: '2 BYE' }), { at }),
    packet(sip('SIP/2.0 200 OK', { ...mid, cseq: '2 BYE' }), { at: at + 10, back: true }),
    packet(big, { at }),
    packet(sip(`SIP/2.0 503 ${'Overloaded '.repeat(600)}`, { callId: 'big@capture', caller: 'sip:carol@a.example', cseq: '1 INVITE', tagged: true }), { at: at + 50, back: true })
  ])
  await waitFor(() => collector.summary().processed === 4, { what: 'the packets stored' })
  const env = { ...process.env, MONGODB_URI: uri }
  const where = ['--database', db.databaseName]
  const json = await runCli(env, 'calls', ...where, '--call-id', 'mid@capture', '--json')
  assert.equal(json.code, 0, json.stderr)
  const { sip: outcome } = JSON.parse(json.stdout.trim())
  assert.deepEqual([outcome.outcome, outcome.answerUnseen, outcome.endUnseen, outcome.durationMs, outcome.startedAt], ['answered', true, false, null, new Date(at).toISOString()], json.stdout)
  const table = await runCli(env, 'calls', ...where, '--call-id', 'mid@capture')
  assert.match(table.stdout, /answer not seen, hung up/)
  assert.ok(table.stdout.includes(new Date(at).toISOString().slice(0, 19).replace('T', ' ')), `started at its first message: ${table.stdout}`)
  for (const [outcome, found] of [['answered', true], ['no-answer', false], ['no-final-seen', false]]) {
    const listedBy = await runCli(env, 'calls', ...where, '--outcome', outcome)
    assert.equal(/mid@capture/.test(listedBy.stdout), found, `--outcome ${outcome}: ${listedBy.stdout}`)
  }
  const ladder = await runCli(env, 'calls', ...where, '--call-id', 'big@capture')
  assert.equal(ladder.code, 0, ladder.stderr)
  const widest = Math.max(...ladder.stdout.split('\n').map((line) => line.length))
  assert.ok(widest < 300, `a 6,600-character reason cut in the terminal: ${widest} columns`)
  assert.match(ladder.stdout, /SIP\/2\.0 503 Overloaded Overloaded .*…/)
  const view = new CallsViewServer(db.collection('streams'), { host: '127.0.0.1', port: 0, since: 3600000, worst: WORST, limit: LIMIT, table: TABLE, db, collections: COLLECTIONS })
  const { port: viewPort } = await view.start()
  t.after(() => view.stop())
  const text = await (await fetch(`http://127.0.0.1:${viewPort}/sip/call.txt?id=big%40capture`)).text()
  assert.match(text, new RegExp(`xxx\\n\\[cut: 8192 of its ${Buffer.byteLength(big)} bytes stored\\]\\n`), 'the text export says the message is cut')
  const page = await (await fetch(`http://127.0.0.1:${viewPort}/sip/call?id=big%40capture`)).text()
  assert.ok(page.includes(`[cut: 8192 of its ${Buffer.byteLength(big)} bytes stored]`), 'and the call page')
  const midPage = await (await fetch(`http://127.0.0.1:${viewPort}/sip/call?id=mid%40capture`)).text()
  assert.match(midPage, /answer not seen, hung up/)
})

test('no-bye-seen asked of the database selects exactly the calls callEndOf reads as not ended, whatever their byes hold', async (t) => {
  const { MongoClient } = require('mongodb')
  const { notEndedByByeQuery, callEndOf } = require('../../collectors/hep/calls')
  const { uri } = await getTestMongo()
  const client = await new MongoClient(uri).connect()
  t.after(() => client.close())
  const calls = client.db(`byes_${process.pid}_${Date.now()}`).collection('calls')
  const at = (s) => `2026-01-01T00:00:${String(s).padStart(2, '0')}.000Z`
  // A tag may hold a | (sip.js takes tag=[^;\s]+): the value is what follows the first one.
  const answers = [undefined, `${at(1)}|a b`, `${at(1)}|a.1 b-2`, `${at(1)}| b`, 7, `${at(1)}|p q|r`, `${at(1)}|p|x q`]
  const byeSets = [undefined, {}, { h: `${at(5)}|b a` }, { h: `${at(5)}|a b` }, { h: `${at(5)}|a c` }, { h: `${at(5)}|a c`, i: `${at(6)}|b a` },
    { h: `${at(5)}|b-2 a.1` }, { h: `${at(5)}| b` }, { h: 42 }, { h: `${at(5)}` }, 'text', [`${at(5)}|a b`], { h: `${at(5)}|p q|s` }, { h: `${at(5)}|q p|r` }, { h: `${at(5)}|p|x q` }]
  const docs = []
  for (const [i, firstAnswer] of answers.entries()) {
    for (const [j, byes] of byeSets.entries()) {
      // A call stored before per-dialog BYEs has an endedAt, read only where callEndOf reads it.
      for (const [k, endedAt] of [undefined, new Date(at(4))].entries()) {
        const doc = { callId: `${i}.${j}.${k}` }
        if (firstAnswer !== undefined) doc.firstAnswer = firstAnswer
        if (byes !== undefined) doc.byes = byes
        if (endedAt !== undefined) doc.endedAt = endedAt
        docs.push(doc)
      }
    }
  }
  await calls.insertMany(docs.map((doc) => ({ ...doc })))
  const found = (await calls.find(notEndedByByeQuery()).toArray()).map((doc) => doc.callId).sort()
  const expected = docs.filter((doc) => callEndOf(doc).endedAt === null).map((doc) => doc.callId).sort()
  assert.deepEqual({ more: found.filter((id) => !expected.includes(id)), less: expected.filter((id) => !found.includes(id)) }, { more: [], less: [] })
  assert.ok(expected.length > 10 && expected.length < docs.length - 10, `both kinds among ${docs.length}: ${expected.length} not ended`)
})

test('each --outcome asked of the database selects exactly the calls callOutcome reads so: a BYE with no final response is answered, its answer not seen (QA)', async (t) => {
  const { MongoClient } = require('mongodb')
  const { callOutcome, END_UNSEEN_AFTER } = require('../../collectors/hep/calls')
  const { sipFilter, OUTCOME_FILTERS } = require('../../app/commands/calls-list')
  const { uri } = await getTestMongo()
  const client = await new MongoClient(uri).connect()
  t.after(() => client.close())
  const calls = client.db(`outcomes_${process.pid}_${Date.now()}`).collection('calls')
  const now = Date.parse('2026-01-01T01:00:00Z')
  const ago = (ms) => new Date(now - ms)
  const bye = (ms, tags = 'a b') => ({ h: `${ago(ms).toISOString()}|${tags}` })
  const seen = (ms) => ({ firstSeen: ago(ms + 1000), lastSeen: ago(ms) })
  const docs = [
    { callId: 'answered-ended', invitedAt: ago(60000), answeredAt: ago(55000), answerStatus: 200, final: 200, firstAnswer: `${ago(55000).toISOString()}|a b`, byes: bye(10000), ...seen(10000) },
    { callId: 'answered-open', invitedAt: ago(60000), answeredAt: ago(55000), answerStatus: 200, final: 200, ...seen(50000) },
    { callId: 'answered-no-bye-seen', invitedAt: ago(2 * 3600e3), answeredAt: ago(2 * 3600e3), answerStatus: 200, final: 200, ...seen(2 * 3600e3) },
    { callId: 'bye-only', byes: bye(10000), ...seen(10000) },
    { callId: 'bye-only-old', byes: bye(20 * 60000), ...seen(20 * 60000) },
    { callId: 'legacy-bye-only', endedAt: ago(10000), ...seen(10000) },
    { callId: 'ringing', invitedAt: ago(30000), ringingAt: ago(29000), ...seen(29000) },
    { callId: 'no-final-seen', invitedAt: ago(20 * 60000), ...seen(20 * 60000) },
    { callId: 'busy', invitedAt: ago(30000), final: 486, ...seen(29000) },
    { callId: 'busy-then-bye', invitedAt: ago(30000), final: 486, byes: bye(20000), ...seen(20000) },
    { callId: 'cancelled', invitedAt: ago(30000), cancelledAt: ago(20000), final: 487, ...seen(20000) }
  ]
  await calls.insertMany(docs.map((doc) => ({ ...doc })))
  const reading = { now, finalUnseenAfter: END_UNSEEN_AFTER.final, byeUnseenAfter: END_UNSEEN_AFTER.bye }
  const read = new Map(docs.map((doc) => [doc.callId, callOutcome(doc, reading)]))
  assert.deepEqual([read.get('bye-only').outcome, read.get('bye-only-old').outcome, read.get('legacy-bye-only').outcome], ['answered', 'answered', 'answered'])
  for (const outcome of OUTCOME_FILTERS) {
    const found = (await calls.find(sipFilter({ outcome }, reading)).toArray()).map((doc) => doc.callId).sort()
    const wanted = outcome === 'no-bye-seen' ? (o) => o.outcome === 'answered' && o.endUnseen : (o) => o.outcome === outcome
    const expected = docs.filter((doc) => wanted(read.get(doc.callId))).map((doc) => doc.callId).sort()
    assert.deepEqual(found, expected, outcome)
  }
})

// What a QA pass found of windows and of SIP that is no call: OPTIONS pings
// and a REGISTER were listed and counted as unanswered calls; a window
// within a long call did not find it (a call's last message had to be in
// it); the page took a window that ends before it begins; and a page the
// database could not answer was a bare 500.
test('OPTIONS and REGISTER are no calls (counted apart, found by --call-id); a call is in a window it was active in; the page refuses to before from; a database down answers 503', { timeout: 60000 }, async (t) => {
  const { collector, db, port } = await startTestCollector(t, hep)
  const at = T0
  const long = { callId: 'long@window', caller: 'sip:+4915001@a.example' }
  const packets = [
    packet(sip('INVITE sip:bob@b.example SIP/2.0', { ...long, cseq: '1 INVITE' }), { at }),
    packet(sip('SIP/2.0 200 OK', { ...long, cseq: '1 INVITE', tagged: true }), { at: at + 1000, back: true }),
    packet(sip('BYE sip:bob@b.example SIP/2.0', { ...long, cseq: '2 BYE', tagged: true }), { at: at + 600000 }) // 10 minutes later
  ]
  for (let n = 0; n < 3; n++) {
    const ping = { callId: `ping-${n}@trunk`, caller: 'sip:trunk1@a.example' }
    packets.push(packet(sip('OPTIONS sip:bob@b.example SIP/2.0', { ...ping, cseq: '1 OPTIONS' }), { at: at + 300000 + n * 30000 }))
    packets.push(packet(sip('SIP/2.0 200 OK', { ...ping, cseq: '1 OPTIONS', tagged: true }), { at: at + 300010 + n * 30000, back: true }))
  }
  const reg = { callId: 'reg@trunk', caller: 'sip:trunk1@a.example' }
  packets.push(packet(sip('REGISTER sip:b.example SIP/2.0', { ...reg, cseq: '1 REGISTER' }), { at: at + 310000 }))
  packets.push(packet(sip('SIP/2.0 200 OK', { ...reg, cseq: '1 REGISTER', tagged: true }), { at: at + 310010, back: true }))
  await send(port, packets)
  await waitFor(() => collector.summary().processed === packets.length, { what: 'every packet processed' })
  await waitFor(async () => (await db.collection('calls').countDocuments()) === 5, { what: 'five Call-IDs stored' })

  const { uri } = await getTestMongo()
  const env = { ...process.env, MONGODB_URI: uri }
  const where = ['--database', db.databaseName]
  const iso = (ms) => new Date(ms).toISOString()
  // The last hour: the call alone, the 4 exchanges of no call said apart.
  const all = await runCli(env, 'calls', ...where, '--json')
  assert.equal(all.code, 0, all.stderr)
  assert.deepEqual(all.stdout.trim().split('\n').map((line) => JSON.parse(line).callId), ['long@window'])
  assert.match(all.stderr, /^1 call with SIP or a report in the last 1h in .*; SIP calls 1: answered 1, .*; 4 SIP exchanges of no call \(no INVITE: OPTIONS, REGISTER, …\) not listed, --call-id reads one\n$/)
  const noAnswer = await runCli(env, 'calls', ...where, '--outcome', 'no-answer')
  assert.match(noAnswer.stdout, /^0 calls with SIP or a report in the last 1h, outcome no-answer, in /m, 'no ping counted as a call unanswered')
  const ping = await runCli(env, 'calls', ...where, '--call-id', 'ping-1@trunk')
  assert.equal(ping.code, 0, ping.stderr)
  assert.match(ping.stdout, /OPTIONS sip:bob@b\.example/, 'its ladder, by --call-id')

  // Five minutes into the call, one minute long: the call was active then.
  const inside = await runCli(env, 'calls', ...where, '--from', iso(at + 300000), '--to', iso(at + 360000), '--number', '4915001', '--json')
  assert.equal(inside.code, 0, inside.stderr)
  assert.deepEqual(inside.stdout.trim().split('\n').filter(Boolean).map((line) => JSON.parse(line).callId), ['long@window'])
  assert.match(inside.stderr, new RegExp(`^1 call with SIP or a report active from ${iso(at + 300000)} to ${iso(at + 360000)}, number 4915001, in `))
  // An address pasted whole is its user part (QA: found nothing).
  const pasted = await runCli(env, 'calls', ...where, '--number', 'sip:+4915001@a.example', '--json')
  assert.deepEqual(pasted.stdout.trim().split('\n').filter(Boolean).map((line) => JSON.parse(line).callId), ['long@window'], pasted.stderr)
  // Before it began, after it ended: not.
  for (const [from, to] of [[at - 120000, at - 60000], [at + 660000, at + 720000]]) {
    const outside = await runCli(env, 'calls', ...where, '--from', iso(from), '--to', iso(to), '--json')
    assert.equal(outside.stdout, '', `${iso(from)}–${iso(to)}`)
  }

  const view = new CallsViewServer(db.collection('streams'), { host: '127.0.0.1', port: 0, since: 3600000, worst: WORST, limit: LIMIT, table: TABLE, db, collections: COLLECTIONS })
  const { port: viewPort } = await view.start()
  t.after(() => view.stop())
  const page = await (await fetch(`http://127.0.0.1:${viewPort}/sip?number=4915001&from=${iso(at + 300000)}&to=${iso(at + 360000)}`)).text()
  assert.deepEqual(listed(page), ['long@window'])
  assert.match(page, /<p id="summary">1 call active from /)
  const backwards = await fetch(`http://127.0.0.1:${viewPort}/sip?from=${iso(at + 600000)}&to=${iso(at)}`)
  assert.equal(backwards.status, 400)
  assert.match(await backwards.text(), /bad query: to is before from/)
  const byId = await (await fetch(`http://127.0.0.1:${viewPort}/sip?call-id=long%40window`)).text()
  assert.match(byId, /<p id="summary">1 call with Call-ID long@window;/, 'the window a Call-ID search does not apply is not named')

  // The view's database stops (a server of this test's own), then comes
  // back on its port: 503 meanwhile, try again, said once in the log; not
  // a bare 500. Then the pages again.
  const { MongoClient } = require('mongodb')
  const { startJavaServer } = require('../../lib/mongo/java-server')
  const own = await startJavaServer({ port: 0 })
  t.after(() => own.stop())
  const client = new MongoClient(`mongodb://127.0.0.1:${own.port}`, { serverSelectionTimeoutMS: 500 })
  await client.connect()
  t.after(() => client.close())
  const warnings = []
  const logger = { info () {}, error () {}, debug () {}, warn: (fields, msg) => warnings.push(msg) }
  const down = new CallsViewServer(client.db('x').collection('streams'), { host: '127.0.0.1', port: 0, since: 3600000, worst: WORST, limit: LIMIT, table: TABLE, db: client.db('x'), collections: COLLECTIONS, logger })
  const { port: downPort } = await down.start()
  t.after(() => down.stop())
  assert.equal((await fetch(`http://127.0.0.1:${downPort}/sip`)).status, 200)
  await own.stop()
  for (const route of ['/', '/sip', '/sip?number=1']) {
    const r = await fetch(`http://127.0.0.1:${downPort}${route}`)
    assert.equal(r.status, 503, route)
    assert.equal(r.headers.get('retry-after'), '5')
    assert.match(await r.text(), /^the database does not answer now: try again shortly/)
  }
  assert.equal(warnings.length, 1, `said once in the log: ${warnings.join(' | ')}`)
  assert.match(warnings[0], /^calls view: the database does not answer \(/)
  const back = await startJavaServer({ port: own.port })
  t.after(() => back.stop())
  await waitFor(async () => (await fetch(`http://127.0.0.1:${downPort}/sip`)).status === 200, { what: 'the pages again once it is back' })
})

test('a call from an agent whose clock runs an hour ahead is listed now, stamped with its arrival, and the workers count it (clockAhead)', { timeout: 60000 }, async (t) => {
  const { collector, db, port } = await startTestCollector(t, hep)
  const ahead = Date.now() + 3600 * 1000
  const call = { callId: 'ahead@clock', caller: 'sip:+4917001@a.example' }
  const packets = [
    packet(sip('INVITE sip:bob@b.example SIP/2.0', { ...call, cseq: '1 INVITE' }), { at: ahead }),
    packet(sip('SIP/2.0 486 Busy Here', { ...call, cseq: '1 INVITE', tagged: true }), { at: ahead + 100, back: true })
  ]
  const sent = Date.now()
  await send(port, packets)
  await waitFor(() => collector.summary().processed === packets.length, { what: 'both processed' })
  await waitFor(async () => (await db.collection('sip_messages').countDocuments({ callId: call.callId })) === 2, { what: 'both messages stored' })
  const { uri } = await getTestMongo()
  const listedNow = await runCli({ ...process.env, MONGODB_URI: uri }, 'calls', '--database', db.databaseName, '--json')
  assert.equal(listedNow.code, 0, listedNow.stderr)
  const rows = listedNow.stdout.trim().split('\n').filter(Boolean).map((line) => JSON.parse(line))
  assert.deepEqual(rows.map((row) => row.callId), [call.callId], 'in the last hour, not an hour from now')
  const stored = await db.collection('calls').findOne({ callId: call.callId })
  assert.ok(stored.invitedAt.getTime() >= sent - 1000 && stored.invitedAt.getTime() <= Date.now(), `stamped with its arrival: ${stored.invitedAt.toISOString()}`)
  const counted = (await collector.stats()).workers.reduce((n, w) => n + w.custom.clockAhead, 0)
  assert.equal(counted, 2, 'each message counted')
})
