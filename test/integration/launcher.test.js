'use strict'
// The launcher against a real PM2 daemon in a temporary PM2_HOME.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const dgram = require('node:dgram')
const fs = require('node:fs')
const path = require('node:path')
const pm2 = require('pm2')
const launcher = require('../../app/launcher')
const { readStats, statsDir } = require('../../app/stats-file')
const { waitFor } = require('../helpers/wait-for')
const { pm2Home: newPm2Home } = require('../helpers/pm2-home')

const ECHO = path.join(__dirname, '..', 'fixtures', 'echo-collector.js')
const NAME = 'echo-launch'

function udpSender (port) {
  const socket = dgram.createSocket('udp4')
  let sent = 0
  let pending = 0
  return {
    get sent () { return sent },
    send (n) {
      for (let i = 0; i < n; i++) {
        pending++
        socket.send(Buffer.from(`message ${sent++}`), port, '127.0.0.1', () => { pending-- })
      }
    },
    async close () {
      while (pending > 0) await new Promise((resolve) => setImmediate(resolve))
      await new Promise((resolve) => socket.close(resolve))
    }
  }
}

// A PM2 API connection to the daemon of `pm2Home`; `call(method, ...args)`
// runs one API method. close() also closes the bus a trigger opened.
/** After a rolling restart: two workers, none of them an old one, the same master. */
function assertRolled (snapshot, oldPids, masterPid) {
  assert.equal(snapshot.stats.restarts.rolling, 2)
  const newPids = snapshot.stats.workers.map((w) => w.pid)
  assert.equal(newPids.length, 2)
  for (const pid of newPids) assert.ok(!oldPids.includes(pid), `worker ${pid} was replaced`)
  assert.equal(snapshot.pid, masterPid, 'the master itself was not restarted')
}

async function pm2Api (pm2Home) {
  const api = new pm2.custom({ pm2_home: pm2Home })
  const call = (method, ...args) => new Promise((resolve, reject) => {
    api[method](...args, (err, result) => (err ? reject(err instanceof Error ? err : new Error(JSON.stringify(err))) : resolve(result)))
  })
  await call('connect')
  return {
    call,
    async close () {
      await new Promise((resolve) => api.disconnect(() => resolve()))
      for (const sock of [api.Client.client_sock, api.Client.sub_sock]) if (sock) sock.close()
    }
  }
}

test('start under PM2 → ready → status → rolling restart under UDP load loses nothing → delete', { timeout: 150000 }, async (t) => {
  const pm2Home = newPm2Home(t)
  const options = { pm2Home }
  const saved = process.env.COLLECTOR_STATS_DIR
  delete process.env.COLLECTOR_STATS_DIR
  t.after(() => { if (saved !== undefined) process.env.COLLECTOR_STATS_DIR = saved })
  const dir = statsDir({ pm2Home, env: {} })

  const proc = await launcher.start(ECHO, ['--port', '0', '--instances', '2', '--name', NAME], options)
  assert.equal(proc.name, NAME)
  assert.equal(proc.status, 'online')
  assert.ok(proc.pid > 0)
  assert.deepEqual(proc.args, ['--port', '0', '--instances', '2', '--name', NAME])
  const cmdline = fs.readFileSync(`/proc/${proc.pid}/cmdline`, 'utf8')
  assert.match(cmdline, /--instances 2/, 'ps shows the flags')

  const first = await waitFor(async () => {
    const snap = await readStats(NAME, dir)
    return snap && snap.state === 'running' && snap.stats.workers.length === 2 ? snap : null
  }, { what: 'the stats file', timeout: 30000 })
  assert.equal(first.pid, proc.pid)
  assert.equal(first.format, 1)
  const port = first.stats.address.port
  const oldPids = first.stats.workers.map((w) => w.pid)

  const sender = udpSender(port)
  sender.send(200)
  await waitFor(async () => {
    const snap = await readStats(NAME, dir)
    return snap && snap.stats.processed === 200 ? snap : null
  }, { what: '200 processed', timeout: 30000 })

  // Load throughout the rolling restart: ~2000 datagrams/s.
  const load = setInterval(() => sender.send(20), 10)
  await new Promise((resolve) => setTimeout(resolve, 300))
  await launcher.restart(NAME, options)
  await new Promise((resolve) => setTimeout(resolve, 300))
  clearInterval(load)
  await sender.close()

  const after = await waitFor(async () => {
    const snap = await readStats(NAME, dir)
    const s = snap && snap.stats
    return s && s.received === sender.sent && s.processed === s.received && s.inFlight === 0 ? snap : null
  }, { what: 'every datagram processed', timeout: 30000 })
  const s = after.stats
  assert.equal(s.processed, s.received)
  assert.equal(s.dropped.total, 0)
  assert.equal(s.lost, 0)
  assertRolled(after, oldPids, proc.pid)

  const [listed] = await launcher.list(options)
  assert.equal(listed.name, NAME)
  assert.equal(listed.status, 'online')
  assert.equal(listed.restarts, 0)

  const stopped = await launcher.stop(NAME, options)
  assert.equal(stopped.status, 'stopped')
  const final = await readStats(NAME, dir)
  assert.equal(final.state, 'stopped', 'the drained collector wrote its last counters')
  assert.equal(final.stats.processed, sender.sent)

  await launcher.delete(NAME, options)
  assert.deepEqual(await launcher.list(options), [])
  assert.equal(await readStats(NAME, dir), null)
})

test('bad flags fail before PM2 is involved; unknown names are reported', { timeout: 60000 }, async (t) => {
  const pm2Home = newPm2Home(t)
  await assert.rejects(launcher.start(ECHO, ['--instances', 'lots'], { pm2Home }), (err) => err.code === 'ERR_INVALID_CONFIG' && /--instances/.test(err.message))
  assert.equal(fs.existsSync(path.join(pm2Home, 'pm2.pid')), false, 'no daemon was spawned')
  await assert.rejects(launcher.start('no-such-collector', [], { pm2Home }), { code: 'ERR_UNKNOWN_COLLECTOR' })
  await assert.rejects(launcher.stop('nobody', { pm2Home }), { code: 'ERR_NO_SUCH_COLLECTOR' })
})

test('a collector whose master fails at load under PM2 says why in the start\'s one line, with its log\'s path; no entry is left (QA)', { timeout: 90000 }, async (t) => {
  const pm2Home = newPm2Home(t)
  const fixture = path.join(__dirname, '..', 'fixtures', 'pm2-master-throws.js')
  await assert.rejects(launcher.start(fixture, ['--instances', '1', '--port', '0'], { pm2Home, name: 'throws-at-load' }), (err) => {
    assert.equal(err.code, 'ERR_COLLECTOR_START')
    assert.match(err.message, /^collector throws-at-load did not come online \(status: [a-z ]+\): .*devices\.json not found; its log: \S+throws-at-load-error\.log$/)
    assert.ok(fs.existsSync(err.message.split('its log: ')[1]), 'the log it names is there')
    return true
  })
  assert.deepEqual((await launcher.list({ pm2Home })).map((p) => p.name), [], 'no entry left in a restart loop')
  // Started again under the same name, failing otherwise: this run's reason, not the last one's (PM2 appends to the log).
  await assert.rejects(launcher.start(fixture, ['--instances', '1', '--port', '0'], { pm2Home, name: 'throws-at-load', env: { THROWS_REASON: 'config.yaml unreadable' } }), (err) => {
    assert.match(err.message, /: .*config\.yaml unreadable; its log: /)
    assert.doesNotMatch(err.message, /devices\.json/)
    return true
  })
})

test('PM2 waits out the collector\'s own drain: kill_timeout is its --drain-timeout plus a margin', { timeout: 60000 }, async (t) => {
  let api = null
  t.after(() => api && api.close()) // before the daemon goes, or its sockets retry forever
  const pm2Home = newPm2Home(t)
  await launcher.start(ECHO, ['--port', '0', '--instances', '1', '--name', 'drain-default'], { pm2Home })
  await launcher.start(ECHO, ['--port', '0', '--instances', '1', '--name', 'drain-long', '--drain-timeout', '60s'], { pm2Home })
  api = await pm2Api(pm2Home)
  const killTimeoutOf = async (name) => (await api.call('describe', name))[0].pm2_env.kill_timeout
  assert.equal(await killTimeoutOf('drain-default'), 35000, 'the default drain (30 s) + 5 s')
  assert.equal(await killTimeoutOf('drain-long'), 65000, 'was a fixed 35,000: PM2 killed a collector still draining')
  await launcher.stop('drain-long', { pm2Home })
  await launcher.resume('drain-long', { pm2Home })
  assert.equal(await killTimeoutOf('drain-long'), 65000, 'kept when a stopped collector is started again')
})

test('under PM2 the counters are @pm2/io metrics, and the restart-workers action rolls the workers under UDP load, losing nothing', { timeout: 90000 }, async (t) => {
  let api = null
  t.after(() => api && api.close()) // before the daemon goes, or its sockets retry forever
  const pm2Home = newPm2Home(t)
  const options = { pm2Home }
  const saved = process.env.COLLECTOR_STATS_DIR
  delete process.env.COLLECTOR_STATS_DIR
  t.after(() => { if (saved !== undefined) process.env.COLLECTOR_STATS_DIR = saved })
  const dir = statsDir({ pm2Home, env: {} })
  const name = 'echo-metrics'

  const proc = await launcher.start(ECHO, ['--port', '0', '--instances', '2', '--name', name], options)
  const first = await waitFor(async () => {
    const snap = await readStats(name, dir)
    return snap && snap.state === 'running' && snap.stats.workers.length === 2 ? snap : null
  }, { what: 'the stats file', timeout: 30000 })
  const port = first.stats.address.port
  const oldPids = first.stats.workers.map((w) => w.pid)

  api = await pm2Api(pm2Home)
  const env = async () => {
    const [described] = await api.call('describe', name)
    return described.pm2_env
  }
  const metrics = async () => (await env()).axm_monitor || {}

  // Idle: every gauge is reported, with nothing received yet.
  const idle = await waitFor(async () => {
    const m = await metrics()
    return m.workers && m.workers.value === 2 && m['received/s'] && m['db writes/s'] ? m : null
  }, { what: 'the metrics in PM2', timeout: 30000 })
  assert.deepEqual({ value: idle['received/s'].value, unit: idle['received/s'].unit }, { value: 0, unit: 'msg/s' })
  for (const gauge of ['processed/s', 'dropped', 'lost', 'failed', 'inFlight', 'db writes/s']) assert.equal(idle[gauge].value, 0, gauge)
  const actions = (await env()).axm_actions.map((a) => a.action_name)
  assert.ok(actions.includes('restart-workers'), `actions: ${actions}`)

  // A burst of 600 datagrams: the received/s gauge PM2 shows is a rate the
  // collector computed from its counters (one of the stats file's rates),
  // over at least a second, so above 0 and at most the 600 sent; the
  // processed/s and db writes/s gauges move too.
  const rates = new Set()
  const peak = { 'received/s': 0, 'processed/s': 0, 'db writes/s': 0 }
  const sender = udpSender(port)
  t.after(() => sender.close().catch(() => {})) // closed already unless an assertion failed
  sender.send(600)
  await waitFor(async () => {
    const m = await metrics()
    const snap = await readStats(name, dir)
    if (snap && snap.rates.received !== null) rates.add(snap.rates.received)
    for (const gauge of Object.keys(peak)) {
      const value = m[gauge].value
      if (gauge === 'received/s' && value > 0) assert.ok(rates.has(value), `received/s ${value} is one of the collector's rates ${[...rates]}`)
      peak[gauge] = Math.max(peak[gauge], value)
    }
    return Object.values(peak).every((value) => value > 0)
  }, { what: 'received/s, processed/s and db writes/s above 0 in PM2', timeout: 15000 })
  assert.ok(peak['received/s'] <= 600, `received/s ${peak['received/s']} is at most the 600 sent`)
  assert.ok(peak['processed/s'] <= 600, `processed/s ${peak['processed/s']} is at most the 600 sent`)
  await waitFor(async () => {
    const snap = await readStats(name, dir)
    return snap && snap.stats.received === 600 && snap.stats.processed === 600 ? snap : null
  }, { what: '600 processed', timeout: 30000 })
  // Quiet again: the rates fall back to 0 and nothing was dropped or lost.
  const quiet = await waitFor(async () => {
    const m = await metrics()
    return m['received/s'].value === 0 && m['processed/s'].value === 0 ? m : null
  }, { what: 'received/s back to 0', timeout: 15000 })
  for (const gauge of ['dropped', 'lost', 'failed', 'inFlight']) assert.equal(quiet[gauge].value, 0, gauge)
  assert.equal(quiet.workers.value, 2)

  // The action, triggered through PM2 under ~1000 datagrams/s, replies once
  // the rolling restart is done.
  const load = setInterval(() => sender.send(10), 10)
  await new Promise((resolve) => setTimeout(resolve, 300))
  let replies
  try {
    replies = await api.call('trigger', name, 'restart-workers')
  } finally {
    await new Promise((resolve) => setTimeout(resolve, 300))
    clearInterval(load)
  }
  await sender.close()
  assert.equal(replies.length, 1)
  assert.deepEqual(replies[0].data.return, { success: true })

  const after = await waitFor(async () => {
    const snap = await readStats(name, dir)
    const s = snap && snap.stats
    return s && s.received === sender.sent && s.processed === s.received && s.inFlight === 0 ? snap : null
  }, { what: 'every datagram processed', timeout: 30000 })
  const s = after.stats
  assert.ok(sender.sent > 600, 'datagrams were sent during the restart')
  assert.equal(s.dropped.total, 0)
  assert.equal(s.lost, 0)
  assertRolled(after, oldPids, proc.pid)
  const [listed] = await launcher.list(options)
  assert.equal(listed.restarts, 0, 'PM2 did not restart the process')
  const settled = await waitFor(async () => {
    const m = await metrics()
    return m.workers.value === 2 && m.lost.value === 0 && m.dropped.value === 0 ? m : null
  }, { what: 'PM2 to see both new workers', timeout: 30000 })
  assert.equal(settled.failed.value, 0)
})
