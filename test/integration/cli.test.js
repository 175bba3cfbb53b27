'use strict'
// The `collector` CLI as a user runs it: a child process per command.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const { spawn } = require('node:child_process')
const dgram = require('node:dgram')
const fs = require('node:fs')
const net = require('node:net')
const path = require('node:path')
const { decodeRtcp } = require('../../collectors/rtcp/decoder')
const { parseSyslog } = require('../../collectors/syslog/parser')
const { readStats } = require('../../app/stats-file')
const { waitFor } = require('../helpers/wait-for')
const { pm2Home } = require('../helpers/pm2-home')
const { getTestMongo, uniqueDbName } = require('../helpers/mongo')

const CLI = path.join(__dirname, '..', '..', 'bin', 'collector.js')
const ECHO = path.join(__dirname, '..', 'fixtures', 'echo-collector.js')

function tempEnv (t) {
  const home = pm2Home(t)
  const dir = path.dirname(home)
  return { dir, env: { ...process.env, COLLECTOR_STATS_DIR: dir, PM2_HOME: home } }
}

function cli (args, env = process.env) {
  const child = spawn(process.execPath, [CLI, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d) => { stdout += d })
  child.stderr.on('data', (d) => { stderr += d })
  const done = new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })))
  return { child, done }
}

/** `collector run` of the echo collector in the foreground, fed `count` datagrams, all received; its child and first stats snapshot. */
async function runAndFeed (t, { dir, env, name, count, flags }) {
  const run = cli(['run', ECHO, '--port', '0', ...flags, '--name', name], env)
  t.after(() => run.child.kill('SIGKILL'))
  const ready = await waitFor(async () => {
    const snap = await readStats(name, dir)
    return snap && snap.state === 'running' ? snap : null
  }, { what: 'the collector to start', timeout: 30000 })
  const socket = dgram.createSocket('udp4')
  await new Promise((resolve) => socket.bind(0, '127.0.0.1', resolve))
  for (let i = 0; i < count; i++) socket.send(`m${i}`, ready.stats.address.port, '127.0.0.1')
  await waitFor(async () => {
    const snap = await readStats(name, dir)
    return snap && snap.stats.received === count
  }, { what: `${count} received`, timeout: 30000 })
  socket.close()
  return { run, ready }
}

function assertNoStack (text) {
  assert.doesNotMatch(text, /\n\s+at .+:\d+:\d+/, 'no stack trace')
}

test('help lists the commands, exit 0', async () => {
  const r = await cli(['help']).done
  assert.equal(r.code, 0)
  for (const command of ['run', 'start', 'stop', 'restart', 'delete', 'ls', 'status', 'top', 'simulate', 'demo']) {
    assert.match(r.stdout, new RegExp(`^  ${command}\\b`, 'm'))
  }
})

test('an unknown command prints help, exit 2', async () => {
  const r = await cli(['frobnicate']).done
  assert.equal(r.code, 2)
  assert.match(r.stderr, /unknown command "frobnicate"/)
  assert.match(r.stderr, /Usage: collector/)
})

test('--help where a command\'s name or collector is missing prints its usage, exit 0; --version prints the version', async () => {
  for (const command of ['stop', 'restart', 'delete', 'run', 'start']) {
    const r = await cli([command, '--help']).done
    assert.equal(r.code, 0, `${command}: ${r.stderr}`)
    assert.match(r.stdout, new RegExp(`^usage: collector ${command} <`))
    assert.equal(r.stderr, '')
  }
  assert.match((await cli(['run', '-h']).done).stdout, /<collector>: one of rtcp, .*syslog.*, or the path of a collector module/)
  const version = await cli(['--version']).done
  assert.equal(version.code, 0)
  assert.equal(version.stdout, `collector-cluster ${require('../../package.json').version}\n`)
})

// A new user's definition that does not load (QA: exit 2 under run, 1 under
// start; the typo `decoder` said as a missing decode; Node's require stack
// of this CLI's own files; "sinks.timeseries is not a function").
test('a definition that does not load: exit 2 under run and start alike, one line naming the mistake, no stack', async (t) => {
  const { env } = tempEnv(t)
  const dir = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'bad-definition-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  const write = (name, body) => {
    const file = path.join(dir, name)
    fs.writeFileSync(file, `const { defineCollector, sinks } = require(${JSON.stringify(path.join(__dirname, '..', '..'))})\n${body}\n`)
    return file
  }
  const documents = "sinks.documents({ collection: 'x', of: (r) => r })"
  for (const [file, said] of [
    [write('typo.js', `module.exports = defineCollector({ name: 'typo', decoder: (m) => [m], sinks: [${documents}] })`), /collector typo takes no decoder; did you mean decode\?/],
    [write('kind.js', "module.exports = defineCollector({ name: 'kind', decode: (m) => [m], sinks: [sinks.timeseries({ collection: 'x', of: (r) => r })] })"), /there is no sinks\.timeseries: a sink is one of sinks\.updates, sinks\.counters, sinks\.documents, sinks\.streams/],
    [write('missing.js', "require('no-such-package-here')"), /Cannot find module 'no-such-package-here' \(required by .*missing\.js; npm install it there\?\)$/m],
    // QA: "failed to load: Unexpected end of input", in no file
    [write('syntax.js', "module.exports = defineCollector({ name: 'syntax',\n  decode: (m) => [m],"), /failed to load: \/.*syntax\.js:4: SyntaxError: Unexpected end of input$/m]
  ]) {
    for (const command of ['run', 'start']) {
      const r = await cli([command, file, '--port', '0'], env).done
      assert.equal(r.code, 2, `${command} ${path.basename(file)}: ${r.stderr}`)
      assert.match(r.stderr, said)
      assert.equal(r.stderr.trim().split('\n').length, 1, `one line: ${r.stderr}`)
      assertNoStack(r.stderr)
    }
  }
})

test('bad flags exit 2 with the message naming each flag, no stack', async () => {
  const r = await cli(['run', ECHO, '--instances', 'lots', '--prot', 'udp']).done
  assert.equal(r.code, 2)
  assert.match(r.stderr, /--instances: expected an integer/)
  assert.match(r.stderr, /--prot: unknown flag; did you mean --port\?/)
  assertNoStack(r.stderr)
  const sim = await cli(['simulate', 'rtcp', '--rate', 'fast']).done
  assert.equal(sim.code, 2)
  assert.match(sim.stderr, /--rate: expected a number/)
  assert.match(sim.stderr, /--target: is required/)
  const unknown = await cli(['run', 'no-such-collector']).done
  assert.equal(unknown.code, 2)
  assert.match(unknown.stderr, /unknown collector "no-such-collector"/)
  assertNoStack(unknown.stderr)
  // A database name MongoDB refuses was taken, and failed as write errors.
  for (const [args, name] of [[['calls', '--database', 'bad/name'], 'bad/name'], [['run', 'syslog', '--database', 'a.b'], 'a.b'], [['run', 'syslog', '--database', 'x'.repeat(64)], 'x'.repeat(64)]]) {
    const r = await cli(args).done
    assert.equal(r.code, 2, r.stderr)
    assert.match(r.stderr, new RegExp(`--database: (a database name cannot hold "[/.]"|MongoDB takes database names of at most 63 bytes, this has 64).*, got "${name.replace('.', '\\.')}"`))
    assertNoStack(r.stderr)
  }
  // A split or framing a collector's format cannot be read with was taken, and every message dropped (QA).
  for (const [args, message] of [[['run', 'statsd', '--split', 'none'], /--split: the statsd collector reads its input with split lines only, got "none"/],
    [['run', 'netflow', '--split', 'lines'], /--split: the netflow collector reads its input with split none only, got "lines"/],
    [['run', 'netflow', '--protocol', 'tcp_server', '--framing', 'newline'], /--framing: the netflow collector reads its input with framing ipfix only, got "newline"/],
    // A 300-character prefix stored names past the 255 the docs promise (QA).
    [['run', 'statsd', '--prefix', `${'x'.repeat(299)}.`], /--prefix: must be at most 64 characters, a name's 255 come after it \(this has 300\)/]]) {
    const r = await cli(args).done
    assert.equal(r.code, 2, r.stderr)
    assert.match(r.stderr, message)
  }
  // A name too long for the files it names failed once the database had started (QA).
  const long = await cli(['run', 'syslog', '--name', 'n'.repeat(300)]).done
  assert.equal(long.code, 2, long.stderr)
  assert.match(long.stderr, /--name: must be at most 100 characters \(it names files\), this has 300/)
  // verify said "--sample is required" of a collector that does not exist (QA).
  const verified = await cli(['verify', 'no-such-collector']).done
  assert.deepEqual([verified.code, verified.stderr.split('\n').length], [2, 2], verified.stderr)
  assert.match(verified.stderr, /^collector: unknown collector "no-such-collector"/)
})

// `replay` of a name nothing was kept for said "no dead letters", exit 0,
// as it does of a collector with none: a mistyped name looked like success.
test('replay of a name with no dead-letter directory exits 1 naming the directory it looked in', async (t) => {
  const { dir, env } = tempEnv(t)
  const r = await cli(['replay', 'nosuch'], env).done
  assert.equal(r.code, 1, r.stderr)
  assert.match(r.stderr, /^collector: no dead-letter directory \S+nosuch for nosuch: is the name right/)
  assert.equal(r.stderr.split('\n').length, 2)
  const given = await cli(['replay', 'nosuch', '--dead-letter-dir', path.join(dir, 'none')], env).done
  assert.equal(given.code, 1)
  assert.match(given.stderr, /^collector: no dead-letter directory \S+none\n$/)
  const empty = path.join(dir, 'empty')
  fs.mkdirSync(empty)
  const none = await cli(['replay', 'nosuch', '--dead-letter-dir', empty], env).done
  assert.deepEqual([none.code, none.stdout], [0, `collector: no dead letters for nosuch in ${empty}\n`])
})

// Retention mistakes delete data or nothing: refused at start, exit 2, one
// line. A bare number is milliseconds (`--retention 30` meant as days would
// delete every message as it is stored); a --retention-for naming a
// collection the collector does not write is refused by the worker that
// knows its collections, as the flags' own checks are. Every setting comes
// from COLLECTOR_<FLAG> too.
test('run: a retention under 1s, a bare number, or a --retention-for collection it does not write exit 2 in one line; settings come from COLLECTOR_<FLAG>', { timeout: 60000 }, async (t) => {
  const { env } = tempEnv(t)
  const { uri } = await getTestMongo()
  const withDb = { ...env, MONGODB_URI: uri }
  for (const [flags, extra, message] of [
    [['--retention', '30'], {}, /^collector: invalid configuration: --retention: must be 0 \(nothing expires\) or at least 1s; give a unit, as in 30d \(a bare number is milliseconds\), got "30"\n$/],
    [['--retention-for', 'syslog=7'], {}, /--retention-for: syslog: must be 0 .* got "syslog=7"\n$/],
    [[], { COLLECTOR_RETENTION: '90' }, /--retention: must be 0 .*got "90" \(from environment variable COLLECTOR_RETENTION\)\n$/],
    [['--retention-for', 'flows=7d', '--port', '0'], {}, /^collector: invalid configuration: option "retentionFor" names flows, which is not one of the collections retention reaches \(syslog, counters\), got "flows=7d"\n$/]
  ]) {
    const r = await cli(['run', 'syslog', '--log-level', 'silent', ...flags], { ...withDb, ...extra }).done
    assert.equal(r.code, 2, `${flags.join(' ')}: ${r.stderr}`)
    assert.match(r.stderr, message)
    assertNoStack(r.stderr)
  }
  // A setting from the environment: the database the collector writes to.
  const database = uniqueDbName('envsetting')
  const run = cli(['run', 'syslog', '--port', '0', '--name', 'env-setting', '--log-format', 'json'], { ...withDb, COLLECTOR_DATABASE: database, COLLECTOR_RETENTION: '2d' })
  t.after(() => run.child.exitCode === null && run.child.kill('SIGKILL'))
  let out = ''
  run.child.stdout.on('data', (d) => { out += d })
  await waitFor(() => /"msg":"retention: /.test(out), { what: 'the retention line', timeout: 30000 })
  assert.match(out, new RegExp(`"msg":"writing to database ${database}"`))
  assert.match(out, /"msg":"retention: syslog 2d by receivedAt/)
  run.child.kill('SIGINT')
  assert.equal((await run.done).code, 0)
})

test('run in the foreground: status --json, top --once, then SIGINT drains and exits 0', { timeout: 60000 }, async (t) => {
  const { dir, env } = tempEnv(t)
  const name = 'cli-run'
  const { run, ready } = await runAndFeed(t, { dir, env, name, count: 200, flags: ['--instances', '2', '--delay', '30ms'] })

  const status = await cli(['status', name, '--json'], env).done
  assert.equal(status.code, 0, status.stderr)
  const json = JSON.parse(status.stdout)
  assert.equal(json.name, name)
  assert.equal(json.stats.received, 200)
  assert.equal(json.stats.workers.length, 2)
  assert.ok(json.stats.processed < 200, 'slow workers still have messages in flight')
  assert.equal(typeof json.rates.received, 'number')

  const table = await cli(['status', name], env).done
  assert.equal(table.code, 0)
  assert.match(table.stdout, /RECEIVED\s+PROCESSED/)
  assert.match(table.stdout, /DB WRITES/)
  assert.doesNotMatch(table.stdout, /disk buffer/, 'no buffer line while the buffer is off')

  const top = await cli(['top', '--once'], env).done
  assert.equal(top.code, 0, top.stderr)
  assert.match(top.stdout, new RegExp(`^${name}\\s+${ready.pid}\\s+running`, 'm'))
  assert.match(top.stdout, /^ {2}worker 0 /m)
  assert.match(top.stdout, /^ {2}worker 1 /m)
  assert.doesNotMatch(top.stdout, /BUFFERED|REPLAYED/, 'no buffer columns while no collector has one')

  // A second collector of the same name (no disk buffer to refuse it) was
  // accepted and wrote the same stats file (QA): refused, nothing started.
  const second = await cli(['run', ECHO, '--port', '0', '--name', name], env).done
  assert.deepEqual([second.code, second.stderr], [1, `collector: a collector named ${name} runs already (pid ${ready.pid}): give this one another --name, or stop that one\n`])
  assert.equal((await readStats(name, dir)).pid, ready.pid, 'the stats file is still the first one\'s')

  // 200 messages x 30 ms over 2 workers: still in flight when the signal lands.
  run.child.kill('SIGINT')
  const exit = await run.done
  assert.equal(exit.code, 0, exit.stderr)
  assertNoStack(exit.stderr)
  const final = await readStats(name, dir)
  assert.equal(final.state, 'stopped')
  assert.equal(final.stats.processed, 200, 'everything received was processed before exit')
  assert.equal(final.stats.lost, 0)
  assert.equal(fs.existsSync(path.join(dir, `${name}.pid`)), false, 'its name released at exit')
})

test('status of a collector whose master was SIGKILLed says it is gone, not running', { timeout: 60000 }, async (t) => {
  const { dir, env } = tempEnv(t)
  const name = 'cli-killed'
  const { run, ready } = await runAndFeed(t, { dir, env, name, count: 10, flags: ['--instances', '1'] })
  process.kill(ready.pid, 'SIGKILL')
  await run.done
  const table = await cli(['status', name], env).done
  assert.equal(table.code, 0, table.stderr)
  assert.match(table.stdout, new RegExp(`^${name}  gone  pid ${ready.pid} is not running: it ended without a stop`, 'm'))
  const json = JSON.parse((await cli(['status', name, '--json'], env).done).stdout)
  assert.deepEqual([json.pid, json.alive], [ready.pid, false])
})

test('run --buffer with a stalled worker: status and top show what waits in the disk buffer, as the stats file says', { timeout: 60000 }, async (t) => {
  const { dir, env } = tempEnv(t)
  const name = 'cli-buffer'
  // The first message takes an hour: up to 10 in flight (whole batches of up to
  // 5: how full each is depends on timing, and a batch goes only when it fits
  // under --max-in-flight), the others wait in the buffer.
  const { run, ready } = await runAndFeed(t, { dir, env, name, count: 100, flags: ['--instances', '1', '--delay', '1h', '--drain-timeout', '1s', '--buffer', '--max-in-flight', '10', '--batch-size', '5'] })
  // Should the test fail before the stop, the stuck worker would outlive its
  // master by an hour, holding the test's pipes open: killed by the pid the
  // stats file last gave, whatever happens.
  let last = ready
  t.after(() => { for (const w of (last && last.stats.workers) || []) try { process.kill(w.pid, 'SIGKILL') } catch {} })
  const snap = await waitFor(async () => { last = (await readStats(name, dir)) || last; const s = last.stats; return s.received === 100 && s.inFlight + s.buffered === 100 && s.buffered >= 90 && last }, { what: 'the 100 messages in flight (at most 10) or in the buffer', timeout: 30000 })
    .catch((err) => { throw new Error(`${err.message}; the stats file says ${JSON.stringify({ received: last.stats.received, buffered: last.stats.buffered, inFlight: last.stats.inFlight, processed: last.stats.processed, dropped: last.stats.dropped, workers: last.stats.workers.map((w) => [w.pid, w.inFlight, w.buffered]) })}`) })
  const b = snap.stats.buffer
  const waiting = snap.stats.buffered
  assert.ok(snap.stats.inFlight <= 10, `at most --max-in-flight handed to the worker (${snap.stats.inFlight})`)
  assert.equal(b.dir, path.join(dir, 'pm2', 'collector-buffer', name), 'the default buffer directory: per name under the PM2 home')
  assert.deepEqual(fs.readdirSync(b.dir).filter((f) => f.endsWith('.ccj')).map((f) => fs.statSync(path.join(b.dir, f)).size), [b.bytes], 'one segment, the size the file system says')

  const table = await cli(['status', name], env).done
  assert.equal(table.code, 0, table.stderr)
  const line = /^disk buffer: (\d+) waiting \(oldest (\S+)\), ([\d.]+ \S+) of 1\.0 GiB in 1 segment, replayed 0, dropped when full 0$/m.exec(table.stdout)
  assert.ok(line, table.stdout)
  assert.equal(Number(line[1]), waiting)
  assert.match(line[2], /^\d+s$/)
  assert.equal(line[3], b.bytes < 1024 ? `${b.bytes} B` : `${(b.bytes / 1024).toFixed(1)} KiB`)
  assert.match(table.stdout, new RegExp(`^ {2}${b.dir}$`, 'm'))

  const top = await cli(['top', '--once'], env).done
  assert.equal(top.code, 0, top.stderr)
  const header = top.stdout.split('\n').find((l) => l.startsWith('COLLECTOR / WORKER'))
  assert.match(header, /BUFFERED\s+BUF-AGE\s+BUF-DISK\/MAX\s+REPLAYED\s+BUF-FULL$/)
  assert.match(top.stdout, new RegExp(`^${name}\\s+${ready.pid}\\s+running\\s.*\\s${waiting}\\s+\\d+s\\s+${line[3].replace('.', '\\.')}/1\\.0 GiB\\s+0\\s+0$`, 'm'))
  assert.match(top.stdout, /^ {2}worker 0 .*\s-\s+-\s+-\s+-\s+-$/m, 'worker rows have no buffer figures')

  // A stop while the worker is stuck (killed after --drain-timeout): what it did not store stays in the buffer.
  run.child.kill('SIGINT')
  const exit = await run.done
  assert.equal(exit.code, 0, 'nothing dropped at shutdown')
  const final = await readStats(name, dir)
  assert.deepEqual([final.state, final.stats.buffered, final.stats.buffer.kept, final.stats.dropped.total], ['stopped', 100, 100, 0])
  const after = await cli(['status', name], env).done
  assert.match(after.stdout, /^disk buffer: 100 waiting, .*; 100 kept for the next start$/m, 'a stopped collector measures no age: none shown')
})

// A stopped collector whose buffer is full was said to drop new messages.
test('status of a full disk buffer: FULL, new messages dropped while running; only full once stopped', { timeout: 60000 }, async (t) => {
  const { dir, env } = tempEnv(t)
  const name = 'cli-full'
  const run = cli(['run', ECHO, '--port', '0', '--name', name, '--instances', '1', '--delay', '1h', '--drain-timeout', '1s', '--buffer', '--buffer-max-bytes', '64k', '--max-in-flight', '10'], env)
  t.after(() => run.child.kill('SIGKILL'))
  let last = await waitFor(async () => { const snap = await readStats(name, dir); return snap && snap.state === 'running' && snap }, { what: 'the collector to start', timeout: 30000 })
  t.after(() => { for (const w of last.stats.workers || []) try { process.kill(w.pid, 'SIGKILL') } catch {} })
  const socket = dgram.createSocket('udp4')
  await new Promise((resolve) => socket.bind(0, '127.0.0.1', resolve))
  for (let i = 0; i < 1000; i++) {
    await new Promise((resolve) => socket.send(`m${i} ${'x'.repeat(200)}`, last.stats.address.port, '127.0.0.1', resolve))
    if (i % 50 === 49) await new Promise((resolve) => setTimeout(resolve, 2))
  }
  socket.close()
  last = await waitFor(async () => { const snap = await readStats(name, dir); return snap && snap.stats.buffer.full && snap.stats.dropped.bufferFull > 0 && snap }, { what: 'the buffer full', timeout: 30000 })
  const running = await cli(['status', name], env).done
  assert.match(running.stdout, /^disk buffer: .*; FULL: new messages are dropped$/m)
  run.child.kill('SIGINT')
  await run.done
  const final = await readStats(name, dir)
  assert.deepEqual([final.state, final.stats.buffer.full], ['stopped', true], 'it holds its bound still')
  const stopped = await cli(['status', name], env).done
  assert.match(stopped.stdout, /^disk buffer: .*; full; \d+ kept for the next start$/m)
  assert.doesNotMatch(stopped.stdout, /new messages/)
})

test('a second SIGINT (past the 500 ms that makes a repeat the same signal) forces exit 1 without waiting for the drain', { timeout: 60000 }, async (t) => {
  const { dir, env } = tempEnv(t)
  const name = 'cli-force'
  const { run } = await runAndFeed(t, { dir, env, name, count: 20, flags: ['--instances', '1', '--delay', '1s'] })
  run.child.kill('SIGINT')
  await new Promise((resolve) => setTimeout(resolve, 800))
  run.child.kill('SIGINT')
  const exit = await run.done
  assert.equal(exit.code, 1)
  assert.match(exit.stdout, /second signal/)
})

/** A UDP socket on 127.0.0.1:0 keeping every datagram it gets; closed after the test. */
async function udpSink (t) {
  const socket = dgram.createSocket('udp4')
  t.after(() => socket.close())
  const datagrams = []
  socket.on('message', (msg) => datagrams.push(msg))
  await new Promise((resolve) => socket.bind(0, '127.0.0.1', resolve))
  return { datagrams, target: `127.0.0.1:${socket.address().port}` }
}

test('simulate rtcp sends exactly the streams and packets its summary claims', { timeout: 60000 }, async (t) => {
  const { datagrams, target } = await udpSink(t)
  const r = await cli(['simulate', 'rtcp', '--target', target, '--streams', '3', '--rate', '300', '--duration', '1s', '--json']).done
  assert.equal(r.code, 0, r.stderr)
  assert.match(r.stderr, /sent 300\/300 packets/)
  const summary = JSON.parse(r.stdout)
  assert.equal(summary.packets, 300)
  assert.equal(summary.streams, 3)
  assert.equal(summary.errors, 0)
  await waitFor(() => datagrams.length >= summary.packets, { what: 'every datagram', timeout: 5000 })
  assert.equal(datagrams.length, summary.packets)

  const seen = new Map() // "reporter>peer" → { packets, highestSeq }
  for (const datagram of datagrams) {
    const rr = decodeRtcp(datagram).packets.filter((p) => p.type === 'RR')
    assert.equal(rr.length, 1)
    assert.equal(rr[0].reports.length, 1)
    const key = `${rr[0].ssrc}>${rr[0].reports[0].ssrc}`
    const entry = seen.get(key) || { packets: 0, highestSeq: -1 }
    assert.ok(rr[0].reports[0].highestSeq > entry.highestSeq, 'extended highest sequence numbers increase')
    seen.set(key, { packets: entry.packets + 1, highestSeq: rr[0].reports[0].highestSeq })
  }
  assert.equal(seen.size, 2 * summary.streams, 'each stream is a pair of SSRCs reporting on each other')
  let total = 0
  for (const stream of summary.perStream) {
    const forward = seen.get(`${stream.from.ssrc}>${stream.to.ssrc}`)
    const backward = seen.get(`${stream.to.ssrc}>${stream.from.ssrc}`)
    assert.deepEqual(forward, { packets: stream.from.packets, highestSeq: stream.from.highestSeq })
    assert.deepEqual(backward, { packets: stream.to.packets, highestSeq: stream.to.highestSeq })
    assert.equal(stream.packets, forward.packets + backward.packets)
    total += stream.packets
  }
  assert.equal(total, summary.packets)
})

/**
 * Every message parses as the RFC 5424 record simulate writes (host
 * sim-host-<stream>, its pid as PROCID, seq counting from 1 per host
 * without gaps), and the hosts' counts are exactly the summary's.
 */
function assertSyslogMatchesSummary (messages, summary, pid) {
  assert.equal(messages.length, summary.packets)
  const seen = new Map() // host → { packets, highestSeq }
  for (const message of messages) {
    const record = parseSyslog(message)
    assert.equal(record.format, '5424', `parsed: ${message}`)
    const { host, app, procid, msgid, facilityName, severityName, structuredData } = record
    const [, stream, seq] = /^stream=(\d+) seq=(\d+)$/.exec(record.message) || assert.fail(`message text: ${record.message}`)
    assert.deepEqual({ host, app, procid, msgid, facilityName, severityName, structuredData },
      { host: `sim-host-${stream}`, app: 'collector-simulate', procid: String(pid), msgid: 'SIM', facilityName: 'local0', severityName: 'info', structuredData: null })
    assert.ok(record.timestamp instanceof Date && !Number.isNaN(record.timestamp.getTime()), 'a valid timestamp')
    const entry = seen.get(host) || { packets: 0, highestSeq: 0 }
    assert.equal(Number(seq), entry.highestSeq + 1, `${host}: seq counts up from 1 without gaps`)
    seen.set(host, { packets: entry.packets + 1, highestSeq: Number(seq) })
  }
  assert.equal(seen.size, summary.streams, 'one host per stream')
  let total = 0
  for (const stream of summary.perStream) {
    assert.equal(stream.host, `sim-host-${stream.stream}`)
    assert.deepEqual(seen.get(stream.host), { packets: stream.packets, highestSeq: stream.highestSeq })
    total += stream.packets
  }
  assert.equal(total, summary.packets)
}

test('simulate syslog over UDP sends exactly the hosts and messages its summary claims, each parsing as RFC 5424', { timeout: 60000 }, async (t) => {
  const { datagrams, target } = await udpSink(t)
  const run = cli(['simulate', 'syslog', '--target', target, '--streams', '4', '--rate', '500', '--count', '250', '--json'])
  const r = await run.done
  assert.equal(r.code, 0, r.stderr)
  assert.match(r.stderr, /sent 250\/250 packets/)
  const summary = JSON.parse(r.stdout)
  assert.deepEqual({ kind: summary.kind, protocol: summary.protocol, target: summary.target, packets: summary.packets, streams: summary.streams, errors: summary.errors },
    { kind: 'syslog', protocol: 'udp', target, packets: 250, streams: 4, errors: 0 })
  await waitFor(() => datagrams.length >= summary.packets, { what: 'every datagram', timeout: 5000 })
  await new Promise((resolve) => setTimeout(resolve, 200)) // no more than claimed arrives late
  assertSyslogMatchesSummary(datagrams, summary, run.child.pid)
})

test('simulate syslog --protocol tcp sends exactly the messages its summary claims as RFC 6587 octet-counted frames on one connection', { timeout: 60000 }, async (t) => {
  const connections = []
  const server = net.createServer((conn) => {
    const entry = { chunks: [], ended: false }
    connections.push(entry)
    conn.on('data', (chunk) => entry.chunks.push(chunk))
    conn.on('end', () => { entry.ended = true })
  })
  t.after(() => new Promise((resolve) => server.close(resolve)))
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  const target = `127.0.0.1:${server.address().port}`
  const run = cli(['simulate', 'syslog', '--protocol', 'tcp', '--target', target, '--streams', '3', '--rate', '500', '--count', '200', '--json', '--quiet'])
  const r = await run.done
  assert.equal(r.code, 0, r.stderr)
  assert.equal(r.stderr, '', '--quiet: no progress line')
  const summary = JSON.parse(r.stdout)
  assert.deepEqual({ kind: summary.kind, protocol: summary.protocol, target: summary.target, packets: summary.packets, streams: summary.streams, errors: summary.errors },
    { kind: 'syslog', protocol: 'tcp', target, packets: 200, streams: 3, errors: 0 })
  await waitFor(() => connections.length === 1 && connections[0].ended, { what: 'the connection to end', timeout: 5000 })
  assert.equal(connections.length, 1)

  // "<octet count> <message>", back to back, nothing left over.
  const stream = Buffer.concat(connections[0].chunks)
  const frames = []
  let offset = 0
  while (offset < stream.length) {
    const space = stream.indexOf(0x20, offset)
    assert.ok(space > offset, `octet count and space at byte ${offset}`)
    const header = stream.subarray(offset, space).toString('latin1')
    assert.match(header, /^[1-9]\d*$/, `octet count at byte ${offset}`)
    const end = space + 1 + Number(header)
    assert.ok(end <= stream.length, `frame at byte ${offset} is complete`)
    frames.push(stream.subarray(space + 1, end))
    offset = end
  }
  for (const frame of frames) assert.equal(frame.includes(0x0a), false, 'no newline inside a frame')
  assertSyslogMatchesSummary(frames, summary, run.child.pid)
})

test('demo (the main job): two at once, each on a private embedded database of its own, both store every simulated call exactly', { timeout: 120000 }, async () => {
  const env = { ...process.env }
  delete env.MONGODB_URI
  const demo = () => cli(['demo', '--duration', '4s', '--streams', '50', '--rate', '200', '--port', '0', '--log-level', 'warn'], env).done
  const runs = await Promise.all([demo(), demo()])
  const uris = runs.map((r) => {
    assert.equal(r.code, 0, r.stdout + r.stderr)
    assert.match(r.stdout, /streams stored: 50 \(expected 50\); reporting sides exact: 100\/100/)
    assert.match(r.stdout, /dropped 0/)
    assertNoStack(r.stderr)
    return r.stdout.match(/started a private embedded database at (\S+) /)[1]
  })
  assert.notEqual(uris[0], uris[1], 'each demo started its own server')
})

test('db stop --help and db status --help print their usage, exit 0 (they said "unexpected argument", exit 2); db start --help and start <collector> --help name start (QA)', async (t) => {
  const env = { ...process.env, PM2_HOME: pm2Home(t) }
  for (const action of ['stop', 'status']) {
    const { code, stdout, stderr } = await cli(['db', action, '--help'], env).done
    assert.equal(code, 0, stderr)
    assert.match(stdout, new RegExp(`^usage: collector db ${action}\\n`))
  }
  const start = await cli(['db', 'start', '--help'], env).done
  assert.equal(start.code, 0, start.stderr)
  assert.match(start.stdout, /^Usage: collector db start \[--port 27017\]/)
  const collectorStart = await cli(['start', 'syslog', '--help'], env).done
  assert.match(collectorStart.stdout, /^Usage: collector start syslog \[options\]\n/, 'start\'s help names start')
  const bad = await cli(['db', 'stop', '--port', '1'], env).done
  assert.equal(bad.code, 2, 'an option to stop is still a mistake')
})

test('simulate to a target name that does not resolve: refused once in one line, exit 2, nothing sent (it looked the name up per packet and counted each an error) (QA)', async (t) => {
  // In a network namespace of its own, so that the lookup leaves this machine for no resolver.
  const child = spawn('unshare', ['-n', process.execPath, CLI, 'simulate', 'rtcp', '--target', 'nohost.example:9', '--duration', '5s', '--rate', '100'], { stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d) => { stdout += d })
  child.stderr.on('data', (d) => { stderr += d })
  const code = await new Promise((resolve) => child.on('close', resolve))
  assert.equal(code, 2, stderr)
  assert.equal(stdout, '')
  assert.match(stderr, /^collector: --target: nohost\.example does not resolve \(\w+\)\n$/)
})
