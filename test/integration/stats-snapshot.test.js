'use strict'

// stats() is one moment: with both cores busy and datagrams arriving in
// bursts, every reply's per-worker counters add up to its totals, however
// long the workers take to answer for their own stats.

const test = require('node:test')
const assert = require('node:assert/strict')
const { spawn } = require('node:child_process')
const { startLb, udpSocket, sendDatagram, settled } = require('../helpers/lb')

const sum = (workers, field) => workers.reduce((total, w) => total + w[field], 0)

/** The parts of one reply against its whole; a list of what does not add up. */
function contradictions (s) {
  const wrong = []
  for (const field of ['processed', 'failed', 'dispatched']) {
    const parts = sum(s.workers, field) + s.retired[field]
    if (parts !== s[field]) wrong.push(`${field}: workers ${sum(s.workers, field)} + retired ${s.retired[field]} ≠ ${s[field]}`)
  }
  const inFlight = sum(s.workers, 'inFlight') + s.orphaned
  if (inFlight !== s.inFlight) wrong.push(`inFlight: workers ${sum(s.workers, 'inFlight')} + orphaned ${s.orphaned} ≠ ${s.inFlight}`)
  return wrong
}

// Two busy children, one per core, for as long as the test runs.
function loadBothCores (t) {
  for (let i = 0; i < 2; i++) {
    const child = spawn(process.execPath, ['-e', 'const end = Date.now() + 60000; while (Date.now() < end) {}'], { stdio: 'ignore' })
    t.after(() => child.kill('SIGKILL'))
  }
}

test('stats(): per-worker processed, failed, inFlight and dispatched add up to the totals in every reply, with both cores busy', { timeout: 90000 }, async (t) => {
  loadBothCores(t)
  const lb = await startLb(t, { instances: 4, distribution: 'round-robin', workerOptions: { failEvery: 97 } })
  const socket = await udpSocket(t)
  const port = lb.address().port
  let sending = true
  const replies = []
  const asking = (async () => {
    while (sending || replies.length < 20) replies.push(await lb.stats())
  })()
  for (let burst = 0; burst < 20; burst++) {
    for (let i = 0; i < 200; i++) sendDatagram(socket, port, `m${burst}-${i}`)
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  await settled(lb)
  sending = false
  await asking
  replies.push(await lb.stats())
  const moving = replies.filter((s) => s.inFlight > 0 || s.processed < s.received).length
  assert.ok(moving > 0, 'some replies were taken while messages were in flight')
  const wrong = replies.map((s, i) => ({ reply: i, wrong: contradictions(s) })).filter((r) => r.wrong.length > 0)
  assert.deepEqual(wrong, [], `${wrong.length} of ${replies.length} replies contradict themselves`)
  const last = replies[replies.length - 1]
  assert.equal(last.processed + last.failed, last.received)
  assert.ok(last.failed > 0, 'failures counted per worker too')
  for (const worker of last.workers) {
    assert.ok(worker.custom, 'each worker answered with its own stats')
    assert.ok(worker.customAgeMs >= 0, 'and says how old they are')
  }
})
