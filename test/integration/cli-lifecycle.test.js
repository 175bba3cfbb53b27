'use strict'
// The collector CLI's PM2 lifecycle as an operator meets it, against a real
// PM2 daemon in a temporary PM2_HOME: a port in use fails the start at once
// and leaves nothing behind; stop → start NAME brings a collector back with
// its flags; logs shows what it wrote; --mongo-uri without a password works
// under start.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const dgram = require('node:dgram')
const path = require('node:path')
const launcher = require('../../app/launcher')
const { readStats } = require('../../app/stats-file')
const { runCli: cli, CLI } = require('../helpers/cli')
const { waitFor } = require('../helpers/wait-for')
const { pm2Home } = require('../helpers/pm2-home')
const { mountTmpfs } = require('../helpers/tmpfs')
const { freePort } = require('../helpers/ports')
const { spawn } = require('node:child_process')

const ECHO = path.join(__dirname, '..', 'fixtures', 'echo-collector.js')
const PM2_BIN = path.join(__dirname, '..', '..', 'node_modules', '.bin', 'pm2')

function pm2Env (t) {
  const home = pm2Home(t)
  return { ...process.env, COLLECTOR_STATS_DIR: path.join(path.dirname(home), 'stats'), PM2_HOME: home }
}

async function busyPort (t) {
  const socket = dgram.createSocket('udp4')
  await new Promise((resolve) => socket.bind(0, '127.0.0.1', resolve))
  t.after(() => socket.close())
  return socket.address().port
}

test('start on a port in use: exit 1 at once with one line naming host:port, and no PM2 entry left', { timeout: 90000 }, async (t) => {
  const env = pm2Env(t)
  const port = await busyPort(t)
  const result = await cli(env, 'start', ECHO, '--name', 'busy', '--port', String(port))
  assert.equal(result.code, 1, result.stderr)
  assert.equal(result.stderr, `collector: cannot listen on 127.0.0.1:${port} (udp): address already in use (EADDRINUSE)\n`)
  assert.equal(result.stdout, '')
  assert.ok(result.ms < 20000, `took ${result.ms} ms (PM2's listen_timeout is 30 s)`)
  const ls = await cli(env, 'ls', '--json')
  assert.deepEqual(JSON.parse(ls.stdout), [], 'no PM2 entry left')

  const run = await cli(env, 'run', ECHO, '--name', 'busy-fg', '--port', String(port), '--log-format', 'json')
  assert.equal(run.code, 1)
  const fatal = run.stdout.trim().split('\n').map((l) => JSON.parse(l)).find((r) => r.level === 60)
  assert.deepEqual(fatal.error, { type: 'ListenError', code: 'ERR_LISTEN', message: `cannot listen on 127.0.0.1:${port} (udp): address already in use (EADDRINUSE)` })
  assert.doesNotMatch(run.stdout, /"stack"/, 'no stack for an expected error')
})

test('start whose workers cannot come online (init throws): exit 1 with the reason, no PM2 entry in a restart loop', { timeout: 90000 }, async (t) => {
  const env = pm2Env(t)
  const failing = path.join(__dirname, '..', 'fixtures', 'failing-init-worker.js')
  const result = await cli(env, 'start', ECHO, '--name', 'broken', '--port', '0', '-w', failing)
  assert.equal(result.code, 1)
  assert.equal(result.stderr, 'collector: worker failed to start: planned init failure\n')
  assert.deepEqual(await launcher.list({ pm2Home: env.PM2_HOME }), [])
})

// A broken deploy: the rolling restart failed in 250 ms, and `collector
// restart` polled for 120 s, then said only "not finished".
test('collector restart after a broken deploy: exit 1 at once with the worker\'s error, the collector still running', { timeout: 90000 }, async (t) => {
  const fs = require('node:fs')
  const os = require('node:os')
  const env = pm2Env(t)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'deploy-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  const worker = path.join(dir, 'worker.js')
  fs.writeFileSync(worker, fs.readFileSync(path.join(__dirname, '..', 'fixtures', 'echo-worker.js'), 'utf8').replace("require('../..')", `require(${JSON.stringify(path.join(__dirname, '..', '..'))})`))
  const started = await cli(env, 'start', ECHO, '--name', 'dep', '--port', '0', '-i', '1', '-w', worker)
  assert.equal(started.code, 0, started.stderr)
  await waitFor(async () => (await cli(env, 'status', 'dep')).code === 0, { timeout: 30000, what: 'its stats file' })
  fs.writeFileSync(worker, 'this is not javascript (\n')
  const restart = await cli(env, 'restart', 'dep')
  assert.equal(restart.code, 1, restart.stderr)
  assert.match(restart.stderr, /^collector: collector dep: rolling restart failed: .*SyntaxError.* \(see its log\)\n$/)
  assert.ok(restart.ms < 30000, `took ${restart.ms} ms`)
  const [app] = await launcher.list({ pm2Home: env.PM2_HOME })
  assert.equal(app.status, 'online', 'the collector runs on with the workers it had')
})

// A first start that fails is reported and not retried (above); a restart
// PM2 makes after a crash is retried, or a cause that passes would leave
// the collector down for good with nobody told (app/exit-codes.js).
test('a collector PM2 restarts after a crash, whose port is still held then: PM2 restarts it until it listens again', { timeout: 120000 }, async (t) => {
  const env = pm2Env(t)
  const port = await freePort() // TCP's: free for UDP too, nearly always; the start below says if not
  const started = await cli(env, 'start', ECHO, '--name', 'phoenix', '--port', String(port))
  assert.equal(started.code, 0, started.stderr)
  const [before] = await launcher.list({ pm2Home: env.PM2_HOME })
  process.kill(before.pid, 'SIGKILL')
  // The port, taken as soon as the dead master's socket is gone: its restart fails on it.
  let holder = null
  await waitFor(() => new Promise((resolve) => {
    const socket = dgram.createSocket('udp4')
    socket.once('error', () => { socket.close(); resolve(false) })
    socket.bind(port, '127.0.0.1', () => { holder = socket; resolve(true) })
  }), { what: 'the port to be free', interval: 5 })
  t.after(() => holder.close())
  const failed = await waitFor(async () => {
    const [app] = await launcher.list({ pm2Home: env.PM2_HOME })
    return app && app.restarts >= 2 && app
  }, { timeout: 30000, what: 'a restart that failed on the held port, and another after it' })
  assert.notEqual(failed.status, 'stopped', 'not given up')
  holder.close()
  holder = { close () {} }
  const back = await waitFor(async () => {
    const [app] = await launcher.list({ pm2Home: env.PM2_HOME })
    return app && app.status === 'online' && app.pid !== before.pid && app
  }, { timeout: 60000, what: 'the collector online again' })
  const status = await waitFor(async () => {
    const r = await cli(env, 'status', 'phoenix')
    return r.code === 0 && new RegExp(`udp 127\\.0\\.0\\.1:${port}`).test(r.stdout) && r
  }, { timeout: 30000, what: 'status to show it listening' })
  assert.match(status.stdout, /^phoenix {2}running/)
  assert.ok(back.restarts >= 2)
})

// After a reboot `pm2 resurrect` starts each saved collector anew (PM2's
// restart count 0), with nobody waiting for that start: one that fails on a
// cause that passes (its address not up yet, its port still held) is
// retried, as a restart after a crash is.
test('pm2 resurrect of a saved collector whose port is held then: PM2 restarts it until it listens', { timeout: 120000 }, async (t) => {
  const env = pm2Env(t)
  const pm2 = (...args) => new Promise((resolve, reject) => {
    const child = spawn(PM2_BIN, args, { env, stdio: ['ignore', 'pipe', 'pipe'] })
    let err = ''
    child.stderr.on('data', (d) => { err += d })
    child.on('close', (code) => code === 0 ? resolve() : reject(new Error(`pm2 ${args.join(' ')} exited ${code}: ${err}`)))
  })
  const port = await freePort()
  const started = await cli(env, 'start', ECHO, '--name', 'saved', '--port', String(port))
  assert.equal(started.code, 0, started.stderr)
  await pm2('save')
  await pm2('kill')
  const socket = dgram.createSocket('udp4')
  await new Promise((resolve) => socket.bind(port, '127.0.0.1', resolve))
  let held = true
  const release = () => { if (held) socket.close(); held = false }
  t.after(release)
  await pm2('resurrect')
  const failed = await waitFor(async () => {
    const [app] = await launcher.list({ pm2Home: env.PM2_HOME })
    return app && app.restarts >= 2 && app
  }, { timeout: 30000, what: 'the resurrected start that failed on the held port, and a restart after it' })
  assert.notEqual(failed.status, 'stopped', 'not given up')
  release()
  await waitFor(async () => {
    const r = await cli(env, 'status', 'saved')
    return r.code === 0 && /^saved {2}running/.test(r.stdout) && new RegExp(`udp 127\\.0\\.0\\.1:${port}`).test(r.stdout)
  }, { timeout: 60000, what: 'the collector running on its port again' })
})

test('stop, then start NAME brings it back with its flags (status of the stopped one shows no pid); start NAME again says it runs; logs shows its lines and none of PM2\'s, readable or as JSON, and --follow what comes after', { timeout: 120000 }, async (t) => {
  const env = pm2Env(t)
  const first = await cli(env, 'start', ECHO, '--name', 'twin', '--instances', '1', '--batch-size', '7')
  assert.equal(first.code, 0, first.stderr)
  assert.equal((await cli(env, 'stop', 'twin')).code, 0)
  const stoppedSnap = await readStats('twin', env.COLLECTOR_STATS_DIR)
  assert.deepEqual([stoppedSnap.state, stoppedSnap.pid], ['stopped', null], 'a stopped collector has no pid: its process is gone')
  const status = await cli(env, 'status', 'twin')
  assert.equal(status.code, 0, status.stderr)
  assert.match(status.stdout, /^twin {2}stopped {2}udp - {2}ran \S+, stopped \d{4}-/)
  assert.doesNotMatch(status.stdout.split('\n')[0], /pid/)

  const withFlags = await cli(env, 'start', 'twin', '--batch-size', '9')
  assert.equal(withFlags.code, 2, 'flags for a collector PM2 has: said, not "unknown collector"')
  assert.equal(withFlags.stderr, 'collector: twin is a collector PM2 has: `collector start twin` (no flags) starts it again with the flags it was started with; for others, `collector delete twin`, then start it anew with them\n')

  const again = await cli(env, 'start', 'twin')
  assert.equal(again.code, 0, again.stderr)
  assert.match(again.stdout, /^started twin \(pid \d+\)/)
  const snap = await readStats('twin', env.COLLECTOR_STATS_DIR)
  assert.equal(snap.state, 'running')
  assert.equal(snap.stats.instances, 1, 'its flags were kept')
  const [proc] = await launcher.list({ pm2Home: env.PM2_HOME })
  assert.deepEqual(proc.args, ['--name', 'twin', '--instances', '1', '--batch-size', '7'])

  const twice = await cli(env, 'start', 'twin')
  assert.equal(twice.code, 1)
  assert.match(twice.stderr, /^collector: collector twin is already running \(pid \d+\); use restart\n$/)

  const logs = await cli(env, 'logs', 'twin', '--lines', '200')
  assert.equal(logs.code, 0, logs.stderr)
  assert.match(logs.stdout, /^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\] INFO \(twin\): collector started/m)
  assert.equal((logs.stdout.match(/collector started/g) || []).length, 2, 'both starts are in the log')
  assert.doesNotMatch(logs.stdout, /\[PM2\]|OpenTelemetry/, 'PM2\'s agent adds nothing of its own to the log')
  const json = await cli(env, 'logs', 'twin', '--json', '--lines', '200')
  const records = json.stdout.trim().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l))
  assert.ok(records.some((r) => r.msg === 'collector stopped' && r.level === 30))
  // --follow: what the collector writes after the command started arrives, SIGINT ends it with 0
  const follower = spawn(process.execPath, [CLI, 'logs', 'twin', '--follow', '--lines', '0'], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  let followed = ''
  follower.stdout.on('data', (d) => { followed += d })
  const followerExit = new Promise((resolve) => follower.on('close', resolve))
  await new Promise((resolve) => setTimeout(resolve, 500))
  assert.equal(followed, '', '--lines 0: nothing from before')
  const stopped = await cli(env, 'stop', 'twin')
  assert.equal(stopped.code, 0, stopped.stderr)
  await waitFor(() => /INFO \(twin\): collector stopped/.test(followed), { what: 'the stop to show in logs --follow', timeout: 10000 })
  follower.kill('SIGINT')
  assert.equal(await followerExit, 0)
  const nobody = await cli(env, 'logs', 'nobody')
  assert.equal(nobody.code, 1)
  assert.match(nobody.stderr, /no collector named nobody/)
})

test('start with --mongo-uri without a password is accepted (the URI travels in the environment, not in ps); with a password it is refused, exit 2', { timeout: 90000 }, async (t) => {
  const env = pm2Env(t)
  const ok = await cli(env, 'start', 'syslog', '--name', 'sys', '--port', '0', '-i', '1', '--mongo-uri', 'mongodb://127.0.0.1:1/logs')
  assert.equal(ok.code, 0, ok.stderr)
  const [proc] = await launcher.list({ pm2Home: env.PM2_HOME })
  assert.equal(proc.args.includes('--mongo-uri'), false, 'not on the command line')
  assert.equal(proc.args.some((a) => a.includes('mongodb://')), false)
  const refused = await cli(env, 'start', 'syslog', '--name', 'sys2', '--port', '0', '--mongo-uri', 'mongodb://u:secret@127.0.0.1:1/logs')
  assert.equal(refused.code, 2)
  assert.doesNotMatch(refused.stderr, /secret/)
})

// The worker is what knows the collections: its refusal is a configuration
// mistake under PM2 too, exit 2 as under `run`, and nothing left in PM2.
test('start with a --retention-for collection the collector does not write: exit 2 in one line, no PM2 entry left', { timeout: 90000 }, async (t) => {
  const env = pm2Env(t)
  const result = await cli(env, 'start', 'syslog', '--name', 'typo', '--port', '0', '-i', '1', '--mongo-uri', 'mongodb://127.0.0.1:1/logs', '--retention-for', 'flows=7d')
  assert.equal(result.code, 2, result.stderr)
  assert.equal(result.stderr, 'collector: invalid configuration: option "retentionFor" names flows, which is not one of the collections retention reaches (syslog, counters), got "flows=7d"\n')
  assert.deepEqual(await launcher.list({ pm2Home: env.PM2_HOME }), [])
})

// The collector logged "2000 messages dropped at shutdown" and exited 1,
// while collector stop printed "stopped NAME (stopped)" and exited 0.
test('stop of a collector that dropped messages at shutdown: says how many and exits 1; kept as dead letters: says so and exits 1', { timeout: 120000 }, async (t) => {
  const env = pm2Env(t)
  const fixture = path.join(__dirname, '..', 'fixtures', 'shutdown-drop-collector.js')
  const started = await cli(env, 'start', fixture, '--name', 'sf', '--port', '0', '--instances', '1', '--dropped-at-shutdown', '2000')
  assert.equal(started.code, 0, started.stderr)
  const stopped = await cli(env, 'stop', 'sf')
  assert.equal(stopped.code, 1, 'exits as the collector did')
  assert.equal(stopped.stdout, 'stopped sf (stopped)\n')
  assert.equal(stopped.stderr, 'collector: sf: 2000 messages dropped at shutdown (dropped.shutdown): not stored before the workers\' flushTimeout, and not kept; collector logs sf says why\n')
  const again = await cli(env, 'stop', 'sf')
  assert.deepEqual([again.code, again.stderr], [0, ''], 'a stop of a stopped collector reports no earlier stop')

  const kept = await cli(env, 'start', fixture, '--name', 'sk', '--port', '0', '--instances', '1', '--kept-at-shutdown', '30')
  assert.equal(kept.code, 0, kept.stderr)
  const keptStop = await cli(env, 'stop', 'sk')
  assert.equal(keptStop.code, 1)
  assert.match(keptStop.stderr, /^collector: sk: 30 messages not stored before the workers' flushTimeout were kept as dead letters \(deadLetteredBy\.shutdown\); collector replay sk queues them/)
})

// A stop while the database is away: what waits in the disk buffer is safe
// and stored at the next start, and the stop said nothing of it (QA).
test('stop while the database does not answer: says how many messages wait in the disk buffer for the next start, exit 0', { timeout: 120000 }, async (t) => {
  const env = pm2Env(t)
  const away = await freePort() // nothing listens there
  const started = await cli(env, 'start', 'syslog', '--name', 'away', '--port', '0', '--instances', '1', '--mongo-uri', `mongodb://127.0.0.1:${away}/logs`)
  assert.equal(started.code, 0, started.stderr)
  const running = await waitFor(async () => { const s = await readStats('away', env.COLLECTOR_STATS_DIR); return s && s.state === 'running' && s.stats.address ? s : null }, { what: 'the collector running' })
  const socket = dgram.createSocket('udp4')
  t.after(() => socket.close())
  for (let i = 0; i < 40; i++) await new Promise((resolve, reject) => socket.send(`<14>Nov 30 23:00:00 host app: line ${i}`, running.stats.address.port, '127.0.0.1', (err) => err ? reject(err) : resolve()))
  await waitFor(async () => (await readStats('away', env.COLLECTOR_STATS_DIR)).stats.received === 40, { what: 'the 40 lines received' })
  // Its worker never reached the database: never "ok" (QA: a worker read ok until its first connect failed).
  const status = await cli(env, 'status', 'away')
  const row = status.stdout.split('\n').find((line) => /^ +0 +\d+ +ready /.test(line))
  assert.match(row, / (connecting|not connected yet|down)$/, status.stdout)
  const stopped = await cli(env, 'stop', 'away')
  assert.deepEqual([stopped.code, stopped.stderr], [0, ''])
  assert.equal(stopped.stdout, 'stopped away (stopped); 40 messages not yet stored wait in its disk buffer, stored at its next start (collector start away)\n')
})

// A PM2_HOME on a read-only mount: about 100 lines of PM2 stack traces and
// an uncaught exception, for start and for ls.
test('a PM2 home that cannot be written: start and ls say so in one line (ERR_PM2_HOME), naming it and the fix', { timeout: 60000 }, async (t) => {
  const { root, reason } = mountTmpfs(t, '1m', { readOnly: true })
  if (!root) return t.skip(reason)
  for (const home of [root, path.join(root, 'pm2')]) { // there, or to be created there
    const env = { ...process.env, PM2_HOME: home, COLLECTOR_STATS_DIR: path.join(path.dirname(pm2Home(t)), 'stats') }
    const line = `collector: PM2 home ${home} is not writable (EROFS): set PM2_HOME to a directory this user can write, or make that one writable\n`
    for (const args of [['ls'], ['start', ECHO, '--name', 'ro', '--port', '0']]) {
      const result = await cli(env, ...args)
      assert.deepEqual([result.code, result.stderr, result.stdout], [1, line, ''], `collector ${args[0]}`)
    }
    await assert.rejects(launcher.list({ pm2Home: home }), { code: 'ERR_PM2_HOME', home })
  }
})

test('a collector started by pm2 from an ecosystem file (no COLLECTOR_STATS_DIR in its environment) is one the CLI lists, restarts and stops (QA: "no collector named")', { timeout: 120000 }, async (t) => {
  const { COLLECTOR_STATS_DIR: _, ...shell } = pm2Env(t) // as an operator's shell has it: PM2_HOME only
  const pm2 = (...args) => new Promise((resolve, reject) => {
    const child = spawn(PM2_BIN, args, { env: shell, stdio: ['ignore', 'pipe', 'pipe'] })
    let err = ''
    child.stderr.on('data', (d) => { err += d })
    child.on('close', (code) => code === 0 ? resolve() : reject(new Error(`pm2 ${args.join(' ')} exited ${code}: ${err}`)))
  })
  const port = await freePort()
  const file = path.join(path.dirname(shell.PM2_HOME), 'ecosystem.config.js')
  // examples/ecosystem.config.js's shape, on the echo collector.
  require('node:fs').writeFileSync(file, `module.exports = { apps: [{ name: 'eco', script: ${JSON.stringify(path.join(__dirname, '..', '..', 'app', 'collector-entry.js'))}, args: [${JSON.stringify(ECHO)}, '--name', 'eco', '--port', '${port}', '--host', '127.0.0.1'], exec_mode: 'fork', wait_ready: true, listen_timeout: 60000, kill_timeout: 35000, autorestart: true, env: {} }] }\n`)
  await pm2('start', file)
  const listed = await waitFor(async () => { const r = await cli(shell, 'ls'); return /^eco\s+online/m.test(r.stdout) && r }, { timeout: 30000, what: 'collector ls lists it' })
  assert.equal(listed.code, 0, listed.stderr)
  const restarted = await cli(shell, 'restart', 'eco')
  assert.equal(restarted.code, 0, restarted.stderr)
  const stopped = await cli(shell, 'stop', 'eco')
  assert.equal(stopped.code, 0, stopped.stderr)
  assert.match(stopped.stdout, /stopped eco/)
})
