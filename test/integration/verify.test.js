'use strict'
// `collector verify` (issue 37, item 5) as an author's CI runs it, on every
// built-in collector with the samples committed beside it
// (collectors/<name>/samples/): real forked workers SIGKILLed, the master
// SIGKILLed once holding messages and started again on its disk buffer,
// and every record stored exactly once, every refusal counted by its
// reason, exit 0. Then the definition issue 37 found in a user's first
// collector (templates in enrich memory, test/fixtures/forgetful-definition.js):
// verify names the sinks it lost records in and exits 1, where the same
// protocol done right (template-definition.js, kept state) passes on the
// same sample.

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { runCli } = require('../helpers/cli')
const { getTestMongo } = require('../helpers/mongo')

const ROOT = path.join(__dirname, '..', '..')
const TEMPLATED = path.join(ROOT, 'test', 'fixtures', 'samples', 'templated.txt')
// Sinks by collector, and the refusals its samples hold.
const BUILT_INS = {
  syslog: { sinks: ['syslog', 'counters'], refused: {} },
  statsd: { sinks: ['metrics'], refused: { badLine: 9, badRate: 8, badValue: 9, gaugeDelta: 16, unsupportedType: 8 } },
  netflow: { sinks: ['flows', 'flow_minutes', 'interface_minutes', 'exporters', 'flow_options'], refused: { 'netflow-bad-version': 1, 'netflow-unknown-template': 1 } },
  rtcp: { sinks: ['streams'], refused: { 'bad-version': 2, 'too-short': 1 } },
  hep: { sinks: ['streams', 'calls', 'sip_messages', 'call_logs'], refused: { 'hep-bad-length': 1, 'hep-bad-magic': 1 } }
}

async function verify (env, ...args) {
  const out = await runCli(env, 'verify', ...args, '--duration', '5s')
  return { ...out, report: args.includes('--json') && out.stdout ? JSON.parse(out.stdout) : null }
}

for (const [name, want] of Object.entries(BUILT_INS)) {
  test(`collector verify ${name}: its samples stored exactly once through worker SIGKILLs and a master SIGKILL, exit 0`, { timeout: 180000 }, async (t) => {
    const dir = path.join(ROOT, 'collectors', name, 'samples')
    for (const file of fs.readdirSync(dir)) assert.ok(fs.statSync(path.join(dir, file)).size < 200 * 1024, `${file} is small`)
    const { uri } = await getTestMongo()
    const { code, stderr, report, ms } = await verify({ ...process.env, MONGODB_URI: uri }, name, '--json')
    t.diagnostic(JSON.stringify({ ms, kills: report && report.run.workerKills, sinks: report && report.sinks.map((s) => [s.collection, s.summary]) }))
    assert.equal(code, 0, `${stderr}\n${JSON.stringify(report && report.sinks.filter((s) => s.verdict !== 'exact'))}`)
    assert.equal(report.verdict, 'exactly once')
    assert.deepEqual(report.sinks.map((s) => [s.collection, s.verdict]), want.sinks.map((sink) => [sink, 'exact']))
    assert.deepEqual(report.counters.dropped, want.refused, 'the refusals, each counted once by its reason')
    assert.ok(report.run.workerKills >= 4, `worker kills: ${report.run.workerKills}`)
    assert.equal(report.run.masterKills, 1)
    assert.ok(report.run.heldAtMasterKill > 0 && report.counters.replayed === report.run.heldAtMasterKill, 'what the killed master held was replayed')
    assert.equal(report.counters.processed + Object.values(want.refused).reduce((a, b) => a + b, 0), report.samples.messages)
  })
}

test('collector verify catches templates kept in enrich memory: the sinks that lost records named, exit 1', { timeout: 180000 }, async (t) => {
  const env = { ...process.env }
  delete env.MONGODB_URI // its own private server
  const { code, stdout, stderr } = await verify(env, path.join(ROOT, 'test', 'fixtures', 'forgetful-definition.js'), '--sample', TEMPLATED)
  const kept = /\(logs: (\S+)\/collector-1\.log/.exec(stdout) // a mismatch keeps the runs' logs: named, then removed here
  t.after(() => { if (kept) fs.rmSync(kept[1], { recursive: true, force: true }) })
  assert.ok(kept && fs.existsSync(path.join(kept[1], 'collector-3.log')), 'the logs of the three runs are kept and named')
  assert.equal(code, 1, stderr + stdout)
  assert.match(stdout, /^ {2}rows \(documents\) +MISMATCH +\d+ documents stored of 2400 expected: [1-9]\d* missing/m)
  assert.match(stdout, /^ {2}row_totals \(updates\) +MISMATCH/m)
  assert.match(stdout, /missing: document #r=\d+, bytes=\d+, dst=10\.1\.0\.1, seq=\d+, src=10\.0\.0\.\d.*\(sample message #\d+\)/)
  assert.match(stdout, /^verdict: MISMATCH in rows, row_totals/m)
})

test('the same protocol with its templates in kept state passes on the same sample, its refusal counted; --keep keeps, and names, its database and work directory', { timeout: 180000 }, async (t) => {
  const { uri } = await getTestMongo()
  const { code, stdout, stderr } = await verify({ ...process.env, MONGODB_URI: uri }, path.join(ROOT, 'test', 'fixtures', 'template-definition.js'), '--sample', TEMPLATED, '--keep')
  const dir = /^ {2}work directory kept: (\S+)$/m.exec(stdout)
  const database = /^ {2}ran on database (\S+) at MONGODB_URI \S+, kept \(--keep\):/m.exec(stdout)
  const { MongoClient } = require('mongodb')
  const client = await new MongoClient(uri).connect()
  t.after(async () => {
    if (dir) fs.rmSync(dir[1], { recursive: true, force: true })
    if (database) await client.db(database[1]).dropDatabase()
    await client.close()
  })
  assert.equal(code, 0, stderr + stdout)
  assert.ok(dir && fs.existsSync(path.join(dir[1], 'collector-1.log')), `the work directory named (QA: it said nothing of it): ${stdout}`)
  assert.ok(database, 'the database said kept (QA: it said dropped afterwards, and was not)')
  assert.equal(await client.db(database[1]).collection('rows').countDocuments(), 2400, 'and there')
  assert.match(stdout, /^ {2}rows \(documents\) +exact +2400 documents stored of 2400 expected: 0 missing, 0 stored twice, 0 not expected$/m)
  assert.match(stdout, /^ {2}row_totals \(updates\) +exact +5 documents \(5 expected\); rows 2400 of 2400; bytes \d+ of \d+$/m)
  assert.match(stdout, /^ {2}templated_kept \(kept state\) +exact/m)
  assert.match(stdout, /refused templateUnknown 1 of 1/)
  assert.match(stdout, /^verdict: every record stored exactly once/m)
})

test('what verify cannot check is refused in one line, exit 2, no stack: a class-way collector, a missing sample, a bad flag, a collector flag it lacks', async () => {
  const cases = [
    [[path.join(ROOT, 'test', 'fixtures', 'echo-collector.js'), '--sample', TEMPLATED], /checks a collector made with defineCollector; .* exports no definition/],
    [['syslog', '--sample', path.join(ROOT, 'no-such-sample.txt')], /cannot read the sample .*no-such-sample\.txt: no such file/],
    [['syslog', '--kills', 'many'], /--kills: expected an integer/],
    [['syslog', '--', '--bogus', '1'], /--bogus: unknown flag/]
  ]
  for (const [args, message] of cases) {
    const { code, stderr } = await runCli(process.env, 'verify', ...args)
    assert.equal(code, 2, stderr)
    assert.match(stderr, message)
    assert.doesNotMatch(stderr, /\n\s+at .+:\d+:\d+/)
  }
  const help = await runCli(process.env, 'help')
  assert.match(help.stdout, /^ {2}verify <collector> --sample FILE/m)
})
