'use strict'

// The relay of app/npm-shell-signals.js against a real `sh -c` (Debian's
// dash as npm runs it), without npm: a SIGINT the shell holds and a SIGTERM
// that ends it reach the child; a stop and continue of the child, a signal
// the shell ignores and a shell not started by npm do not. npx itself:
// npx-signals.test.js.

const { test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { spawn } = require('node:child_process')
const { waitFor } = require('../helpers/wait-for')

const CHILD = path.join(__dirname, '..', 'fixtures', 'npm-shell-child.js')
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

function startInShell (t, env) {
  const shell = spawn('/bin/sh', ['-c', `'${process.execPath}' '${CHILD}'`], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'], detached: true })
  t.after(() => { try { process.kill(-shell.pid, 'SIGKILL') } catch {} })
  let output = ''
  shell.stdout.on('data', (d) => { output += d })
  const exited = new Promise((resolve) => shell.on('close', resolve))
  return { shell, said: () => output.trim().split('\n'), exited }
}

test('run by npm through sh -c: a SIGINT sent to the shell alone is raised in the child, once per signal; a stop and continue is not a signal', { timeout: 30000 }, async (t) => {
  const run = startInShell(t, { npm_lifecycle_event: 'npx' })
  await waitFor(() => run.said().includes('watching true'), { what: 'the child to start' })
  const { pid: childPid } = await waitFor(() => childOf(run.shell.pid), { what: 'the child pid' })
  process.kill(childPid, 'SIGSTOP')
  await sleep(200)
  process.kill(childPid, 'SIGCONT')
  await sleep(1500)
  process.kill(run.shell.pid, 'SIGWINCH') // ignored by the shell: wakes nothing
  await sleep(500)
  assert.deepEqual(run.said(), ['watching true'])
  process.kill(run.shell.pid, 'SIGINT')
  await waitFor(() => run.said().length === 2, { what: 'the SIGINT relayed' })
  await sleep(2500)
  process.kill(run.shell.pid, 'SIGINT')
  await waitFor(() => run.said().length === 3, { what: 'the second SIGINT relayed' })
  process.kill(run.shell.pid, 'SIGTERM')
  await run.exited
  await waitFor(() => run.said().length === 4, { what: 'the SIGTERM relayed' })
  assert.deepEqual(run.said(), ['watching true', 'SIGINT', 'SIGINT', 'SIGTERM'])
})

test('not started by npm: nothing watched', async (t) => {
  const run = startInShell(t, { npm_lifecycle_event: '' })
  await waitFor(() => run.said().length > 0 && run.said()[0] !== '', { what: 'the child to start' })
  assert.deepEqual(run.said(), ['watching false'])
})

// The shell's one child, from /proc (dash forks it: its pid is not the shell's).
function childOf (pid) {
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8')
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) return { pid: Number(entry) }
    } catch {}
  }
  return null
}

// The README's two commands through real npm, stopped by a SIGTERM sent to
// npm alone (a process manager's stop): `npm start` drains and reports,
// `npm run db` stops its server; nothing of either is left running.
const ROOT = path.join(__dirname, '..', '..')
const { findExecutable } = require('../../lib/mongo/find-executable')
const { getTestMongo } = require('../helpers/mongo')
const { freePort } = require('../helpers/ports')
const NPM_SKIP = !findExecutable('npm') && 'npm is not on PATH'

function startNpm (t, args, env) {
  const npm = spawn(findExecutable('npm'), args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
  t.after(() => { try { process.kill(-npm.pid, 'SIGKILL') } catch {} })
  let out = ''
  npm.stdout.on('data', (d) => { out += d })
  npm.stderr.on('data', (d) => { out += d })
  const exited = new Promise((resolve) => npm.on('close', (code) => resolve(code)))
  return { npm, out: () => out, exited }
}

function groupAlive (pgid) {
  try {
    process.kill(-pgid, 0)
    return true
  } catch {
    return false
  }
}

test('npm start, sent SIGTERM at npm alone: the demo drains, reports what it stored, and leaves nothing running', { skip: NPM_SKIP, timeout: 90000 }, async (t) => {
  const { uri } = await getTestMongo()
  const run = startNpm(t, ['start', '--', '--streams', '5', '--rate', '50', '--port', String(await freePort()), '-i', '1'], { MONGODB_URI: uri })
  await waitFor(() => run.out().includes('Ctrl-C to stop'), { what: 'the demo to start', timeout: 60000 })
  await sleep(1500)
  process.kill(run.npm.pid, 'SIGTERM')
  await run.exited
  assert.match(run.out(), /draining…/, run.out())
  assert.match(run.out(), /^streams stored: 5 \(expected 5\); reporting sides exact: 10\/10$/m, run.out())
  await waitFor(() => !groupAlive(run.npm.pid), { what: 'every process of npm start to be gone', timeout: 20000 })
})

test('npm run db, sent SIGTERM at npm alone: the server stops and nothing is left running', { skip: NPM_SKIP, timeout: 90000 }, async (t) => {
  const port = await freePort()
  const run = startNpm(t, ['run', 'db', '--', '--port', String(port), '--db-memory'], {})
  await waitFor(() => run.out().includes('Ctrl-C to stop'), { what: 'the database to start', timeout: 60000 })
  process.kill(run.npm.pid, 'SIGTERM')
  await run.exited
  assert.match(run.out(), /SIGTERM: stopping the \S+ server/, run.out())
  await waitFor(() => !groupAlive(run.npm.pid), { what: 'every process of npm run db to be gone', timeout: 20000 })
})
