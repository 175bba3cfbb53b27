'use strict'

// `collector run syslog` in the foreground as an operator runs it: under
// `timeout -s INT` (one SIGINT reaching the process and its group), with the
// database named by MONGODB_URI or by --database. Numbered messages are
// checked in the database after the process exits.

const test = require('node:test')
const assert = require('node:assert/strict')
const { spawn } = require('node:child_process')
const dgram = require('node:dgram')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { MongoClient } = require('mongodb')
const { readStats } = require('../lib/stats-file')
const { getTestMongo, uniqueDbName } = require('./helpers/mongo')
const { waitFor } = require('./helpers/streams')

const CLI = path.join(__dirname, '..', 'bin', 'collector.js')

function withDatabase (uri, database) {
  const [base, query] = uri.split('?')
  return `${base.replace(/\/[^/]*$/, (m) => m.includes(':') ? m : '')}/${database}${query ? `?${query}` : ''}`
}

/** Runs `cmd` with the syslog collector; resolves `{ code, stderr, port, name, dir }` once it is up, `exited` when it ends. */
async function runSyslog (t, cmd, env) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'collector-run-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  const name = `sys${process.pid}${Date.now() % 100000}`
  const args = [...cmd, process.execPath, CLI, 'run', 'syslog', '--port', '0', '-i', '2', '--flush-interval', '50ms', '--name', name]
  const child = spawn(args[0], args.slice(1).concat(env.flags || []), { env: { ...process.env, COLLECTOR_STATS_DIR: dir, ...env.vars }, stdio: ['ignore', 'pipe', 'pipe'] })
  t.after(() => { try { child.kill('SIGKILL') } catch {} })
  let stderr = ''
  child.stderr.on('data', (d) => { stderr += d })
  child.stdout.resume()
  const exited = new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stderr })))
  const snap = await waitFor(async () => { const s = await readStats(name, dir); return s && s.state === 'running' && s }, { timeout: 30000 })
  return { child, exited, port: snap.stats.address.port }
}

async function sendNumbered (port, n) {
  const socket = dgram.createSocket('udp4')
  for (let i = 0; i < n; i++) {
    await new Promise((resolve, reject) => socket.send(`<14>1 2026-11-23T10:00:00Z h app - - - line ${i}`, port, '127.0.0.1', (err) => err ? reject(err) : resolve()))
    if (i % 200 === 199) await new Promise((resolve) => setTimeout(resolve, 5))
  }
  socket.close()
}

async function countIn (uri, database) {
  const client = await new MongoClient(uri).connect()
  try {
    const docs = await client.db(database).collection('syslog').find({}, { projection: { message: 1 } }).toArray()
    return new Set(docs.map((d) => d.message)).size
  } finally {
    await client.close()
  }
}

test('timeout -s INT on a foreground run: one signal (to the process and its group) drains and exits 0, everything stored in the database MONGODB_URI names', { timeout: 90000 }, async (t) => {
  const { uri } = await getTestMongo()
  const database = uniqueDbName('urinamed')
  const run = await runSyslog(t, ['timeout', '--preserve-status', '-s', 'INT', '8'], { vars: { MONGODB_URI: withDatabase(uri, database) } })
  await sendNumbered(run.port, 3000)
  const { code, stderr } = await run.exited
  assert.equal(code, 0, stderr.slice(-2000))
  assert.equal(await countIn(uri, database), 3000, 'every line in the database the URI names')
  assert.equal(await countIn(uri, 'collector'), 0, 'nothing in the default database')
})

test('--database overrides the URI; a second SIGINT a second later forces exit 1', { timeout: 90000 }, async (t) => {
  const { uri } = await getTestMongo()
  const database = uniqueDbName('flagnamed')
  const run = await runSyslog(t, [], { vars: { MONGODB_URI: withDatabase(uri, uniqueDbName('ignored')) }, flags: ['--database', database] })
  await sendNumbered(run.port, 500)
  await waitFor(async () => await countIn(uri, database) === 500, { timeout: 30000 })
  run.child.kill('SIGINT')
  run.child.kill('SIGINT') // the same signal twice at once: still one
  const { code } = await run.exited
  assert.equal(code, 0)
  const { server } = await getTestMongo()
  if (!server) return t.diagnostic('MONGODB_URI given: cannot pause that server')
  const again = await runSyslog(t, [], { vars: { MONGODB_URI: withDatabase(uri, database) } })
  await sendNumbered(again.port, 100)
  server.pause() // the drain now waits on the database: time for a second Ctrl-C
  t.after(() => server.resume())
  await new Promise((resolve) => setTimeout(resolve, 300))
  again.child.kill('SIGINT')
  await new Promise((resolve) => setTimeout(resolve, 1200))
  again.child.kill('SIGINT')
  const second = await again.exited
  server.resume()
  assert.equal(second.code, 1, 'a deliberate second Ctrl-C forces exit')
})
