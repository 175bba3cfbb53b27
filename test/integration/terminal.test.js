'use strict'

// The CLI in a real terminal (a tmux pane: a pseudo-terminal whose screen
// the test reads) and outside one (pipes): `collector top` draws, refreshes
// and quits on q; logs are readable lines on a terminal, JSON lines on a
// pipe, and --log-format overrides either.

const { test } = require('node:test')
const assert = require('node:assert/strict')
const { execFileSync, spawnSync } = require('node:child_process')
const dgram = require('node:dgram')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { runCollector } = require('../fixtures/foreground-run')
const { waitFor } = require('../helpers/wait-for')
const { removeDir } = require('../helpers/temp-dir')

const CLI = path.join(__dirname, '..', '..', 'bin', 'collector.js')
const ECHO = path.join(__dirname, '..', 'fixtures', 'echo-collector.js')
const HAVE_TMUX = spawnSync('tmux', ['-V']).status === 0

/** A tmux server of the test's own (its own socket), one detached pane running `command`. */
function terminal (t, command, env) {
  const socket = `collector-test-${process.pid}-${Date.now()}`
  const tmux = (...args) => execFileSync('tmux', ['-L', socket, ...args], { encoding: 'utf8' })
  const exports = Object.entries(env).map(([k, v]) => `${k}=${shellQuote(v)}`).join(' ')
  // The pane stays after the command so the test reads its exit status.
  tmux('new-session', '-d', '-x', '200', '-y', '50', `env ${exports} ${command}; echo "EXIT:$?"; sleep 60`)
  t.after(() => { try { tmux('kill-server') } catch {} })
  return {
    screen: () => tmux('capture-pane', '-p', '-J', '-S', '-200'),
    keys: (...keys) => tmux('send-keys', ...keys)
  }
}

function shellQuote (text) {
  return `'${String(text).replace(/'/g, "'\\''")}'`
}

async function sendDatagrams (port, count) {
  const socket = dgram.createSocket('udp4')
  for (let i = 0; i < count; i++) await new Promise((resolve) => socket.send(`m${i}`, port, '127.0.0.1', resolve))
  socket.close()
}

test('collector top in a terminal: the rate rises with traffic and falls to 0 after it, a stopped collector leaves the screen, q quits with exit 0', { skip: !HAVE_TMUX && 'tmux is not installed (.ci/run installs it)', timeout: 90000 }, async (t) => {
  const run = await runCollector(t, ECHO, { flags: ['--instances', '2'] })
  const term = terminal(t, `${shellQuote(process.execPath)} ${shellQuote(CLI)} top --interval 200ms`, { COLLECTOR_STATS_DIR: run.dir })
  // the collector's row: name, pid, state, RECV/S, PROC/S, ...
  const row = () => {
    const line = term.screen().split('\n').find((l) => l.startsWith(run.name))
    if (!line) return null
    const [, pid, state, recv, proc] = line.trim().split(/\s+/)
    return { pid: Number(pid), state, recv: Number(recv.replace(/,/g, '')), proc: Number(proc.replace(/,/g, '')) }
  }
  await waitFor(() => row(), { what: 'top to draw the collector', timeout: 20000 })
  assert.equal(row().pid, run.pid)
  assert.equal(row().state, 'running')
  let sending = true
  const traffic = (async () => { while (sending) { await sendDatagrams(run.port, 200); await new Promise((resolve) => setTimeout(resolve, 100)) } })()
  await waitFor(() => { const r = row(); return r && r.recv > 0 && r.proc > 0 }, { what: 'RECV/S and PROC/S above 0 under traffic', timeout: 20000 })
  sending = false
  await traffic
  await waitFor(() => { const r = row(); return r && r.recv === 0 && r.proc === 0 }, { what: 'the rates back to 0 once traffic stopped', timeout: 20000 })

  run.child.kill('SIGINT')
  assert.equal((await run.exited).code, 0)
  await waitFor(() => !row() && term.screen().includes('no running collectors'), { what: 'the stopped collector to leave the screen', timeout: 20000 })
  const before = Date.now()
  term.keys('q')
  await waitFor(() => /EXIT:\d+/.test(term.screen()), { what: 'top to exit on q', timeout: 5000 })
  assert.match(term.screen(), /EXIT:0/)
  assert.ok(Date.now() - before < 5000)
})

test('logs: readable lines on a terminal, JSON lines on a pipe, --log-format overrides', { skip: !HAVE_TMUX && 'tmux is not installed (.ci/run installs it)', timeout: 90000 }, async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'collector-tty-'))
  t.after(() => removeDir(dir))
  const foreground = (name, extra = '') => `${shellQuote(process.execPath)} ${shellQuote(CLI)} run ${shellQuote(ECHO)} --port 0 --name ${name} ${extra}`

  const pretty = terminal(t, foreground('tty-pretty'), { COLLECTOR_STATS_DIR: dir })
  await waitFor(() => /collector started/.test(pretty.screen()), { what: 'the start line on the terminal', timeout: 30000 })
  const line = pretty.screen().split('\n').find((l) => l.includes('collector started'))
  assert.match(line, /^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\] INFO \(tty-pretty\): collector started/, 'time, level name, collector, message')
  assert.doesNotMatch(pretty.screen(), /"level":\d+/, 'no JSON on the terminal')
  pretty.keys('C-c')
  await waitFor(() => /EXIT:0/.test(pretty.screen()), { what: 'Ctrl-C to drain and exit 0', timeout: 30000 })

  const forced = terminal(t, foreground('tty-json', '--log-format json'), { COLLECTOR_STATS_DIR: dir })
  await waitFor(() => /collector started/.test(forced.screen()), { what: 'the start line', timeout: 30000 })
  const record = JSON.parse(forced.screen().split('\n').find((l) => l.includes('collector started')))
  assert.equal(record.level, 30)
  assert.equal(record.msg, 'collector started')
  forced.keys('C-c')
  await waitFor(() => /EXIT:0/.test(forced.screen()), { what: 'exit 0', timeout: 30000 })

  // on a pipe: JSON by default, pretty when asked
  const piped = await runCollector(t, ECHO)
  await piped.logged(/collector started/)
  piped.child.kill('SIGINT')
  const { stdout } = await piped.exited
  for (const l of stdout.trim().split('\n')) assert.doesNotThrow(() => JSON.parse(l), `a JSON line: ${l}`)
  const prettyPipe = await runCollector(t, ECHO, { flags: ['--log-format', 'pretty'] })
  await prettyPipe.logged(/collector started/)
  prettyPipe.child.kill('SIGINT')
  const out = (await prettyPipe.exited).stdout
  assert.match(out, /INFO \(fg\d+x\d+\): collector started/)
  assert.ok(!out.includes('\u001b['), 'no colour codes on a pipe')
})
