'use strict'

// Signals to a foreground `collector run`: one signal delivered to the
// process and to its process group (what `timeout -s INT` does) is one
// signal and drains; a deliberate second one later forces exit 1; a stop
// that dropped messages at shutdown exits 1 and says how many.

const test = require('node:test')
const assert = require('node:assert/strict')
const net = require('node:net')
const path = require('node:path')
const { getTestMongo, uniqueDbName } = require('../helpers/mongo')
const { runCollector, sendNumbered, countLines, withDatabase } = require('../fixtures/foreground-run')

// The workers hold what they receive (no timed flush; only the first flush,
// once connected, may store some): the rest is stored only by a drain.
const HOLD = ['-i', '2', '--flush-interval', '10m']
const LINES = 1500

function logLines (stdout) {
  return stdout.split('\n').filter(Boolean).map((line) => { try { return JSON.parse(line) } catch { return { msg: line } } })
}

test('timeout -s INT (the process, then its group): the collector drains, exits 0, every line stored', { timeout: 120000 }, async (t) => {
  const { uri } = await getTestMongo()
  const database = uniqueDbName('sigtimeout')
  const run = await runCollector(t, 'syslog', { wrapper: ['timeout', '--preserve-status', '-s', 'INT', '12'], flags: HOLD, env: { MONGODB_URI: withDatabase(uri, database) } })
  await sendNumbered(run, 'line', LINES)
  const { code, stdout, stderr } = await run.exited
  assert.equal(code, 0, stderr.slice(-2000) + stdout.slice(-2000))
  assert.ok(!logLines(stdout).some((r) => /second signal/.test(r.msg)), 'the repeat was not taken as a second Ctrl-C')
  assert.equal(await countLines(uri, database, 'line'), LINES)
})

test('SIGINT to the process, then to its group while it drains, counts once: exits 0, every line stored', { timeout: 120000 }, async (t) => {
  // Back-to-back kills often merge into one pending signal; here the second
  // arrives after the first was handled, as it does when the process runs
  // in between. A paused database keeps the drain going meanwhile.
  const { uri, server } = await getTestMongo()
  const database = uniqueDbName('siggroup')
  const run = await runCollector(t, 'syslog', { flags: HOLD, env: { MONGODB_URI: withDatabase(uri, database) } })
  await sendNumbered(run, 'line', LINES)
  if (server) {
    server.pause()
    t.after(() => server.resume())
  }
  process.kill(run.pid, 'SIGINT')
  await run.logged(/stopping: draining workers/)
  process.kill(-run.pid, 'SIGINT')
  if (server) setTimeout(() => server.resume(), 1000)
  const { code, stdout, stderr } = await run.exited
  assert.equal(code, 0, stderr.slice(-2000) + stdout.slice(-2000))
  assert.equal(await countLines(uri, database, 'line'), LINES)
})

test('a second SIGINT 2 s after the first forces exit 1 without waiting for the drain', { timeout: 120000 }, async (t) => {
  // A database nobody listens on: the drain keeps retrying the held lines
  // (up to flushTimeout, 20 s), so it is still running 2 s later.
  const closed = net.createServer()
  await new Promise((resolve) => closed.listen(0, '127.0.0.1', resolve))
  const { port } = closed.address()
  await new Promise((resolve) => closed.close(resolve))
  const run = await runCollector(t, 'syslog', { flags: [...HOLD, '--mongo-uri', `mongodb://127.0.0.1:${port}/nowhere`] })
  await sendNumbered(run, 'line', 200)
  run.child.kill('SIGINT')
  await run.logged(/stopping: draining workers/)
  await new Promise((resolve) => setTimeout(resolve, 2000))
  run.child.kill('SIGINT')
  const { code, stdout } = await run.exited
  assert.equal(code, 1)
  const records = logLines(stdout)
  assert.ok(records.some((r) => r.msg === 'second signal: exiting without draining'), stdout.slice(-2000))
})

test('a stop that dropped messages at shutdown exits 1 with one line saying how many, no stack', { timeout: 60000 }, async (t) => {
  const fixture = path.join(__dirname, '..', 'fixtures', 'shutdown-drop-collector.js')
  const run = await runCollector(t, fixture, { flags: ['-i', '1', '--dropped-at-shutdown', '7'] })
  run.child.kill('SIGINT')
  const { code, stdout, stderr } = await run.exited
  assert.equal(code, 1)
  const said = logLines(stdout).filter((r) => /dropped at shutdown/.test(r.msg))
  assert.equal(said.length, 1, stdout)
  assert.match(said[0].msg, /^7 messages dropped at shutdown/)
  assert.doesNotMatch(stdout + stderr, /\n\s+at |"stack"/, 'no stack trace in the log')
})

test('a stop that kept messages as dead letters at shutdown exits 1 with one line saying how many and how to store them', { timeout: 60000 }, async (t) => {
  const fixture = path.join(__dirname, '..', 'fixtures', 'shutdown-drop-collector.js')
  const run = await runCollector(t, fixture, { flags: ['-i', '1', '--kept-at-shutdown', '5'] })
  run.child.kill('SIGINT')
  const { code, stdout } = await run.exited
  assert.equal(code, 1)
  const said = logLines(stdout).filter((r) => /at stop were kept as dead letters/.test(r.msg))
  assert.equal(said.length, 1, stdout)
  assert.match(said[0].msg, /^5 messages .* collector replay stores them/)
  assert.ok(!logLines(stdout).some((r) => /dropped at shutdown/.test(r.msg)), 'nothing said dropped')
})

test('a stop that dropped nothing at shutdown exits 0', { timeout: 60000 }, async (t) => {
  const fixture = path.join(__dirname, '..', 'fixtures', 'shutdown-drop-collector.js')
  const run = await runCollector(t, fixture, { flags: ['-i', '1'] })
  run.child.kill('SIGINT')
  const { code, stdout } = await run.exited
  assert.equal(code, 0, stdout)
  assert.ok(!logLines(stdout).some((r) => /dropped at shutdown/.test(r.msg)))
})
