'use strict'

// `collector calls` as an operator runs it: a real RTCP collector (2
// workers) on the test server stores three synthetic calls (0 %, 2 % and
// one direction at 10 % loss), then the CLI, a child process, lists the
// worst of them; its rows, loss figures and JSON lines must be what the
// collector stored, and bad flags must exit 2 in one line.

const test = require('node:test')
const assert = require('node:assert/strict')
const rtcp = require('../../collectors/rtcp')
const { startTestCollector } = require('../helpers/collector')
const { getTestMongo } = require('../helpers/mongo')
const { sendCalls } = require('../helpers/rtcp-calls')
const { spawn } = require('node:child_process')
const { runCli, CLI } = require('../helpers/cli')
const { waitFor, streamDocs } = require('../helpers/streams')
const { hasPassword } = require('../../lib/mongo/redact-uri')

const PACKETS = 250
const media = (lostPerRound) => ({ lostPerRound, jitter: 160, delayMs: 20 }) // 20 ms of jitter at 8 kHz
const CALLS = [
  { a: 0x3000, b: 0x3001, ab: media(0), ba: media(0) },
  { a: 0x3002, b: 0x3003, ab: media(5), ba: media(5) },
  { a: 0x3004, b: 0x3005, ab: media(25), ba: media(0) } // 10 % one way only
]

// The CLI's table: header, rows, footer; cells split on the two-space gaps.
function parseTable (stdout) {
  const lines = stdout.trimEnd().split('\n')
  const footer = lines.pop()
  const [header, ...rows] = lines.map((line) => line.split(/\s{2,}/))
  return { header, rows: rows.map((cells) => Object.fromEntries(header.map((title, i) => [title, cells[i]]))), footer }
}

function callOf (fromID) {
  return CALLS.find((c) => [String(c.a), String(c.b)].includes(fromID))
}

// Media from `from` to `to` is what `to` reports: its loss is the sender's out-direction.
function expectedLoss (doc) {
  const call = callOf(doc.from.ID)
  const aIsFrom = doc.from.ID === String(call.a)
  const fromTo = (aIsFrom ? call.ab : call.ba).lostPerRound / PACKETS
  const toFrom = (aIsFrom ? call.ba : call.ab).lostPerRound / PACKETS
  return { 'LOSS% F→T': (fromTo * 100).toFixed(1), 'LOSS% T→F': (toFrom * 100).toFixed(1) }
}

test('collector calls lists the worst calls first, with their loss, and --json carries callAnalytics', { timeout: 30000 }, async (t) => {
  const { uri } = await getTestMongo()
  const { collector, db, port } = await startTestCollector(t, rtcp, ['--stream-timeout', '30s'])
  const { sent } = await sendCalls(port, CALLS)
  await waitFor(() => collector.summary().processed === sent, { what: 'every datagram processed' })
  await waitFor(async () => (await streamDocs(db, { active: false })).length === CALLS.length, { what: 'the sweeper closing the calls' })
  const docs = await streamDocs(db)
  assert.equal(docs.length, CALLS.length)
  const worstFirst = docs.slice().sort((x, y) => x.analytics.mos - y.analytics.mos)
  assert.equal(callOf(worstFirst[0].from.ID), CALLS[2], 'the 10 % call is the worst')
  assert.equal(callOf(worstFirst[1].from.ID), CALLS[1])

  const env = { ...process.env, MONGODB_URI: uri }
  const where = [...(hasPassword(uri) ? [] : ['--mongo-uri', uri]), '--database', db.databaseName]

  const table = await runCli(env, 'calls', ...where, '--worst', '2')
  assert.equal(table.code, 0, table.stderr)
  const { header, rows, footer } = parseTable(table.stdout)
  assert.deepEqual(header.slice(0, 3), ['FROM', 'TO', 'STATE'])
  assert.equal(rows.length, 2, `exactly 2 rows:\n${table.stdout}`)
  rows.forEach((row, i) => {
    const doc = worstFirst[i]
    assert.equal(row.FROM.split(' ')[0], doc.from.ID, `row ${i + 1} is the call ranked ${i + 1}`)
    assert.equal(row.TO.split(' ')[0], doc.to.ID)
    assert.match(row.FROM, new RegExp(` end-${doc.from.ID}@test$`), 'CNAME shown')
    assert.equal(row.STATE, 'ended bye')
    const loss = expectedLoss(doc)
    assert.equal(row['LOSS% F→T'], loss['LOSS% F→T'], `row ${i + 1} loss from→to`)
    assert.equal(row['LOSS% T→F'], loss['LOSS% T→F'], `row ${i + 1} loss to→from`)
    assert.equal(row['MOS CALL'], doc.analytics.mos.toFixed(2), 'the call\'s verdict')
    assert.equal(row['JITTER MAX ms'], '20.0')
    assert.match(row['RTT AVG ms'], /^~?\d+\.\d$/)
    assert.equal(row.BAND, doc.analytics.band)
  })
  const bands = { good: 0, fair: 0, poor: 0 }
  for (const doc of docs) bands[doc.analytics.band]++
  assert.ok(bands.poor >= 1, 'the 10 % call is poor')
  assert.match(footer, new RegExp(`^3 calls with a report in the last 1h in ${db.databaseName}\\.streams: good ${bands.good} \\(MOS ≥ 4\\.0\\), fair ${bands.fair} \\(3\\.6–4\\.0\\), poor ${bands.poor} \\(< 3\\.6\\), unknown 0 \\(no MOS\\); showing the worst 2$`))

  const json = await runCli(env, 'calls', ...where, '--json', '--since', '1d')
  assert.equal(json.code, 0, json.stderr)
  const lines = json.stdout.trimEnd().split('\n').map((line) => JSON.parse(line))
  assert.equal(lines.length, 3, 'one line per call')
  lines.forEach((line, i) => {
    const doc = worstFirst[i]
    assert.equal(line.from.ID, doc.from.ID, `line ${i + 1} is the call ranked ${i + 1}`)
    assert.equal(line.pairKey, doc.pairKey)
    assert.equal(line.active, false)
    assert.equal(line.endReason, 'bye')
    assert.equal(line.analytics.mosMin, doc.analytics.mosMin, 'callAnalytics gives what the sweeper stored')
    assert.equal(line.analytics.mos, doc.analytics.mos)
    assert.equal(line.analytics.band, doc.analytics.band)
    assert.equal(line.analytics.to.lossRate, doc.analytics.to.lossRate)
  })
  assert.match(json.stderr, /^3 calls with a report in the last 1d/, 'the footer on stderr; --since takes days')

  const perMinute = await runCli(env, 'calls', ...where, '--per-minute', '--json')
  assert.equal(perMinute.code, 0, perMinute.stderr)
  const minutes = perMinute.stdout.trimEnd().split('\n').map((line) => JSON.parse(line))
  assert.ok(minutes.length >= 1 && minutes.length <= 2, perMinute.stdout)
  for (const m of minutes) assert.equal(m.good + m.fair + m.poor + m.unknown, CALLS.length, `every call once in minute ${m.minute}`)
  assert.match(perMinute.stderr, new RegExp(`^${minutes.length} minutes? with calls in the last 1h\n$`), 'the footer on stderr (QA: none, and an empty window printed nothing at all)')
  const perMinuteTable = await runCli(env, 'calls', ...where, '--per-minute')
  assert.match(perMinuteTable.stdout, /^MINUTE \(UTC\)\s+GOOD\s+FAIR\s+POOR\s+UNKNOWN\n/)
})

// RR-only calls (what `collector simulate rtcp` sends) have no measured
// round trip: their verdict rests on the endpoints' delay. The footer,
// --band and the worst-first order read a projection of every call; they
// must count and rank the verdict each row shows, read whole.
test('collector calls: calls scored on the endpoints\' delay are counted in their band by the footer and --band, as their rows show', { timeout: 60000 }, async (t) => {
  const { uri } = await getTestMongo()
  const { collector, db, port } = await startTestCollector(t, rtcp, ['--stream-timeout', '30s'])
  const env = { ...process.env, MONGODB_URI: uri }
  const sim = await runCli(env, 'simulate', 'rtcp', '--target', `127.0.0.1:${port}`, '--streams', '4', '--rate', '400', '--duration', '1s', '--json')
  assert.equal(sim.code, 0, sim.stderr)
  const { packets } = JSON.parse(sim.stdout)
  await waitFor(() => collector.summary().processed === packets, { what: 'every datagram processed' })
  const where = [...(hasPassword(uri) ? [] : ['--mongo-uri', uri]), '--database', db.databaseName]

  const json = await runCli(env, 'calls', ...where, '--json')
  assert.equal(json.code, 0, json.stderr)
  const calls = json.stdout.trimEnd().split('\n').map((line) => JSON.parse(line))
  assert.equal(calls.length, 4)
  const bands = {}
  for (const call of calls) {
    assert.equal(call.analytics.delayBasis, 'endpoints', 'no round trip measured')
    assert.notEqual(call.analytics.band, 'unknown')
    bands[call.analytics.band] = (bands[call.analytics.band] || 0) + 1
  }
  const counted = json.stderr.match(/good (\d+) .*fair (\d+) .*poor (\d+) .*unknown (\d+)/)
  assert.ok(counted, json.stderr)
  assert.deepEqual(counted.slice(1).map(Number), ['good', 'fair', 'poor', 'unknown'].map((band) => bands[band] || 0), `footer: ${json.stderr}`)
  for (const [band, n] of Object.entries(bands)) {
    const only = await runCli(env, 'calls', ...where, '--json', '--band', band)
    assert.equal(only.code, 0, only.stderr)
    assert.equal(only.stdout.trimEnd().split('\n').length, n, `--band ${band} lists its ${n} calls`)
  }

  const unknown = await runCli(env, 'calls', ...where, '--call-id', 'nobody@x')
  assert.equal(unknown.code, 1, 'a Call-ID nothing stored names')
  assert.equal(unknown.stdout, '')
  assert.match(unknown.stderr, /^collector: no call with Call-ID nobody@x is stored in \S+ \(calls, streams, sip_messages\)\n$/)

  // A reader that goes away before the rows (`| head -0`) ends the command quietly.
  for (const more of [[], ['--per-minute']]) {
    const gone = spawn(process.execPath, [CLI, 'calls', ...where, '--json', ...more], { env, stdio: ['ignore', 'pipe', 'pipe'] })
    gone.stdout.destroy()
    let stderr = ''
    gone.stderr.on('data', (d) => { stderr += d })
    const code = await new Promise((resolve) => gone.on('close', resolve))
    assert.equal(code, 0, stderr)
    assert.doesNotMatch(stderr, /EPIPE|Error|\n\s+at /, `no stack: ${stderr}`)
  }
})

test('collector calls: --worst 0, --since soon, --from yesterday, --outcome busy, --band great, --order random, --to alone or before --from, --since with --from, --per-minute or --call-id with a filter it does not take exit 2 with one line naming the flag', async () => {
  for (const [flag, value, ...more] of [['--worst', '0'], ['--since', 'soon'], ['--from', 'yesterday'], ['--outcome', 'busy'], ['--band', 'great'], ['--order', 'random'],
    ['--to', '2026-11-27T05:00Z'], ['--to', '2026-11-27T05:00Z', '--from', '2026-11-27T06:00Z'],
    ['--since', '2h', '--from', '2026-11-27T05:00Z'], ['--per-minute', '--call-id', 'x'], ['--per-minute', '--outcome', 'failed', '--band', 'poor'],
    ['--call-id', 'x', '--number', '999'], ['--call-id', 'x', '--outcome', 'failed'], ['--call-id', 'x', '--from', '2020-01-01T00:00Z', '--to', '2020-01-02T00:00Z']]) {
    const r = await runCli({ ...process.env, MONGODB_URI: 'mongodb://127.0.0.1:1' }, 'calls', flag, value, ...more)
    assert.equal(r.code, 2, `${flag} ${value}: ${r.stderr}`)
    assert.equal(r.stdout, '')
    const lines = r.stderr.trimEnd().split('\n')
    assert.equal(lines.length, 1, `one line: ${r.stderr}`)
    assert.match(lines[0], new RegExp(`^collector: ${flag}: `))
  }
  // The one call whatever its time (QA: --number and --outcome were ignored, or half applied).
  const one = await runCli({ ...process.env, MONGODB_URI: 'mongodb://127.0.0.1:1' }, 'calls', '--call-id', 'x', '--outcome', 'failed', '--since', '2h')
  assert.equal(one.stderr, 'collector: --call-id: reads that one call whatever its time, and takes no --outcome, --since (see collector calls --help)\n')
})
