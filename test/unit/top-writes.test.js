'use strict'

// `collector top`'s WRITES for a collector: its live workers' database
// writes and those of the workers since replaced (QA: the total fell when
// a worker respawned, while PROCESSED, the master's, kept growing).

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const stats = require('../../app/stats-file')
const { frame } = require('../../app/commands/top')
const { removeDir } = require('../helpers/temp-dir')

const worker = (slot, pid, dbWrites) => ({ slot, pid, state: 'ready', processed: dbWrites * 10, failed: 0, inFlight: 0, custom: { dbWrites } })
const sample = (workers) => ({ state: 'running', received: 0, processed: 0, failed: 0, bytes: 0, inFlight: 0, dropped: { total: 0 }, workers })

test('the writes of a worker gone from one sample to the next are kept, as last reported; a worker still there is not retired', () => {
  const before = sample([worker(0, 101, 100), worker(1, 102, 50)])
  const after = sample([worker(0, 103, 5), worker(1, 102, 70)]) // slot 0 respawned
  assert.equal(stats.retiredWritesOf(after, before), 100)
  assert.equal(stats.retiredWritesOf(after, null), 0)
  assert.equal(stats.retiredWritesOf(after, after), 0)
})

test('top: the collector\'s WRITES are its live workers\' and its retired ones\', so the total does not fall at a respawn', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'top-writes-'))
  t.after(() => removeDir(dir))
  const before = sample([worker(0, 101, 100), worker(1, 102, 50)])
  const after = sample([worker(0, 103, 5), worker(1, 102, 70)])
  const meta = { name: 'tw', collector: 'statsd', pid: process.pid, interval: 1000, retiredWrites: stats.retiredWritesOf(after, before) }
  await stats.writeStats(dir, stats.buildSnapshot(meta, after, stats.computeRates(after, before, 1000)))
  const screen = await frame(dir, {})
  const lines = screen.split('\n')
  const header = lines.find((line) => /^COLLECTOR \/ WORKER/.test(line))
  const row = lines.find((line) => /^tw /.test(line))
  assert.match(header, / WRITES$/)
  assert.match(row, / 175$/, `live 5 + 70, and the replaced worker's 100:\n${screen}`)
  assert.match(lines.find((line) => /^ {2}worker 0 /.test(line)), / 5$/, 'the new worker its own')
})
