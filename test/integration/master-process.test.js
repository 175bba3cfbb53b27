'use strict'

// A master in its own process. It dies (SIGKILL) while its workers hold
// messages they have not stored: the workers flush what they hold before
// they exit. It is stopped (SIGSTOP) while a burst arrives: what the kernel
// dropped meanwhile is counted.

const test = require('node:test')
const assert = require('node:assert/strict')
const { spawn, spawnSync } = require('node:child_process')
const dgram = require('node:dgram')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { waitFor } = require('../helpers/lb')
const { removeDir } = require('../helpers/temp-dir')

function readJson (file) {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8'))
  } catch {
    return null
  }
}

function alive (pid) {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

test('a SIGKILLed master: its workers flush what they hold, then exit', { timeout: 60000 }, async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'master-death-'))
  t.after(() => removeDir(dir))
  const master = spawn(process.execPath, [path.join(__dirname, '..', 'fixtures', 'master-process.js'), dir], { stdio: 'ignore' })
  t.after(() => { try { master.kill('SIGKILL') } catch {} })
  const statsFile = path.join(dir, 'stats.json')
  const up = await waitFor(() => { const s = readJson(statsFile); return s && s.state === 'running' && s }, { what: 'the master to start', timeout: 20000 })
  const socket = dgram.createSocket('udp4')
  t.after(() => socket.close())
  for (let i = 0; i < 1000; i++) await new Promise((resolve) => socket.send(`m${i}`, up.address.port, '127.0.0.1', resolve))
  const held = await waitFor(() => {
    const s = readJson(statsFile)
    return s && s.workers.reduce((sum, w) => sum + ((w.custom && w.custom.buffered) || 0), 0) === 1000 && s
  }, { what: 'the workers to hold all 1000', timeout: 20000 })
  assert.equal(held.processed, 0, 'nothing stored yet')
  const pids = held.workers.map((w) => w.pid)
  master.kill('SIGKILL')
  await waitFor(() => pids.every((pid) => !alive(pid)), { what: 'the workers to exit', timeout: 20000 })
  const lines = fs.readdirSync(dir).filter((f) => f.endsWith('.log'))
    .flatMap((f) => fs.readFileSync(path.join(dir, f), 'utf8').split('\n').filter(Boolean))
  const texts = new Set(lines.map((line) => line.split(' ')[2]))
  assert.equal(texts.size, 1000, 'every held message was flushed by its worker')
})

test('a SIGKILLed master while a doWork never settles: after orphanTimeout its workers flush what they hold, say so, and exit', { timeout: 60000 }, async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'master-orphan-'))
  t.after(() => removeDir(dir))
  const errFile = path.join(dir, 'stderr.txt')
  const err = fs.openSync(errFile, 'w')
  const options = JSON.stringify({ stuckAt: 100, orphanTimeout: 1500 })
  const master = spawn(process.execPath, [path.join(__dirname, '..', 'fixtures', 'master-process.js'), dir, '', options], { stdio: ['ignore', 'ignore', err] })
  fs.closeSync(err)
  t.after(() => { try { master.kill('SIGKILL') } catch {} })
  const statsFile = path.join(dir, 'stats.json')
  const up = await waitFor(() => { const s = readJson(statsFile); return s && s.state === 'running' && s }, { what: 'the master to start', timeout: 20000 })
  let pids = up.workers.map((w) => w.pid)
  t.after(() => { for (const pid of pids) try { process.kill(pid, 'SIGKILL') } catch {} })
  const socket = dgram.createSocket('udp4')
  t.after(() => socket.close())
  for (let i = 0; i < 1000; i++) await new Promise((resolve) => socket.send(`m${i}`, up.address.port, '127.0.0.1', resolve))
  // Round robin: 500 each; each worker holds its first 99, hangs on its 100th, and has the rest queued.
  const held = await waitFor(() => {
    const s = readJson(statsFile)
    return s && s.workers.length === 2 && s.workers.every((w) => w.custom && w.custom.buffered === 99) && s
  }, { what: 'each worker to hold 99 and hang on its 100th', timeout: 20000 })
  pids = held.workers.map((w) => w.pid)
  master.kill('SIGKILL')
  const killedAt = Date.now()
  await waitFor(() => pids.every((pid) => !alive(pid)), { what: 'the workers to exit', timeout: 30000 })
  assert.ok(Date.now() - killedAt >= 1400, 'they waited for orphanTimeout first')
  const lines = fs.readdirSync(dir).filter((f) => f.endsWith('.log'))
    .flatMap((f) => fs.readFileSync(path.join(dir, f), 'utf8').split('\n').filter(Boolean))
  assert.equal(lines.length, 198, 'what each worker held before the hung message was flushed')
  const warnings = fs.readFileSync(errFile, 'utf8').split('\n').filter((l) => l.includes('orphanTimeout')).map((l) => JSON.parse(l))
  assert.deepEqual(warnings.map((w) => [w.level, w.batches > 0, w.pid]).sort(), pids.map((pid) => [40, true, pid]).sort(), 'each worker said why it gave up, on stderr')
})

test('a SIGSTOPped master: a burst past its receive buffer is counted as dropped.kernel once it runs again', { timeout: 60000 }, async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'master-stop-'))
  t.after(() => removeDir(dir))
  const master = spawn(process.execPath, [path.join(__dirname, '..', 'fixtures', 'master-process.js'), dir, '65536'], { stdio: 'ignore' })
  t.after(() => { try { master.kill('SIGCONT'); master.kill('SIGKILL') } catch {} })
  const statsFile = path.join(dir, 'stats.json')
  const up = await waitFor(() => { const s = readJson(statsFile); return s && s.state === 'running' && s }, { what: 'the master to start', timeout: 20000 })
  const sent = 4000
  master.kill('SIGSTOP')
  const sender = `const s = require('node:dgram').createSocket('udp4'); let n = 0
    for (let i = 0; i < ${sent}; i++) s.send(Buffer.alloc(400, 120), ${up.address.port}, '127.0.0.1', () => { if (++n === ${sent}) s.close() })`
  const result = spawnSync(process.execPath, ['-e', sender], { encoding: 'utf8' })
  assert.equal(result.status, 0, result.stderr)
  master.kill('SIGCONT')
  const s = await waitFor(() => {
    const stats = readJson(statsFile)
    return stats && stats.received + stats.dropped.kernel === sent && stats
  }, { what: 'received + dropped.kernel to reach what was sent', timeout: 20000 })
  assert.ok(s.dropped.kernel > 0, `the burst overflowed the receive buffer (${JSON.stringify(s.dropped)})`)
  assert.ok(s.received > 0, 'what the buffer held was read after SIGCONT')
  assert.equal(s.dropped.total, s.dropped.kernel, 'no other drop')
})
