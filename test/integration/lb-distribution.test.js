'use strict'
const { test } = require('node:test')
const assert = require('node:assert/strict')
const { LoadBalancer } = require('../..')
const { startLb, settled, udpSocket, sendPaced, sendDatagram, waitFor, lines, fixture } = require('../helpers/lb')

const K = 40

function processedBySlot (stats) {
  return stats.workers.map((w) => w.processed)
}

test('round-robin: 3·k datagrams give each of 3 workers exactly k', async (t) => {
  const lb = await startLb(t, { instances: 3 })
  const socket = await udpSocket(t)
  await sendPaced(lb, socket, lines(3 * K))
  await settled(lb)
  const stats = await lb.stats()
  assert.deepEqual(processedBySlot(stats), [K, K, K])
  assert.deepEqual(stats.workers.map((w) => w.custom.seen), [K, K, K])
  assert.equal(stats.received, 3 * K)
  assert.equal(stats.dropped.total, 0)
})

test('a subclass overriding distribute() on its prototype is used', async (t) => {
  class FirstSlot extends LoadBalancer {
    distribute (workers) {
      this.calls = (this.calls || 0) + 1
      return workers[0]
    }
  }
  const lb = await startLb(t, { instances: 2 }, FirstSlot)
  const socket = await udpSocket(t)
  await sendPaced(lb, socket, lines(30))
  await settled(lb)
  const stats = await lb.stats()
  assert.deepEqual(processedBySlot(stats), [30, 0])
  assert.equal(lb.calls, 30)
})

test('distribution as a function picks the worker, called with the balancer as this', async (t) => {
  let self = null
  const lastSlot = function (workers, message) {
    self = this
    return message.data.toString().startsWith('b') ? workers[workers.length - 1] : workers[0]
  }
  const lb = await startLb(t, { instances: 2, distribution: lastSlot })
  const socket = await udpSocket(t)
  await sendPaced(lb, socket, [...lines(10, 'a'), ...lines(25, 'b')])
  await settled(lb)
  assert.deepEqual(processedBySlot(await lb.stats()), [10, 25])
  assert.equal(self, lb)
})

for (const udpReceiver of ['native', 'dgram']) {
  test(`${udpReceiver}: a distribute() that throws or returns no worker is counted and logged once; its messages go round-robin, none lost`, async (t) => {
    const errors = []
    const logger = { trace () {}, debug () {}, info () {}, warn () {}, fatal () {}, error: (obj, msg) => errors.push({ obj, msg }) }
    class Buggy extends LoadBalancer {
      distribute (workers, message) {
        const text = message.data.toString()
        if (text.startsWith('throw')) throw new Error('no route')
        if (text.startsWith('none')) return workers.find((w) => w.slot === 99)
        return workers[0]
      }
    }
    const lb = await startLb(t, { instances: 2, udpReceiver, logger }, Buggy)
    const socket = await udpSocket(t)
    await sendPaced(lb, socket, [...lines(10, 'ok'), ...lines(6, 'throw'), ...lines(4, 'none')])
    await settled(lb)
    const stats = await lb.stats()
    assert.equal(stats.received, 20)
    assert.equal(stats.processed, 20)
    assert.equal(stats.dropped.total, 0)
    assert.equal(stats.events.distributeErrors, 10)
    // the 10 failed choices went round-robin over both workers
    assert.deepEqual(processedBySlot(stats), [15, 5])
    assert.equal(errors.length, 1)
    assert.match(errors[0].msg, /distribute\(\) failed/)
  })
}

async function sourcesBySlot (lb) {
  const map = new Map()
  for (const w of (await lb.stats()).workers) {
    for (const source of w.custom.sources) {
      assert.ok(!map.has(source) || map.get(source) === w.slot, `${source} seen on slots ${map.get(source)} and ${w.slot}`)
      map.set(source, w.slot)
    }
  }
  return map
}

async function sendFromEach (lb, sockets, perSocket) {
  for (const socket of sockets) await sendPaced(lb, socket, lines(perSocket))
}

test('hash: each source lands on one slot, before and after an unrelated worker is killed and respawned', async (t) => {
  const lb = await startLb(t, { instances: 3, distribution: 'hash', respawnDelay: 20 })
  const sockets = []
  for (let i = 0; i < 12; i++) sockets.push(await udpSocket(t))
  await sendFromEach(lb, sockets, 5)
  await settled(lb)
  const before = await sourcesBySlot(lb)
  assert.equal(before.size, sockets.length)
  assert.ok(new Set(before.values()).size >= 2, 'the sources should spread over several slots')

  const victim = (await lb.stats()).workers.find((w) => w.slot === 2)
  const exited = new Promise((resolve) => lb.once('workerExit', resolve))
  const respawned = new Promise((resolve) => lb.once('workerRespawned', resolve))
  process.kill(victim.pid, 'SIGKILL')
  const exit = await exited
  assert.equal(exit.slot, 2)
  // Mid-run: the keys of the surviving slots keep flowing and do not move.
  const unrelated = sockets.filter((s) => before.get(`127.0.0.1:${s.address().port}`) !== 2)
  await sendFromEach(lb, unrelated, 3)
  const info = await respawned
  assert.equal(info.slot, 2)
  assert.notEqual(info.pid, victim.pid)

  await sendFromEach(lb, sockets, 5)
  await settled(lb)
  const after = await sourcesBySlot(lb)
  for (const [source, slot] of before) {
    if (slot === 2) assert.equal(after.get(source), 2, `${source} returns to its slot after the respawn`)
    else assert.equal(after.get(source), slot, `${source} stays on slot ${slot}`)
  }
  const stats = await lb.stats()
  assert.equal(stats.restarts.workers, 1)
  assert.equal(stats.received, stats.processed + stats.failed + stats.dropped.total)
})

test('hash: one source sends everything to one worker', async (t) => {
  const lb = await startLb(t, { instances: 3, distribution: 'hash' })
  const socket = await udpSocket(t)
  await sendPaced(lb, socket, lines(60))
  await settled(lb)
  const counts = processedBySlot(await lb.stats()).sort((a, b) => a - b)
  assert.deepEqual(counts, [0, 0, 60])
})

test('least-loaded: a slow worker in slot 0 gets few messages, the fast ones most', async (t) => {
  const lb = await startLb(t, {
    instances: 3,
    distribution: 'least-loaded',
    worker: fixture('counting-worker.js'),
    workerOptions: { delayMs: 40, slowSlot: 0 }
  })
  const socket = await udpSocket(t)
  const total = 300
  for (let i = 0; i < total; i += 10) {
    for (const data of lines(10, `x${i}-`)) await sendDatagram(socket, lb.address().port, data)
    await waitFor(() => lb.summary().received >= i + 10)
  }
  await settled(lb)
  const [slow, ...fast] = processedBySlot(await lb.stats())
  t.diagnostic(`slow ${slow}, fast ${fast}`)
  assert.equal(slow + fast[0] + fast[1], total)
  assert.ok(slow < total / 6, `slow worker got ${slow} of ${total}`)
  assert.ok(fast.every((n) => n > slow), `fast workers got ${fast}, slow ${slow}`)
})
