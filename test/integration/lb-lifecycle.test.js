'use strict'
const { test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { startLb, settled, udpSocket, sendDatagram, tcpClient, write, waitFor, sleep, lines } = require('../helpers/lb')
const { removeDir } = require('../helpers/temp-dir')

function tempDir (t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cc-flush-'))
  t.after(() => removeDir(dir))
  return dir
}

function flushRecords (dir) {
  return fs.readdirSync(dir).map((name) => JSON.parse(fs.readFileSync(path.join(dir, name), 'utf8')))
}

test('stop() drains: everything received is processed and every worker flushed', async (t) => {
  const dir = tempDir(t)
  const lb = await startLb(t, { instances: 2, workerOptions: { delayMs: 3, flushDir: dir } })
  const pids = (await lb.stats()).workers.map((w) => w.pid).sort()
  const socket = await udpSocket(t)
  for (const data of lines(200)) await sendDatagram(socket, lb.address().port, data)
  await waitFor(() => lb.summary().received === 200, { what: 'the burst to be received' })
  assert.ok(lb.summary().inFlight > 0, 'the slow workers still hold messages when stop() is called')
  const stopping = lb.stop()
  assert.equal(lb.stop(), stopping, 'a second stop() returns the same promise')
  await stopping
  const s = lb.summary()
  assert.equal(s.state, 'stopped')
  assert.equal(s.processed, 200)
  assert.equal(s.processed, s.received)
  assert.equal(s.lost, 0)
  assert.equal(s.dropped.total, 0)
  const records = flushRecords(dir)
  assert.deepEqual(records.map((r) => r.pid).sort(), pids)
  assert.equal(records.reduce((n, r) => n + r.seen, 0), 200)
  assert.equal(lb.address(), null)
})

test('start/stop take callbacks, and stop() twice resolves the same way', async (t) => {
  const { LoadBalancer } = require('../..')
  const { COUNTING, HOST } = require('../helpers/lb')
  const lb = new LoadBalancer({ worker: COUNTING, instances: 1, host: HOST })
  t.after(() => lb.stop())
  await new Promise((resolve, reject) => lb.start((err) => err ? reject(err) : resolve()))
  assert.ok(lb.address().port > 0)
  const stopped = new Promise((resolve) => lb.once('stopped', resolve))
  await new Promise((resolve, reject) => lb.stop((err) => err ? reject(err) : resolve()))
  await stopped
  await lb.stop()
  assert.equal(lb.summary().state, 'stopped')
  // A start after stop() resolved with the first start's promise, and nothing listened.
  await assert.rejects(lb.start(), /^Error: cannot start a balancer that is stopped: make a new one$/)
  const refused = await new Promise((resolve) => lb.start((err) => resolve(err)))
  assert.match(String(refused), /cannot start a balancer that is stopped/)
  assert.equal(lb.address(), null)
})

// Sends numbered datagrams in small paced chunks until `until()` is true (bounded).
async function udpLoad (lb, socket, until, { max = 4000, deadline = 20000 } = {}) {
  let sent = 0
  const end = Date.now() + deadline
  while (!until() && sent < max && Date.now() < end) {
    for (let i = 0; i < 10; i++) await sendDatagram(socket, lb.address().port, `u${sent++}`)
    await sleep(2)
  }
  return sent
}

test('restart() under continuous UDP load loses nothing and replaces every worker', async (t) => {
  const instances = 2
  const lb = await startLb(t, { instances })
  const before = (await lb.stats()).workers.map((w) => w.pid)
  const socket = await udpSocket(t)
  let restarted = false
  const load = udpLoad(lb, socket, () => restarted && lb.summary().received > 0)
  await waitFor(() => lb.summary().received >= 50)
  await lb.restart()
  restarted = true
  const sent = await load
  await waitFor(() => lb.summary().received === sent, { what: `all ${sent} datagrams received` })
  const s = await settled(lb)
  const after = (await lb.stats()).workers.map((w) => w.pid)
  assert.equal(s.restarts.rolling, instances)
  assert.equal(s.processed + s.failed, s.received)
  assert.equal(s.dropped.total, 0)
  assert.equal(s.lost, 0)
  assert.equal(after.length, instances)
  for (const pid of after) assert.ok(!before.includes(pid), `worker ${pid} is new`)
})

test('restart() under continuous TCP load loses nothing', async (t) => {
  const instances = 2
  const lb = await startLb(t, { instances, protocol: 'tcp_server' })
  const before = (await lb.stats()).workers.map((w) => w.pid)
  const socket = await tcpClient(t, lb.address().port)
  let restarted = false
  let sent = 0
  const load = (async () => {
    const end = Date.now() + 20000
    while (!restarted && sent < 20000 && Date.now() < end) {
      await write(socket, lines(20, `t${sent}-`).map((l) => `${l}\n`).join(''))
      sent += 20
      await sleep(2)
    }
  })()
  await waitFor(() => lb.summary().received >= 100)
  await lb.restart((err) => assert.ifError(err))
  restarted = true
  await load
  await waitFor(() => lb.summary().received === sent, { what: `all ${sent} frames received` })
  const s = await settled(lb)
  const after = (await lb.stats()).workers.map((w) => w.pid)
  assert.equal(s.restarts.rolling, instances)
  assert.equal(s.processed, sent)
  assert.equal(s.dropped.total, 0)
  assert.equal(s.lost, 0)
  for (const pid of after) assert.ok(!before.includes(pid), `worker ${pid} is new`)
})

// The worker processes this test's balancer runs: its children running the
// worker entry, read from /proc (not the balancer's own bookkeeping).
function workerProcesses () {
  const entry = path.join(__dirname, '..', '..', 'lib', 'worker', 'worker-entry.js')
  const children = fs.readFileSync(`/proc/${process.pid}/task/${process.pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean)
  return children.filter((pid) => {
    try { return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(entry) } catch { return false }
  }).map(Number)
}

// A worker killed while the rolling restart starts its replacement was
// respawned as well: two new workers for one slot, the first never retired
// (with -i 3, six workers alive, three of them without traffic).
test('workers killed during a rolling restart: each slot ends with exactly one live worker process', { timeout: 60000 }, async (t) => {
  const cluster = require('node:cluster')
  const instances = 3
  const lb = await startLb(t, { instances, respawnDelay: 20 })
  const before = (await lb.stats()).workers.sort((a, b) => a.slot - b.slot).map((w) => w.pid)
  assert.deepEqual(workerProcesses().sort(), [...before].sort())
  // As the restart forks slot N's new worker, slot N's old one is killed.
  let forks = 0
  const killOld = () => { if (forks < instances) process.kill(before[forks++], 'SIGKILL') }
  cluster.on('fork', killOld)
  t.after(() => cluster.removeListener('fork', killOld))
  await lb.restart()
  assert.equal(forks, instances, 'every old worker was killed during the restart')
  await waitFor(async () => (await lb.stats()).workers.length >= instances, { what: 'every slot ready' })
  await sleep(1000) // any respawn of a killed worker has had its time to fork and come up
  const alive = workerProcesses()
  const listed = (await lb.stats()).workers.map((w) => w.pid)
  assert.equal(alive.length, instances, `worker processes alive: ${alive.join(', ')}`)
  assert.deepEqual(alive.sort(), listed.sort(), 'those the balancer lists')
  for (const pid of before) assert.ok(!alive.includes(pid))
})

// A stop during a rolling restart waited for the slots' current workers
// only: the old one, still draining (its database away), was left running
// without a master, and stop() resolved with its messages in flight.
test('stop() during a rolling restart waits for the old worker still draining: nothing left in flight, every message accounted for', { timeout: 60000 }, async (t) => {
  const { accountedFor } = require('../../lib/master/counters')
  const dir = tempDir(t)
  const holdFile = path.join(dir, 'outage')
  fs.writeFileSync(holdFile, '')
  const lb = await startLb(t, {
    worker: path.join(__dirname, '..', 'fixtures', 'buffering-worker.js'),
    instances: 1,
    drainTimeout: 2000,
    deadLetterDir: path.join(dir, 'dead-letter'),
    workerOptions: { dir, holdFile, storeEveryMs: 20, flushMs: 1500 }
  })
  const socket = await udpSocket(t)
  for (let i = 0; i < 50; i++) await sendDatagram(socket, lb.address().port, `m${i}`)
  await waitFor(() => lb.summary().received === 50, { what: '50 received' })
  const oldPid = lb.pool.current[0].pid
  const restarting = lb.restart().catch(() => {})
  await waitFor(() => lb.pool.current[0] && lb.pool.current[0].pid !== oldPid, { what: 'the new worker up, the old one draining' })
  await lb.stop()
  const s = lb.summary() // as stop() resolves: a CLI exits here, with its code from this
  const live = lb.pool.live.size
  await restarting
  assert.equal(live, 0, 'no worker left running')
  assert.equal(s.inFlight, 0)
  assert.ok(accountedFor(s), JSON.stringify(s))
  assert.equal(s.deadLettered + s.processed + s.dropped.total, 50, 'the old worker\'s 50: given up by name at the stop, not left in flight')
})
