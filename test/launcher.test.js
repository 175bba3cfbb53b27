'use strict'
// The launcher against a real PM2 daemon in a temporary PM2_HOME.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const dgram = require('node:dgram')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const launcher = require('../lib/launcher')
const { readStats, statsDir } = require('../lib/stats-file')

const ECHO = path.join(__dirname, 'fixtures', 'echo-collector.js')
const NAME = 'echo-launch'

async function waitFor (what, fn, timeout = 30000) {
  const deadline = Date.now() + timeout
  let last
  while (Date.now() < deadline) {
    last = await fn()
    if (last) return last
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  assert.fail(`timed out waiting for ${what}`)
}

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

test('start under PM2 → ready → status → rolling restart under UDP load loses nothing → delete', { timeout: 150000 }, async (t) => {
  const pm2Home = fs.mkdtempSync(path.join(os.tmpdir(), 'collector-pm2-'))
  const options = { pm2Home }
  const saved = process.env.COLLECTOR_STATS_DIR
  delete process.env.COLLECTOR_STATS_DIR
  t.after(async () => {
    await launcher.killDaemon(options)
    fs.rmSync(pm2Home, { recursive: true, force: true })
    if (saved !== undefined) process.env.COLLECTOR_STATS_DIR = saved
  })
  const dir = statsDir({ pm2Home, env: {} })

  const proc = await launcher.start(ECHO, ['--port', '0', '--instances', '2', '--name', NAME], options)
  assert.equal(proc.name, NAME)
  assert.equal(proc.status, 'online')
  assert.ok(proc.pid > 0)
  assert.deepEqual(proc.args, ['--port', '0', '--instances', '2', '--name', NAME])
  const cmdline = fs.readFileSync(`/proc/${proc.pid}/cmdline`, 'utf8')
  assert.match(cmdline, /--instances 2/, 'ps shows the flags')

  const first = await waitFor('the stats file', async () => {
    const snap = await readStats(NAME, dir)
    return snap && snap.state === 'running' && snap.stats.workers.length === 2 ? snap : null
  })
  assert.equal(first.pid, proc.pid)
  assert.equal(first.format, 1)
  const port = first.stats.address.port
  const oldPids = first.stats.workers.map((w) => w.pid)

  const sender = udpSender(port)
  sender.send(200)
  await waitFor('200 processed', async () => {
    const snap = await readStats(NAME, dir)
    return snap && snap.stats.processed === 200 ? snap : null
  })

  // Load throughout the rolling restart: ~2000 datagrams/s.
  const load = setInterval(() => sender.send(20), 10)
  await new Promise((resolve) => setTimeout(resolve, 300))
  await launcher.restart(NAME, options)
  await new Promise((resolve) => setTimeout(resolve, 300))
  clearInterval(load)
  await sender.close()

  const after = await waitFor('every datagram processed', async () => {
    const snap = await readStats(NAME, dir)
    const s = snap && snap.stats
    return s && s.received === sender.sent && s.processed === s.received && s.inFlight === 0 ? snap : null
  })
  const s = after.stats
  assert.equal(s.processed, s.received)
  assert.equal(s.dropped.total, 0)
  assert.equal(s.lost, 0)
  assert.equal(s.restarts.rolling, 2)
  const newPids = s.workers.map((w) => w.pid)
  assert.equal(newPids.length, 2)
  for (const pid of newPids) assert.ok(!oldPids.includes(pid), `worker ${pid} was replaced`)
  assert.equal(after.pid, proc.pid, 'the master itself was not restarted')

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
  const pm2Home = fs.mkdtempSync(path.join(os.tmpdir(), 'collector-pm2-'))
  t.after(async () => {
    await launcher.killDaemon({ pm2Home })
    fs.rmSync(pm2Home, { recursive: true, force: true })
  })
  await assert.rejects(launcher.start(ECHO, ['--instances', 'lots'], { pm2Home }), (err) => err.code === 'ERR_INVALID_CONFIG' && /--instances/.test(err.message))
  assert.equal(fs.existsSync(path.join(pm2Home, 'pm2.pid')), false, 'no daemon was spawned')
  await assert.rejects(launcher.start('no-such-collector', [], { pm2Home }), { code: 'ERR_UNKNOWN_COLLECTOR' })
  await assert.rejects(launcher.stop('nobody', { pm2Home }), { code: 'ERR_NO_SUCH_COLLECTOR' })
})
