'use strict'

// A stream ends only once everything received before its end is stored.
// When a worker dies, what it held waits for its slot's next worker while
// later messages of the same calls (their BYEs) go to another one: the
// sweeper must not end those calls before the reports received earlier
// are stored, or each late report starts a second stream of its call
// (seen in CI: 31 calls counted for 20 under a kill loop, 11 of them a
// lone report each).

const test = require('node:test')
const assert = require('node:assert/strict')
const rtcp = require('../../collectors/rtcp')
const { startTestCollector } = require('../helpers/collector')
const { sendCalls } = require('../helpers/rtcp-calls')
const { waitFor, streamDocs } = require('../helpers/streams')

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

test('reports a dead worker held are stored in their calls even when the calls\' BYEs were stored first', { timeout: 90000 }, async (t) => {
  // The slot's next worker comes 4 s after the death: the sweeper (every
  // second, on the other worker) has time to end the calls if it may.
  const { collector, db, port } = await startTestCollector(t, rtcp, ['--stream-timeout', '60s', '--respawn-delay', '4s'])
  const calls = Array.from({ length: 12 }, (_, i) => ({ a: 0x5100 + 2 * i, b: 0x5101 + 2 * i, ab: { lostPerRound: 0 }, ba: { lostPerRound: 0 } }))
  let victim = null
  const { sent } = await sendCalls(port, calls, {
    rounds: 3,
    beforeRound: async (round) => {
      if (round !== 2) return
      await waitFor(async () => collector.summary().inFlight === 0, { what: 'the first rounds acknowledged' })
      victim = (await collector.stats()).workers.find((w) => w.slot === 0)
      process.kill(victim.pid, 'SIGSTOP')
    },
    beforeBye: async () => {
      await sleep(300) // the master sends the last round's batches, and the stopped worker holds them
      victim.held = (await collector.stats()).workers.find((w) => w.pid === victim.pid).inFlight
      process.kill(victim.pid, 'SIGKILL')
      await waitFor(async () => (await collector.stats()).workers.every((w) => w.pid !== victim.pid), { what: 'the master seeing the death' })
    }
  })
  assert.ok(victim.held > 0, 'the stopped worker held reports of the last round')
  await waitFor(() => collector.summary().processed === sent, { what: 'every datagram processed', timeout: 30000 })
  // A second stream of a call would stay open (for --stream-timeout): wait
  // for every stream to end or for that to show, then say which.
  await waitFor(async () => (await streamDocs(db, { active: true })).length === 0, { what: 'every call ended', timeout: 20000 }).catch(() => {})
  const docs = await streamDocs(db)
  const listed = docs.map((d) => `${d.from.ID}-${d.to.ID} ${d.active ? 'open' : d.endReason} ${d.from.packets}+${d.to.packets}`).join(', ')
  assert.equal(docs.length, calls.length, `one stream per call: ${listed}`)
  for (const doc of docs) {
    assert.equal(doc.endReason, 'bye')
    assert.equal(doc.from.packets + doc.to.packets, 6, `${doc.from.ID}: every report of its 3 rounds in the one stream`)
  }
})
