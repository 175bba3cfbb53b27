'use strict'

// The public acknowledgement API (Worker#acknowledge = 'stored',
// checkpoint(), stored(), messageKey(), delivery()) through real forked
// workers: nothing is processed before the worker says it is stored, and
// what a SIGKILLed worker had not stored reaches its replacement, flagged
// as redelivered, under the same message key.

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { startLb, udpSocket, sendDatagram, waitFor, fixture } = require('../helpers/lb')
const { removeDir } = require('../helpers/temp-dir')

const BUFFERING = fixture('buffering-worker.js')

function tempDir (t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ack-api-'))
  t.after(() => removeDir(dir))
  return dir
}

function storedLines (dir) {
  return fs.readdirSync(dir).flatMap((f) => fs.readFileSync(path.join(dir, f), 'utf8').split('\n').filter(Boolean))
    .map((line) => { const [key, redelivered, text] = line.split(' '); return { key, redelivered: redelivered === '1', text } })
}

test('a worker that acknowledges on store: nothing counts as processed until stored() says so', async (t) => {
  const dir = tempDir(t)
  const lb = await startLb(t, { worker: BUFFERING, instances: 1, workerOptions: { dir, hold: true } })
  const socket = await udpSocket(t)
  for (let i = 0; i < 50; i++) await sendDatagram(socket, lb.address().port, `m${i}`)
  await waitFor(async () => { const [w] = (await lb.stats()).workers; return w.custom && w.custom.buffered === 50 }, { what: 'the worker to buffer 50 messages' })
  const s = lb.summary()
  assert.equal(s.processed, 0)
  assert.equal(s.inFlight, 50, 'the master holds them')
  assert.ok(s.oldestUnackedMs >= 0)
})

test('a SIGKILLed buffering worker: its unstored messages reach the replacement in the same slot, marked redelivered, with the same keys; every message stored', { timeout: 60000 }, async (t) => {
  const dir = tempDir(t)
  const lb = await startLb(t, { worker: BUFFERING, instances: 2, respawnDelay: 20, workerOptions: { dir, storeEveryMs: 300 } })
  const respawned = []
  lb.on('workerRespawned', (info) => respawned.push(info))
  const socket = await udpSocket(t)
  for (let i = 0; i < 400; i++) await sendDatagram(socket, lb.address().port, `m${i}`)
  await waitFor(() => lb.summary().received === 400, { what: 'all 400 received' })
  const victim = (await lb.stats()).workers[0]
  process.kill(victim.pid, 'SIGKILL')
  await waitFor(() => respawned.length === 1, { what: 'the respawn' })
  await waitFor(() => lb.summary().processed === 400, { what: 'every message acknowledged' })
  assert.equal(respawned[0].slot, victim.slot, 'the replacement takes the dead worker\'s slot')
  await lb.stop()
  const lines = storedLines(dir)
  const texts = new Set(lines.map((l) => l.text))
  for (let i = 0; i < 400; i++) assert.ok(texts.has(`m${i}`), `m${i} stored`)
  const redelivered = lines.filter((l) => l.redelivered)
  assert.ok(redelivered.length > 0, 'the dead worker held unstored messages that were redelivered')
  const keyOf = new Map()
  for (const line of lines) {
    if (keyOf.has(line.text)) assert.equal(keyOf.get(line.text), line.key, `${line.text} keeps its key when redelivered`)
    keyOf.set(line.text, line.key)
  }
  assert.equal(new Set(lines.map((l) => l.key)).size, 400, 'one key per message')
  const s = lb.summary()
  assert.equal(s.dropped.total, 0)
  assert.equal(s.received, s.processed + s.failed + s.dropped.total)
})
