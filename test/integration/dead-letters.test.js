'use strict'

// Giving up is rare, honest and recoverable (issue 37, item 4): a batch is
// given up only on evidence that it ends the workers that process it
// (test/fixtures/poison-definition.js ends its worker on `poison` until
// cured), never because workers were killed from outside; what is given up
// is kept as a dead letter, listed by `collector status` and delivered
// again by `collector replay` and a rolling restart once the cause is
// fixed. And a disk buffer is replayed only into the destination it was
// written for (item 7).

const test = require('node:test')
const assert = require('node:assert/strict')
const dgram = require('node:dgram')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { MongoClient } = require('mongodb')
const { LoadBalancer } = require('../..')
const poison = require('../fixtures/poison-definition')
const { getTestMongo, uniqueDbName } = require('../helpers/mongo')
const { tempBufferDir } = require('../helpers/buffer-dir')
const { waitFor } = require('../helpers/wait-for')
const { stormLoop } = require('../helpers/kill-loop')
const { runCli } = require('../helpers/cli')
const { runCollector, withDatabase } = require('../fixtures/foreground-run')
const { accountedFor } = require('../../lib/master/counters')
const { listDeadLetters, queueForReplay } = require('../../lib/master/dead-letters')
const { readRecordFile } = require('../../lib/master/journal-record')
const { removeDir } = require('../helpers/temp-dir')
const { captureLogger } = require('../helpers/capture-logger')

const FIXTURE = path.join(__dirname, '..', 'fixtures', 'poison-definition.js')
const HOLDING_WORKER = path.join(__dirname, '..', 'fixtures', 'buffering-worker.js')
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

function tempDir (t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cc-dead-letters-'))
  t.after(() => removeDir(dir))
  return dir
}

/** Sends each of `texts` as a datagram, about `rate` a second. */
async function sendTexts (port, texts, rate = 1000) {
  const socket = dgram.createSocket('udp4')
  try {
    const perTick = Math.max(1, Math.round(rate / 100))
    for (let i = 0; i < texts.length;) {
      const tickEnd = Date.now() + 10
      for (let k = 0; k < perTick && i < texts.length; k++, i++) {
        await new Promise((resolve, reject) => socket.send(texts[i], port, '127.0.0.1', (err) => err ? reject(err) : resolve()))
      }
      const wait = tickEnd - Date.now()
      if (wait > 0) await sleep(wait)
    }
  } finally {
    socket.close()
  }
}

const numbered = (n, prefix) => Array.from({ length: n }, (_, i) => `${prefix}${i}`)

async function storedTexts (uri, database) {
  const client = await new MongoClient(uri).connect()
  try {
    return (await client.db(database).collection('lines').find({}, { projection: { text: 1 } }).toArray()).map((d) => d.text)
  } finally {
    await client.close()
  }
}

test('collector run: a message that ends every worker it reaches is given up after three such ends and kept as a dead letter, the rest stored; status lists it; after the fix, replay and a rolling restart store it once', { timeout: 180000 }, async (t) => {
  const { uri } = await getTestMongo()
  const database = uniqueDbName('poison')
  const cure = path.join(tempDir(t), 'cured')
  const run = await runCollector(t, FIXTURE, { flags: ['-i', '2', '--flush-interval', '50ms'], env: { MONGODB_URI: withDatabase(uri, database), POISON_CURE: cure } })
  const sent = [...numbered(200, 'a'), 'poison', ...numbered(200, 'b')]
  await sendTexts(run.port, sent, 500)
  const s = await waitFor(async () => {
    const stats = await run.stats()
    return stats.received === sent.length && stats.deadLettered > 0 && accountedFor(stats) ? stats : null
  }, { what: 'the poison batch given up and the rest stored', timeout: 60000 })
  assert.equal(s.dropped.total, 0, JSON.stringify(s.dropped))
  assert.equal(s.lost, 0)
  assert.equal(s.processed + s.deadLettered, sent.length)
  assert.ok(s.restarts.workers >= 3, `the poison ended three workers (${s.restarts.workers} respawns)`)
  const stored = await storedTexts(uri, database)
  assert.equal(stored.length, s.processed, 'what is processed is stored, once')
  assert.ok(!stored.includes('poison'))
  const [letter, ...others] = listDeadLetters(s.deadLetters.dir)
  assert.deepEqual(others, [], 'one dead letter')
  assert.equal(letter.reason, 'poison')
  assert.match(letter.detail, /3 workers in a row ended by themselves while processing it \(exit code 1, exit code 1, exit code 1\)/)
  assert.equal(letter.messages, s.deadLettered)
  const { batches } = readRecordFile(letter.file)
  assert.equal(batches.length, 1)
  assert.ok(batches[0].bytes.includes(Buffer.from('poison')), 'it holds the poison message')

  const env = { ...process.env, COLLECTOR_STATS_DIR: run.dir }
  const status = await runCli(env, 'status', run.name)
  assert.equal(status.code, 0, status.stderr)
  assert.match(status.stdout, new RegExp(`dead letters: 1 \\(${s.deadLettered} messages\\) in .*; collector replay ${run.name} queues them`))
  assert.match(status.stdout, new RegExp(`  \\S+Z  poison  ${s.deadLettered} messages  ${letter.name}\\.ccj  \\(3 workers in a row`))

  fs.writeFileSync(cure, 'fixed\n')
  const replay = await runCli(env, 'replay', run.name)
  assert.equal(replay.code, 0, replay.stderr)
  assert.match(replay.stdout, /queued 1 dead letter of .* for replay/)
  process.kill(run.pid, 'SIGUSR2') // collector restart: new workers, with the fix, then the queued dead letters
  await waitFor(async () => (await storedTexts(uri, database)).length === sent.length, { what: 'every message stored', timeout: 60000 })
  const after = await waitFor(async () => { const stats = await run.stats(); return stats.deadLetters.files === 0 && stats.inFlight === 0 && stats.replayed === s.deadLettered ? stats : null }, { what: 'the dead letter delivered', timeout: 30000 })
  assert.equal(after.deadLetters.replayed, s.deadLettered)
  const texts = await storedTexts(uri, database)
  assert.deepEqual(texts.slice().sort(), sent.slice().sort(), 'every message stored, none twice')
  const statusAfter = await runCli(env, 'status', run.name)
  assert.match(statusAfter.stdout, /dead letters: none left, \d+ messages given up by this run, \d+ replayed/)
  process.kill(run.pid, 'SIGINT')
  const { code } = await run.exited
  assert.equal(code, 0)
  const final = await run.stats()
  assert.ok(accountedFor(final), JSON.stringify(final))
  assert.equal(final.received + final.replayed, final.processed + final.deadLettered)
})

// The crashes a poison batch caused counted toward the slot's maxCrashes:
// three strikes a batch, so a sender's fourth poison message in a minute
// gave the slot up (crashed 11 times; with the default 100 ms respawn
// delay the backoff spreads them past the window, at 10 ms it does not),
// then every slot, and the collector stopped with "every worker is down".
test('five poison messages within a minute: each given up as its own dead letter, the slot never given up, everything else stored', { timeout: 180000 }, async (t) => {
  const { uri } = await getTestMongo()
  const database = uniqueDbName('poison5')
  const run = await runCollector(t, FIXTURE, { flags: ['-i', '1', '--flush-interval', '50ms', '--batch-size', '1', '--respawn-delay', '10ms'], env: { MONGODB_URI: withDatabase(uri, database) } })
  const sent = []
  for (let k = 0; k < 5; k++) sent.push(...numbered(20, `g${k}-`), 'poison')
  await sendTexts(run.port, sent, 200)
  const s = await waitFor(async () => {
    const stats = await run.stats()
    return stats.received === sent.length && stats.deadLettered === 5 && accountedFor(stats) ? stats : null
  }, { what: 'five poison messages given up, the rest stored', timeout: 120000 })
  assert.equal(s.processed, 100)
  assert.equal(s.dropped.total, 0, JSON.stringify(s.dropped))
  assert.deepEqual(listDeadLetters(s.deadLetters.dir).map((l) => l.reason), Array(5).fill('poison'))
  assert.equal((await storedTexts(uri, database)).length, 100)
  assert.equal(run.child.exitCode, null, 'the collector still runs')
})

// The database stalls for 3 s meanwhile, so that what the workers hold
// awaits storage through several deaths: batches a worker had been through
// are no evidence, nor is a kill from outside.
test('a worker SIGKILLed every 300 ms for 6 s, the database stalled for 3 s of it: nothing is given up, every message stored once', { timeout: 180000 }, async (t) => {
  const { uri, server } = await getTestMongo()
  if (!server) return t.skip('MONGODB_URI given: the test cannot pause a server it did not start')
  const database = uniqueDbName('sigkill')
  const deadLetterDir = path.join(tempDir(t), 'dead')
  const config = new poison.Config(['--port', '0', '-i', '2', '--database', database, '--flush-interval', '50ms', '--buffer-dir', tempBufferDir(t), '--dead-letter-dir', deadLetterDir, '--max-crashes', '1000']).getConfig()
  const collector = new poison.Collector({ ...config, workerOptions: { mongoUri: uri } })
  t.after(() => collector.stop())
  await collector.start()
  const storm = stormLoop(collector, 300)
  const sent = numbered(3000, 'k')
  const stall = sleep(1000).then(() => { server.pause(); return sleep(3000) }).finally(() => server.resume())
  t.after(() => server.resume())
  await sendTexts(collector.address().port, sent, 500)
  await stall
  const killed = await storm.stop()
  const s = await waitFor(() => { const summary = collector.summary(); return summary.received === sent.length && summary.buffered === 0 && accountedFor(summary) ? summary : null }, { what: 'every message processed', timeout: 90000 })
  t.diagnostic(`killed ${killed}, respawns ${s.restarts.workers}`)
  assert.ok(killed >= 5, `workers were killed (${killed})`)
  assert.equal(s.deadLettered, 0, 'nothing given up')
  assert.equal(s.dropped.total, 0, JSON.stringify(s.dropped))
  assert.equal(s.processed, sent.length)
  assert.deepEqual(listDeadLetters(deadLetterDir), [])
  const stored = await storedTexts(uri, database)
  assert.equal(stored.length, sent.length, 'none twice')
  assert.equal(new Set(stored).size, sent.length, 'none missing')
})

test('without the disk buffer the poison batch is kept as a dead letter all the same, and a rolling restart delivers it once queued', { timeout: 120000 }, async (t) => {
  const { uri } = await getTestMongo()
  const database = uniqueDbName('poisonnobuf')
  const dir = tempDir(t)
  const cure = path.join(dir, 'cured')
  const deadLetterDir = path.join(dir, 'dead')
  process.env.POISON_CURE = cure // the workers inherit it
  t.after(() => { delete process.env.POISON_CURE })
  const config = new poison.Config(['--port', '0', '-i', '2', '--database', database, '--flush-interval', '50ms', '--no-buffer', '--dead-letter-dir', deadLetterDir]).getConfig()
  const collector = new poison.Collector({ ...config, workerOptions: { mongoUri: uri } })
  t.after(() => collector.stop())
  await collector.start()
  const sent = [...numbered(50, 'a'), 'poison', ...numbered(50, 'b')]
  await sendTexts(collector.address().port, sent, 300)
  const s = await waitFor(() => { const summary = collector.summary(); return summary.received === sent.length && summary.deadLettered > 0 && accountedFor(summary) ? summary : null }, { what: 'the poison batch given up', timeout: 60000 })
  assert.equal(s.buffer, null)
  assert.equal(s.lost, 0)
  assert.deepEqual([s.deadLetters.dir, s.deadLetters.files], [deadLetterDir, 1])
  fs.writeFileSync(cure, 'fixed\n')
  assert.equal(queueForReplay(deadLetterDir).length, 1)
  await collector.restart()
  await waitFor(async () => (await storedTexts(uri, database)).length === sent.length, { what: 'every message stored', timeout: 60000 })
  await collector.stop()
  const final = collector.summary()
  assert.ok(accountedFor(final), JSON.stringify(final))
  assert.deepEqual([final.replayed, final.deadLetters.files, final.deadLetters.replayed], [s.deadLettered, 0, s.deadLettered])
  assert.deepEqual((await storedTexts(uri, database)).sort(), sent.slice().sort())
})

// The evidence names the batch a worker died processing, not the first it
// held: five batches it had been through await storage (it never stores)
// when the sixth ends it, in each of three workers. The count of batches
// it has been through reaches the master through a file the master made
// for it (lib/shared/progress-file.js), or, when none can be made, over IPC.
for (const via of ['its progress file', 'IPC, no progress file made']) {
  test(`a worker that dies in its sixth batch, five held awaiting storage, blames the sixth only (${via})`, { timeout: 60000 }, async (t) => {
    const dir = tempDir(t)
    const tmp = via === 'its progress file' ? path.join(dir, 'tmp') : path.join(dir, 'no-such-dir')
    if (tmp.endsWith('tmp')) fs.mkdirSync(tmp)
    const before = process.env.TMPDIR
    process.env.TMPDIR = tmp // where the master makes its progress files
    t.after(() => { if (before === undefined) delete process.env.TMPDIR; else process.env.TMPDIR = before })
    const deadLetterDir = path.join(dir, 'dead')
    const lb = new LoadBalancer({ worker: HOLDING_WORKER, instances: 1, port: 0, batchDelay: 0, deadLetterDir, respawnDelay: 10, workerOptions: { dir, hold: true, exitOn: 'poison' } })
    t.after(() => lb.stop())
    await lb.start()
    const texts = [...numbered(5, 'a'), 'poison']
    for (const text of texts) await sendTexts(lb.address().port, [text]) // one batch each (sendTexts waits a 10 ms tick)
    const s = await waitFor(() => { const summary = lb.summary(); return summary.deadLettered > 0 ? summary : null }, { what: 'the poison batch given up', timeout: 30000 })
    const files = fs.existsSync(tmp) ? fs.readdirSync(tmp).filter((name) => name.startsWith(`collector-progress-${process.pid}-`)) : []
    assert.equal(files.length, via === 'its progress file' ? 1 : 0, 'the master made a progress directory only where it could')
    assert.equal(s.deadLettered, 1)
    const [letter, ...others] = listDeadLetters(deadLetterDir)
    assert.deepEqual(others, [])
    assert.match(letter.detail, /^3 workers in a row ended by themselves while processing it \(exit code 1, exit code 1, exit code 1\)/)
    const { batches } = readRecordFile(letter.file)
    assert.deepEqual(batches.map((batch) => batch.bytes.includes(Buffer.from('poison'))), [true], 'the dead letter is the poison batch')
    assert.equal(lb.summary().inFlight, 5, 'the five it had been through are held, not blamed')
    await lb.stop()
    if (files.length > 0) assert.ok(!fs.existsSync(path.join(tmp, files[0])), 'stop removes the progress directory')
  })
}

// A balancer whose workers say what they write to (as a MongoCollector
// does: the database's hosts and name), here from workerOptions.
class Destined extends LoadBalancer {
  destination () {
    return this.options.workerOptions.destination
  }
}

async function holding (t, bufferDir, out, destination, hold) {
  const lb = new Destined({ worker: HOLDING_WORKER, instances: 2, port: 0, buffer: true, bufferDir, drainTimeout: 5000, workerOptions: { dir: out, hold, storeEveryMs: 20, destination } })
  t.after(() => lb.stop())
  await lb.start()
  return lb
}

function storedLines (dir) {
  return fs.readdirSync(dir).filter((f) => f.endsWith('.log')).flatMap((f) => fs.readFileSync(path.join(dir, f), 'utf8').split('\n').filter(Boolean))
}

test('a disk buffer written for one destination is not replayed into another: set aside beside it, said in one log line, and replayed where it belongs', { timeout: 120000 }, async (t) => {
  const root = tempDir(t)
  const bufferDir = path.join(root, 'buffer')
  const out = path.join(root, 'out')
  fs.mkdirSync(out)
  const first = await holding(t, bufferDir, out, 'db1:27017/events', true)
  await sendTexts(first.address().port, numbered(100, 'm'), 2000)
  await waitFor(() => first.summary().received === 100, { what: '100 received' })
  await first.stop()
  assert.equal(first.summary().buffered, 100, 'the first run left them in the buffer')

  const lines = []
  const logger = { child: () => logger }
  for (const level of ['trace', 'debug', 'info', 'warn', 'error', 'fatal']) logger[level] = (fields, msg) => lines.push({ level, fields, msg })
  const second = new Destined({ worker: HOLDING_WORKER, instances: 2, port: 0, buffer: true, bufferDir, logger, workerOptions: { dir: out, hold: false, storeEveryMs: 20, destination: 'db2:27017/events' } })
  t.after(() => second.stop())
  await second.start()
  await second.stop()
  assert.equal(second.summary().replayed, 0, 'nothing replayed into the other destination')
  assert.deepEqual(storedLines(out), [])
  const said = lines.filter((l) => /written for db1:27017\/events, not db2:27017\/events/.test(l.msg))
  assert.equal(said.length, 1, 'one line says so')
  const aside = said[0].fields.keptIn
  assert.ok(aside.startsWith(`${bufferDir}.for-db1_27017_events-`), aside)
  assert.match(said[0].msg, new RegExp(`--buffer-dir ${aside.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`))
  assert.deepEqual(fs.readdirSync(bufferDir).filter((f) => f.endsWith('.ccj')), [], 'the buffer starts empty for the new destination')

  const third = await holding(t, aside, out, 'db1:27017/events', false)
  await waitFor(() => third.summary().processed === 100, { what: 'the set-aside buffer replayed where it belongs' })
  await third.stop()
  assert.equal(third.summary().replayed, 100)
  assert.equal(new Set(storedLines(out).map((l) => l.split(' ').slice(2).join(' '))).size, 100)
})

// The log said dropped.workerLost whichever counter moved: here shutdown.
test('batches a stop could not store, whose dead letter cannot be written: dropped as shutdown, and the log line names dropped.shutdown', { timeout: 60000 }, async (t) => {
  const dir = tempDir(t)
  const deadLetterDir = path.join(dir, 'dead')
  const { logger, records } = captureLogger()
  const lb = new LoadBalancer({ worker: HOLDING_WORKER, instances: 1, port: 0, batchDelay: 0, drainTimeout: 1000, deadLetterDir, logger, workerOptions: { dir, hold: true } })
  t.after(() => lb.stop())
  await lb.start()
  fs.writeFileSync(deadLetterDir, '') // a file where the dead letters would go: none can be written
  await sendTexts(lb.address().port, numbered(5, 'a'))
  await waitFor(() => lb.summary().received === 5, { what: '5 received' })
  await lb.stop()
  const s = lb.summary()
  assert.deepEqual([s.dropped.shutdown, s.dropped.workerLost, s.deadLettered], [5, 0, 0])
  const lines = records.filter((r) => /could not be kept as a dead letter/.test(r.msg)).map((r) => r.msg)
  assert.ok(lines.length > 0)
  for (const line of lines) assert.match(line, /: it is dropped \(dropped\.shutdown\)$/)
})

// `collector replay` at a start while the buffer's disk was full: the dead
// letter's files were removed though its batch was not written to the
// buffer, so a master killed then lost it for good.
test('a queued dead letter the disk buffer cannot take (a full disk) stays queued, and is delivered from memory meanwhile', async (t) => {
  const { mountTmpfs } = require('../helpers/tmpfs')
  const { dir: bufferDir, root, reason } = mountTmpfs(t, '1m')
  if (!bufferDir) return t.skip(reason)
  const { Journal } = require('../../lib/master/journal')
  const { DeadLetters } = require('../../lib/master/dead-letters')
  const Backlog = require('../../lib/master/backlog')
  const { MasterCounters } = require('../../lib/master/counters')
  const { createBatch } = require('../../lib/master/batch')
  const { KIND_UDP, entrySize, writeEntry } = require('../../lib/shared/batch-codec')
  const dlDir = path.join(tempBufferDir(t), 'dead-letter') // on a disk with room
  const data = Buffer.from('x'.repeat(200))
  const bytes = Buffer.alloc(entrySize(data, '10.0.0.1'))
  writeEntry(bytes, 0, data, '10.0.0.1', 514, Date.now())
  const deadLetters = new DeadLetters({ dir: dlDir })
  deadLetters.open(null)
  deadLetters.keep(createBatch(KIND_UDP, bytes, 1, 1234, 'a1b2c3d4_1', Date.now()), bytes, 'poison', 'test')
  queueForReplay(dlDir)
  const journal = new Journal({ dir: bufferDir, maxBytes: 1024 * 1024 })
  journal.open()
  t.after(() => journal.close())
  const filler = fs.openSync(path.join(root, 'filler'), 'w') // what room the tmpfs had left: none now
  try { for (;;) fs.writeSync(filler, Buffer.alloc(4096)) } catch (err) { assert.equal(err.code, 'ENOSPC') } finally { fs.closeSync(filler) }
  deadLetters.open(null)
  const counters = new MasterCounters()
  const { logger, records } = captureLogger()
  const given = []
  new Backlog({ options: {}, counters, logger }).replayDeadLetters(deadLetters, journal, [{ redeliver: (batch) => given.push(batch) }])
  assert.equal(given.length, 1, 'delivered from memory')
  assert.equal(counters.read().events.bufferWriteFailed, 1)
  assert.deepEqual(listDeadLetters(dlDir).map((e) => e.queued), [true], 'its files stay, queued for the next replay')
  assert.ok(records.some((r) => r.level === 'warn' && /could not be written to the disk buffer/.test(r.msg)))
})
