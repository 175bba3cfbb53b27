'use strict'

// `npx collector run ...` as a user runs it: this repository packed
// (`npm pack`), the tarball installed into an empty app, the collector run
// through npx, stopped by Ctrl-C at a real terminal (a pseudo-terminal,
// util-linux `script`) and by a signal sent to npx alone, as a process
// manager, an IDE's stop button or `docker stop` sends it. Every time the
// collector drains (its summary accounts for every line sent) and none of
// its processes is left (issue 37, item 7).
//
// npm runs the bin through `sh -c`, and Debian's sh (dash) keeps a SIGINT
// sent to it until its child exits: without app/npm-shell-signals.js a
// signal to npx alone never reached the collector.

const { test, before } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const dgram = require('node:dgram')
const { spawn, execFileSync } = require('node:child_process')
const { getTestMongo, uniqueDbName } = require('../helpers/mongo')
const { waitFor } = require('../helpers/wait-for')
const { findExecutable } = require('../../lib/mongo/find-executable')
const { removeDir } = require('../helpers/temp-dir')

const ROOT = path.resolve(__dirname, '..', '..')
const LINES = 50
const NPM = findExecutable('npm')
const NPX = findExecutable('npx')

let app = null
let skip = false

before(async () => {
  if (!NPM || !NPX) {
    skip = 'npm and npx are not on PATH'
    return
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'collector-npx-'))
  process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }))
  const tarball = path.join(dir, execFileSync(NPM, ['pack', '--silent', '--pack-destination', dir], { cwd: ROOT, encoding: 'utf8' }).trim().split('\n').pop())
  app = path.join(dir, 'app')
  fs.mkdirSync(app)
  fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'npx-app', version: '1.0.0', private: true }))
  try {
    execFileSync(NPM, ['install', '--no-audit', '--no-fund', tarball], { cwd: app, stdio: 'pipe', timeout: 180000 })
  } catch (err) {
    skip = `npm install of the packed tarball failed (is the registry reachable?): ${String(err.stderr || err.message).trim().split('\n').pop()}`
  }
})

/**
 * `npx collector run syslog` in `app`, in a process group of its own as a
 * terminal's job is (or under `script`, in a pseudo-terminal). Resolves once
 * the collector listens: `{ child, port, lines(), exited }`.
 */
async function startNpx (t, { terminal = false } = {}) {
  const { uri } = await getTestMongo()
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'collector-npx-state-'))
  t.after(() => removeDir(stateDir))
  const args = ['collector', 'run', 'syslog', '--port', '0', '-i', '1', '--log-format', 'json', '--flush-interval', '50ms', '--database', uniqueDbName('npx')]
  const env = { ...process.env, MONGODB_URI: uri, PM2_HOME: stateDir, SHELL: '/bin/sh' }
  const child = terminal
    ? spawn('script', ['-q', '-e', '-f', '-c', [NPX, ...args].join(' '), '/dev/null'], { cwd: app, env, stdio: ['pipe', 'pipe', 'pipe'], detached: true })
    : spawn(NPX, args, { cwd: app, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
  t.after(() => {
    try { process.kill(-child.pid, 'SIGKILL') } catch {}
  })
  let output = ''
  child.stdout.on('data', (d) => { output += d })
  child.stderr.on('data', (d) => { output += d })
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })))
  // A terminal echoes ^C before the next line: what is JSON starts at its first brace.
  const lines = () => output.split(/\r?\n/).flatMap((line) => {
    try {
      return line.includes('{') ? [JSON.parse(line.slice(line.indexOf('{')))] : []
    } catch {
      return []
    }
  })
  const started = await waitFor(() => lines().find((l) => l.msg === 'collector started'), { timeout: 60000, what: `the collector to start: ${output}` })
  return { child, port: started.address.port, lines, exited, output: () => output }
}

async function sendLines (port) {
  const socket = dgram.createSocket('udp4')
  for (let i = 0; i < LINES; i++) {
    await new Promise((resolve) => socket.send(`<13>Nov 27 03:00:00 host app: npx line ${i}`, port, '127.0.0.1', resolve))
  }
  socket.close()
}

// The processes of the installed package still running (the collector's
// master and its workers name its path on their command lines).
function processesOf (dir) {
  const found = []
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ')
      if (cmdline.includes(dir)) found.push(`${entry} ${cmdline}`)
    } catch {}
  }
  return found
}

async function assertDrainedAndGone (run) {
  const outcome = await Promise.race([run.exited, new Promise((resolve) => setTimeout(resolve, 30000, null))])
  assert.ok(outcome, `npx still running 30 s after the signal; its output:\n${run.output()}`)
  const summary = await waitFor(() => run.lines().find((l) => l.msg === 'collector stopped'), { timeout: 30000, what: `the collector's summary: ${run.output()}` })
  assert.equal(summary.received, LINES)
  assert.equal(summary.processed, LINES, 'drained: every line stored')
  assert.equal(summary.dropped.total, 0)
  await waitFor(() => processesOf(app).length === 0, { timeout: 10000, what: `the collector's processes to be gone: ${processesOf(app).join('\n')}` })
  assert.equal(run.lines().filter((l) => l.msg === 'stopping: draining workers').length, 1, 'one signal, one drain')
  assert.ok(!run.lines().some((l) => /^second signal/.test(l.msg)), 'never taken for a second signal')
  return outcome
}

test('Ctrl-C at a terminal running npx collector run: the collector drains and exits, npx with it', { timeout: 120000 }, async (t) => {
  if (skip || !findExecutable('script')) return t.skip(skip || 'util-linux script is not installed')
  const run = await startNpx(t, { terminal: true })
  await sendLines(run.port)
  await waitFor(() => run.lines().some((l) => /^database: /.test(l.msg)), { what: 'a worker connected' })
  run.child.stdin.write('\x03')
  await assertDrainedAndGone(run)
})

for (const signal of ['SIGINT', 'SIGTERM']) {
  test(`${signal} sent to npx alone (a process manager, an IDE's stop button): the collector drains and exits`, { timeout: 120000 }, async (t) => {
    if (skip) return t.skip(skip)
    const run = await startNpx(t)
    await sendLines(run.port)
    await waitFor(() => run.lines().some((l) => /^database: /.test(l.msg)), { what: 'a worker connected' })
    // Stopped and continued (Ctrl-Z, fg), the collector wakes npm's shell
    // too: not a signal to relay.
    const collectorPid = run.lines()[0].pid
    process.kill(collectorPid, 'SIGSTOP')
    await new Promise((resolve) => setTimeout(resolve, 300))
    process.kill(collectorPid, 'SIGCONT')
    await new Promise((resolve) => setTimeout(resolve, 1500))
    assert.ok(!run.lines().some((l) => l.msg === 'stopping: draining workers'), 'still running after a stop and continue')
    process.kill(run.child.pid, signal)
    const { code, signal: by } = await assertDrainedAndGone(run)
    assert.ok(by === signal || code === 128 + os.constants.signals[signal], `npx ends by the signal: ${code} ${by}`)
  })
}
